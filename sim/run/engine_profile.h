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
// static batching, the hf framework; "hf", the run setting's name for it, parses too) and the inference
// engines of Framework, in enum order.
std::vector<std::string> serving_engine_names();
// A serving engine's framework; false when `name` is not one of serving_engine_names().
bool parse_serving_engine(std::string_view name, Framework& out);
// The CLI name of a serving engine's framework ("static" for hf).
std::string serving_engine_name(Framework f);

enum class Batching { Static, Continuous };

struct EngineProfile {
  std::string name;       // "static", "vllm", "tgi", "lightllm", "trt-llm", "fastertransformer", "lmdeploy"
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
  // A hybrid model (windowed layers between global ones: Gemma-2/3, gpt-oss, Llama-4's chunked layers) keeps
  // its windowed layers' KV to the window and its global layers' whole (vLLM V1's hybrid KV cache manager:
  // a KV cache group per attention type, the sliding-window manager freeing the blocks that fall out of the
  // window; vllm/v1/core/kv_cache_coordinator.py, docs design/hybrid_kv_cache_manager); false: every layer
  // of a hybrid model holds every token.
  bool hybrid_window_kv = false;
  double gpu_memory_utilization = 0.9;  // fraction of device memory the engine may use
  double iteration_overhead_s = 0;      // seconds of CPU work per iteration
  // Seconds of CPU work per iteration for each sequence in it, on the critical path like the fixed part
  // (vLLM V0 before 0.6.0: input preparation, sampler output, detokenization and output processing in
  // Python for every sequence of every step, serialized with the GPU; 0: none, or hidden behind the GPU).
  double iteration_overhead_per_seq_s = 0;
  bool cuda_graphs = false;  // decode launched as CUDA graphs (lower per-kernel floor)
  // Iterations that do not replay a graph issue their kernels one by one from Python eager PyTorch (HF
  // generate, vLLM's and SGLang's model runners, TGI's and LightLLM's Python shards), at the host's
  // Efficiency::host_dispatch_s per launch; false: a C++ runtime enqueues them (TensorRT-LLM).
  bool python_dispatch = true;
  // Decode attention splits each sequence's keys over thread blocks (Flash-Decoding, PagedAttention V2,
  // FlashInfer, TRT-LLM multi-block mode); false: FlashAttention-2's one block per sequence and query head.
  bool decode_split_kv = true;
  // Decode attention runs one thread block per query head, which reads the K and V of its group's KV head:
  // with grouped-query attention each KV head is read once per query head of its group, the first read from
  // HBM and the others, issued by neighbouring blocks, out of L2 (vLLM's paged_attention_v1/v2 kernels,
  // csrc/attention/attention_kernels.cu: head_idx = blockIdx.x, kv_head_idx = head_idx / num_queries_per_kv).
  // false: one read per KV head (FlashAttention's and FlashInfer's decode kernels pack a group's query heads).
  bool decode_kv_per_query_head = false;
  // Models with recurrent-state layers (Gated DeltaNet, Mamba-2) keep each state layer's state in one page of the
  // attention layers' block pool, so the attention block grows until its page holds a state layer's state (vLLM V1:
  // platforms/interface.py _align_hybrid_block_size without mamba prefix caching, kv_cache_utils.py
  // _get_kv_cache_groups_uniform_page_size; aligned_state_pages); false: blocks of kv_block_tokens.
  bool align_state_pages = false;
  // Whole-cache copies of every sequence's K and V per layer per iteration (HF generate: 2; paged engines 0).
  double kv_copy_passes = 0;
  // The flash-attention path of a model whose transformers class expands K and V to the query heads
  // (ModelSpec::flash_class_repeats_kv) does so every step, between the cache's concatenation (the first of the
  // kv_copy_passes) and the unpad gather (the others): one more pass reading the cache and writing group x it,
  // and the gather and the kernel move group x the bytes (HF generate before transformers 4.48.0).
  bool repeat_kv_for_flash = false;
  // The prefill computes the LM head for every prompt position and upcasts those logits to fp32 (HF generate
  // before transformers 4.45.0, full_prefill_logits in framework_profile.h); false: the last position alone.
  bool all_prompt_logits = false;
  // On a GPU without FP8 tensor cores (Ampere), fp8 checkpoints run as weight-only W8A16: a kernel reads
  // the fp8 weights and dequantizes them into the activation dtype (vLLM's FP8 Marlin); false: the engine
  // refuses fp8 weights there (TensorRT-LLM's FP8 needs SM 8.9+).
  bool fp8_weight_only = false;
  // int8 weights dequantized into a 16-bit copy of the whole matrix, then a 16-bit GEMM reads that copy
  // (DeepSpeed-Inference's quantized_gemm: launch_dequantize + cublas_gemm_ex); false: a fused kernel reads
  // the packed int8 weights (Marlin, AWQ/GPTQ kernels, TensorRT-LLM weight-only GEMMs).
  bool int8_dequantize_to_16bit = false;
  // Prompt GEMMs in FP16 accumulate in FP16 (cublasHgemm / CUBLAS_COMPUTE_16F), at the GPU's FP16-accumulate
  // peak, twice the FP32-accumulate one on GeForce parts (GpuSpec::fp16_accumulate_flops); false: FP32
  // accumulation, as cuBLAS's default for FP16 inputs in PyTorch and the serving engines.
  bool fp16_accumulate = false;
  // The activation dtype the engine always computes in, whatever a run states (the local engines' kernels are
  // FP16 only); nullopt: the run's precision.
  std::optional<DType> compute_precision;
  // Layers kept in host memory (InferSpec::gpu_layers, llama.cpp's --n-gpu-layers): whether the engine can keep
  // them there, and from how many tokens in an iteration it copies their weights to the GPU and computes there
  // instead of on the CPU (0: never).
  bool host_layers = false;
  std::int64_t host_layer_upload_min_tokens = 0;
  double waiting_served_ratio = 0;  // TGI: admit waiting requests when waiting/running exceeds it
  std::string source;

