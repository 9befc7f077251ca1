#pragma once
// What to simulate: the immutable run specification (parallelism, training or inference settings)
// built at the edge from CLI flags, a run TOML or a measured-run row. Evaluators take it with the
// model and system specs and return results.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "llmsim/core/dtype.h"
#include "llmsim/core/version.h"
#include "llmsim/hardware/attention_kernel.h"
#include "llmsim/model/block_format.h"
#include "llmsim/model/model_spec.h"

namespace llmsim::sim {

enum class Workload { Pretrain, Finetune, Inference };
enum class Recompute { None, Selective, Full };
enum class Offload { None, Optimizer, OptimizerParams };  // ZeRO-Offload / ZeRO-Infinity to host memory
enum class FinetuneKind { Full, Lora, Qlora };
enum class Optimizer { Adam, Adam8bit, Sgd };  // Adam = AdamW with fp32 master weights
// How PyTorch's AdamW runs its step (torch/optim/adamw.py): fused (one kernel updates in place: torch
// fused=True, apex / Transformer Engine / DeepSpeed FusedAdam), foreach (_multi_tensor_adamw, torch's
// default on CUDA since 2.0: `torch._foreach_sqrt(exp_avg_sqs)` allocates a copy of every v of a
// device/dtype group before the update), for-loop (_single_tensor_adamw, transformers' own AdamW: one
// tensor's `exp_avg_sq.sqrt()` at a time).
enum class OptimizerImpl { Fused, Foreach, ForLoop };
// Pipeline schedule: GPipe (all forwards, then all backwards) or 1F1B (interleaved when vp > 1).
enum class PipelineSchedule { OneFOneB, GPipe };
// How variable-length training samples fill a step's sequences (the measured-run schema's `padding`):
// max = each padded to seq_len (one sample per sequence of seq_len); batch = padded to the longest sample
// of its micro-batch; none = packed end to end into sequences of seq_len.
enum class SamplePadding { Max, Batch, None };
// Speculative decoding's drafter: a smaller model (draft), an EAGLE head, or a model's own multi-token
// prediction module (MTP, DeepSeek-V3).
enum class SpecMethod { None, Draft, Eagle, Mtp };
// Training frameworks, and inference engines (continuous batching, paged or token-granular KV cache).
enum class Framework {
  Megatron,
  DeepSpeed,
  Fsdp,
  Hf,
  Vllm,
  Tgi,
  LightLlm,
  TrtLlm,
  FasterTransformer,
  LmDeploy,
  Sglang,
  // Local and consumer engines (issue 40): one request at a time on one desktop's GPUs.
  LlamaCpp,
  ExLlamaV2,
  MlcLlm,
  TinyChat,
  AutoAwq
};

// Names as used on the CLI, in run TOML files and in measured-run CSVs.
std::string_view name_of(Workload v);
std::string_view name_of(Recompute v);
std::string_view name_of(Offload v);
std::string_view name_of(FinetuneKind v);
std::string_view name_of(Optimizer v);
std::string_view name_of(OptimizerImpl v);
std::string_view name_of(PipelineSchedule v);
std::string_view name_of(Framework v);
std::string_view name_of(SpecMethod v);
std::string_view name_of(SamplePadding v);
std::vector<std::string> workload_names();
std::vector<std::string> recompute_names();
std::vector<std::string> offload_names();
std::vector<std::string> finetune_names();
std::vector<std::string> optimizer_names();
std::vector<std::string> optimizer_impl_names();
std::vector<std::string> pipeline_schedule_names();
std::vector<std::string> framework_names();
std::vector<std::string> spec_method_names();
std::vector<std::string> sample_padding_names();
// Whether a framework trains (Megatron, DeepSpeed, FSDP, HF) rather than serves (the engines).
bool is_training_framework(Framework f);
// The training frameworks' names, in enum order: they come first in Framework, so a name's index is
// its enum value (the search's framework axis relies on it).
std::vector<std::string> training_framework_names();
// The inference engines' names (every framework that does not train), in enum order.
std::vector<std::string> inference_framework_names();
// What `--engine` names: the inference engines, hf (transformers generate(), static batching) and deepspeed
// (DeepSpeed-Inference), in enum order of the framework each stands for.
std::vector<std::string> engine_names();
// An engine name (engine_names(), "static" for hf, or an alias parse_name takes); false for an unknown name
// and for a framework that only trains (megatron, fsdp).
bool parse_engine(std::string_view s, Framework& out);
// Other spellings parse_name(Framework) accepts, and the name each stands for.
const std::vector<std::pair<std::string, std::string>>& framework_aliases();
// Parse a name; false when unknown (the caller reports the error with its location).
bool parse_name(std::string_view s, Workload& out);
bool parse_name(std::string_view s, Recompute& out);
bool parse_name(std::string_view s, Offload& out);
bool parse_name(std::string_view s, FinetuneKind& out);
bool parse_name(std::string_view s, Optimizer& out);
bool parse_name(std::string_view s, OptimizerImpl& out);
bool parse_name(std::string_view s, PipelineSchedule& out);
bool parse_name(std::string_view s, Framework& out);
bool parse_name(std::string_view s, SpecMethod& out);
bool parse_name(std::string_view s, SamplePadding& out);

struct ParallelSpec {
  std::int64_t gpus = 1;           // total GPUs
  std::int64_t tp = 1;             // tensor parallel
  std::int64_t pp = 1;             // pipeline parallel
  std::int64_t dp = 0;             // data parallel; 0 = derived as gpus / (tp*pp*cp)
  std::int64_t cp = 1;             // context parallel
  std::int64_t ep = 1;             // expert parallel (within dp)
  std::int64_t vp = 1;             // virtual pipeline stages per GPU (interleaved 1F1B)
  bool sequence_parallel = false;  // Megatron sequence parallelism (needs tp > 1 to matter)
  // Expert parallelism: routed tokens on the busiest expert-parallel rank over the mean (1 = balanced). A
  // training step and an inference iteration wait for that rank's expert GEMMs and its dispatch / combine
  // traffic (model::on_busiest_expert_rank, the one rule).
  double expert_imbalance = 1;
};

// QLoRA's adapter rank when a run does not give one: r = 64 on every linear layer (Dettmers et al. 2023,
// Sec. 4 / qlora.py --lora_r 64).
inline constexpr std::int64_t kQloraDefaultRank = 64;

// LoRA adapter placement: names of the linear projections that get adapters.
// Valid: q, k, v, o, gate, up, down (default: all of them, as QLoRA does).
std::vector<std::string> lora_target_names();
// The projections a LoRA target names, as users write them: the names above, a model's own module names
// (Llama's q_proj ... down_proj, GPT-2's c_attn / c_fc, GPT-NeoX and Falcon's query_key_value,
// dense_h_to_4h, dense_4h_to_h, Mixtral's w1 / w2 / w3, Meta's wq ... wo) or "all-linear" (PEFT: every
// linear layer but the output head); empty when `name` is none of those. A fused module names several.
std::vector<std::string> lora_projections(std::string_view name);
// Every spelling lora_projections takes.
std::vector<std::string> lora_target_spellings();
// The canonical target list of a list of spellings (each expanded, duplicates dropped, in
// lora_target_names() order); empty when every projection is named (the default). Unknown names: nullopt.
std::optional<std::vector<std::string>> canonical_lora_targets(const std::vector<std::string>& names);

struct TrainSpec {
  std::int64_t micro_batch = 1;   // sequences per micro-batch per data-parallel rank
  std::int64_t global_batch = 0;  // sequences per optimizer step (0 = micro_batch * dp)
  std::int64_t seq_len = 2048;    // tokens per sequence
  DType precision = DType::BF16;  // compute / activation precision
  Recompute recompute = Recompute::None;
  bool flash_attn = true;
  AttentionKernel attn_kernel = AttentionKernel::Fa2;  // which fused kernel, when flash_attn
  // Fused cross-entropy (flash-attn's CrossEntropyLoss, Liger, Megatron's vocab-parallel loss): the
  // logits stay in the compute dtype and are never copied to fp32; false = the framework's own loss.
  bool fused_loss = false;
  int zero_stage = 0;  // 0..3 (FSDP FULL_SHARD = 3, SHARD_GRAD_OP = 2)
  Offload offload = Offload::None;
  Optimizer optimizer = Optimizer::Adam;
  // Element type of Adam's m and v; unset = fp32, or under pure 16-bit training the weights' own type
  // (torch.optim.AdamW allocates states like the parameters). bf16 with master weights is Megatron-LM's
  // precision-aware optimizer (--exp-avg-dtype / --exp-avg-sq-dtype bf16).
  std::optional<DType> optimizer_state_dtype;
  // How the AdamW step runs; unset = the framework's (FrameworkProfile::optimizer_impl). Changes the
  // step's transient memory (optimizer_step_copy_bytes).
  std::optional<OptimizerImpl> optimizer_impl;
  // false = pure 16-bit training: no fp32 master copy; the optimizer updates the 16-bit weights in place
  // and gradients are kept in the compute dtype (torchtune dtype=bf16, HF models loaded in bf16).
  bool master_weights = true;
  // The optimizer steps each parameter inside backward as soon as its gradient is complete and frees
  // that gradient (torchtune optimizer_in_bwd via register_post_accumulate_grad_hook): about one
  // tensor's gradient is live at a time. Needs one micro-batch per step (no gradient accumulation).
  bool optimizer_in_backward = false;
  // Data-parallel gradient reduction overlapped with backward (Megatron --overlap-grad-reduce,
  // DeepSpeed overlap_comm); unset = the framework's default (framework_profile.cpp). ZeRO-3 always
  // overlaps.
  std::optional<bool> overlap_grad_reduce;
  // ZeRO-1/2's parameter all-gather after the optimizer step overlapped with the next step's forward
  // (Megatron --overlap-param-gather): only what the first micro-batch's forward cannot hide is exposed.
  bool overlap_param_gather = false;
  // ZeRO-Offload: the host gradient buffers are page-locked (DeepSpeed offload_optimizer.pin_memory);
  // unset = the framework's default (FrameworkProfile::offload).
  std::optional<bool> offload_pin_memory;
  FinetuneKind finetune = FinetuneKind::Full;
  std::int64_t lora_rank = 0;             // > 0 for lora / qlora
  std::vector<std::string> lora_targets;  // empty = all linear projections
  // With recompute full: the layers per pipeline stage whose activations are recomputed (Megatron
  // --recompute-num-layers with --recompute-method block); 0 = every layer. Fewer than a stage holds is not
  // modelled (feasibility says so).
  std::int64_t recompute_layers = 0;
  // Variable-length samples: their mean tokens (seq_len is then the longest, truncated there); 0 = every
  // sample is seq_len tokens. `padding` says how they fill sequences (sim/run/sample_lengths.h).
  double tokens_per_sample = 0;
  SamplePadding padding = SamplePadding::Max;
  // Storage of the frozen base's linear weights under LoRA: none = 16-bit; int8 (LLM.int8()), nf4
  // (QLoRA implies it), int4, fp8. Dequantized before every base GEMM.
  model::WeightQuant base_quant = model::WeightQuant::None;
  Framework framework = Framework::DeepSpeed;
  PipelineSchedule schedule = PipelineSchedule::OneFOneB;  // with pp > 1
};

// Speculative decoding (Leviathan et al. 2023, arXiv:2211.17192; vLLM --speculative-config, TensorRT-LLM,
// SGLang): a cheap drafter proposes `tokens` tokens one after another; the target model verifies them in
// one forward pass over 1 + tokens positions and keeps the longest accepted prefix plus one token of its
// own. `acceptance` is the probability a draft token is accepted given that its predecessors were (the
// paper's alpha; docs/serving.md lists published values).
struct SpeculativeSpec {
  SpecMethod method = SpecMethod::None;
  std::int64_t tokens = 0;  // draft tokens per step (k); 0: the method's default (MTP: 1)
  double acceptance = -1;   // alpha in [0, 1]; < 0: the method's default (MTP: 0.85), or none
  std::string draft_model;  // SpecMethod::Draft: the drafter's preset name or config path
  // SpecMethod::Draft: the draft model, resolved where files are read (the CLI); an EAGLE head or an MTP
  // module is built from the target's own dimensions (infer/speculative.h).
  std::shared_ptr<const model::ModelSpec> draft;
  bool on() const { return method != SpecMethod::None; }
};

// Expected tokens one verify step emits with k draft tokens at acceptance alpha:
// (1 - alpha^(k+1)) / (1 - alpha) (Leviathan et al. 2023, Eq. 1); k + 1 at alpha = 1.
double expected_tokens_per_step(std::int64_t k, double alpha);

struct InferSpec {
  std::int64_t batch = 1;         // concurrent sequences
  std::int64_t input_len = 512;   // prompt tokens per sequence
  std::int64_t output_len = 128;  // generated tokens per sequence
  DType precision = DType::BF16;  // activation / compute precision
  model::WeightQuant weight_quant = model::WeightQuant::None;
  // A weight format stated with its exact storage (gguf:Q4_K_M, exl2:4.0; model/block_format.h): its stored
  // bits price the weights, and weight_quant holds the kernel format that runs it (kernel_format).
  std::optional<model::BlockFormat> block_format;
  // llama.cpp's --n-gpu-layers: the last N layers on the GPU, the rest in host memory (layer_offload below);
  // -1: every layer and the output layer on the GPU.
  std::int64_t gpu_layers = -1;
  DType kv_dtype = DType::BF16;                        // KV cache element type (bf16, fp16, fp8)
  AttentionKernel attn_kernel = AttentionKernel::Fa2;  // the fused prefill attention kernel
  Framework framework = Framework::Hf;  // engine family for workspace rules (vllm etc. arrive with serving)
  // The engine release the run used; nullopt: the release the engine's profile describes (its current one).
  // Engines changed defaults between releases (sim/run/engine_profile.cpp released_profile).
  std::optional<Version> engine_version;
  // The context the engine serves (vLLM --max-model-len, TGI --max-total-tokens); 0: the model's own.
  // Longer requests are refused; vLLM V0 sizes its token budget and memory profiling from it.
  std::int64_t max_model_len = 0;
  SpeculativeSpec speculative;  // decode steps with a drafter (none by default)
  // Multi-LoRA serving: the rank of the requests' LoRA adapters (0: the base model alone) and the projections
  // they adapt (empty: every linear projection; sim::lora_target_names()).
  std::int64_t adapter_rank = 0;
  std::vector<std::string> adapter_targets;
};

// Where llama.cpp keeps a model of `layers` layers under --n-gpu-layers N (src/llama-model.cpp load_tensors:
// i_gpu_start = max(n_layer - N, 0), so the last N layers go to the GPU; the output layer goes with layer n_layer,
// i.e. to the GPU only when N exceeds the layers; the token embedding stays on the CPU either way, where its
// row lookup costs nothing to speak of).
struct LayerOffload {
  std::int64_t cpu_layers = 0;  // layers in host memory, computed by the CPU at decode
  bool head_on_cpu = false;     // the output layer (LM head) in host memory
  bool any() const { return cpu_layers > 0 || head_on_cpu; }
};
LayerOffload layer_offload(const InferSpec& in, std::int64_t layers);

// The bytes of the whole token-embedding and output-layer tables as the run's weight format stores them (a block
// format's own types, else the format's rest, InferenceWeightBytes::other).
struct TableBytes {
  double embedding = 0, head = 0;
};
TableBytes table_bytes(const model::ModelSpec& m, const InferSpec& in, const model::InferenceWeightBytes& wb);

// Where an engine that keeps weights in host memory (EngineProfile::host_layers: llama.cpp) puts a stage's: the
// token embedding always in host memory, the first layers and the output layer by layer_offload. `weights`: what
// the stage holds as inference_weight_bytes prices it; `embedding` / `output`: whether the stage holds the token
// embedding / the output layer (a tied table is counted once, as the embedding, on a stage that holds both; the
// GPU's output layer is a copy of its own). The one rule of the memory model and the inference iteration cost.
struct WeightResidence {
  double gpu = 0, host = 0;
  double host_layer_share = 0;  // the share of the layers (and of their KV cache) in host memory
};
WeightResidence weight_residence(const model::ModelSpec& m, const InferSpec& in, const model::InferenceWeightBytes& wb,
                                 double weights, bool embedding, bool output);

// The weight format as a run names it: the block format ("gguf:Q4_K_M") when one is stated, else weight_quant's.
std::string weight_format_name(const InferSpec& in);

// The context an engine serves: the run's max_model_len when set (never beyond the model's), else the
// model's maximum positions (0 = unbounded). The one rule for request rejection, engine token budgets
// and inference feasibility.
inline std::int64_t served_context(std::int64_t model_positions, const InferSpec& in) {
  if (in.max_model_len <= 0) return model_positions;
  return model_positions > 0 && model_positions < in.max_model_len ? model_positions : in.max_model_len;
}
// Whether served_context is the engine's limit (a max_model_len below the model's context, or on a model
// without one) rather than the model's: what the messages about refused requests name.
inline bool context_is_engines(std::int64_t model_positions, const InferSpec& in) {
  return in.max_model_len > 0 && (model_positions <= 0 || in.max_model_len < model_positions);
}

struct RunSpec {
  Workload workload = Workload::Pretrain;
  ParallelSpec par;
  TrainSpec train;  // pretrain / finetune
  InferSpec infer;  // inference
};

// Fills derived fields: dp = gpus / (tp*pp*cp) when dp is 0, global_batch = micro_batch*dp when 0.
RunSpec with_defaults(RunSpec run);

// Micro-batches each data-parallel rank runs per optimizer step: global batch / (micro-batch x dp), for a
// run with with_defaults applied (0 when the sizes are not set).
std::int64_t micro_batches_per_step(const RunSpec& run);

}  // namespace llmsim::sim
