#pragma once
// Serving capacity planning: the fewest GPUs (then the lowest cost) that serve a request rate within
// TTFT/TPOT SLOs, over systems x engines x tensor-parallel sizes x weight formats. Each candidate is a
// replica of tp GPUs simulated by the serving DES (sim/serve/serving_sim.h) at its share of the rate; the
// replica count is found by doubling then bisection on "meets the SLOs" (more replicas never raise a
// replica's load). A short stream has not reached steady state (its tail is its warm-up), so each answer is
// re-simulated on streams twice as long until its p99s settle, more replicas taken where the longer stream
// misses the SLOs; the candidate says whether they settled. Deterministic: fixed seeds, candidates in
// enumeration order.
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "llmsim/hardware/system_spec.h"
#include "llmsim/model/model_spec.h"
#include "llmsim/run/run_spec.h"
#include "llmsim/serve/request_stream.h"

namespace llmsim::sim {

struct ServePlanSpec {
  double rate = 1;              // requests per second, all replicas together (> 0)
  double slo_ttft_p99_s = 1;    // p99 time to first token bound, seconds
  double slo_tpot_p99_s = 0.1;  // p99 time per output token bound, seconds (0 = none)
  LengthDist input{LengthKind::Fixed, 512, 0};
  LengthDist output{LengthKind::Fixed, 128, 0};
  // A shared prompt prefix before every prompt, one of prefix_groups (StreamSpec); engines cache it as their
  // profiles do (EngineProfile::prefix_caching).
  std::int64_t shared_prefix_tokens = 0;
  std::int64_t prefix_groups = 1;
  // Multi-LoRA serving (StreamSpec::adapters): every request runs with one of `adapters` adapters of
  // `adapter_rank` on `adapter_targets` (empty: every projection); `max_loras` per iteration (0: the engine's
  // default). Engines that do not model it come back infeasible with the reason.
  std::int64_t adapters = 0;
  double adapter_zipf = 0;
  std::int64_t adapter_rank = 16;
  std::vector<std::string> adapter_targets;
  std::int64_t max_loras = 0;
  std::vector<Framework> engines = {Framework::Vllm, Framework::Tgi, Framework::LightLlm, Framework::TrtLlm};
  std::vector<std::int64_t> tps = {1, 2, 4, 8};
  std::vector<model::WeightQuant> weight_quants = {model::WeightQuant::None};
  std::vector<std::int64_t> pps = {1};           // pipeline stages per replica
  std::vector<DType> kv_dtypes = {DType::BF16};  // KV-cache element types
  std::vector<std::int64_t> max_num_seqs = {0};  // engine's sequence limit (0 = the engine's default)
  std::vector<int> chunked_prefill = {-1};       // -1 = the engine's default, 0 = off, 1 = on
  DType precision = DType::BF16;
  std::int64_t max_gpus = 64;  // per candidate
  // Simulated requests per replica (Poisson, seeded) of the first pass; each answer is then re-simulated on
  // streams twice as long until its p99s settle (plan_serving), up to kMaxStreamDoublings doublings.
  std::int64_t requests_per_replica = 400;
  // Progress of a long plan: called after each candidate with (candidates done, candidates in all).
  std::function<void(std::size_t, std::size_t)> progress;
  std::uint64_t seed = 1;
  // Disaggregated layouts to try beside aggregated serving, as prefill:decode replica ratios (1:1, 2:1, ...):
  // each candidate of an engine that mixes prefill and decode also runs as P x n prefill replicas of its TP and
  // D x n decode replicas of every TP in `tps` (each pool its own parallelism), n the fewest that meets the
  // SLOs (serve/serving_disagg.h). Empty: aggregated only.
  std::vector<std::pair<std::int64_t, std::int64_t>> pd_ratios;
  // Price of a GPU-hour per system, in the order of plan_serving's `systems` (empty = no prices: the cost
  // column is 0).
  std::vector<double> price_per_gpu_hour;
};

struct ServePlanCandidate {
  std::string system;
  Framework engine = Framework::Vllm;
  std::int64_t tp = 1;  // aggregated: a replica's; disaggregated: a prefill replica's
  model::WeightQuant weight_quant = model::WeightQuant::None;
  std::int64_t pp = 1;
  DType kv_dtype = DType::BF16;
  std::int64_t max_num_seqs = 0;      // as simulated (the engine default resolved)
  bool chunked_prefill = false;       // as simulated
  bool pareto = false;                // on the GPUs vs p99 TTFT front of the feasible candidates
  bool feasible = false;              // some replica count within max_gpus meets the SLOs
  std::string why;                    // when not feasible
  std::int64_t replicas = 0;          // aggregated: replicas; disaggregated: prefill + decode replicas
  std::int64_t prefill_replicas = 0;  // disaggregated: the pools (0: aggregated serving)
  std::int64_t decode_replicas = 0;
  std::int64_t decode_tp = 0;  // disaggregated: a decode replica's tensor-parallel size
  std::int64_t gpus = 0;
  double ttft_p99_s = 0, tpot_p99_s = 0;  // at that replica count
  double output_tokens_per_s = 0;         // all replicas
  // The latency band of that run: the p99s lie in [p99 x low, p99 x high] (the iteration model's band).
  double latency_band_low = 1, latency_band_high = 1;
  double cost_per_hour = 0;
  // The stream the answer was settled on: requests per replica, whether its compared p99s moved by at most
  // kSettledChange at the last doubling (false: still moving at the longest stream, or never doubled), and
  // that move (relative, the larger of p99 TTFT and, with a TPOT SLO, p99 TPOT).
  std::int64_t requests_per_replica = 0;
  bool converged = false;
  double p99_change = 0;
};

// A p99 has settled when doubling the stream moves it by at most this fraction; a plan doubles at most
// kMaxStreamDoublings times (16x the first stream).
inline constexpr double kSettledChange = 0.05;
inline constexpr int kMaxStreamDoublings = 4;
// ... and never past this many requests per replica (the --requests limit): a longer first stream doubles less.
inline constexpr std::int64_t kMaxSettleRequests = 1000000;

struct ServePlan {
  std::vector<ServePlanCandidate> candidates;  // feasible first: fewest GPUs, then cost, then p99 TTFT
  bool found() const { return !candidates.empty() && candidates.front().feasible; }
};

ServePlan plan_serving(const model::ModelSpec& m, const std::vector<hardware::SystemSpec>& systems,
                       const ServePlanSpec& spec);

}  // namespace llmsim::sim