  // --- Added for the serving simulator (sim/serve/serving_sim.h); defaults keep the fields above meaningful
  // alone. Decode steps a running batch takes before the router tries to admit waiting requests regardless of
  // waiting_served_ratio (TGI max_waiting_tokens; LightLLM router_max_wait_tokens). 0 = admit every iteration.
  std::int64_t max_waiting_tokens = 0;
  // Prefill runs in iterations of its own (TGI, LightLLM: the new batch is prefilled, then concatenated with
  // the running one) instead of being mixed with decodes in one forward pass (vLLM V1, TRT-LLM).
  bool separate_prefill = false;
  // Admission reserves KV for the prompt plus the whole output (TGI token budget, TRT-LLM
  // GUARANTEED_NO_EVICT), so running sequences are never preempted.
  bool reserve_full_output = false;
  // A new prompt is admitted only if its blocks leave this fraction of the cache free (vLLM V0's
  // BlockSpaceManager watermark, 0.01: can_allocate refuses a prompt that would eat into it; 0: none).
  double kv_watermark_fraction = 0;
  // LightLLM's router rule: admit while the peak future KV use of the running set (sorted by remaining
  // output) stays below the capacity.
  bool lightllm_admission = false;
  // LightLLM: the prefill token budget is max(max_batched_tokens, this fraction of the KV token capacity).
  double batched_tokens_kv_fraction = 0;
  // gpu_memory_utilization applies to the memory left after weights and activations (TRT-LLM
  // kv_cache_free_gpu_memory_fraction, TGI's wiggle room) instead of to the whole device (vLLM).
  bool utilization_of_free_memory = false;
  // gpu_memory_utilization is the KV cache's share of the whole device, whatever the weights take
  // (TurboMind before 0.2.2: BlockManager sizes total memory x cache_max_entry_count into blocks).
  bool kv_share_of_device = false;
  // A KV cache of this many blocks whatever the memory (TurboMind's cache_max_entry_count >= 1: "the total
  // number of k/v blocks", lmdeploy/messages.py); 0: sized from memory by the fields above.
  std::int64_t kv_cache_blocks = 0;
  // Prefix caching: the KV blocks of a prompt's shared prefix stay cached after its request finishes and a
  // later request with the same prefix reuses them instead of recomputing them (vLLM's block hashing,
  // TensorRT-LLM's KV block reuse, SGLang's RadixAttention); only whole blocks are shared, at least one
  // prompt token is always computed, and unreferenced cached blocks are evicted least recently used first
  // when no free block is left (serving_des.h). Modelled for the engines that mix prefill and decode.
  bool prefix_caching = false;
  // Multi-step scheduling (vLLM V0's --num-scheduler-steps N; the multi-step RFC, vllm #6854): a decode batch
  // runs N forward passes per scheduler call. LLMEngine.step calls the scheduler only when the cached batch has
  // no remaining steps (_has_remaining_steps), so a request arriving meanwhile waits for the run to end. A
  // prefill batch gets no lookahead slots (Scheduler._get_num_lookahead_slots: 0 for prefills without
  // chunking) and runs one step. Every step still goes through LLMEngine.step and its output processing
  // (MultiStepModelRunner._async_process_outputs pythonizes each step's samples); how much of the per-step CPU
  // work (iteration_overhead_s) is the skipped scheduler call is not known, so each step keeps it whole
  // (assumption, docs/serving.md). 1 = every step is scheduled. multi_step_scheduling: the engine takes N > 1
  // (vLLM's V0 engine).
  std::int64_t scheduler_steps = 1;
  bool multi_step_scheduling = false;
  // With cuda_graphs: largest decode batch that replays a captured graph (larger batches, and iterations
  // with prefill work, run eagerly in the serving simulator; the floor is kCudaGraphKernelFloor_s).
  std::int64_t cuda_graph_max_batch = 0;
  // SGLang's scheduler (sim/serve/admission_sglang.cpp): a prefill batch (new prompts, or the next chunk
  // of a chunked one) runs whenever one can be formed and the running batch decodes only when none can;
  // admission reserves the running requests' remaining output times a decaying new-token ratio; a decode
  // without room retracts requests for recomputation.
  bool prefill_first = false;
  // SGLang's mem_fraction_static: the weights and the KV pool share the device minus a reserve of
  // static_reserve_bytes + static_reserve_per_rank_bytes x tp x pp (activations, CUDA graphs and the runtime
  // live in the reserve); 0: the KV cache is sized by the fields above.
  double static_reserve_bytes = 0;
  double static_reserve_per_rank_bytes = 0;
  double static_fraction = 0;  // SGLang --mem-fraction-static as given (0: from the reserve above)
  // Multi-LoRA serving: distinct LoRA adapters one iteration may run (vLLM --max-loras, SGLang
  // --max-loras-per-batch), each with a GPU slot of its own reserved beside the weights; 0: the profile does
  // not model multi-LoRA serving. A waiting request whose adapter would exceed it is skipped for the step by
  // vLLM V1 (admission_mixed.cpp) and ends SGLang's prefill batch (admission_sglang.cpp).
  std::int64_t max_loras = 0;
};

