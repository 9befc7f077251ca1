#pragma once
// Inference engines as small documented profiles: batching policy and its limits, KV-cache
// management, and the per-iteration costs that are not kernels. Every number cites its source (or says
// "assumption") in engine_profile.cpp.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "llmsim/core/version.h"
#include "llmsim/model/operators.h"
#include "llmsim/run/run_spec.h"

namespace llmsim::sim {

// The engines `llmsim serve` and `plan serve` simulate, by their CLI names: "static" (HF generate's
// static batching, the hf framework) and the inference engines of Framework, in enum order.
std::vector<std::string> serving_engine_names();
// A serving engine's framework; false when `name` is not one of serving_engine_names().
bool parse_serving_engine(std::string_view name, Framework& out);
// The CLI name of a serving engine's framework ("static" for hf).
std::string serving_engine_name(Framework f);

enum class Batching { Static, Continuous };

struct EngineProfile {
  std::string name;       // "static", "vllm", "tgi", "lightllm", "trt-llm", "fastertransformer"
  model::EagerGlue glue;  // memory-bound glue of the engine's model code (default: fused kernels)
  Batching batching = Batching::Continuous;
  std::int64_t max_num_seqs = 256;         // sequences per iteration at most
  std::int64_t max_batched_tokens = 8192;  // tokens per iteration at most (prefill budget); 0 = no budget (static)
  bool chunked_prefill = false;            // split long prompts across iterations within the budget
  std::int64_t kv_block_tokens = 16;       // paged KV block size (1 = token granular, LightLLM)
  // A model whose every layer attends through a sliding window keeps at most the window's KV blocks per
  // sequence, reused cyclically (vLLM's BlockSpaceManager block_sliding_window = ceil(window / block);
  // TensorRT-LLM's cyclic KV cache at max_attention_window_size); false: every token's KV stays.
  bool sliding_window_kv = false;
  double gpu_memory_utilization = 0.9;  // fraction of device memory the engine may use
  double iteration_overhead_s = 0;      // seconds of CPU work per iteration
  bool cuda_graphs = false;             // decode launched as CUDA graphs (lower per-kernel floor)
  // Iterations that do not replay a graph issue their kernels one by one from Python eager PyTorch (HF
  // generate, vLLM's and SGLang's model runners, TGI's and LightLLM's Python shards), at the host's
  // Efficiency::host_dispatch_s per launch; false: a C++ runtime enqueues them (TensorRT-LLM).
  bool python_dispatch = true;
  // Decode attention splits each sequence's keys over thread blocks (Flash-Decoding, PagedAttention V2,
  // FlashInfer, TRT-LLM multi-block mode); false: FlashAttention-2's one block per sequence and query head.
  bool decode_split_kv = true;
  // Whole-cache copies of every sequence's K and V per layer per iteration (HF generate: 2; paged engines 0).
  double kv_copy_passes = 0;
  double waiting_served_ratio = 0;  // TGI: admit waiting requests when waiting/running exceeds it
  std::string source;

  // --- Added for the serving simulator (src/llmsim/serve/serving_sim.h); defaults keep the fields above meaningful
  // alone. Decode steps a running batch takes before the router tries to admit waiting requests regardless of
  // waiting_served_ratio (TGI max_waiting_tokens; LightLLM router_max_wait_tokens). 0 = admit every iteration.
  std::int64_t max_waiting_tokens = 0;
  // Prefill runs in iterations of its own (TGI, LightLLM: the new batch is prefilled, then concatenated with
  // the running one) instead of being mixed with decodes in one forward pass (vLLM V1, TRT-LLM).
  bool separate_prefill = false;
  // Admission reserves KV for the prompt plus the whole output (TGI token budget, TRT-LLM
  // GUARANTEED_NO_EVICT), so running sequences are never preempted.
  bool reserve_full_output = false;
  // LightLLM's router rule: admit while the peak future KV use of the running set (sorted by remaining
  // output) stays below the capacity.
  bool lightllm_admission = false;
  // LightLLM: the prefill token budget is max(max_batched_tokens, this fraction of the KV token capacity).
  double batched_tokens_kv_fraction = 0;
  // gpu_memory_utilization applies to the memory left after weights and activations (TRT-LLM
  // kv_cache_free_gpu_memory_fraction, TGI's wiggle room) instead of to the whole device (vLLM).
  bool utilization_of_free_memory = false;
  // With cuda_graphs: largest decode batch that replays a captured graph (larger batches, and iterations
  // with prefill work, run eagerly in the serving simulator; the floor is kCudaGraphKernelFloor_s).
  std::int64_t cuda_graph_max_batch = 0;
};

// The profile of an engine by name; Framework::Hf gives the static (HF generate) profile.
const EngineProfile& engine_profile(Framework f);

// The KV tokens one sequence holds at most under engine `e`: the window rounded up to whole KV blocks when
// every layer of `m` attends through a sliding window and the engine's KV manager honours it
// (EngineProfile::sliding_window_kv), else 0 (every token's KV stays). The one rule for the serving DES's
// blocks and the fixed-batch memory model's KV cache.
std::int64_t kv_window_tokens(const model::ModelSpec& m, const EngineProfile& e);
// The profile of the engine as `release` ran it: the current profile with the defaults that release had
// (TGI before 2.0.0 without CUDA graphs; vLLM before 0.8.0 on its V0 engine), each rule citing the
// engine's code; nullopt or a release no rule covers gives engine_profile(f). `max_model_len`: the
// model's context, which V0's token budget followed (0: unknown).
EngineProfile released_profile(Framework f, const std::optional<Version>& release, std::int64_t max_model_len = 0);
// Whether a vLLM run of `release` uses the V1 engine (0.8.0 and later, or an unstated release).
bool vllm_v1(const std::optional<Version>& release);
EngineProfile static_engine_profile();

}  // namespace llmsim::sim
