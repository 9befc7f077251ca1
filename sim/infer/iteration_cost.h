#pragma once
// Time of one inference-engine iteration (one forward pass over a batch that mixes prefill chunks and
// decode steps) on one model replica: the layer GEMMs over all batched tokens, attention per sequence
// (FlashAttention-style causal prefill; memory-bound decode reading each sequence's KV cache), TP
// collectives, the LM head over the sequences that sample, and a per-iteration engine overhead.
// Weight-only quantized formats (int8, int4, nf4) are read packed by fused GEMM kernels; fp8 weights
// compute at the fp8 peak, or dequantized in the GEMM on a GPU without one (model::gemm_dtype). Built once per
// configuration, then called for every iteration.
#include <cstdint>
#include <vector>

#include "llmsim/core/interval.h"
#include "llmsim/cost/comm_cost.h"
#include "llmsim/cost/compute_cost.h"
#include "llmsim/hardware/system_spec.h"
#include "llmsim/model/model_spec.h"
#include "llmsim/run/lora_adapters.h"
#include "llmsim/run/run_spec.h"

namespace llmsim::sim {

// Per-kernel floor when an engine replays decode as CUDA graphs (vLLM, TensorRT-LLM): engineering
// assumption of ~1.5 us per graph node against ~5 us per stream launch (efficiency.kernel_launch_s).
inline constexpr double kCudaGraphKernelFloor_s = 1.5e-6;

// One sequence's share of an iteration.
struct SequenceWork {
  std::int64_t new_tokens = 1;  // tokens computed this iteration: a prefill chunk, or 1 for a decode step
  std::int64_t context = 0;     // tokens already in its KV cache before this iteration
  // Speculative decoding: the draft tokens this step verifies (new_tokens = 1 + draft_tokens), which the
  // drafter proposed one after another before it (EngineIterationCost prices both).
  std::int64_t draft_tokens = 0;
  // Multi-LoRA serving: the LoRA adapter of the sequence's request (-1: the base model alone).
  std::int64_t adapter = -1;
};

struct IterationOptions {
  double kernel_floor_s = -1;  // seconds per kernel at least (-1: the profile's launch overhead; CUDA graphs lower it)
  double overhead_s = 0;       // seconds of engine CPU work per iteration (scheduling, sampling, detokenising)
  double overhead_per_seq_s = 0;     // and per sequence in the iteration (EngineProfile::iteration_overhead_per_seq_s)
  Interval host_dispatch;            // host seconds per kernel the iteration issues from eager code, banded (0: a graph
                                     // replay or a C++ runtime; sim/cost/host_dispatch.h)
  Interval collective_host;          // host seconds per collective call beyond its launch, eager code only (likewise)
  model::EagerGlue glue;             // the engine's model code: fused kernels, or HF eager glue (HF generate)
  double kv_copy_passes = 0;         // whole-cache copies per layer per iteration the engine's cache code makes of each
                                     // sequence's K and V (HF: DynamicCache's torch.cat and the flash-attention unpad
                                     // gather, 2); paged engines write only the new tokens (0)
  bool repeat_kv_for_flash = false;  // with a model whose flash-attention class repeats K and V to the query
                                     // heads: that pass, and the copies after the first and the kernel's read
                                     // at group x the cache (EngineProfile::repeat_kv_for_flash)
  bool int8_dequantize_to_16bit = false;  // int8 weights: a dequantize kernel writes a 16-bit copy that a 16-bit
                                          // GEMM reads (EngineProfile::int8_dequantize_to_16bit)
  bool all_prompt_logits = false;         // the LM head and an fp32 upcast over every new token, not one per sequence
                                          // (EngineProfile::all_prompt_logits)
  bool fp16_accumulate = false;           // FP16 GEMMs accumulate in FP16 (EngineProfile::fp16_accumulate)
  // Layers in host memory (InferSpec::gpu_layers): from this many tokens an iteration copies their weights to the
  // GPU, in chunks of upload_chunk_tokens tokens, each chunk once (EngineProfile::host_layer_upload_min_tokens;
  // 0: the CPU computes them whatever the tokens).
  std::int64_t host_layer_upload_min_tokens = 0;
  std::int64_t upload_chunk_tokens = 0;
  bool embedding_on_host = false;  // the token embedding stays in host memory (EngineProfile::host_layers: llama.cpp)
  bool decode_split_kv = true;     // decode attention splits each sequence's keys over thread blocks (Flash-Decoding,
                                   // PagedAttention V2, TRT-LLM multi-block); false: one block per sequence and
                                   // query head streams its whole KV (FlashAttention-2 as HF transformers calls it)
  bool decode_kv_per_query_head = false;  // decode attention reads a KV head once per query head of its group, the
                                          // re-reads out of L2 (EngineProfile::decode_kv_per_query_head)
};

struct IterationCost {
  Interval time_s;              // the whole iteration
  Interval linear_s;            // GEMMs (projections, MLP/experts, LM head) incl. dequantisation
  Interval attention_s;         // attention kernels (prefill + decode)
  Interval comm_s;              // TP all-reduces, PP hand-offs
  Interval other_s;             // norms, RoPE, activations, residuals, embedding, sampling, overhead
  Interval host_wait_s;         // the GPU idle behind the host issuing the kernels (eager, host-bound iterations)
  Interval cpu_s;               // layers in host memory computed by the host CPU (llama.cpp --n-gpu-layers)
  double launches = 0;          // kernels the forward pass launches
  double collective_calls = 0;  // of which collective calls (each costs eager code collective_host beyond its launch)

