#include "llmsim/run/engine_profile.h"

#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/format.h>

#include "llmsim/core/units.h"
#include "llmsim/run/framework_profile.h"
#include "llmsim/run/local_engine_profiles.h"

namespace llmsim::sim {

std::vector<std::string> serving_engine_names() {
  std::vector<std::string> out = {"static"};
  for (const std::string& name : inference_framework_names()) out.push_back(name);
  return out;
}

bool parse_serving_engine(std::string_view name, Framework& out) {
  if (name == "static" || name == "hf") {  // serve --engine hf is the same engine (run setting "engine")
    out = Framework::Hf;
    return true;
  }
  Framework f{};
  if (!parse_name(name, f) || is_training_framework(f) || name != name_of(f)) return false;
  out = f;
  return true;
}

std::string serving_engine_name(Framework f) { return f == Framework::Hf ? "static" : std::string(name_of(f)); }

namespace {

// Hugging Face transformers generate(): the caller's batch is padded to its longest prompt, prefilled
// in one forward pass, then decoded one token per step for every row until the longest output ends
// (finished rows keep being computed with pad tokens); the next batch starts only then. KV cache is the
// contiguous DynamicCache (token granular, no paging), grown by concatenation; PyTorch eager kernels,
// no CUDA graphs (transformers docs "Generation strategies"; GenerationMixin._sample).
EngineProfile static_profile() {
  EngineProfile p;
  p.name = "static";
  p.batching = Batching::Static;
  p.max_num_seqs = 32;       // assumption: a typical generate() batch; --max-num-seqs sets it
  p.max_batched_tokens = 0;  // no token budget: the whole padded batch prefills at once
  p.chunked_prefill = false;
  p.kv_block_tokens = 1;           // contiguous per-sequence cache, padded to the batch's longest row
  p.gpu_memory_utilization = 1.0;  // no up-front reservation: the PyTorch caching allocator takes what it needs
  p.iteration_overhead_s = 1e-3;   // assumption: Python generate loop per step (logits processors, stopping
                                   // criteria, sampling, input preparation); no published measurement found
  p.cuda_graphs = false;
  p.glue = hf_model_code_glue(false);  // the model runs as transformers' eager modelling code
  // attn_implementation="flash_attention_2" calls flash_attn_func / flash_attn_varlen_func at every step
  // (transformers modeling_flash_attention_utils.py), neither of which splits the keys (only
  // flash_attn_with_kvcache does); SDPA's flash backend is the same kernel.
  p.decode_split_kv = false;
  // DynamicCache.update: torch.cat([cache, new], dim=-2) for K and for V, a new tensor each step
  // (cache_utils.py); the flash-attention path then gathers K and V again, index_first_axis in _upad_input
  // (modeling_flash_attention_utils.py), since generate passes an attention mask: two whole-cache copies.
  p.kv_copy_passes = 2;
  p.source =
      "HF transformers generate() (static batch padded to the longest prompt, runs until the longest output; "
      "DynamicCache); batch size and per-step overhead are assumptions";
  return p;
}

// DeepSpeed-Inference (init_inference with replace_with_kernel_inject, as Megatron-DeepSpeed's
// bloom-ds-inference.py calls it): its fused kernels run inside the HF generate loop, so the static profile
// stands for it, except for int8 weights. Its quantized_gemm (csrc/transformer/inference/csrc/pt_binding.cpp)
// dequantizes the whole int8 matrix into a 16-bit buffer (launch_dequantize, one kernel reading 1 and writing
// 2 bytes per weight) and then runs cublas_gemm_ex on that buffer (2 bytes per weight again): 5 bytes of
// traffic per weight where a 16-bit GEMM moves 2, so int8 decode is slower than 16-bit, not faster.
EngineProfile deepspeed_inference_profile() {
  EngineProfile p = static_profile();
  p.name = "deepspeed-inference";
  p.int8_dequantize_to_16bit = true;
  p.source = p.source +
             "; DeepSpeed-Inference int8: quantized_gemm dequantizes each weight matrix into a 16-bit buffer before "
             "cublas_gemm_ex (deepspeedai/DeepSpeed csrc/transformer/inference/csrc/pt_binding.cpp)";
  return p;
}

// vLLM (V1 engine, >= 0.8): continuous batching; the scheduler serves running requests first (one decode
// token each, or the next prefill chunk), then admits waiting requests FCFS while max_num_seqs, the token
// budget and free KV blocks allow; chunked prefill is always on in V1. When a running request cannot get a
// new block, the most recently admitted running request is preempted by recompute (its blocks are freed and
// it re-enters the waiting queue at the front). Defaults (vllm/engine/arg_utils.py get_batch_defaults, OpenAI
// API server usage context): max_num_seqs 256 and max_num_batched_tokens 2048 on GPUs below 70 GiB or A100;
// 1024 and 8192 on larger GPUs (applied by serving_profile() from the system). Before V1 the budget was
// max(max_model_len, 2048) without chunked prefill (vllm/config.py SchedulerConfig, v0.2-v0.5).
// block_size 16, gpu_memory_utilization 0.9 (CacheConfig / EngineArgs defaults). CUDA graphs are captured
// for decode batches up to 512 in V1 (cudagraph capture sizes; V0: 256) unless --enforce-eager.
EngineProfile vllm_profile() {
  EngineProfile p;
  p.name = "vllm";
  p.batching = Batching::Continuous;
  p.max_num_seqs = 256;
  p.max_batched_tokens = 2048;
  p.chunked_prefill = true;
  p.kv_block_tokens = 16;
  p.gpu_memory_utilization = 0.9;
  // assumption: vLLM's v0.6 profile (vLLM blog 2024-09-05) found the API server (33%) and scheduling (29%)
  // dominating Llama-3-8B on one H100 (~5 ms GPU steps); V1 moves both off the critical path (separate
  // engine-core process, overlapped scheduling), leaving an un-hidden remainder we take as 0.5 ms per step.
  p.iteration_overhead_s = 0.5e-3;
  p.cuda_graphs = true;
  p.cuda_graph_max_batch = 512;
  // FP8 Marlin (vLLM PR #5975, merged 2024-07-03; docs quantization/fp8 from v0.5.x: "FP8 models will run
  // on compute capability > 8.0 (Ampere) as weight-only W8A16, utilizing FP8 Marlin").
  p.fp8_weight_only = true;
  // V1 turns prefix caching on by default (tests/v1/engine/test_engine_args.py: "V1 turns on prefix caching
  // by default"); full 16-token blocks are hashed with their prefix, freed blocks evicted LRU
  // (vllm/v1/core/block_pool.py free_block_queue).
  p.prefix_caching = true;
  // EngineArgs.max_loras = 1 (LoRAConfig): one adapter per step unless --max-loras raises it; the V1 scheduler
  // skips a waiting request whose adapter would exceed it and goes on with the next (scheduler.py:
  // scheduled_loras, skipped_waiting_requests).
  p.max_loras = 1;
  p.source =
      "vLLM engine/arg_utils.py get_batch_defaults (max_num_seqs 256, max_num_batched_tokens 2048; 1024/8192 on "
      ">= 70 GiB non-A100 GPUs), V1 scheduler (chunked prefill, running first, preempt newest by recompute), "
      "CacheConfig block_size 16, gpu_memory_utilization 0.9, CUDA graph capture sizes up to 512; "
      "per-step overhead is an assumption";
  // vLLM V0's BlockSpaceManager (vllm/core/block_manager*.py): block_sliding_window = ceil(sliding_window /
  // block_size) caps the blocks a sequence holds, the oldest reused.
  p.sliding_window_kv = true;
  // V1's hybrid KV cache manager (vllm/v1/core/kv_cache_coordinator.py HybridKVCacheCoordinator, design doc
  // docs/design/hybrid_kv_cache_manager.md): windowed layers hold their window, global layers every token.
  p.hybrid_window_kv = true;
  // And a Gated DeltaNet or Mamba-2 layer's state takes one page of that pool (aligned_state_pages).
  p.align_state_pages = true;
  return p;
}

// Hugging Face text-generation-inference (router v1.x-v2.x, flash/paged models): the router prefills a new
// batch in its own forward pass (pausing the running batch), then concatenates it with the running one.
// While a batch runs, waiting requests are admitted only if at least floor(batch_size x waiting_served_ratio)
// of them fit (min_size), or unconditionally once max_waiting_tokens decode steps passed since the last
// prefill (router/src/infer.rs batching_task). A new batch is limited by max_batch_prefill_tokens and by the
// token budget max_batch_total_tokens, in which every request reserves prompt + max_new_tokens (no
// preemption). Launcher defaults (launcher/src/main.rs): waiting_served_ratio 1.2, max_batch_prefill_tokens
// 4096, max_waiting_tokens 20, max_concurrent_requests 128 (more in-flight requests are rejected by the
// router; here they wait), max_batch_size unset; max_batch_total_tokens is inferred at warmup from the memory
// left after weights and a max_batch_prefill_tokens forward pass, times TGI_WIGGLE_ROOM (0.90 in
// server/text_generation_server/models/globals.py; 0.93-0.95 in older versions). Paged blocks of 16 tokens
// (BLOCK_SIZE in the paged-attention path). CUDA graphs for decode batches 1,2,4,8,16,32 (--cuda-graphs
// default). Newer TGI (>= 2.1) changed waiting_served_ratio to 0.3 and max_batch_prefill_tokens to
// max_input_tokens + 50; this profile keeps the v1.x launcher values.
EngineProfile tgi_profile() {
  EngineProfile p;
  p.name = "tgi";
  p.batching = Batching::Continuous;
  p.max_num_seqs = 128;
  p.max_batched_tokens = 4096;
  p.chunked_prefill = false;
  p.kv_block_tokens = 16;
  p.gpu_memory_utilization = 0.90;
  p.utilization_of_free_memory = true;
  p.iteration_overhead_s = 1e-3;  // assumption: Rust router <-> Python shard gRPC round trip per step
  p.cuda_graphs = true;
  p.cuda_graph_max_batch = 32;
  p.waiting_served_ratio = 1.2;
  p.max_waiting_tokens = 20;
  p.separate_prefill = true;
  p.reserve_full_output = true;
  p.source =
      "TGI launcher/src/main.rs defaults (waiting_served_ratio 1.2, max_batch_prefill_tokens 4096, "
      "max_waiting_tokens 20, max_concurrent_requests 128, cuda_graphs 1..32), router batching_task "
      "(min_size, token budget of prompt + max_new_tokens), models/globals.py TGI_WIGGLE_ROOM 0.90; "
      "per-step overhead is an assumption";
  return p;
}

// LightLLM: token-granular KV cache (TokenAttention: one slot per token). The router decodes the running
// batch for router_max_wait_tokens steps, then tries to build a new mini-batch from the waiting queue FCFS
// (prefilled in its own pass, then merged). A request is admitted while, with the running requests sorted
// by remaining output length descending, max_i(sum_{j<=i} used_j + remaining_i x (i+1)) stays below
// max_total_token_num (ReqQueue._can_add_new_req) and the new batch's prompt tokens stay within
// batch_max_tokens = max(1/6 x max_total_token_num, max_req_total_len). Defaults (api_server.py):
// running_max_req_size 1000, router_max_wait_tokens 10, max_req_total_len 2048 + 1024, mem_fraction 0.9 (the
// README's rule: KV tokens = (GPU memory - weights) x 0.8..0.9). Decode CUDA graphs up to batch 16
// (--graph_max_batch_size, v2.x; 256 in later versions).
EngineProfile lightllm_profile() {
  EngineProfile p;
  p.name = "lightllm";
  p.batching = Batching::Continuous;
  p.max_num_seqs = 1000;
  p.max_batched_tokens = 2048 + 1024;
  p.batched_tokens_kv_fraction = 1.0 / 6.0;
  p.chunked_prefill = false;
  p.kv_block_tokens = 1;
  p.gpu_memory_utilization = 0.9;
  p.utilization_of_free_memory = true;
  p.iteration_overhead_s = 0.5e-3;  // assumption: router/detokenizer run in separate processes, async
  p.cuda_graphs = true;
  p.cuda_graph_max_batch = 16;
  p.max_waiting_tokens = 10;
  p.separate_prefill = true;
  p.lightllm_admission = true;
  p.source =
      "LightLLM api_server.py defaults (running_max_req_size 1000, router_max_wait_tokens 10, batch_max_tokens "
      "= max(1/6 max_total_token_num, max_req_total_len 3072), graph_max_batch_size 16), docs/ApiServerArgs.md "
      "(KV tokens = free memory x 0.8-0.9), router ReqQueue._can_add_new_req; per-step overhead is an assumption";
  return p;
}

// TensorRT-LLM (C++ executor / trtllm-serve): in-flight batching mixes context (prefill) and generation
// requests in one forward pass; the capacity scheduler's default GUARANTEED_NO_EVICT admits a request only
// if KV blocks for its prompt + max_new_tokens can be reserved, so nothing is ever paused; the micro-batch
// scheduler fills max_num_tokens (8192) and max_batch_size (256) FCFS, context chunking off by default
// (enable_chunked_context false). KV cache: kv_cache_free_gpu_memory_fraction 0.9 of the memory free after
// weights and activations (KvCacheConfig.free_gpu_memory_fraction); tokens_per_block 64 (trtllm-build examples;
// 128 in early build.py, 32 in the PyTorch backend). The TensorRT engine is enqueued from C++ and decode runs
// under CUDA graphs in the PyTorch backend.
EngineProfile trtllm_profile() {
  EngineProfile p;
  p.name = "trt-llm";
  p.batching = Batching::Continuous;
  p.max_num_seqs = 256;
  p.max_batched_tokens = 8192;
  p.chunked_prefill = false;
  p.kv_block_tokens = 64;
  p.gpu_memory_utilization = 0.9;
  p.utilization_of_free_memory = true;
  p.iteration_overhead_s = 0.2e-3;  // assumption: C++ batch manager, overlapped with the previous step
  p.cuda_graphs = true;
  p.python_dispatch = false;  // the TensorRT engine's kernels are enqueued by the C++ runtime
  p.cuda_graph_max_batch = 256;
  p.reserve_full_output = true;
  // KV block reuse (docs/source/features/kvcache.md: filled blocks enter a radix search tree and are reused by
  // requests with a matching prefix, evicted by prioritized LRU when a blank block is needed;
  // docs/source/kv_cache_reuse.md: "KV cache reuse is enabled by default in KVCacheManager").
  p.prefix_caching = true;
  p.source =
      "TensorRT-LLM docs: perf tuning guide (max_num_tokens 8192, max_batch_size, GUARANTEED_NO_EVICT default), "
      "KvCacheConfig free_gpu_memory_fraction 0.9, tokens_per_block 64, chunked context off by default; "
      "per-step overhead is an assumption";
  // TensorRT-LLM's docs (advanced/gpt-attention.md, "Sliding Window Attention, Cyclic (Rolling Buffer) KV
  // Cache", max_attention_window_size): a sequence keeps the window's tokens in a circular buffer.
  p.sliding_window_kv = true;
  return p;
}

// FasterTransformer (NVIDIA/FasterTransformer @df4a7534, the GPT guide's engine; TensorRT-LLM's predecessor):
// the caller's batch is prefilled by the context decoder, then every row is decoded for the requested
// output length; the next batch starts only after (ParallelGpt::forward). The K/V cache is one contiguous
// buffer of layers x batch x memory_len x hidden / tp, allocated for the whole session before the run
// (ParallelGpt::allocateBuffer, self_cache_size). The C++ loop launches every kernel on the stream itself:
// no CUDA graphs anywhere in src/ (no cudaGraph* call), so each kernel pays the stream launch floor, and
// GEMMs go through cublasMMWrapper::Gemm one cuBLASLt call at a time (the descriptors are created and
// destroyed on every call). Decode attention is the masked multi-head attention kernel with one thread
// block per head and sequence (decoder_masked_multihead_attention_*.cu: grid(num_heads, batch_size)), no
// split over keys. Each step ends with invokeLengthCriterion, which spins on pinned host memory until the
// step's last kernel has run (stop_criteria_kernels.cu), so the host cannot queue the next step early.
EngineProfile fastertransformer_profile() {
  EngineProfile p;
  p.name = "fastertransformer";
  p.batching = Batching::Static;
  p.max_num_seqs = 256;      // assumption: the largest batch of the GPT guide's benchmark tables
  p.max_batched_tokens = 0;  // the whole batch's prompts in one context-decoder pass
  p.chunked_prefill = false;
  p.kv_block_tokens = 1;  // one contiguous cache, sized for the session up front
  p.gpu_memory_utilization = 1.0;
  p.reserve_full_output = true;
  // assumption: the per-step host round trip of the length criterion's spin-wait, the sampling layer's
  // setup and the step's tensor-map bookkeeping, taken as TensorRT-LLM's C++ runtime step (0.2 ms).
  p.iteration_overhead_s = 0.2e-3;
  p.cuda_graphs = false;
  p.python_dispatch = false;
  p.decode_split_kv = false;
  p.source =
      "NVIDIA/FasterTransformer @df4a7534: ParallelGpt.cc (static batch, whole-session K/V buffer), no cudaGraph "
      "in src/, cublasMMWrapper.cc (one cuBLASLt call per GEMM), decoder_masked_multihead_attention grid "
      "(num_heads, batch), stop_criteria_kernels.cu (per-step host spin-wait); per-step overhead is an assumption";
  return p;
}

// LMDeploy's TurboMind engine (InternLM/lmdeploy @1263d5cd, v0.16): a C++ loop per rank (LlamaBatch)
// batches persistently: every iteration one fused forward pass over the running sequences' decode tokens
// and new prompts (forwardUnified: prefill and decode attention in the same layer pass), new requests taken
// FCFS while max_batch_size allows, within max_prefill_token_num (8192) tokens per iteration, the sequence
// that overflows it continuing in the next iteration (a chunked prefill). KV blocks of cache_block_seq_len
// (64) tokens are allocated as sequences grow, not reserved to completion; when they run out, cached blocks
// are evicted, then later arrivals preempted (SequenceManager::Materialize), their KV recomputed later.
// The KV cache is cache_max_entry_count (0.8) of the memory free after the weights (lmdeploy/messages.py
// TurbomindEngineConfig). The kernels are TurboMind's own (paged decode attention with split-k up to 16
// splits, cuBLAS GEMMs) issued by the C++ loop without CUDA graphs (no cudaGraph in src/turbomind).
// max_batch_size None picks one by device (lmdeploy/utils.py get_max_batch_size; serving_profile).
EngineProfile lmdeploy_profile() {
  EngineProfile p;
  p.name = "lmdeploy";
  p.batching = Batching::Continuous;
  p.max_num_seqs = 128;  // get_max_batch_size for devices outside its map
  p.max_batched_tokens = 8192;
  p.chunked_prefill = true;
  p.kv_block_tokens = 64;
  p.gpu_memory_utilization = 0.8;
  p.utilization_of_free_memory = true;
  // assumption: the C++ loop's per-step work (TP barrier, one device-to-host copy of the output ids and a
  // stream synchronize per step, LlamaBatch::Finish) taken as TensorRT-LLM's C++ runtime step (0.2 ms).
  p.iteration_overhead_s = 0.2e-3;
  p.cuda_graphs = false;
  p.python_dispatch = false;
  p.decode_split_kv = true;
  p.prefix_caching = false;  // messages.py TurbomindEngineConfig: enable_prefix_caching defaults to False
  p.source =
      "InternLM/lmdeploy @1263d5cd (v0.16): messages.py TurbomindEngineConfig (cache_max_entry_count 0.8 of free "
      "memory, cache_block_seq_len 64, max_prefill_token_num 8192, max_batch_size by device: utils.py "
      "get_max_batch_size), LlamaBatch.cc (fused prefill + decode iterations, one chunked sequence), "
      "SequenceManager.cc (blocks as sequences grow, preempt later arrivals), no cudaGraph in src/turbomind; "
      "per-step overhead is an assumption";
  return p;
}

// SGLang (sgl-project/sglang, python/sglang/srt): the scheduler (managers/scheduler.py get_next_batch_to_run)
// forms a prefill batch whenever it can (new prompts FCFS, or the next chunk of a chunked one) and decodes the
// running batch only when none can be formed; prefill and decode share an iteration only with
// --enable-mixed-chunk (off by default, server_args.py). A prefill batch holds at most chunked_prefill_size
// tokens (PrefillAdder.rem_chunk_tokens; the prompt that overflows it is truncated and continues first in the
// next prefill batch). Admission (schedule_policy.py PrefillAdder.add_one_req) needs the prompt plus its
// output (clipped at 4096, CLIP_MAX_NEW_TOKENS_ESTIMATION) below the free and evictable KV tokens minus every
// running request's remaining output times new_token_ratio, which starts at 0.7 (SGLANG_INIT_NEW_TOKEN_RATIO),
// falls by (0.7 - 0.098) / 600 per decode step to 0.098 (x 0.14, SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR; 600
// SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS) and is reset when the scheduler idles (NewTokenRatioTracker). A decode
// that finds no slot retracts requests, fewest output tokens and longest prompt first, until 20 tokens per
// remaining request are free (ScheduleBatch.retract_decode, RETRACT_DECODE_STEPS), sends them back to the
// waiting queue to be recomputed and sets the ratio to (decoded + 20 x remaining) / their max_new_tokens.
// KV is token-granular (page_size 1) with RadixAttention prefix reuse on (disable_radix_cache False); decode
// replays CUDA graphs up to cuda_graph_max_bs; the device tier sets chunked_prefill_size, cuda_graph_max_bs
// and mem_fraction_static (server_args.py _handle_gpu_memory_settings; serving_profile() applies them).
// The request pool is min(clamp(KV tokens / context x 512, 2048, 4096), KV tokens / 2)
// (model_runner _resolve_max_num_reqs; applied with the KV capacity by simulate_serving).
EngineProfile sglang_profile() {
  EngineProfile p;
  p.name = "sglang";
  p.batching = Batching::Continuous;
  p.prefill_first = true;
  p.max_num_seqs = 4096;        // the request pool's ceiling; simulate_serving lowers it with the KV capacity
  p.max_batched_tokens = 8192;  // chunked_prefill_size of the 60-160 GiB tier (A100-80GB, H100, H200)
  p.chunked_prefill = true;
  p.kv_block_tokens = 1;  // page_size 1: token-granular KV pool
  // mem_fraction_static = (device - reserve) / device for the weights and the KV pool; reserve of the same
  // tier: 9.5 GiB + 0.5 GiB per rank of tp x pp (serving_profile sets each tier's).
  p.static_reserve_bytes = 9.5 * units::GiB;
  p.static_reserve_per_rank_bytes = 0.5 * units::GiB;
  p.gpu_memory_utilization = 1.0;  // unused with a static reserve
  // SGLang v0.4's overlap scheduler (on by default; LMSYS blog 2024-12-04, "zero-overhead batch scheduler")
  // prepares the next batch on the CPU while the GPU runs the current one.
  p.iteration_overhead_s = 0;
  p.cuda_graphs = true;
  p.cuda_graph_max_batch = 256;  // tp < 4 on the 60-160 GiB tier (512 at tp >= 4: serving_profile)
  p.decode_split_kv = true;      // FlashInfer decode splits the keys
  p.fp8_weight_only = true;      // Marlin W8A16 kernels for fp8 checkpoints on Ampere (sgl-kernel, from vLLM)
  p.prefix_caching = true;       // RadixAttention, on unless --disable-radix-cache
  // --max-loras-per-batch 8 (server_args.py); a waiting request whose adapter would make the batch's adapters
  // exceed it ends the prefill batch (Scheduler.get_new_batch_prefill: batch_is_full, break).
  p.max_loras = 8;
  p.source =
      "sgl-project/sglang python/sglang/srt: managers/scheduler.py get_next_batch_to_run (prefill batches first, "
      "enable_mixed_chunk False), managers/schedule_policy.py PrefillAdder (chunked_prefill_size budget, "
      "new_token_ratio 0.7 -> 0.098 over 600 decode steps, outputs clipped at 4096), schedule_batch.py "
      "retract_decode (20 steps per request), server_args.py _handle_gpu_memory_settings (chunked_prefill_size, "
      "cuda_graph_max_bs, mem_fraction_static by device memory), page_size 1, RadixAttention on; overlap "
      "scheduler (LMSYS blog 2024-12-04)";
  return p;
}

}  // namespace

EngineProfile static_engine_profile() { return static_profile(); }

// V1 became vLLM's default engine in 0.8.0 (VLLM_USE_V1=1).
bool vllm_v1(const std::optional<Version>& release) { return !release || *release >= Version{0, 8, 0}; }

EngineProfile released_profile(Framework f, const std::optional<Version>& release, std::int64_t max_model_len) {
  EngineProfile p = engine_profile(f);
  p.all_prompt_logits = full_prefill_logits(framework_profile(f), release);
  p = released_local_profile(f, std::move(p), release);
  if (!release) return p;
  if (f == Framework::Hf && *release < Version{4, 48, 0}) {
    // Qwen2FlashAttention2.forward (modeling_qwen2.py, 4.37-4.47; MistralFlashAttention2 from 4.34 and the
    // classes copied from it) calls repeat_kv on key_states and value_states after past_key_value.update and
    // before _flash_attention_forward, whose _upad_input then gathers the expanded tensors (transformers PR
    // #34505 names it for 4.46). 4.48.0's attention interface (integrations/flash_attention.py,
    // flash_attention_forward) passes the KV heads to flash-attn as they are.
    p.repeat_kv_for_flash = true;
    p.source += "; before 4.48.0 Mistral-derived flash-attention classes expand K and V to the query heads";
  }
  if (f == Framework::Tgi && *release < Version{2, 0, 0}) {
    // CUDA graphs entered TGI as an experimental opt-in (--enable-cuda-graphs, off by default) in 1.4.1
    // (huggingface/text-generation-inference #1428) and became the default with sizes 1..32 in 2.0.0
    // (#1703 "Add cuda graphs sizes and make it default"): before, every decode step ran eagerly.
    p.cuda_graphs = false;
    p.cuda_graph_max_batch = 0;
    p.source += "; before 2.0.0 without CUDA graphs (TGI #1428, #1703)";
  }
  if (f == Framework::Tgi && *release >= Version{2, 0, 2}) {
    // launcher/src/main.rs: waiting_served_ratio's default went from 1.2 to 0.3 in 2.0.2 (#1820, "stack more
    // aggressively by default"): a running batch admits waiting requests once they are 0.3 of it.
    p.waiting_served_ratio = 0.3;
    p.source += "; waiting_served_ratio 0.3 from 2.0.2 (TGI #1820)";
  }
  if (f == Framework::LmDeploy) {
    // Release rules read at the tags (InternLM/lmdeploy): before 0.2.2 the KV cache was
    // cache_max_entry_count 0.5 of the TOTAL memory (BlockManager.cc at v0.1.0 / v0.2.0: total * ratio /
    // block_size; messages.py docstring: "between v0.2.0 and v0.2.1 ... 0.5 ... TOTAL GPU memory"), 0.8 of
    // the free memory from 0.2.2 (#973). Before 0.2.5 the per-iteration budget was session_len tokens,
    // decodes counted in it (config.ini max_context_token_num 1 x session_len, LlamaBatch
    // AdjustMaxInputCount), session_len being the chat template's + 8; max_prefill_token_num from 0.2.5.
    // Blocks of 128 tokens (config.ini cache_block_seq_len) until 0.3.0's 64. max_batch_size 64 from
    // config.ini before 0.2.4, then 128 (TurbomindEngineConfig) until 0.6.0 made it device-dependent.
    if (*release < Version{0, 2, 2}) {
      p.gpu_memory_utilization = 0.5;
      p.utilization_of_free_memory = false;
      p.kv_share_of_device = true;
      p.source += "; before 0.2.2 KV = 0.5 of total memory";
    }
    if (*release < Version{0, 2, 5}) {
      p.max_batched_tokens = (max_model_len > 0 ? max_model_len : 2048) + 8;
      p.source += "; before 0.2.5 a budget of session_len tokens";
    }
    if (*release < Version{0, 3, 0}) p.kv_block_tokens = 128;
    if (*release < Version{0, 6, 0}) p.max_num_seqs = *release < Version{0, 2, 4} ? 64 : 128;
  }
  if (f == Framework::Vllm && *release < Version{0, 4, 3}) {
    // Before flash-attn decoding (PR #3648, reverted by #4820 and restored by #4907, 2024-05-19, ahead of
    // 0.4.3), every V0 backend decoded through PagedAttention.forward_decode: the FLASH_ATTN backend called
    // flash_attn_varlen_func for prompts only (vllm/attention/backends/flash_attn.py of the 0.4.x series), and
    // the paged_attention_v1/v2 kernels run one block per query head (decode_kv_per_query_head).
    p.decode_kv_per_query_head = true;
    p.source += "; decode through paged_attention_v1/v2 before 0.4.3 (one block per query head; PR #3648, #4907)";
  }
  if (f == Framework::Vllm && *release < Version{0, 5, 1}) {
    p.fp8_weight_only = false;  // FP8 Marlin (PR #5975) arrived with 0.5.1: before, fp8 needed SM 8.9+
    p.source += "; no weight-only fp8 before 0.5.1 (PR #5975)";
  }
  if (f == Framework::Vllm && !vllm_v1(release)) {
    // V0's BlockSpaceManager has one block table per sequence for all layers: a hybrid model's windowed
    // layers keep every token's KV like its global ones (the per-attention-type groups are V1's).
    p.hybrid_window_kv = false;
    // V0 kept the states of Mamba-style layers in a cache of their own beside the block pool (MambaCacheManager,
    // max_num_seqs states); not modelled: the state blocks are priced as V1's without the page alignment.
    p.align_state_pages = false;
    // V0, the default engine until 0.8.0 made V1 the default (vllm_v1): its scheduler without
    // chunked prefill (the default for contexts up to 32K) batches prefills in iterations of their own
    // (Scheduler._schedule_default: waiting prompts first; decodes only when no prefill was scheduled),
    // with a token budget of max(max_model_len, 2048) (SchedulerConfig); decode CUDA graphs up to batch
    // 256 (_BATCH_SIZES_TO_CAPTURE). Its CPU work between forward passes is on the critical path: the
    // v0.6.0 performance post (vLLM blog, 2024-09-05) profiled Llama-3-8B on one H100 at 38 % GPU
    // execution, 29 % scheduling and 33 % HTTP API server, and V1's post (2025-01-27) puts that model's
    // GPU step at ~5 ms: ~13 ms per step, of which scheduling ~3.8 ms and the API server ~4.3 ms. 0.6.0
    // moved the API server out of the engine's process and processes outputs asynchronously, leaving the
    // scheduling share (assumption: the profiled share holds at other loads and hosts).
    // Before 0.6.0 that work grew with the batch: every step turned every sequence's sampled token into
    // Python objects, detokenized it, built the next step's inputs and ran the scheduler, with the GPU idle
    // (multi-step RFC, vllm #6854: "5-13 ms of GPU bubble" per decode); profiled at batch 200, sampling,
    // input preparation, output processing and scheduling took ~20 ms per step together (vllm #6801,
    // 2024-08-08, v0.5.x). Taken as the scheduling share above plus a part per sequence:
    // 3.8 ms + 200 x 81 us = 20 ms (the profile's 8.2 ms at ~55 sequences; assumption: linear in the batch).
    p.chunked_prefill = false;
    p.separate_prefill = true;
    // Its admission (Scheduler._schedule_prefills): a waiting prompt is prefilled once its blocks fit beside
    // the watermark (BlockSpaceManager can_allocate, watermark 0.01 of the blocks); nothing is reserved for
    // the output, and a running sequence that cannot get its next block preempts the newest running one by
    // recompute (_schedule_running, PreemptionMode.RECOMPUTE for single sequences).
    p.kv_watermark_fraction = 0.01;
    p.prefix_caching = false;  // V0's EngineArgs.enable_prefix_caching defaulted to False (opt-in)
    p.max_batched_tokens = std::max<std::int64_t>(2048, max_model_len);
    p.cuda_graph_max_batch = 256;
    p.multi_step_scheduling = true;  // --num-scheduler-steps (V0 only: V1's scheduler runs every step)
    p.iteration_overhead_s = 3.8e-3;
    if (*release < Version{0, 6, 0}) p.iteration_overhead_per_seq_s = (20e-3 - 3.8e-3) / 200.0;
    p.source +=
        "; V0 engine before 0.8.0 (no chunked prefill, prefill-only iterations, budget max(max_model_len, "
        "2048), graphs up to 256, per-step CPU work from the v0.6.0 profile; before 0.6.0 also 81 us per sequence "
        "from vllm #6801)";
  }
  return p;
}

std::optional<ReleaseSpan> described_releases(Framework f) {
  switch (f) {
    case Framework::Vllm:
      return ReleaseSpan{{0, 1, 0},
                         {1, 0, 0},
                         "vLLM 0.1.0 (its first release) through the 0.x series: the V0 engine's rules before 0.8.0 "
                         "and V1's from it (released_profile)"};
    case Framework::Tgi:
      return ReleaseSpan{{1, 0, 0},
                         {3, 0, 0},
                         "TGI's router of the 1.x and 2.x series, which the profile was read from (router/src/infer.rs "
                         "batching_task); 3.x reworked its scheduling and is not described"};
    case Framework::LmDeploy:
      return ReleaseSpan{{0, 1, 0},
                         {1, 0, 0},
                         "LMDeploy's TurboMind engine from 0.1.0 through the 0.x series (release rules from the tags' "
                         "BlockManager, config.ini and TurbomindEngineConfig)"};
    case Framework::Sglang:
      return ReleaseSpan{{0, 1, 0}, {1, 0, 0}, "SGLang's 0.x series (server_args.py and the scheduler's policy)"};
    case Framework::ExLlamaV2:
      return ReleaseSpan{{0, 0, 1}, {1, 0, 0}, "ExLlamaV2's 0.x series (CUDA graphs per module from 0.1.9)"};
    case Framework::TrtLlm:
      return ReleaseSpan{
          {0, 5, 0}, {2, 0, 0}, "TensorRT-LLM from 0.5.0 (its first public release) through the 1.x series"};
    default: return std::nullopt;
  }
}

std::string release_problem(Framework f, const Version& release) {
  const std::optional<ReleaseSpan> span = described_releases(f);
  if (!span || (release >= span->first && release < span->before)) return "";
  return fmt::format("{} release {} is not one its profile describes: it knows {} up to, not including, {} ({})",
                     name_of(f), to_string(release), to_string(span->first), to_string(span->before), span->why);
}

double static_memory_fraction(const EngineProfile& e, double device_bytes, std::int64_t ranks) {
  if (e.static_fraction > 0) return e.static_fraction;
  if (e.static_reserve_bytes <= 0 || device_bytes <= 0) return 0;
  const double reserve =
      e.static_reserve_bytes + e.static_reserve_per_rank_bytes * static_cast<double>(std::max<std::int64_t>(1, ranks));
  return std::round((device_bytes - reserve) / device_bytes * 1000.0) / 1000.0;
}

KvWindow kv_window(const model::ModelSpec& m, const EngineProfile& e) {
  KvWindow w;
  w.layers = std::max<std::int64_t>(1, m.num_layers);
  const std::int64_t windowed = m.windowed_layers();
  if (m.sliding_window <= 0 || windowed <= 0) return w;
  const bool all = windowed == m.num_layers;
  if (all ? !e.sliding_window_kv : !e.hybrid_window_kv) return w;
  const std::int64_t block = std::max<std::int64_t>(1, e.kv_block_tokens);
  w.window = (m.sliding_window + block - 1) / block * block;
  w.windowed = windowed;
  return w;
}

StatePages aligned_state_pages(const model::ModelSpec& m, double kv_bytes_per_token, double state_bytes,
                               std::int64_t block_tokens) {
  StatePages p;
  p.block_tokens = std::max<std::int64_t>(1, block_tokens);
  const std::int64_t attention = m.attention_layers(), state = m.linear_attention_layers();
  const double share = model::kv_layer_share(m);  // the attention layers' share of every stage's layers
  if (state_bytes <= 0 || kv_bytes_per_token <= 0 || attention <= 0 || state <= 0 || share <= 0 || share >= 1) return p;
  // One state layer's page against one token of one attention layer's KV (the layers on a GPU cancel out).
  const double tokens_per_state_page = state_bytes * share / (kv_bytes_per_token * (1.0 - share));
  const std::int64_t align = p.block_tokens;
  const auto needed = align * static_cast<std::int64_t>(std::ceil(tokens_per_state_page / static_cast<double>(align)));
  p.block_tokens = std::max(p.block_tokens, needed);
  std::int64_t group = std::min(attention, state);
  const std::int64_t most = std::max(attention, state);
  if (static_cast<double>(most) < 1.5 * static_cast<double>(group)) group = most;
  const std::int64_t attention_groups = (attention + group - 1) / group, state_groups = (state + group - 1) / group;
  p.state_blocks = (state_groups + attention_groups - 1) / attention_groups;
  return p;
}

std::int64_t KvWindow::blocks(std::int64_t tokens, std::int64_t block) const {
  const std::int64_t bt = std::max<std::int64_t>(1, block);
  const std::int64_t b = (std::max<std::int64_t>(0, tokens) + bt - 1) / bt;
  const std::int64_t state = tokens > 0 ? state_blocks : 0;
  if (!caps()) return b + state;
  const std::int64_t capped = std::min(b, (window + bt - 1) / bt);
  if (windowed >= layers) return capped + state;
  return ((layers - windowed) * b + windowed * capped + layers - 1) / layers + state;
}

double KvWindow::tokens_held(double tokens) const {
  if (!caps()) return tokens;
  const double capped = std::min(tokens, static_cast<double>(window));
  const double f = static_cast<double>(windowed) / static_cast<double>(layers);
  return (1.0 - f) * tokens + f * capped;
}

const EngineProfile& engine_profile(Framework f) {
  static const std::array<EngineProfile, 14> profiles{static_profile(),    vllm_profile(),
                                                      tgi_profile(),       lightllm_profile(),
                                                      trtllm_profile(),    fastertransformer_profile(),
                                                      lmdeploy_profile(),  deepspeed_inference_profile(),
                                                      sglang_profile(),    llamacpp_profile(),
                                                      exllamav2_profile(), mlc_llm_profile(),
                                                      tinychat_profile(),  autoawq_profile()};
  switch (f) {
    case Framework::DeepSpeed: return profiles[7];
    case Framework::Vllm: return profiles[1];
    case Framework::Tgi: return profiles[2];
    case Framework::LightLlm: return profiles[3];
    case Framework::TrtLlm: return profiles[4];
    case Framework::FasterTransformer: return profiles[5];
    case Framework::LmDeploy: return profiles[6];
    case Framework::Sglang: return profiles[8];
    case Framework::LlamaCpp: return profiles[9];
    case Framework::ExLlamaV2: return profiles[10];
    case Framework::MlcLlm: return profiles[11];
    case Framework::TinyChat: return profiles[12];
    case Framework::AutoAwq: return profiles[13];
    default: return profiles[0];  // Hf and the training frameworks: HF generate()
  }
}

std::optional<std::string> chunked_prefill_problem(const EngineProfile& p) {
  if (!p.chunked_prefill) return std::nullopt;
  if (p.batching == Batching::Static)
    return std::string("static batching prefills whole prompts; chunked prefill needs a continuous engine");
  if (p.separate_prefill)
    return fmt::format(
        "the {} profile prefills new batches in their own iterations; chunked prefill is modelled for vllm and "
        "trt-llm",
        p.name);
  return std::nullopt;
}

std::optional<std::string> scheduler_steps_problem(const EngineProfile& p) {
  if (p.scheduler_steps <= 1) return std::nullopt;
  if (!p.multi_step_scheduling)
    return fmt::format(
        "{} scheduler steps: multi-step scheduling is vLLM's V0 engine's (--engine vllm --engine-version "
        "below 0.8.0); the {} profile schedules every step",
        p.scheduler_steps, p.name);
  if (p.chunked_prefill)
    return fmt::format(
        "{} scheduler steps: multi-step scheduling is modelled as vLLM 0.6.0's runs, without chunked "
        "prefill (each prefill batch runs one step of its own)",
        p.scheduler_steps);
  return std::nullopt;
}

}  // namespace llmsim::sim
