#include "llmsim/run/run_config.h"

#include "llmsim/core/strings.h"

#include <algorithm>
#include <charconv>
#include <functional>
#include <sstream>

#include <fmt/format.h>

#include "llmsim/core/suggest.h"
#include "llmsim/core/toml_reader.h"
#include "llmsim/run/engine_profile.h"
#include "llmsim/run/framework_profile.h"

namespace llmsim::sim {

bool RunRequest::was_given(const std::string& name) const {
  return std::find(given.begin(), given.end(), name) != given.end();
}

namespace {

struct Setting {
  SettingInfo info;
  std::function<void(RunRequest&, const std::string&)> apply;  // value already checked against `info`
  // The value as `apply` takes it back (its canonical text), or nullopt when the setting is unset (the
  // simulator's own rule fills it: dp from the GPUs, the global batch from the micro-batch, ...).
  std::function<std::optional<std::string>(const RunRequest&)> get;
};

std::string flag(bool b) { return b ? "true" : "false"; }
// A setting left to the framework when unset.
std::optional<std::string> flag(const std::optional<bool>& b) {
  return b ? std::optional<std::string>(flag(*b)) : std::nullopt;
}

SettingInfo training(SettingInfo i) {
  i.scope = SettingScope::Training;
  return i;
}
SettingInfo inference(SettingInfo i) {
  i.scope = SettingScope::Inference;
  return i;
}

std::int64_t to_int(const std::string& v) {
  std::int64_t x = 0;
  std::from_chars(v.data(), v.data() + v.size(), x);
  return x;
}

template <typename E>
E to_enum(const std::string& v) {
  E e{};
  parse_name(v, e);
  return e;
}

DType to_dtype(const std::string& v) {
  DType d{};
  parse_dtype(v, d);
  return d;
}

std::vector<std::string> split_list(const std::string& v) {
  std::vector<std::string> out;
  std::stringstream ss(v);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

// Upper bounds of the integer settings: far above any run people plan, low enough that every product the
// simulators form from them (tokens per step, KV bytes, one entry per sequence) stays exact in 64 bits
// and fits in memory.
constexpr std::int64_t kMaxGpus = std::int64_t{1} << 20;       // 1,048,576
constexpr std::int64_t kMaxSequences = std::int64_t{1} << 24;  // 16,777,216
constexpr std::int64_t kMaxTokens = std::int64_t{1} << 24;     // 16,777,216
const char* const kWhyGpus = "parallel sizes beyond a million GPUs are not simulated";
const char* const kWhySequences = "the simulators hold an entry per sequence; no run batches more";
const char* const kWhyTokens = "lengths beyond 16 M tokens overflow the simulators' token products";

const std::vector<Setting>& table() {
  using K = SettingKind;
  static const std::vector<Setting> settings = {
      {{"model", K::Text, "model preset name or path to a Hugging Face config.json (or its folder)"},
       [](RunRequest& r, const std::string& v) { r.model = v; },
       [](const RunRequest& r) -> std::optional<std::string> { return r.model; }},
      {{"system", K::Text, "system preset name or path to a system TOML"},
       [](RunRequest& r, const std::string& v) { r.system = v; },
       [](const RunRequest& r) -> std::optional<std::string> { return r.system; }},
      {{"workload", K::Choice, "what runs", {"pretrain", "finetune", "inference"}},
       [](RunRequest& r, const std::string& v) { r.run.workload = to_enum<Workload>(v); },
       [](const RunRequest& r) -> std::optional<std::string> { return std::string(name_of(r.run.workload)); }},
      {{"gpus", K::PositiveInt, "GPUs in total", {}, kMaxGpus, kWhyGpus},
       [](RunRequest& r, const std::string& v) { r.run.par.gpus = to_int(v); },
       [](const RunRequest& r) -> std::optional<std::string> { return std::to_string(r.run.par.gpus); }},
      {{"tp", K::PositiveInt, "tensor-parallel size", {}, kMaxGpus, kWhyGpus},
       [](RunRequest& r, const std::string& v) { r.run.par.tp = to_int(v); },
       [](const RunRequest& r) -> std::optional<std::string> { return std::to_string(r.run.par.tp); }},
      {{"pp", K::PositiveInt, "pipeline-parallel size", {}, kMaxGpus, kWhyGpus},
       [](RunRequest& r, const std::string& v) { r.run.par.pp = to_int(v); },
       [](const RunRequest& r) -> std::optional<std::string> { return std::to_string(r.run.par.pp); }},
      {{"dp", K::PositiveInt, "data-parallel size (default gpus/(tp*pp*cp))", {}, kMaxGpus, kWhyGpus},
       [](RunRequest& r, const std::string& v) { r.run.par.dp = to_int(v); },
       [](const RunRequest& r) -> std::optional<std::string> {
         return r.run.par.dp > 0 ? std::optional<std::string>(std::to_string(r.run.par.dp)) : std::nullopt;
       }},
      {training({"cp", K::PositiveInt, "context-parallel size", {}, kMaxGpus, kWhyGpus}),
       [](RunRequest& r, const std::string& v) { r.run.par.cp = to_int(v); },
       [](const RunRequest& r) -> std::optional<std::string> { return std::to_string(r.run.par.cp); }},
      {{"ep", K::PositiveInt, "expert-parallel size", {}, kMaxGpus, kWhyGpus},
       [](RunRequest& r, const std::string& v) { r.run.par.ep = to_int(v); },
       [](const RunRequest& r) -> std::optional<std::string> { return std::to_string(r.run.par.ep); }},
      {training({"vp", K::PositiveInt, "virtual pipeline stages per GPU (interleaved 1F1B)", {}, kMaxGpus, kWhyGpus}),
       [](RunRequest& r, const std::string& v) { r.run.par.vp = to_int(v); },
       [](const RunRequest& r) -> std::optional<std::string> { return std::to_string(r.run.par.vp); }},
      {{"expert-imbalance", K::Ratio,
        "expert parallelism: routed tokens on the busiest rank over the mean (1 = balanced; training and inference; "
        "vLLM's and SGLang's load balancers log the inverse as balancedness)"},
       [](RunRequest& r, const std::string& v) { r.run.par.expert_imbalance = std::stod(v); },
       [](const RunRequest& r) -> std::optional<std::string> { return fmt::format("{}", r.run.par.expert_imbalance); }},
      {training({"sequence-parallel", K::Flag, "Megatron sequence parallelism"}),
       [](RunRequest& r, const std::string& v) { r.run.par.sequence_parallel = v == "true"; },
       [](const RunRequest& r) -> std::optional<std::string> { return flag(r.run.par.sequence_parallel); }},
      {training({"micro-batch",
                 K::PositiveInt,
                 "sequences per micro-batch per data-parallel rank",
                 {},
                 kMaxSequences,
                 kWhySequences}),
       [](RunRequest& r, const std::string& v) { r.run.train.micro_batch = to_int(v); },
       [](const RunRequest& r) -> std::optional<std::string> { return std::to_string(r.run.train.micro_batch); }},
      {training({"global-batch",
                 K::PositiveInt,
                 "sequences per optimizer step (default micro-batch x dp)",
                 {},
                 kMaxSequences,
                 kWhySequences}),
       [](RunRequest& r, const std::string& v) { r.run.train.global_batch = to_int(v); },
       [](const RunRequest& r) -> std::optional<std::string> {
         return r.run.train.global_batch > 0 ? std::optional<std::string>(std::to_string(r.run.train.global_batch))
                                             : std::nullopt;
       }},
      {training({"seq-len", K::PositiveInt, "training sequence length in tokens", {}, kMaxTokens, kWhyTokens}),
       [](RunRequest& r, const std::string& v) { r.run.train.seq_len = to_int(v); },
       [](const RunRequest& r) -> std::optional<std::string> { return std::to_string(r.run.train.seq_len); }},
      {training({"tokens-per-sample",
                 K::PositiveNumber,
                 "mean tokens of variable-length samples (seq-len is then the longest; see --padding)",
                 {},
                 kMaxTokens,
                 kWhyTokens}),
       [](RunRequest& r, const std::string& v) { r.run.train.tokens_per_sample = *parse_finite(v); },
       [](const RunRequest& r) -> std::optional<std::string> {
         return r.run.train.tokens_per_sample > 0
                    ? std::optional<std::string>(fmt::format("{:g}", r.run.train.tokens_per_sample))
                    : std::nullopt;
       }},
      {training(
           {"padding", K::Choice,
            "how variable-length samples fill sequences: max (each padded to seq-len), batch (to the micro-batch's "
            "longest) or none (packed)",
            sample_padding_names()}),
       [](RunRequest& r, const std::string& v) { r.run.train.padding = to_enum<SamplePadding>(v); },
       [](const RunRequest& r) -> std::optional<std::string> { return std::string(name_of(r.run.train.padding)); }},
      {{"precision", K::Choice, "compute precision", compute_precision_names()},
       [](RunRequest& r, const std::string& v) { r.run.train.precision = r.run.infer.precision = to_dtype(v); },
       [](const RunRequest& r) -> std::optional<std::string> {
         return std::string(
             dtype_name(r.run.workload == Workload::Inference ? r.run.infer.precision : r.run.train.precision));
       }},
      {training({"recompute", K::Choice, "activation recomputation", recompute_names()}),
       [](RunRequest& r, const std::string& v) { r.run.train.recompute = to_enum<Recompute>(v); },
       [](const RunRequest& r) -> std::optional<std::string> { return std::string(name_of(r.run.train.recompute)); }},
      {training({"recompute-layers", K::PositiveInt,
                 "with --recompute full: layers of each pipeline stage recomputed (Megatron --recompute-num-layers); "
                 "default all"}),
       [](RunRequest& r, const std::string& v) { r.run.train.recompute_layers = to_int(v); },
       [](const RunRequest& r) -> std::optional<std::string> {
         return r.run.train.recompute_layers > 0
                    ? std::optional<std::string>(std::to_string(r.run.train.recompute_layers))
                    : std::nullopt;
       }},
      {training({"flash-attn", K::Flag, "fused (FlashAttention) attention; --no-flash-attn for the unfused chain"}),
       [](RunRequest& r, const std::string& v) { r.run.train.flash_attn = v == "true"; },
       [](const RunRequest& r) -> std::optional<std::string> { return flag(r.run.train.flash_attn); }},
      {{"attn-kernel", K::Choice,
        "fused attention kernel (fa1: flash-attn 1.x or Triton FlashAttention; cudnn: Transformer Engine's "
        "FusedAttention or PyTorch SDPA's cuDNN backend)",
        attention_kernel_names()},
       [](RunRequest& r, const std::string& v) {
         r.run.train.attn_kernel = r.run.infer.attn_kernel = to_enum<AttentionKernel>(v);
       },
       [](const RunRequest& r) -> std::optional<std::string> {
         return std::string(
             name_of(r.run.workload == Workload::Inference ? r.run.infer.attn_kernel : r.run.train.attn_kernel));
       }},
      {training({"fused-loss", K::Flag, "fused cross-entropy (flash-attn, Liger): no fp32 copy of the logits"}),
       [](RunRequest& r, const std::string& v) { r.run.train.fused_loss = v == "true"; },
       [](const RunRequest& r) -> std::optional<std::string> { return flag(r.run.train.fused_loss); }},
      {training({"zero-stage", K::Choice, "ZeRO / FSDP sharding stage", {"0", "1", "2", "3"}}),
       [](RunRequest& r, const std::string& v) { r.run.train.zero_stage = static_cast<int>(to_int(v)); },
       [](const RunRequest& r) -> std::optional<std::string> { return std::to_string(r.run.train.zero_stage); }},
      {training({"offload", K::Choice, "ZeRO-Offload to host memory", offload_names()}),
       [](RunRequest& r, const std::string& v) { r.run.train.offload = to_enum<Offload>(v); },
       [](const RunRequest& r) -> std::optional<std::string> { return std::string(name_of(r.run.train.offload)); }},
      {training({"optimizer", K::Choice, "optimizer (adam = AdamW with fp32 master weights)", optimizer_names()}),
       [](RunRequest& r, const std::string& v) { r.run.train.optimizer = to_enum<Optimizer>(v); },
       [](const RunRequest& r) -> std::optional<std::string> { return std::string(name_of(r.run.train.optimizer)); }},
      {training({"optimizer-state-dtype",
                 K::Choice,
                 "element type of Adam's m and v (default fp32, or the weights' type with --master-weights none)",
                 {"fp32", "bf16", "fp16"}}),
       [](RunRequest& r, const std::string& v) { r.run.train.optimizer_state_dtype = to_dtype(v); },
       [](const RunRequest& r) -> std::optional<std::string> {
         return r.run.train.optimizer_state_dtype
                    ? std::optional<std::string>(std::string(dtype_name(*r.run.train.optimizer_state_dtype)))
                    : std::nullopt;
       }},
      {training({"optimizer-impl", K::Choice,
                 "how AdamW steps: fused (in place), foreach (torch's default: a copy of every v during the step) "
                 "or for-loop (one tensor at a time); default: the framework's",
                 optimizer_impl_names()}),
       [](RunRequest& r, const std::string& v) { r.run.train.optimizer_impl = to_enum<OptimizerImpl>(v); },
       // Unset: the framework's, as the memory model and the step use it (a default that decides a ranking).
       [](const RunRequest& r) -> std::optional<std::string> {
         const auto& t = r.run.train;
         return std::string(name_of(t.optimizer_impl.value_or(framework_profile(t.framework).optimizer_impl)));
       }},
      {training({"master-weights",
                 K::Choice,
                 "fp32 master copy (mixed precision) or none (pure 16-bit training)",
                 {"fp32", "none"}}),
       [](RunRequest& r, const std::string& v) { r.run.train.master_weights = v == "fp32"; },
       [](const RunRequest& r) -> std::optional<std::string> {
         return std::string(r.run.train.master_weights ? "fp32" : "none");
       }},
      {training({"optimizer-in-backward", K::Flag,
                 "step each parameter during backward and free its gradient (torchtune optimizer_in_bwd)"}),
       [](RunRequest& r, const std::string& v) { r.run.train.optimizer_in_backward = v == "true"; },
       [](const RunRequest& r) -> std::optional<std::string> { return flag(r.run.train.optimizer_in_backward); }},
      {training(
           {"overlap-grad-reduce", K::Flag,
            "overlap the data-parallel gradient reduction with backward (Megatron --overlap-grad-reduce, DeepSpeed "
            "overlap_comm); --no-overlap-grad-reduce blocks; default: the framework's"}),
       [](RunRequest& r, const std::string& v) { r.run.train.overlap_grad_reduce = v == "true"; },
       // Unset: whether the framework overlaps the reduction at the run's ZeRO stage (DeepSpeed's overlap_comm is
       // off for stages 1-2 and on for 3), as the step graph and the fast estimate ask it.
       [](const RunRequest& r) -> std::optional<std::string> {
         const auto& t = r.run.train;
         return flag(
             !grad_reduce_on_compute_stream(framework_profile(t.framework), t.zero_stage, t.overlap_grad_reduce));
       }},
      {training({"overlap-param-gather", K::Flag,
                 "overlap ZeRO-1/2's parameter all-gather with the next forward (Megatron --overlap-param-gather)"}),
       [](RunRequest& r, const std::string& v) { r.run.train.overlap_param_gather = v == "true"; },
       [](const RunRequest& r) -> std::optional<std::string> { return flag(r.run.train.overlap_param_gather); }},
      {training({"offload-pin-memory", K::Flag,
                 "page-lock the host gradient buffers of ZeRO-Offload (DeepSpeed offload_optimizer.pin_memory); "
                 "--no-offload-pin-memory keeps them pageable; default: the framework's"}),
       [](RunRequest& r, const std::string& v) { r.run.train.offload_pin_memory = v == "true"; },
       [](const RunRequest& r) -> std::optional<std::string> { return flag(r.run.train.offload_pin_memory); }},
      {training({"finetune", K::Choice, "kind of fine-tuning (implies workload finetune)", finetune_names()}),
       [](RunRequest& r, const std::string& v) {
         r.run.train.finetune = to_enum<FinetuneKind>(v);
         if (!r.was_given("workload")) r.run.workload = Workload::Finetune;
       },
       [](const RunRequest& r) -> std::optional<std::string> { return std::string(name_of(r.run.train.finetune)); }},
      {training({"lora-rank",
                 K::PositiveInt,
                 "LoRA rank (implies --finetune lora unless --qlora)",
                 {},
                 kMaxTokens,
                 kWhyTokens}),
       [](RunRequest& r, const std::string& v) {
         r.run.train.lora_rank = to_int(v);
         if (r.run.train.finetune == FinetuneKind::Full && !r.was_given("finetune")) {
           r.run.train.finetune = FinetuneKind::Lora;
           if (!r.was_given("workload")) r.run.workload = Workload::Finetune;
         }
       },
       [](const RunRequest& r) -> std::optional<std::string> {
         return r.run.train.lora_rank > 0 ? std::optional<std::string>(std::to_string(r.run.train.lora_rank))
                                          : std::nullopt;
       }},
      {training({"lora-targets", K::List,
                 "comma-separated projections with adapters (q,k,v,o,gate,up,down, the model's module names such as "
                 "q_proj or c_attn, or all-linear; default all)",
                 lora_target_spellings()}),
       [](RunRequest& r, const std::string& v) {
         r.run.train.lora_targets = canonical_lora_targets(split_list(v)).value_or(std::vector<std::string>{});
       },
       [](const RunRequest& r) -> std::optional<std::string> {
         return r.run.train.lora_targets.empty() ? std::nullopt
                                                 : std::optional<std::string>(join(r.run.train.lora_targets, ","));
       }},
      {training(
           {"qlora", K::Flag, "QLoRA: NF4 base with double quantization + LoRA adapters (rank 64 unless --lora-rank)"}),
       [](RunRequest& r, const std::string& v) {
         if (v != "true") return;
         r.run.train.finetune = FinetuneKind::Qlora;
         if (r.run.train.lora_rank == 0) r.run.train.lora_rank = kQloraDefaultRank;
         if (!r.was_given("workload")) r.run.workload = Workload::Finetune;
       },
       [](const RunRequest& r) -> std::optional<std::string> {
         return flag(r.run.train.finetune == FinetuneKind::Qlora);
       }},
      {training({"framework", K::Choice, "training framework whose memory/time behaviour applies",
                 training_framework_names()}),
       [](RunRequest& r, const std::string& v) { r.run.train.framework = to_enum<Framework>(v); },
       [](const RunRequest& r) -> std::optional<std::string> { return std::string(name_of(r.run.train.framework)); }},
      {inference({"engine", K::Choice,
                  "inference engine whose batching, memory and time behaviour applies (hf: transformers generate, "
                  "static batching; also 'static')",
                  engine_names()}),
       [](RunRequest& r, const std::string& v) {
         Framework f{};
         parse_engine(v, f);  // validate_value admitted only engine names
         r.run.infer.framework = f;
       },
       [](const RunRequest& r) -> std::optional<std::string> { return std::string(name_of(r.run.infer.framework)); }},
      {training({"pipeline-schedule", K::Choice, "pipeline schedule with pp > 1 (1f1b is interleaved when vp > 1)",
                 pipeline_schedule_names()}),
       [](RunRequest& r, const std::string& v) { r.run.train.schedule = to_enum<PipelineSchedule>(v); },
       [](const RunRequest& r) -> std::optional<std::string> { return std::string(name_of(r.run.train.schedule)); }},
      {inference({"batch", K::PositiveInt, "inference: concurrent sequences", {}, kMaxSequences, kWhySequences}),
       [](RunRequest& r, const std::string& v) {
         r.run.infer.batch = to_int(v);
         if (!r.was_given("workload")) r.run.workload = Workload::Inference;
       },
       [](const RunRequest& r) -> std::optional<std::string> { return std::to_string(r.run.infer.batch); }},
      {inference({"input-len", K::PositiveInt, "inference: prompt tokens per sequence", {}, kMaxTokens, kWhyTokens}),
       [](RunRequest& r, const std::string& v) {
         r.run.infer.input_len = to_int(v);
         if (!r.was_given("workload")) r.run.workload = Workload::Inference;
       },
       [](const RunRequest& r) -> std::optional<std::string> { return std::to_string(r.run.infer.input_len); }},
      {inference(
           {"output-len", K::PositiveInt, "inference: generated tokens per sequence", {}, kMaxTokens, kWhyTokens}),
       [](RunRequest& r, const std::string& v) {
         r.run.infer.output_len = to_int(v);
         if (!r.was_given("workload")) r.run.workload = Workload::Inference;
       },
       [](const RunRequest& r) -> std::optional<std::string> { return std::to_string(r.run.infer.output_len); }},
      {{"weight-quant", K::Choice,
        "weight storage format or quantization method (inference; or the frozen base under LoRA); also gguf:TYPE "
        "(llama.cpp file types such as Q4_K_M) and exl2:BITS (ExLlamaV2, e.g. exl2:4.0)",
        model::weight_quant_spellings()},
       [](RunRequest& r, const std::string& v) {
         std::string why;
         r.run.infer.block_format = model::parse_block_format(v, why);
         if (r.run.infer.block_format) {
           // Stored as its blocks, run by the kernels of its family (model/block_format.h).
           r.run.infer.weight_quant = model::kernel_format(*r.run.infer.block_format);
           r.run.train.base_quant = r.run.infer.weight_quant;
           return;
         }
         model::parse_weight_quant(v, r.run.infer.weight_quant);
         model::parse_weight_quant(v, r.run.train.base_quant);
       },
       [](const RunRequest& r) -> std::optional<std::string> {
         if (r.run.workload == Workload::Inference && r.run.infer.block_format) return r.run.infer.block_format->text();
         return std::string(model::weight_quant_name(r.run.workload == Workload::Inference ? r.run.infer.weight_quant
                                                                                           : r.run.train.base_quant));
       }},
      {inference({"kv-dtype",
                  K::Choice,
                  "inference KV-cache element type (fp4: NVFP4, Blackwell; int8 / int4: quantized KV caches such as "
                  "LMDeploy's quant_policy)",
                  {"bf16", "fp16", "fp8", "int8", "int4", "fp4"}}),
       [](RunRequest& r, const std::string& v) { r.run.infer.kv_dtype = to_dtype(v); },
       [](const RunRequest& r) -> std::optional<std::string> { return std::string(dtype_name(r.run.infer.kv_dtype)); }},
      {inference({"engine-version", K::Release,
                  "the engine release the run uses (e.g. 0.6.3): TGI before 2.0.0 runs without CUDA graphs, vLLM "
                  "before 0.8.0 on its V0 engine, HF transformers before 4.45.0 computes the logits of every prompt "
                  "position and before 4.48.0 expands K and V to the query heads in Mistral-derived models' flash "
                  "attention (default: the profile's current release)"}),
       [](RunRequest& r, const std::string& v) { r.run.infer.engine_version = parse_version(v); },
       [](const RunRequest& r) -> std::optional<std::string> {
         return r.run.infer.engine_version ? std::optional<std::string>(to_string(*r.run.infer.engine_version))
                                           : std::nullopt;
       }},
      {inference(
           {"max-model-len",
            K::PositiveInt,
            "engine: the context it serves (vLLM --max-model-len; default the model's): longer requests are refused, "
            "vLLM V0 sizes its token budget from it",
            {},
            kMaxTokens,
            kWhyTokens}),
       [](RunRequest& r, const std::string& v) { r.run.infer.max_model_len = to_int(v); },
       [](const RunRequest& r) -> std::optional<std::string> {
         return r.run.infer.max_model_len > 0 ? std::optional<std::string>(std::to_string(r.run.infer.max_model_len))
                                              : std::nullopt;
       }},
      {inference({"gpu-layers",
                  K::NonNegativeInt,
                  "llama.cpp --n-gpu-layers: the last N layers on the GPU, the others (and the output layer unless N "
                  "exceeds the layers) in host memory, computed by the CPU at decode (default: all on the GPU)",
                  {},
                  100000,
                  "more layers than any model has"}),
       [](RunRequest& r, const std::string& v) { r.run.infer.gpu_layers = to_int(v); },
       [](const RunRequest& r) -> std::optional<std::string> {
         return r.run.infer.gpu_layers >= 0 ? std::optional<std::string>(std::to_string(r.run.infer.gpu_layers))
                                            : std::nullopt;
       }},
      {inference({"speculative", K::Choice,
                  "speculative decoding's drafter: a draft model (--draft-model), an EAGLE head or the model's MTP "
                  "module (docs/serving.md)",
                  spec_method_names()}),
       [](RunRequest& r, const std::string& v) { r.run.infer.speculative.method = to_enum<SpecMethod>(v); },
       [](const RunRequest& r) -> std::optional<std::string> {
         return std::string(name_of(r.run.infer.speculative.method));
       }},
      {inference({"spec-tokens",
                  K::PositiveInt,
                  "speculative decoding: draft tokens per step (k; default 1 for mtp)",
                  {},
                  16,
                  "a verify step of more than 17 positions is outside the published configurations"}),
       [](RunRequest& r, const std::string& v) { r.run.infer.speculative.tokens = to_int(v); },
       [](const RunRequest& r) -> std::optional<std::string> {
         return r.run.infer.speculative.tokens > 0
                    ? std::optional<std::string>(std::to_string(r.run.infer.speculative.tokens))
                    : std::nullopt;
       }},
      {inference({"spec-acceptance", K::Fraction,
                  "speculative decoding: probability a draft token is accepted given its predecessors were (alpha; "
                  "default 0.85 for mtp)"}),
       [](RunRequest& r, const std::string& v) { r.run.infer.speculative.acceptance = std::stod(v); },
       [](const RunRequest& r) -> std::optional<std::string> {
         return r.run.infer.speculative.acceptance >= 0
                    ? std::optional<std::string>(fmt::format("{}", r.run.infer.speculative.acceptance))
                    : std::nullopt;
       }},
      {inference({"draft-model", K::Text, "speculative decoding: the draft model (preset name or config.json path)"}),
       [](RunRequest& r, const std::string& v) { r.run.infer.speculative.draft_model = v; },
       [](const RunRequest& r) -> std::optional<std::string> {
         return r.run.infer.speculative.draft_model.empty()
                    ? std::nullopt
                    : std::optional<std::string>(r.run.infer.speculative.draft_model);
       }},
  };
  return settings;
}

std::vector<std::string> setting_names() {
  std::vector<std::string> n;
  for (const auto& s : table()) n.push_back(s.info.name);
  return n;
}

// Checks `value` against the setting's rule; returns the canonical text.
std::string checked_value(const SettingInfo& info, const std::string& value, const Location& where, ErrorKind kind) {
  const auto fail = [&](const std::string& rule) {
    throw Error(kind, where, fmt::format("{} = '{}': {}", info.name, value, rule));
  };
  switch (info.kind) {
    case SettingKind::Text:
      if (value.empty()) fail("must not be empty");
      return value;
    case SettingKind::PositiveInt:
    case SettingKind::NonNegativeInt: {
      std::int64_t x = 0;
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), x);
      if (ec != std::errc() || end != value.data() + value.size()) fail("must be an integer");
      if (info.kind == SettingKind::PositiveInt && x <= 0) fail("must be > 0");
      if (x < 0) fail("must be >= 0");
      if (info.max > 0 && x > info.max) fail(fmt::format("must be <= {} ({})", info.max, info.max_why));
      return value;
    }
    case SettingKind::Flag:
      if (value != "true" && value != "false") fail("must be true or false");
      return value;
    case SettingKind::Choice:
      if (std::find(info.choices.begin(), info.choices.end(), value) == info.choices.end()) {
        // Accept the measured-run schema's aliases (megatron-lm, nemo, train) where parse_name does.
        Framework f{};
        Workload w{};
        if (info.name == "framework" && parse_name(value, f) && is_training_framework(f)) return value;
        if (info.name == "engine" && parse_engine(value, f)) return value;
        if (info.name == "workload" && parse_name(value, w)) return value;
        if (info.name == "weight-quant" && model::is_block_format_text(value)) {
          std::string why;
          if (model::parse_block_format(value, why)) return value;
          fail(why);
        }
        // Training frameworks and inference engines are separate settings: say which one a name belongs to.
        if (info.name == "framework" && parse_engine(value, f))
          fail("'" + value +
               "' is an inference engine: give it as --engine (infer, serve, memory --workload inference)");
        if (info.name == "engine" && parse_name(value, f))
          fail("'" + value + "' is a training framework: give it as --framework (train, search train, memory)");
        fail(one_of(value, info.choices));
      }
      return value;
    case SettingKind::Release:
      if (!parse_version(value)) fail("must be a release number such as 0.6.3 or v2.0");
      return value;
    case SettingKind::Fraction: {
      const std::optional<double> x = parse_finite(value);
      if (!x || *x < 0 || *x > 1) fail("must be a number from 0 to 1");
      return value;
    }
    case SettingKind::PositiveNumber: {
      const std::optional<double> x = parse_finite(value);
      if (!x || *x <= 0) fail("must be a number > 0");
      if (info.max > 0 && *x > static_cast<double>(info.max))
        fail(fmt::format("must be <= {} ({})", info.max, info.max_why));
      return value;
    }
    case SettingKind::Ratio: {
      const std::optional<double> x = parse_finite(value);
      if (!x || *x < 1 || *x > 1e6) fail("must be a number from 1 to 1e6 (a ratio to the mean)");
      return value;
    }
    case SettingKind::List:
      for (const auto& item : split_list(value))
        if (std::find(info.choices.begin(), info.choices.end(), item) == info.choices.end())
          fail("'" + item + "' is not one of " + join(info.choices) + did_you_mean(item, info.choices));
      if (split_list(value).empty()) fail("must name at least one of " + join(info.choices));
      return value;
  }
  return value;
}

}  // namespace

