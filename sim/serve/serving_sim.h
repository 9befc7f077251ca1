#pragma once
// Discrete-event simulation of an inference engine serving a request stream (docs/serving.md): per model
// replica a waiting queue and a running set whose sequences hold KV-cache blocks; every iteration the
// engine's scheduler (sim/run/engine_profile.h) picks prefill chunks and decode steps, the iteration cost
// model prices the batch, the clock advances, first tokens and completions are recorded. Replicas
// (gpus / (tp*pp)) receive requests round-robin in arrival order.
//
// Two layers: run_serving() is the engine-independent core driven by a cost callback (tests inject a
// hand-computable one); simulate_serving() sizes the KV cache from the memory model, builds the
// IterationCostModel callback and calls it.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "llmsim/core/interval.h"
#include "llmsim/hardware/system_spec.h"
#include "llmsim/infer/iteration_cost.h"
#include "llmsim/model/model_spec.h"
#include "llmsim/run/engine_profile.h"
#include "llmsim/run/run_spec.h"
#include "llmsim/serve/request_stream.h"

namespace llmsim::sim {

// Seconds (with band) of one iteration over `batch` on one replica.
using IterationTimeFn = std::function<Interval(const std::vector<SequenceWork>& batch)>;
// The same from a plain seconds function (band = the value).
IterationTimeFn exact_time(std::function<double(const std::vector<SequenceWork>&)> seconds);

// The engine with its defaults resolved for a system: vLLM's batch defaults depend on the GPU (>= 70 GiB
// and not an A100: max_num_seqs 1024, max_num_batched_tokens 8192; vllm/engine/arg_utils.py); LMDeploy's batch
// limit on its name; SGLang's prefill chunk, CUDA-graph batch and memory reserve on its memory and `tp`.
EngineProfile serving_profile(Framework f, const hardware::SystemSpec& sys, const std::optional<Version>& release = {},
                              std::int64_t max_model_len = 0, std::int64_t tp = 1);

struct ServingSetup {
  EngineProfile engine;                 // scheduler rules and limits
  std::int64_t replicas = 1;            // model replicas; requests are dispatched round-robin
  std::int64_t gpus_per_replica = 1;    // tp * pp (for per-GPU rates)
  std::int64_t kv_capacity_tokens = 0;  // KV tokens one replica can hold (whole blocks x block size)
  // The windows the engine's KV manager honours (run/engine_profile.h kv_window): a sliding window over
  // every layer caps a sequence at ceil(window / block) blocks, reused cyclically (vLLM's
  // block_sliding_window, TensorRT-LLM's cyclic KV cache); a hybrid model's windowed layers are capped
  // alone (vLLM V1's hybrid manager); none: sequences hold every token's KV.
  KvWindow kv_window;
  // Static batching: KV-token equivalents of the prefill workspace of `batch` sequences of `input_len`
  // tokens, subtracted from kv_capacity_tokens when a batch is formed (empty = none).
  std::function<std::int64_t(std::int64_t batch, std::int64_t input_len)> static_workspace_tokens;
  bool closed_loop = false;      // requests beyond the first `concurrency` arrive when one completes
  std::int64_t concurrency = 0;  // closed loop: clients
  double slo_ttft_s = 0;         // goodput: TTFT bound (0 = none)
  double slo_tpot_s = 0;         // goodput: TPOT bound (0 = none)
  bool keep_trace = false;       // record every iteration and request lifetime
  std::function<void(double fraction_done)> progress;  // called now and then (may be empty)
  // Speculative decoding (run/run_spec.h): each decode step of a sequence verifies up to `spec_tokens`
  // draft tokens and keeps 1 + the accepted ones, each accepted with probability `spec_acceptance` given
  // its predecessors were, drawn from a generator seeded with `spec_seed` (0 tokens: no speculation).
  std::int64_t spec_tokens = 0;
  double spec_acceptance = 0;
  std::uint64_t spec_seed = 1;
  // Multi-LoRA serving: seconds to copy one adapter from host memory into a GPU slot (the iteration that first
  // runs an adapter no slot holds waits for it; EngineProfile::max_loras slots, least recently used evicted).
  double adapter_load_s = 0;
};

struct RequestMetrics {
  std::int64_t id = 0;
  std::int64_t replica = 0;
  std::int64_t input_tokens = 0;
  std::int64_t output_tokens = 0;
  double arrival_s = 0;
  double scheduled_s = 0;    // start of the first iteration that computed any of its tokens
  double first_token_s = 0;  // end of the iteration that sampled its first token
  double finish_s = 0;       // its last token (static batching: the end of its batch, when generate() returns)
  double queue_s = 0;        // scheduled - arrival
  double ttft_s = 0;         // first_token - arrival
  double tpot_s = 0;         // (finish - first_token) / (output - 1); 0 when output == 1
  double e2e_s = 0;          // finish - arrival
  std::int64_t preemptions = 0;
  std::int64_t cached_tokens = 0;  // prompt tokens its first admission found in the prefix cache
  bool meets_slo = true;           // TTFT and TPOT within the SLOs given
};

struct LatencyStats {
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;  // seconds
};

// Mean, p50, p90, p99 and max of `values` (seconds), the percentiles interpolated between the closest
// ranks (llmsim::quantile_sorted): the one rule of every latency statistic a serving run reports.
LatencyStats latency_stats(std::vector<double> values);

struct IterationRecord {  // one engine iteration (trace)
  std::int64_t replica = 0;
  double start_s = 0, end_s = 0;
  std::int64_t sequences = 0;       // sequences with work
  std::int64_t prefill_tokens = 0;  // tokens of prefill chunks (incl. recomputation)
  std::int64_t decode_tokens = 0;   // decode steps
  std::int64_t kv_tokens = 0;       // KV tokens held (whole blocks) during it
};

struct ServingResult {
  std::vector<std::string> problems;  // why it cannot run at all (empty = valid)
  std::vector<std::string> notes;     // things the caller should know (sorted trace, clamped values)
  std::string engine;
  EngineProfile profile;  // as simulated
  std::int64_t replicas = 1;
  std::int64_t gpus = 1;
  // KV sizing per replica (GPU of the replica's peak stage) — filled by simulate_serving.
  double kv_bytes_per_token = 0;
  double weight_bytes = 0;            // per GPU
  double workspace_bytes = 0;         // activation / workspace peak reserved per GPU
  double runtime_bytes = 0;           // CUDA context (+ allocator reserve for static) per GPU
  double kv_budget_bytes = 0;         // per GPU, for the KV cache
  double static_memory_fraction = 0;  // SGLang: the device share for weights and KV (0: not sized that way)
  std::int64_t kv_capacity_tokens = 0;