// SGLang's mem_fraction_static for a device of `device_bytes` and `ranks` = tp x pp GPUs per replica:
// (device - reserve) / device rounded to 3 decimals, as server_args.py computes it; 0 when the profile has no
// static reserve.
double static_memory_fraction(const EngineProfile& e, double device_bytes, std::int64_t ranks);

// The profile of an engine by name; Framework::Hf gives the static (HF generate) profile.
const EngineProfile& engine_profile(Framework f);

// The KV a sequence holds under an engine: every layer keeps every token's, except `windowed` of the
// model's `layers` whose window the engine's KV manager honours, which keep at most `window` tokens (the
// window rounded up to whole KV blocks). The one rule for the serving DES's blocks and the fixed-batch
// memory model's KV cache.
struct KvWindow {
  std::int64_t window = 0;    // tokens a capped layer keeps at most (0: no layer is capped)
  std::int64_t windowed = 0;  // layers capped
  std::int64_t layers = 1;    // layers of the model
  // Blocks of the same pool every sequence holds, whatever its length, for the recurrent state of its Gated
  // DeltaNet layers (vLLM V1's hybrid KV cache manager allocates their state pages from the attention layers'
  // pool; set by the serving simulator from model::linear_state_bytes_per_sequence); 0 without such layers.
  std::int64_t state_blocks = 0;
  bool caps() const { return window > 0 && windowed > 0; }
  // Whole-model KV blocks of `block` tokens that a sequence of `tokens` holds: the layers' blocks averaged
  // over the layers, rounded up (all layers capped: min(blocks, window blocks)), and its state blocks.
  std::int64_t blocks(std::int64_t tokens, std::int64_t block) const;
  // Whole-model KV tokens a sequence of `tokens` holds (the same average, unrounded).
  double tokens_held(double tokens) const;
};
// vLLM V1's pages for a model with recurrent-state layers (EngineProfile::align_state_pages): the attention block
// is the smallest multiple of `block_tokens` (the kernel's alignment, 16) whose page of one attention layer holds
// one state layer's state: block = 16 x ceil(state page / (16 x one token's KV of one layer)). Layers are grouped
// into KV cache groups of equal size (the smaller layer count, or the larger when it is under 1.5 times the
// smaller); a sequence holds ceil(tokens / block) blocks per attention group and one block per state group.
// `kv_bytes_per_token` and `state_bytes` are one GPU's: every attention layer's KV per token and one sequence's
// state over every state layer. Returns the block in tokens and the state blocks in whole-model blocks (each of
// every attention group); blocks of `block_tokens` and no state blocks when the model keeps no state.
struct StatePages {
  std::int64_t block_tokens = 0;
  std::int64_t state_blocks = 0;
};
StatePages aligned_state_pages(const model::ModelSpec& m, double kv_bytes_per_token, double state_bytes,
                               std::int64_t block_tokens);