  IterationCost& operator+=(const IterationCost& o);  // one iteration after another
};

class IterationCostModel {
 public:
  // `par`: tp and pp of one replica. `infer`: precision, weight_quant, kv_dtype.
  IterationCostModel(const model::ModelSpec& m, const hardware::SystemSpec& sys, const ParallelSpec& par,
                     const InferSpec& infer, const IterationOptions& opt = {});

  IterationCost iteration(const std::vector<SequenceWork>& batch) const;
  // Convenience: `batch` identical sequences.
  IterationCost uniform(std::int64_t batch, std::int64_t new_tokens, std::int64_t context) const;

  double kv_bytes_per_token() const { return kv_bytes_per_token_; }  // per GPU, all its layers
  // A sequence's recurrent state in the linear-attention layers, per GPU (model::linear_state_bytes_per_sequence).
  double state_bytes_per_sequence() const { return state_bytes_per_sequence_; }
  double weight_bytes_per_gpu() const { return weight_bytes_; }  // as stored (packed when quantized)
  // One LoRA adapter's A and B matrices on one GPU, all its layers (InferSpec::adapter_rank; 0 without).
  double adapter_bytes_per_gpu() const { return adapter_bytes_; }

 private:
  // Adds the linear-attention layers' recurrence for this batch (`layers` of them on this GPU) to `c`.
  void add_recurrence(const std::vector<SequenceWork>& batch, double layers, IterationCost& c) const;

  const model::ModelSpec& m_;  // must outlive the model (as the system copy below does by value)
  hardware::SystemSpec sys_;   // a copy: the engine's kernel floor replaces the launch overhead
  ParallelSpec par_;
  InferSpec in_;
  IterationOptions opt_;
  ComputeCost compute_;
  CommCost comm_;
  double kv_bytes_per_token_ = 0;
  double state_bytes_per_sequence_ = 0;
  double windowed_layers_ = 0;  // layers attending through the model's sliding window (ModelSpec::windowed_layers)
  double weight_bytes_ = 0;
  double adapter_bytes_ = 0;
  // Layers in host memory (InferSpec::gpu_layers; model-wide, one GPU): how many, and the bytes a token reads
  // from one such layer's weights (its routed experts apart, of which a token reads its top-k) and from the head.
  LayerOffload offload_;
  double layer_dense_bytes_ = 0, layer_routed_bytes_ = 0, head_bytes_ = 0;
  // A block format's stored bytes per projection and LM-head weight (model::stored_bits; 0 without one), computed
  // once: its GGUF recipe walks every tensor of the model.
  double packed_weight_bytes_ = 0, head_weight_bytes_ = 0;
  // The model's dense and MoE layers: how many, and the first of each (whose operators stand for all).
  struct Layers {
    std::int64_t count = 0, first = -1;
  };
  Layers dense_layers_, moe_layers_;
  std::vector<LoraAdapter> lora_dense_, lora_moe_;  // a layer's adapters (InferSpec::adapter_rank > 0)
  // The batched LoRA GEMMs of an iteration (S-LoRA / Punica): `rows` tokens through adapters, `distinct` of them.
  void add_lora(IterationCost& c, double rows, double distinct) const;
};

}  // namespace llmsim::sim
