#include "llmsim/run/run_spec.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include <fmt/format.h>

namespace llmsim::sim {

namespace {
template <typename E, std::size_t N>
using Names = std::array<std::pair<E, std::string_view>, N>;

constexpr Names<Workload, 3> kWorkload{
    {{Workload::Pretrain, "pretrain"}, {Workload::Finetune, "finetune"}, {Workload::Inference, "inference"}}};
constexpr Names<Recompute, 3> kRecompute{
    {{Recompute::None, "none"}, {Recompute::Selective, "selective"}, {Recompute::Full, "full"}}};
constexpr Names<Offload, 3> kOffload{
    {{Offload::None, "none"}, {Offload::Optimizer, "optimizer"}, {Offload::OptimizerParams, "optimizer+params"}}};
constexpr Names<FinetuneKind, 3> kFinetune{
    {{FinetuneKind::Full, "full"}, {FinetuneKind::Lora, "lora"}, {FinetuneKind::Qlora, "qlora"}}};
constexpr Names<Optimizer, 3> kOptimizer{
    {{Optimizer::Adam, "adam"}, {Optimizer::Adam8bit, "adam8bit"}, {Optimizer::Sgd, "sgd"}}};
constexpr Names<OptimizerImpl, 3> kOptimizerImpl{
    {{OptimizerImpl::Fused, "fused"}, {OptimizerImpl::Foreach, "foreach"}, {OptimizerImpl::ForLoop, "for-loop"}}};
constexpr Names<SpecMethod, 4> kSpecMethod{
    {{SpecMethod::None, "none"}, {SpecMethod::Draft, "draft"}, {SpecMethod::Eagle, "eagle"}, {SpecMethod::Mtp, "mtp"}}};
constexpr Names<SamplePadding, 3> kPadding{
    {{SamplePadding::Max, "max"}, {SamplePadding::Batch, "batch"}, {SamplePadding::None, "none"}}};
constexpr Names<PipelineSchedule, 2> kSchedule{
    {{PipelineSchedule::OneFOneB, "1f1b"}, {PipelineSchedule::GPipe, "gpipe"}}};
constexpr Names<Framework, 16> kFramework{{{Framework::Megatron, "megatron"},
                                           {Framework::DeepSpeed, "deepspeed"},
                                           {Framework::Fsdp, "fsdp"},
                                           {Framework::Hf, "hf"},
                                           {Framework::Vllm, "vllm"},
                                           {Framework::Tgi, "tgi"},
                                           {Framework::LightLlm, "lightllm"},
                                           {Framework::TrtLlm, "trt-llm"},
                                           {Framework::FasterTransformer, "fastertransformer"},
                                           {Framework::LmDeploy, "lmdeploy"},
                                           {Framework::Sglang, "sglang"},
                                           {Framework::LlamaCpp, "llama.cpp"},
                                           {Framework::ExLlamaV2, "exllamav2"},
                                           {Framework::MlcLlm, "mlc-llm"},
                                           {Framework::TinyChat, "tinychat"},
                                           {Framework::AutoAwq, "autoawq"}}};

template <typename E, std::size_t N>
std::string_view lookup(const Names<E, N>& table, E v) {
  for (const auto& [e, n] : table)
    if (e == v) return n;
  return "?";
}
template <typename E, std::size_t N>
bool parse(const Names<E, N>& table, std::string_view s, E& out) {
  for (const auto& [e, n] : table)
    if (n == s) {
      out = e;
      return true;
    }
  return false;
}
template <typename E, std::size_t N>
std::vector<std::string> names(const Names<E, N>& table) {
  std::vector<std::string> out;
  for (const auto& [e, n] : table) out.emplace_back(n);
  return out;
}
}  // namespace

std::string_view name_of(Workload v) { return lookup(kWorkload, v); }
std::string_view name_of(Recompute v) { return lookup(kRecompute, v); }
std::string_view name_of(Offload v) { return lookup(kOffload, v); }
std::string_view name_of(FinetuneKind v) { return lookup(kFinetune, v); }
std::string_view name_of(Optimizer v) { return lookup(kOptimizer, v); }
std::string_view name_of(OptimizerImpl v) { return lookup(kOptimizerImpl, v); }
std::string_view name_of(PipelineSchedule v) { return lookup(kSchedule, v); }
std::string_view name_of(SpecMethod v) { return lookup(kSpecMethod, v); }
std::string_view name_of(Framework v) { return lookup(kFramework, v); }
std::string_view name_of(SamplePadding v) { return lookup(kPadding, v); }
std::vector<std::string> sample_padding_names() { return names(kPadding); }
bool parse_name(std::string_view s, SamplePadding& out) { return parse(kPadding, s, out); }
std::vector<std::string> workload_names() { return names(kWorkload); }
std::vector<std::string> recompute_names() { return names(kRecompute); }
std::vector<std::string> offload_names() { return names(kOffload); }
std::vector<std::string> finetune_names() { return names(kFinetune); }
std::vector<std::string> optimizer_names() { return names(kOptimizer); }
std::vector<std::string> optimizer_impl_names() { return names(kOptimizerImpl); }
std::vector<std::string> pipeline_schedule_names() { return names(kSchedule); }
std::vector<std::string> spec_method_names() { return names(kSpecMethod); }
std::vector<std::string> framework_names() { return names(kFramework); }
bool parse_name(std::string_view s, Workload& out) {
  // The measured-run schema spells fine-tuning as a workload; "train" is the CLI's word for pretrain.
  if (s == "train") {
    out = Workload::Pretrain;
    return true;
  }
  return parse(kWorkload, s, out);
}
bool parse_name(std::string_view s, Recompute& out) { return parse(kRecompute, s, out); }
bool parse_name(std::string_view s, Offload& out) { return parse(kOffload, s, out); }
bool parse_name(std::string_view s, FinetuneKind& out) { return parse(kFinetune, s, out); }
bool parse_name(std::string_view s, Optimizer& out) { return parse(kOptimizer, s, out); }
bool parse_name(std::string_view s, OptimizerImpl& out) { return parse(kOptimizerImpl, s, out); }
bool parse_name(std::string_view s, PipelineSchedule& out) { return parse(kSchedule, s, out); }
bool parse_name(std::string_view s, SpecMethod& out) { return parse(kSpecMethod, s, out); }

double expected_tokens_per_step(std::int64_t k, double alpha) {
  if (k <= 0) return 1;
  const double a = std::clamp(alpha, 0.0, 1.0);
  if (a >= 1) return static_cast<double>(k + 1);
  return (1 - std::pow(a, static_cast<double>(k + 1))) / (1 - a);
}
LayerOffload layer_offload(const InferSpec& in, std::int64_t layers) {
  LayerOffload o;
  if (in.gpu_layers < 0 || in.gpu_layers > layers) return o;
  o.cpu_layers = layers - in.gpu_layers;
  o.head_on_cpu = true;
  return o;
}

TableBytes table_bytes(const model::ModelSpec& m, const InferSpec& in, const model::InferenceWeightBytes& wb) {
  const double table = static_cast<double>(m.vocab) * static_cast<double>(m.hidden);
  if (!in.block_format) return {table * wb.other, table * wb.other};
  const model::StoredBits bits = model::stored_bits(*in.block_format, m);
  return {table * bits.embedding / 8.0, table * bits.head / 8.0};
}

WeightResidence weight_residence(const model::ModelSpec& m, const InferSpec& in, const model::InferenceWeightBytes& wb,
                                 double weights, bool embedding, bool output) {
  const TableBytes t = table_bytes(m, in, wb);
  const LayerOffload off = layer_offload(in, m.num_layers);
  const double embed = embedding ? t.embedding : 0.0, head = output ? t.head : 0.0;
  // `weights` price each table the stage holds at the format's rest (InferenceWeightBytes::other, a block format's
  // mean of the two tables), an output table of its own unless it is the tied embedding of the same stage.
  const bool head_counted = output && !(m.tied_embeddings && embedding);
  const double table = static_cast<double>(m.vocab) * static_cast<double>(m.hidden);
  const double tables = table * wb.other * ((embedding ? 1.0 : 0.0) + (head_counted ? 1.0 : 0.0));
  const double layers = std::max(0.0, weights - tables);
  WeightResidence r;
  r.host_layer_share =
      static_cast<double>(off.cpu_layers) / static_cast<double>(std::max<std::int64_t>(1, m.num_layers));
  r.gpu = layers * (1.0 - r.host_layer_share) + (off.head_on_cpu ? 0.0 : head);
  r.host = embed + layers * r.host_layer_share + (off.head_on_cpu ? head : 0.0);
  return r;
}

std::string weight_format_name(const InferSpec& in) {
  return in.block_format ? in.block_format->text() : std::string(model::weight_quant_name(in.weight_quant));
}

bool is_training_framework(Framework f) {
  return f == Framework::Megatron || f == Framework::DeepSpeed || f == Framework::Fsdp || f == Framework::Hf;
}

std::vector<std::string> training_framework_names() {
  std::vector<std::string> out;
  for (const auto& [f, name] : kFramework)
    if (is_training_framework(f)) out.emplace_back(name);
  return out;
}

std::vector<std::string> inference_framework_names() {
  std::vector<std::string> out;
  for (const auto& [f, name] : kFramework)
    if (!is_training_framework(f)) out.emplace_back(name);
  return out;
}

namespace {
// Frameworks that also serve: transformers generate() and DeepSpeed-Inference, beside the engines.
bool serves(Framework f) { return !is_training_framework(f) || f == Framework::Hf || f == Framework::DeepSpeed; }
}  // namespace

std::vector<std::string> engine_names() {
  std::vector<std::string> out;
  for (const auto& [f, name] : kFramework)
    if (serves(f)) out.emplace_back(name);
  return out;
}

bool parse_engine(std::string_view s, Framework& out) {
  Framework f{};
  if (s == "static")
    f = Framework::Hf;
  else if (!parse_name(s, f) || !serves(f))
    return false;
  out = f;
  return true;
}

const std::vector<std::pair<std::string, std::string>>& framework_aliases() {
  static const std::vector<std::pair<std::string, std::string>> aliases = {
      {"megatron-lm", "megatron"}, {"nemo", "megatron"}};  // NeMo trains with Megatron-Core
  return aliases;
}

bool parse_name(std::string_view s, Framework& out) {
  for (const auto& [alias, name] : framework_aliases())
    if (s == alias) return parse(kFramework, name, out);
  return parse(kFramework, s, out);
}

std::vector<std::string> lora_target_names() { return {"q", "k", "v", "o", "gate", "up", "down"}; }

namespace {
// Module names of the modelling code users point PEFT at, by the projections they hold: transformers'
// modeling_llama.py (q_proj ... down_proj; Qwen2, Mistral, Mixtral's attention alike), modeling_gpt2.py
// (c_attn = fused QKV, c_fc = the MLP's first linear; its c_proj is both the attention output and the MLP
// output, so it is not accepted: name o or down), modeling_gpt_neox.py / Falcon (query_key_value,
// dense_h_to_4h, dense_4h_to_h; their `dense` is the attention output), modeling_mixtral.py experts (w1 gate,
// w3 up, w2 down), Meta's llama reference (wq, wk, wv, wo), and PEFT's "all-linear" (tuners_utils.py: every
// linear layer except the output head).
const std::vector<std::pair<std::string, std::vector<std::string>>>& lora_aliases() {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> aliases = {
      {"q_proj", {"q"}},
      {"k_proj", {"k"}},
      {"v_proj", {"v"}},
      {"o_proj", {"o"}},
      {"gate_proj", {"gate"}},
      {"up_proj", {"up"}},
      {"down_proj", {"down"}},
      {"wq", {"q"}},
      {"wk", {"k"}},
      {"wv", {"v"}},
      {"wo", {"o"}},
      {"w1", {"gate"}},
      {"w3", {"up"}},
      {"w2", {"down"}},
      {"c_attn", {"q", "k", "v"}},
      {"c_fc", {"up"}},
      {"query_key_value", {"q", "k", "v"}},
      {"dense", {"o"}},
      {"dense_h_to_4h", {"up"}},
      {"dense_4h_to_h", {"down"}},
      {"all-linear", {"q", "k", "v", "o", "gate", "up", "down"}},
  };
  return aliases;
}
}  // namespace

std::vector<std::string> lora_projections(std::string_view name) {
  for (const auto& n : lora_target_names())
    if (n == name) return {n};
  for (const auto& [alias, projections] : lora_aliases())
    if (alias == name) return projections;
  return {};
}

std::vector<std::string> lora_target_spellings() {
  std::vector<std::string> out = lora_target_names();
  for (const auto& [alias, projections] : lora_aliases()) out.push_back(alias);
  return out;
}

std::optional<std::vector<std::string>> canonical_lora_targets(const std::vector<std::string>& names) {
  std::vector<std::string> named;
  for (const auto& n : names) {
    const auto p = lora_projections(n);
    if (p.empty()) return std::nullopt;
    named.insert(named.end(), p.begin(), p.end());
  }
  std::vector<std::string> out;
  for (const auto& t : lora_target_names())
    if (std::find(named.begin(), named.end(), t) != named.end()) out.push_back(t);
  if (out.size() == lora_target_names().size()) out.clear();  // every projection: the default
  return out;
}

RunSpec with_defaults(RunSpec run) {
  auto& p = run.par;
  const std::int64_t model_parallel = p.tp * p.pp * p.cp;
  if (p.dp <= 0) p.dp = model_parallel > 0 && p.gpus % model_parallel == 0 ? p.gpus / model_parallel : 1;
  if (run.train.global_batch <= 0) run.train.global_batch = run.train.micro_batch * p.dp;
  // DeepSeek-V3 predicts one extra token with its one MTP module, whose second-token acceptance was 85-90 %
  // (DeepSeek-V3 technical report, arXiv:2412.19437, Sec. 5.4.3): the low end is the default.
  auto& spec = run.infer.speculative;
  if (spec.method == SpecMethod::Mtp) {
    if (spec.tokens <= 0) spec.tokens = 1;
    if (spec.acceptance < 0) spec.acceptance = 0.85;
  }
  return run;
}

std::int64_t micro_batches_per_step(const RunSpec& run) {
  const std::int64_t unit = run.train.micro_batch * run.par.dp;
  return unit > 0 ? run.train.global_batch / unit : 0;
}

}  // namespace llmsim::sim