// The rule for model `m` under engine `e`: all layers windowed and EngineProfile::sliding_window_kv, or a
// hybrid model and EngineProfile::hybrid_window_kv; otherwise nothing is capped.
KvWindow kv_window(const model::ModelSpec& m, const EngineProfile& e);
// The profile of the engine as `release` ran it: the current profile with the defaults that release had
// (TGI before 2.0.0 without CUDA graphs; vLLM before 0.8.0 on its V0 engine), each rule citing the
// engine's code; nullopt or a release no rule covers gives engine_profile(f). `max_model_len`: the
// model's context, which V0's token budget followed (0: unknown).
EngineProfile released_profile(Framework f, const std::optional<Version>& release, std::int64_t max_model_len = 0);
// Whether a vLLM run of `release` uses the V1 engine (0.8.0 and later, or an unstated release).
bool vllm_v1(const std::optional<Version>& release);

// The releases an engine's profile describes: from `first` up to, not including, `before` (the releases
// whose code its rules were read from and the series they hold for). nullopt: the profile has no
// release-specific rules, and every release runs as the profile.
struct ReleaseSpan {
  Version first;
  Version before;
  std::string why;  // what the span rests on
};
std::optional<ReleaseSpan> described_releases(Framework f);
// "" when the profile of `f` describes `release` (or has no release rules); else why not, naming the
// releases it does describe: the one rule of the measured-run rows' framework release and --engine-version.
std::string release_problem(Framework f, const Version& release);
EngineProfile static_engine_profile();

// Why a profile, with a run's overrides applied, cannot run chunked prefill as configured (static batching
// prefills whole prompts; an engine that prefills new batches in iterations of their own has no chunking
// modelled); nullopt when it can or chunked prefill is off. The one rule serve (a usage error naming
// --chunked-prefill) and plan serve (an infeasible candidate with the reason) apply.
std::optional<std::string> chunked_prefill_problem(const EngineProfile& p);
// Why `p` cannot run `p.scheduler_steps` > 1 (multi-step scheduling is vLLM V0's, without chunked prefill, as
// its 0.6 series ran it); nullopt when it can or the steps are 1. serve (a usage error naming
// --num-scheduler-steps) and validate (the row unsupported with the reason) apply it.
std::optional<std::string> scheduler_steps_problem(const EngineProfile& p);

}  // namespace llmsim::sim