const std::vector<SettingInfo>& run_settings() {
  static const std::vector<SettingInfo> infos = [] {
    std::vector<SettingInfo> v;
    for (const auto& s : table()) v.push_back(s.info);
    return v;
  }();
  return infos;
}

std::vector<std::pair<const SettingInfo*, std::optional<std::string>>> setting_values(const RunRequest& req) {
  std::vector<std::pair<const SettingInfo*, std::optional<std::string>>> out;
  const auto& infos = run_settings();
  const auto& settings = table();
  for (std::size_t i = 0; i < settings.size(); ++i) out.emplace_back(&infos[i], settings[i].get(req));
  return out;
}

bool applies_to(const SettingInfo& info, Workload workload) {
  switch (info.scope) {
    case SettingScope::Any: return true;
    case SettingScope::Training: return workload != Workload::Inference;
    case SettingScope::Inference: return workload == Workload::Inference;
  }
  return true;
}

const SettingInfo* find_setting(const std::string& name) {
  for (const auto& s : run_settings())
    if (s.name == name) return &s;
  return nullptr;
}

void apply_setting(RunRequest& req, const std::string& name, const std::string& value, const Location& where,
                   ErrorKind kind) {
  for (const auto& s : table()) {
    if (s.info.name != name) continue;
    s.apply(req, checked_value(s.info, value, where, kind));
    if (!req.was_given(name)) req.given.push_back(name);
    return;
  }
  throw Error(kind, where, "unknown setting '" + name + "'" + did_you_mean(name, setting_names()));
}

