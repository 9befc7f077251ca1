// `llmsim list models|systems` and `llmsim show model|system NAME|PATH`: presets and resolved specs
// with derived values.
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli_context.h"
#include "commands.h"
#include "llmsim/core/suggest.h"
#include "llmsim/core/units.h"
#include "llmsim/cost/comm_cost.h"
#include "llmsim/cost/compute_cost.h"
#include "llmsim/cost/host_dispatch.h"
#include "llmsim/hardware/attention_support.h"
#include "llmsim/hardware/efficiency_keys.h"
#include "llmsim/hardware/system_toml.h"
#include "llmsim/memory/memory_model.h"
#include "llmsim/model/param_count.h"
#include "llmsim/model/presets.h"
#include "llmsim/report/preset_documents.h"
#include "llmsim/report/report.h"
#include "llmsim/run/framework_catalog.h"

namespace llmsim::cli {

namespace {

void print_model(const model::ModelSpec& m) {
  const auto pc = model::count_params(m);
  std::cout << fmt::format("model {} ({})\n", m.name, m.model_type);
  std::cout << fmt::format("  layers {}, hidden {}, heads {} (kv {}), head_dim {}, ffn {}, vocab {}, context {}\n",
                           m.num_layers, m.hidden, m.num_heads, m.num_kv_heads, m.head_dim, m.ffn_hidden, m.vocab,
                           m.max_positions);
  std::cout << fmt::format("  {} norm, {} MLP ({}), {} positions (theta {}), embeddings {}\n",
                           report::norm_name(m.norm), report::mlp_name(m.mlp), m.activation,
                           report::position_name(m.position), m.rope_theta, m.tied_embeddings ? "tied" : "untied");
  if (m.sliding_window > 0) {
    std::cout << fmt::format("  attention: sliding window {} on {} of {} layers{}\n", m.sliding_window,
                             m.windowed_layers(), m.num_layers,
                             m.global_every == 2  ? " (every other one global)"
                             : m.global_every > 0 ? fmt::format(" (every {}th global)", m.global_every)
                                                  : "");
  }
  if (m.mla.enabled())
    std::cout << fmt::format(
        "  multi-head latent attention: q_lora_rank {}, kv_lora_rank {}, qk head {} + {} (RoPE), v head {}\n",
        m.mla.q_lora_rank > 0 ? std::to_string(m.mla.q_lora_rank) : "none", m.mla.kv_lora_rank, m.mla.qk_nope_head_dim,
        m.mla.qk_rope_head_dim, m.mla.v_head_dim);
  if (m.dsa.enabled())
    std::cout << fmt::format(
        "  DeepSeek sparse attention: an indexer of {} heads x {} scores every earlier token, attention reads the top "
        "{}; indexer keys {:.0f} B per token and layer (fp8 + scale)\n",
        m.dsa.heads, m.dsa.head_dim, m.dsa.topk, m.dsa.cache_bytes_per_token());
  if (m.linear_attn.enabled()) {
    const auto& g = m.linear_attn;
    const std::string heads = g.kind == model::LinearMixer::Mamba2
                                  ? fmt::format("{} heads of {}, state {}, {} group(s)", g.ssm_heads, g.ssm_head_dim,
                                                g.ssm_state, g.ssm_groups)
                                  : fmt::format("key heads {} x {}, value heads {} x {}", g.key_heads, g.key_head_dim,
                                                g.value_heads, g.value_head_dim);
    std::cout << fmt::format(
        "  {}: {} of {} layers ({}, conv {}); per sequence {:.4g} MiB of state ({}) and convolution inputs at "
        "16-bit instead of their KV\n",
        model::linear_mixer_name(g.kind), m.linear_attention_layers(), m.num_layers, heads, g.conv_kernel,
        model::linear_state_bytes_per_sequence(m, m.num_layers, 1, 2.0) / units::MiB,
        dtype_name(m.linear_state_dtype()));
  }
  if (m.attn_output_gate) std::cout << "  attention output gate (q_proj also projects a sigmoid gate)\n";
  if (m.moe.enabled())
    std::cout << fmt::format(
        "  MoE: {} experts, top-{}, expert ffn {}{}{}\n", m.moe.num_experts, m.moe.experts_per_token, m.moe.expert_ffn,
        m.moe.shared_expert_ffn ? fmt::format(", shared expert ffn {}", m.moe.shared_expert_ffn) : "",
        m.moe.first_dense ? fmt::format(", first {} layers dense", m.moe.first_dense) : "");
  std::cout << fmt::format("  checkpoint dtype {}, quantization {}\n", dtype_name(m.dtype),
                           model::weight_quant_name(m.quant.format));
  std::cout << fmt::format("  parameters: {} total ({:.3f} B), {} active per token ({:.3f} B)\n", pc.total,
                           static_cast<double>(pc.total) / 1e9, pc.active, static_cast<double>(pc.active) / 1e9);
  std::cout << fmt::format("    embedding {}, position {}, lm_head {}, layers {}, final norm {}\n", pc.embedding,
                           pc.position_embedding, pc.lm_head, pc.layers, pc.final_norm);
  if (pc.mtp > 0)
    std::cout << fmt::format(
        "  multi-token prediction: {} module(s), {} params ({:.3f} B) apart from the total, not simulated\n",
        m.mtp_layers, pc.mtp, static_cast<double>(pc.mtp) / 1e9);
  if (!m.unread_keys.empty())
    std::cout << fmt::format(
        "  config keys not read: {} (not in the cosmetic list of docs/model-configs.md: check they change neither "
        "compute nor memory)\n",
        fmt::join(m.unread_keys, ", "));
  if (m.vision.present()) {
    if (m.vision.counted)
      std::cout << fmt::format(
          "  vision tower ({}): {} + projector {} = {} params ({:.3f} B) apart from the total (with it {:.3f} B), "
          "not simulated: llmsim runs the text model\n",
          m.vision.model_type, m.vision.tower_params, m.vision.projector_params, m.vision.params(),
          static_cast<double>(m.vision.params()) / 1e9, static_cast<double>(pc.total + m.vision.params()) / 1e9);
    else
      std::cout << fmt::format(
          "  vision tower ({}): not counted (no parameter formula for it here) and not simulated: llmsim runs the "
          "text model\n",
          m.vision.model_type);
  }
  std::cout << fmt::format("  KV cache: {:.4g} MiB per token at 16-bit ({:.4g} MiB at fp8){}\n",
                           report::model_kv_bytes_per_token(m, 2.0) / units::MiB,
                           report::model_kv_bytes_per_token(m, 1.0) / units::MiB,
                           m.dsa.enabled()           ? " (MLA latent + RoPE key + indexer key, whole on every TP rank)"
                           : m.mla.enabled()         ? " (MLA latent + RoPE key, whole on every TP rank)"
                           : m.linear_attn.enabled() ? fmt::format(" (the {} attention layers)", m.attention_layers())
                                                     : std::string());
  std::cout << fmt::format("  forward FLOPs per token (2 x non-embedding active params): {:.4g} GFLOP\n",
                           2.0 * static_cast<double>(pc.active - pc.embedding - pc.position_embedding) / 1e9);
}

void print_system(const hardware::SystemSpec& s) {
  const auto& g = s.gpu;
  std::cout << fmt::format("system {}: {}\n", s.name, s.description);
  std::cout << fmt::format(
      "  GPU {}: {} GiB at {:.0f} GB/s, L2 {:.0f} MiB{}, {} SMs at {:.0f} MHz, {:.0f} W{}\n", g.name,
      gib(g.memory_bytes), g.memory_bandwidth_Bps / 1e9, g.l2_bytes / units::MiB,
      g.l2_read_bandwidth_Bps() > 0 ? fmt::format(" (read {:.0f} GB/s)", g.l2_read_bandwidth_Bps() / 1e9) : "",
      g.sm_count, g.boost_clock_Hz / 1e6, g.tdp_W,
      g.compute_capability > 0
          ? fmt::format(", compute capability {}.{}", g.compute_capability / 10, g.compute_capability % 10)
          : "");
  std::cout << "  dense peak TFLOP/s:";
  for (const auto& [t, v] : g.peak_flops) std::cout << fmt::format(" {} {:.1f}", dtype_name(t), v / 1e12);
  std::cout << "\n";
  const auto& n = s.node;
  std::cout << fmt::format(
      "  node: {} GPUs, {} at {:.1f} GB/s per GPU per direction, P2P {}, PCIe gen{} x{} ({:.1f} GB/s)\n",
      n.gpus_per_node, hardware::fabric_name(n.fabric), n.fabric_bandwidth_Bps / 1e9, n.p2p ? "on" : "off", n.pcie_gen,
      n.pcie_lanes, n.pcie_bandwidth_Bps / 1e9);
  if (const int domain = hardware::fast_domain_gpus(s); domain > n.gpus_per_node)
    std::cout << fmt::format("  NVLink domain: {} GPUs ({} nodes of {}) on one {} fabric; larger groups use the NICs\n",
                             domain, domain / std::max(1, n.gpus_per_node), n.gpus_per_node,
                             hardware::fabric_name(n.fabric));
  std::cout << fmt::format("  host: {} cores, {} GiB at {:.0f} GB/s\n", n.cpu_cores, gib(n.host_memory_bytes),
                           n.host_memory_bandwidth_Bps / 1e9);
  std::cout << fmt::format("  network: {} NICs x {:.0f} Gb/s, {:.1f} us\n", s.network.nics_per_node,
                           s.network.nic_bandwidth_Bps * 8 / 1e9, s.network.latency_s / units::us);
  std::cout << fmt::format("  runtime reserve: {} GiB CUDA context, {:.0f}% allocator\n",
                           gib(s.runtime.cuda_context_bytes), 100 * s.runtime.allocator_reserve_fraction);
  std::cout << fmt::format("  efficiency: {}\n",
                           s.efficiency.calibrated ? "calibrated" : "uncalibrated (documented defaults)");
  for (const auto& [t, f] : s.efficiency.gemm)
    std::cout << fmt::format("    gemm {}: {:.2f} [{:.2f}, {:.2f}] of peak  ({})\n", dtype_name(t), f.value, f.low,
                             f.high, f.source);
  const auto frac = [](const char* what, const hardware::Fraction& f) {
    std::cout << fmt::format("    {}: {:.2f} [{:.2f}, {:.2f}]  ({})\n", what, f.value, f.low, f.high, f.source);
  };
  for (const auto& k : hardware::fraction_keys()) {
    const hardware::Fraction* f = report::efficiency_fraction(s.efficiency, k);
    if (!f) continue;
    if (k.shown == hardware::ShownWhen::Hopper && !hardware::is_hopper(s.gpu.compute_capability)) continue;
    if (k.shown == hardware::ShownWhen::CudnnCapable &&
        !hardware::attention_kernel_problem(s, AttentionKernel::Cudnn).empty())
      continue;
    frac(k.label, *f);
  }
  std::cout << fmt::format("    GEMM half-efficiency contraction: k = {:.0f} ({})\n", s.efficiency.gemm_half_k,
                           s.efficiency.gemm_half_k_source);
  std::cout << fmt::format("    kernel launch {:.1f} us; CPU Adam {:.0f} Mparams/s ({})\n",
                           s.efficiency.kernel_launch_s / units::us, s.efficiency.cpu_adam_params_per_s / 1e6,
                           s.efficiency.cpu_adam_source);
  const auto& e = s.efficiency;
  std::cout << fmt::format("    pageable host copies: {:.2f} GB/s host->device, {:.2f} GB/s device->host ({})\n",
                           e.pageable_h2d_Bps / units::GBps, e.pageable_d2h_Bps / units::GBps, e.pageable_source);
  std::cout << fmt::format("    smallest GEMM call: {:.1f} us ({})\n", e.gemm_call_s / units::us, e.gemm_call_source);
  std::cout << fmt::format("    DeepSpeed ZeRO hook: {:.0f} us per call ({})\n", e.deepspeed_hook_s / units::us,
                           e.deepspeed_hook_source);
  // The fitted microsecond quantities with their bands, as the cost model reads them.
  const auto banded = [](const char* what, const char* per, const sim::Interval& t, const std::string& source) {
    std::cout << fmt::format("    {}: {:.1f} us{} [{:.1f} .. {:.1f}] ({})\n", what, t.value / units::us, per,
                             t.low / units::us, t.high / units::us, source);
  };
  banded("eager host dispatch", " per kernel", sim::host_dispatch_band(e), e.host_dispatch_source);
  banded("collective base latency", " per call", sim::collective_base_band(e), e.collective_base_source);
  banded("eager collective call, host work beyond its launch", "", sim::collective_host_band(e),
         e.collective_host_source);
}

struct ListShow {
  CommonOptions common;
  std::string what;
  std::string name;
};

// `llmsim list frameworks`: the names a measured run's framework column may hold, the profile that stands
// in for each (training / inference), its recipe defaults and sources (sim/run/framework_catalog.h).
void list_frameworks(const CommonOptions& common) {
  const auto profile = report::framework_profile_text;
  const auto& catalog = sim::framework_catalog();
  const nlohmann::json doc = report::frameworks_document();
  emit(common, doc, [&] {
    std::cout << fmt::format("{:<20} {:<10} {:<10} {}\n", "name", "training", "inference",
                             "recipe defaults (training)");
    for (const auto& e : catalog) {
      const std::string recipe = sim::describe(e.recipe);
      std::cout << fmt::format("{:<20} {:<10} {:<10} {}\n", e.name, profile(e.training), profile(e.inference),
                               recipe.empty() ? "-" : recipe);
    }
    std::cout << "\n'-': no profile is a fair stand-in (the row is unsupported, with the reason); aliases, "
                 "mappings and sources: --json or docs/frameworks.md\n";
  });
}

}  // namespace

Runner add_list_command(CLI::App& app) {
  auto cmd = std::make_shared<ListShow>();
  CLI::App* sub = app.add_subcommand("list", "list the shipped presets");
  sub->allow_extras();
  add_common_options(*sub, cmd->common);
  sub->add_option("what", cmd->what, "models, systems or frameworks")
      ->required()
      ->check(CLI::IsMember({"models", "systems", "frameworks"}));
  return [cmd, sub]() -> int {
    reject_extras(*sub);
    check_outputs(*sub, cmd->common);
    if (cmd->what == "frameworks") {
      list_frameworks(cmd->common);
      return 0;
    }
    const nlohmann::json doc = report::preset_list_document(cmd->what, cmd->common.resolved_data_dir());
    const nlohmann::json& rows = doc[cmd->what];
    emit(cmd->common, doc, [&] {
      for (const auto& r : rows) {
        if (cmd->what == "models")
          std::cout << fmt::format("{:<16} {:<10} {:>8.2f} B params ({:.2f} B active)\n", r["name"].get<std::string>(),
                                   r["model_type"].get<std::string>(),
                                   static_cast<double>(r["params_total"].get<std::int64_t>()) / 1e9,
                                   static_cast<double>(r["params_active"].get<std::int64_t>()) / 1e9);
        else
          std::cout << fmt::format("{:<16} {} x {} ({})\n", r["name"].get<std::string>(), r["gpus_per_node"].get<int>(),
                                   r["gpu"].get<std::string>(), r["fabric"].get<std::string>());
      }
    });
    return 0;
  };
}

Runner add_show_command(CLI::App& app) {
  auto cmd = std::make_shared<ListShow>();
  CLI::App* sub = app.add_subcommand("show", "show a resolved model or system spec with derived values");
  sub->allow_extras();
  add_common_options(*sub, cmd->common);
  sub->add_option("what", cmd->what, "model or system")->required()->check(CLI::IsMember({"model", "system"}));
  sub->add_option("name", cmd->name, "preset name or path")->required();
  return [cmd, sub]() -> int {
    reject_extras(*sub);
    check_outputs(*sub, cmd->common, {cmd->name});
    const std::string data = cmd->common.resolved_data_dir();
    if (cmd->what == "model") {
      const auto m = model::resolve_model(cmd->name, data);
      emit(cmd->common, report::model_document(m), [&] { print_model(m); });
    } else {
      const auto s = hardware::resolve_system(cmd->name, data);
      emit(cmd->common, report::system_document(s), [&] { print_system(s); });
    }
    return 0;
  };
}

}  // namespace llmsim::cli