  std::vector<RequestMetrics> requests;  // in id order
  std::int64_t completed = 0;
  std::int64_t rejected = 0;  // requests longer than the model's context, rejected before serving
  double duration_s = 0;      // first arrival to last completion
  std::int64_t input_tokens = 0, output_tokens = 0;
  Interval requests_per_s, input_tokens_per_s, output_tokens_per_s;  // all replicas
  Interval output_tokens_per_s_per_gpu, requests_per_s_per_gpu;
  LatencyStats ttft, tpot, e2e, queue;  // best estimates (seconds), over requests
  // Inter-token latency over every token after each request's first (token-weighted, vLLM's "ITL"): with
  // equal requests its mean equals tpot's; with varied lengths long replies weigh more. Percentiles within
  // 2.3 % (token_gaps.h).
  LatencyStats itl;
  // The band of every latency above is [x * time_ratio_low, x * time_ratio_high]: the iteration model's
  // low/high over its value, weighted by iteration time (rates scale with the inverse).
  double time_ratio_low = 1, time_ratio_high = 1;
  double mean_batch = 0;         // sequences per iteration, weighted by iteration time
  double mean_batch_tokens = 0;  // tokens per iteration, weighted by iteration time
  double kv_utilization = 0;     // KV tokens held / capacity, weighted by iteration time
  double kv_peak_utilization = 0;
  double busy_fraction = 0;  // replica-time spent in iterations / (replicas x duration)
  std::int64_t iterations = 0;
  std::int64_t preemptions = 0;
  // Prefix caching (EngineProfile::prefix_caching, where the engine's scheduler models it): prompt tokens of
  // every admission (re-admissions after preemption included) and those found cached; the hit rate is their
  // ratio (vLLM's prefix cache hit rate).
  bool prefix_caching = false;
  std::int64_t prefix_query_tokens = 0, prefix_hit_tokens = 0;
  double prefix_hit_rate = 0;
  // Speculative decoding: verify steps of sequences and the tokens they emitted (accepted drafts + one each).
  std::int64_t spec_steps = 0, spec_tokens_emitted = 0;
  // Multi-LoRA serving: adapters copied into GPU slots, and the seconds the iterations waited for them.
  std::int64_t adapter_loads = 0;
  double adapter_load_s = 0;
  double adapter_bytes = 0;   // one adapter on one GPU (0: no adapters)
  double adapter_copy_s = 0;  // copying it from host memory into a slot
  bool slo_given = false;
  double slo_fraction = 0;             // requests meeting every SLO given
  double goodput_rps = 0;              // such requests per second
  std::vector<IterationRecord> trace;  // with keep_trace

  bool valid() const { return problems.empty(); }
};

// A run's request-level figures from each request's times: a request's end-to-end latency, TPOT and SLO
// attainment (from arrival_s, first_token_s, finish_s, ttft_s, output_tokens), and the run's tokens,
// duration (first arrival to last finish), rates with the band res.time_ratio_low/high give, their per-GPU
// shares (res.gpus), latency statistics and goodput. The one rule for the event loop's summary and for
// disaggregated serving's whole run.
void summarize_requests(ServingResult& res, double slo_ttft_s, double slo_tpot_s);

// The core DES over `requests` (ids 0..n-1 in arrival order). Requests that can never run (KV capacity,
// a prompt over a non-chunking token budget) make a result with problems; `cost` prices iterations.
ServingResult run_serving(const std::vector<Request>& requests, const ServingSetup& setup, const IterationTimeFn& cost);

struct ServingConfig {
  EngineProfile engine;  // resolved (serving_profile + overrides)
  bool closed_loop = false;
  std::int64_t concurrency = 0;
  double slo_ttft_s = 0, slo_tpot_s = 0;
  bool keep_trace = false;
  std::function<void(double)> progress;
  std::uint64_t seed = 1;  // speculative decoding's acceptance draws (the stream's seed)
};

// Full model: replicas = gpus / (tp*pp); per replica KV capacity = GPU memory x gpu_memory_utilization
// - weights (IterationCostModel) - workspace (memory model's inference workspace at the engine's token
// budget) - CUDA context (system runtime; static batching also the allocator reserve), in whole blocks
// (utilization_of_free_memory engines apply the fraction after the other terms). Iterations are priced by
// IterationCostModel with the engine's overhead; decode-only batches within cuda_graph_max_batch use the
// CUDA-graph kernel floor. Requests longer than the model's context are Input errors.
ServingResult simulate_serving(const model::ModelSpec& m, const hardware::SystemSpec& sys, const RunSpec& run,
                               const ServingConfig& cfg, const std::vector<Request>& requests);

}  // namespace llmsim::sim