void apply_run_toml(RunRequest& req, const std::string& path) {
  const toml::table root = parse_toml_file(path);
  // Settings apply in file order (their side effects, e.g. lora-rank implying LoRA, follow the text);
  // the front end applies command-line settings afterwards so that they win.
  std::vector<std::pair<std::string, const toml::node*>> entries;
  for (const auto& [k, node] : root) entries.emplace_back(std::string(k.str()), &node);
  std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
    return a.second->source().begin.line < b.second->source().begin.line;
  });
  for (const auto& [key, node] : entries) {
    Location where{.file = path, .line = static_cast<int>(node->source().begin.line), .key = key};
    std::string text;
    if (node->is_string())
      text = *node->value<std::string>();
    else if (node->is_integer())
      text = std::to_string(*node->value<std::int64_t>());
    else if (node->is_boolean())
      text = *node->value<bool>() ? "true" : "false";
    else if (node->is_array()) {
      // Only list settings take arrays: `model = ["a", "b"]` is no model called "a,b".
      const auto& settings = run_settings();
      const auto info =
          std::find_if(settings.begin(), settings.end(), [&](const SettingInfo& i) { return i.name == key; });
      if (info != settings.end() && info->kind != SettingKind::List)
        throw_input(where,
                    key + ": expected one value, got an array (only list settings such as lora-targets take arrays)");
      for (const auto& el : *node->as_array()) {
        if (!el.is_string()) throw_input(where, key + ": expected an array of strings");
        text += (text.empty() ? "" : ",") + *el.value<std::string>();
      }
    } else {
      throw_input(where, key + ": expected a string, integer, boolean or array of strings");
    }
    apply_setting(req, key, text, where, ErrorKind::Input);
  }
}

void apply_checkpoint_format(RunRequest& req, const model::ModelSpec& m) {
  if (!req.was_given("weight-quant") && m.quant.format != model::WeightQuant::None)
    req.run.infer.weight_quant = m.quant.format;
  // An engine that computes in one dtype only (the local engines: FP16) runs in it unless --precision says.
  if (const auto& e = engine_profile(req.run.infer.framework); !req.was_given("precision") && e.compute_precision) {
    req.run.infer.precision = *e.compute_precision;
    if (!req.was_given("kv-dtype")) req.run.infer.kv_dtype = *e.compute_precision;
  }
}

}  // namespace llmsim::sim
