#include "llmsim/report/preset_documents.h"

#include "llmsim/hardware/efficiency_keys.h"
#include "llmsim/hardware/system_toml.h"
#include "llmsim/model/param_count.h"
#include "llmsim/model/presets.h"
#include "llmsim/report/report.h"
#include "llmsim/run/framework_catalog.h"

namespace llmsim::report {

std::string framework_profile_text(const std::optional<sim::Framework>& f) {
  return f ? std::string(sim::name_of(*f)) : std::string("-");
}

std::string_view norm_name(model::NormKind n) { return n == model::NormKind::RmsNorm ? "rmsnorm" : "layernorm"; }
std::string_view mlp_name(model::MlpKind k) {
  return k == model::MlpKind::Gated ? "gated (3 matrices)" : "plain (2 matrices)";
}
std::string_view position_name(model::PositionKind p) {
  return p == model::PositionKind::Rope ? "rope" : p == model::PositionKind::Learned ? "learned" : "none";
}

double model_kv_bytes_per_token(const model::ModelSpec& m, double elem_bytes) {
  return model::kv_bytes_per_token(m, m.num_layers, 1, elem_bytes);
}

nlohmann::json model_document(const model::ModelSpec& m) {
  const auto pc = model::count_params(m);
  nlohmann::json j = header("show model");
  j.update(nlohmann::json{
      {"name", m.name},
      {"model_type", m.model_type},
      {"layers", m.num_layers},
      {"hidden", m.hidden},
      {"heads", m.num_heads},
      {"kv_heads", m.num_kv_heads},
      {"head_dim", m.head_dim},
      {"ffn", m.ffn_hidden},
      {"vocab", m.vocab},
      {"max_positions", m.max_positions},
      {"norm", norm_name(m.norm)},
      {"mlp", mlp_name(m.mlp)},
      {"activation", m.activation},
      {"positions", position_name(m.position)},
      {"rope_theta", m.rope_theta},
      {"tied_embeddings", m.tied_embeddings},
      {"dtype", dtype_name(m.dtype)},
      {"weight_quant", model::weight_quant_name(m.quant.format)},
      {"params_total", pc.total},
      {"params_active", pc.active},
      {"params_embedding", pc.embedding + pc.position_embedding},
      {"params_lm_head", pc.lm_head},
      {"params_layers", pc.layers},
      {"kv_bytes_per_token_16bit", model_kv_bytes_per_token(m, 2.0)},
      {"forward_flops_per_token", 2.0 * static_cast<double>(pc.active - pc.embedding - pc.position_embedding)}});
  if (m.moe.enabled())
    j["moe"] = {{"experts", m.moe.num_experts},
                {"top_k", m.moe.experts_per_token},
                {"expert_ffn", m.moe.expert_ffn},
                {"shared_expert_ffn", m.moe.shared_expert_ffn},
                {"first_dense_layers", m.moe.first_dense}};
  if (m.sliding_window > 0)
    j["attention_window"] = {{"sliding_window", m.sliding_window}, {"global_every", m.global_every}};
  if (m.mla.enabled())
    j["mla"] = {{"q_lora_rank", m.mla.q_lora_rank},
                {"kv_lora_rank", m.mla.kv_lora_rank},
                {"qk_nope_head_dim", m.mla.qk_nope_head_dim},
                {"qk_rope_head_dim", m.mla.qk_rope_head_dim},
                {"v_head_dim", m.mla.v_head_dim}};
  if (m.dsa.enabled())
    j["sparse_attention"] = {{"index_n_heads", m.dsa.heads},
                             {"index_head_dim", m.dsa.head_dim},
                             {"index_topk", m.dsa.topk},
                             {"index_cache_bytes_per_token_layer", m.dsa.cache_bytes_per_token()}};
  if (m.linear_attn.enabled()) {
    const auto& g = m.linear_attn;
    nlohmann::json la = {
        {"layers", m.linear_attention_layers()},
        {"conv_kernel", g.conv_kernel},
        {"chunk", g.chunk},
        {"state_dtype", dtype_name(m.linear_state_dtype())},
        {"state_bytes_per_sequence_16bit", model::linear_state_bytes_per_sequence(m, m.num_layers, 1, 2.0)}};
    if (g.kind == model::LinearMixer::Mamba2) {
      la["kind"] = "mamba2";
      la["heads"] = g.ssm_heads;
      la["head_dim"] = g.ssm_head_dim;
      la["state_size"] = g.ssm_state;
      la["groups"] = g.ssm_groups;
    } else {
      la["kind"] = "gated_deltanet";
      la["key_heads"] = g.key_heads;
      la["key_head_dim"] = g.key_head_dim;
      la["value_heads"] = g.value_heads;
      la["value_head_dim"] = g.value_head_dim;
    }
    j["linear_attention"] = la;
  }
  if (m.attn_output_gate) j["attention_output_gate"] = true;
  if (m.mtp_layers > 0) j["mtp"] = {{"modules", m.mtp_layers}, {"params", pc.mtp}};
  j["unread_config_keys"] = m.unread_keys;
  if (m.vision.present())
    j["vision_tower"] = {
        {"model_type", m.vision.model_type},
        {"counted", m.vision.counted},
        {"tower_params", m.vision.counted ? nlohmann::json(m.vision.tower_params) : nlohmann::json()},
        {"projector_params", m.vision.counted ? nlohmann::json(m.vision.projector_params) : nlohmann::json()},
        {"simulated", false}};
  return j;
}

namespace {
nlohmann::json fraction_json(const hardware::Fraction& f) {
  return {{"value", f.value}, {"low", f.low}, {"high", f.high}, {"source", f.source}};
}
}  // namespace

const hardware::Fraction* efficiency_fraction(const hardware::Efficiency& e, const hardware::FractionKey& k) {
  if (k.value) return &(e.*k.value);
  const auto& f = e.*k.optional;
  return f ? &*f : nullptr;
}

namespace {
nlohmann::json efficiency_json(const hardware::Efficiency& e) {
  nlohmann::json gemm;
  for (const auto& [t, f] : e.gemm) gemm[std::string(dtype_name(t))] = fraction_json(f);
  nlohmann::json j = {{"calibrated", e.calibrated},
                      {"gemm", gemm},
                      {"gemm_half_k", e.gemm_half_k},
                      {"kernel_launch_s", e.kernel_launch_s},
                      {"gemm_call_s", e.gemm_call_s},
                      {"deepspeed_hook_s", e.deepspeed_hook_s},
                      {"host_dispatch_s", e.host_dispatch_s},
                      {"collective_base_s", e.collective_base_s},
                      {"collective_host_s", e.collective_host_s},
                      {"cpu_adam_params_per_s", e.cpu_adam_params_per_s},
                      {"pageable_h2d_Bps", e.pageable_h2d_Bps},
                      {"pageable_d2h_Bps", e.pageable_d2h_Bps}};
  nlohmann::json by_collective = nlohmann::json::object();
  for (const auto& k : hardware::fraction_keys())
    if (const hardware::Fraction* f = efficiency_fraction(e, k))
      (k.value ? j : by_collective)[k.json_key] = fraction_json(*f);
  j["fabric_bandwidth_by_collective"] = by_collective;
  return j;
}
}  // namespace

nlohmann::json system_document(const hardware::SystemSpec& s) {
  nlohmann::json peaks;
  for (const auto& [t, v] : s.gpu.peak_flops) peaks[std::string(dtype_name(t))] = v;
  nlohmann::json j = header("show system");
  j.update(nlohmann::json{{"name", s.name},
                          {"description", s.description},
                          {"source_file", s.source_file},
                          {"gpu",
                           {{"name", s.gpu.name},
                            {"peak_flops", peaks},
                            {"memory_bytes", s.gpu.memory_bytes},
                            {"memory_bandwidth_Bps", s.gpu.memory_bandwidth_Bps},
                            {"l2_bytes", s.gpu.l2_bytes},
                            {"l2_read_bandwidth_Bps", s.gpu.l2_read_bandwidth_Bps()},
                            {"sm_count", s.gpu.sm_count},
                            {"boost_clock_Hz", s.gpu.boost_clock_Hz},
                            {"tdp_W", s.gpu.tdp_W},
                            {"compute_capability", s.gpu.compute_capability}}},
                          {"node",
                           {{"gpus_per_node", s.node.gpus_per_node},
                            {"nvlink_domain_gpus", hardware::fast_domain_gpus(s)},
                            {"fabric", hardware::fabric_name(s.node.fabric)},
                            {"fabric_bandwidth_Bps", s.node.fabric_bandwidth_Bps},
                            {"fabric_latency_s", s.node.fabric_latency_s},
                            {"p2p", s.node.p2p},
                            {"pcie_gen", s.node.pcie_gen},
                            {"pcie_lanes", s.node.pcie_lanes},
                            {"pcie_bandwidth_Bps", s.node.pcie_bandwidth_Bps},
                            {"host_memory_bytes", s.node.host_memory_bytes},
                            {"cpu_cores", s.node.cpu_cores},
                            {"host_memory_bandwidth_Bps", s.node.host_memory_bandwidth_Bps}}},
                          {"network",
                           {{"nics_per_node", s.network.nics_per_node},
                            {"nic_bandwidth_Bps", s.network.nic_bandwidth_Bps},
                            {"latency_s", s.network.latency_s}}},
                          {"runtime",
                           {{"cuda_context_bytes", s.runtime.cuda_context_bytes},
                            {"allocator_reserve_fraction", s.runtime.allocator_reserve_fraction}}},
                          {"efficiency", efficiency_json(s.efficiency)}});
  return j;
}

nlohmann::json frameworks_document() {
  const auto& catalog = sim::framework_catalog();
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& e : catalog) {
    nlohmann::json earlier = nlohmann::json::array();
    for (const auto& r : e.earlier_recipes)
      earlier.push_back(
          {{"before", to_string(r.before)}, {"recipe", sim::describe(r.recipe)}, {"recipe_source", r.recipe.source}});
    rows.push_back({{"name", e.name},
                    {"aliases", e.aliases},
                    {"training", framework_profile_text(e.training)},
                    {"inference", framework_profile_text(e.inference)},
                    {"training_mapping", e.training_mapping},
                    {"inference_mapping", e.inference_mapping},
                    {"unsupported_reason", e.unsupported_reason},
                    {"recipe", sim::describe(e.recipe)},
                    {"recipe_source", e.recipe.source},
                    {"earlier_recipes", earlier},
                    {"source", e.source}});
  }
  nlohmann::json doc = header("list frameworks");
  doc["frameworks"] = rows;
  return doc;
}

nlohmann::json preset_list_document(const std::string& what, const std::string& data) {
  nlohmann::json rows = nlohmann::json::array();
  if (what == "models") {
    for (const auto& name : model::list_model_presets(data)) {
      const auto m = model::resolve_model(name, data);
      const auto pc = model::count_params(m);
      rows.push_back(
          {{"name", name}, {"model_type", m.model_type}, {"params_total", pc.total}, {"params_active", pc.active}});
    }
  } else {
    for (const auto& name : hardware::list_system_presets(data)) {
      const auto s = hardware::resolve_system(name, data);
      rows.push_back({{"name", name},
                      {"gpu", s.gpu.name},
                      {"gpus_per_node", s.node.gpus_per_node},
                      {"fabric", hardware::fabric_name(s.node.fabric)},
                      {"description", s.description}});
    }
  }
  nlohmann::json doc = header("list " + what);
  doc[what] = rows;
  return doc;
}

}  // namespace llmsim::report
