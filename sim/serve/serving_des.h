#pragma once
// The serving event loop's state (internal to sim/serve/): sequences, per-replica queues and KV
// blocks, and the discrete-event simulator Des. Its admission policies live one per file behind one interface
// and a registry (admission_policy.h: admission_mixed.cpp: vLLM, TensorRT-LLM, LMDeploy; admission_separate.cpp:
// TGI, LightLLM; admission_sglang.cpp: SGLang; admission_static.cpp: HF generate, FasterTransformer), the event
// loop in serving_des.cpp, the metrics in serving_metrics.cpp.
#include <algorithm>
#include <cstdint>
#include <deque>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "llmsim/serve/admission_policy.h"
#include "llmsim/serve/prefix_cache.h"
#include "llmsim/serve/serving_sim.h"
#include "llmsim/serve/token_gaps.h"

namespace llmsim::sim::des {

inline constexpr double kInf = std::numeric_limits<double>::infinity();

inline double dbl(std::int64_t v) { return static_cast<double>(v); }

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return b <= 1 ? a : (a + b - 1) / b; }

struct Seq {
  std::int64_t prompt = 0, output = 0;
  std::int64_t generated = 0;  // tokens sampled so far
  std::int64_t computed = 0;   // tokens whose KV is in the cache
  std::int64_t blocks = 0;     // KV blocks held
  std::int64_t reserved = 0;   // blocks reserved to completion (reserve engines)
  // Prefix caching: the request's shared prefix, and how many of its first blocks are the cache's (referenced,
  // not its own: computed by an earlier request, or its own given to the cache once full).
  std::int64_t prefix_key = -1, prefix_tokens = 0;
  std::int64_t shared = 0;
  std::int64_t cached_tokens = -1;  // prompt tokens found cached at its first admission (-1: not admitted yet)
  std::int64_t replica = -1;
  double arrival = 0, scheduled = -1, first_token = -1, finish = -1;
  double last_token = -1;  // when its latest token was sampled (inter-token gaps)
  std::int64_t preemptions = 0;
  std::int64_t adapter = -1;  // multi-LoRA serving: its LoRA adapter (-1: none)
  std::int64_t total() const { return prompt + generated; }
};

struct Work {
  std::int64_t seq = 0;
  std::int64_t n = 0;      // tokens computed this iteration
  std::int64_t ctx = 0;    // tokens in its cache before
  std::int64_t draft = 0;  // speculative decoding: draft tokens this step verifies (n = 1 + draft)
};

struct Replica {
  std::deque<std::int64_t> waiting;
  std::vector<std::int64_t> running;  // admission order
  std::int64_t total_blocks = 0, free_blocks = 0, reserved_blocks = 0;
  std::int64_t since_prefill = 0;  // TGI/LightLLM: decode steps since the last prefill
  std::int64_t steps_left = 0;  // multi-step scheduling (EngineProfile::scheduler_steps): decode steps left in the run
  // SGLang: the share of the running requests' remaining output its admission reserves, and the request
  // whose prompt is being prefilled in chunks (-1: none).
  double new_token_ratio = -1;  // -1: not started (the initial ratio)
  std::int64_t chunked = -1;
  PrefixCache cache;                   // prefix caching: blocks kept for reuse (neither free nor a sequence's own)
  std::vector<std::int64_t> resident;  // multi-LoRA: adapters in GPU slots, least recently used first
  // Static batching: the batch in flight.
  std::vector<std::int64_t> batch;
  std::int64_t pad_in = 0, max_out = 0, step = 0;
  // The iteration in flight.
  bool busy = false;
  double start = 0, end = 0;
  std::vector<Work> work;
  Interval cost;
  std::int64_t kv_tokens = 0;  // held during the iteration
};

class Des {
 public:
  Des(const std::vector<Request>& reqs, const ServingSetup& s, const IterationTimeFn& cost)
      : reqs_(reqs),
        s_(s),
        e_(s.engine),
        cost_(cost),
        policy_(admission_policy(admission_kind(s.engine))),
        spec_rng_(s.spec_seed),
        lora_(std::any_of(reqs.begin(), reqs.end(), [](const Request& q) { return q.adapter >= 0; })) {}

  ServingResult run();

 private:
  std::int64_t bt() const { return std::max<std::int64_t>(1, e_.kv_block_tokens); }
  // KV blocks a sequence of `tokens` holds: whole blocks, the windowed layers' capped at the window's.
  std::int64_t blocks_for(std::int64_t tokens) const { return s_.kv_window.blocks(tokens, bt()); }
  std::int64_t budget() const {
    if (e_.max_batched_tokens <= 0) return std::numeric_limits<std::int64_t>::max();
    std::int64_t b = e_.max_batched_tokens;
    if (e_.batched_tokens_kv_fraction > 0)
      b = std::max(b, static_cast<std::int64_t>(e_.batched_tokens_kv_fraction * dbl(s_.kv_capacity_tokens)));
    return b;
  }
  std::vector<std::string> feasibility() const;
  // Prefix caching applies: the engine caches, mixes prefill with decode (plan_mixed), no KV window reuses
  // blocks cyclically, and no layer keeps a recurrent state (a Gated DeltaNet layer's state is not a prefix's
  // blocks: vLLM V1 reuses prefixes of such models only in its experimental mamba cache modes).
  bool caching() const {
    return e_.prefix_caching && e_.batching == Batching::Continuous && !e_.separate_prefill && !s_.kv_window.caps() &&
           s_.kv_window.state_blocks == 0;
  }
  // Blocks held by sequences (their own and the referenced cached ones): not free, not evictable.
  std::int64_t held_blocks(const Replica& r) const { return r.total_blocks - r.free_blocks - r.cache.evictable(); }
  // Prefix caching (serving_prefix.cpp): a sequence about to be admitted with nothing computed takes the cached
  // blocks of its prefix (whole blocks, at least one prompt token left to compute) and returns the tokens
  // found; detach_prefix undoes it when the admission fails; donate_prefix gives the cache the prefix
  // blocks a sequence has computed in full.
  std::int64_t attach_prefix(Replica& r, Seq& q);
  void detach_prefix(Replica& r, Seq& q);
  void donate_prefix(Replica& r, Seq& q);
  void dispatch(std::int64_t id, double t);
  friend const AdmissionPolicy& admission_policy(AdmissionKind kind);  // the registry names the policies below
  bool plan(Replica& r);                                               // the engine's policy (policy_)
  bool plan_static(Replica& r);
  bool plan_mixed(Replica& r);
  bool plan_separate(Replica& r);
  bool tgi_take(Replica& r, std::vector<std::int64_t>& out, bool has_min, std::int64_t min_size);
  bool lightllm_take(Replica& r, std::vector<std::int64_t>& out);
  bool plan_prefill_first(Replica& r);  // SGLang (admission_sglang.cpp)
  bool sglang_prefill(Replica& r);
  bool sglang_decode(Replica& r);
  void start(Replica& r, std::int64_t index, double t);
  void finish(Replica& r, std::int64_t index);
  void token_sampled(Seq& q, double t);  // first-token time and the inter-token gap
  // Speculative decoding: the draft tokens a decode step of `q` verifies (none past its last output token,
  // nor beyond the token budget left), and how many of `draft` the target accepts (drawn).
  std::int64_t draft_tokens(const Seq& q, std::int64_t budget_left) const;
  std::int64_t accepted(std::int64_t draft);
  void complete(std::int64_t id, double t);
  // Multi-LoRA: whether a sequence with `adapter` may join an iteration that already runs `scheduled` (distinct
  // adapters, at most EngineProfile::max_loras), adding it to them when it may.
  bool lora_admits(std::vector<std::int64_t>& scheduled, std::int64_t adapter) const;
  // Whether it may, without adding it.
  bool lora_fits(const std::vector<std::int64_t>& scheduled, std::int64_t adapter) const;
  // The adapters of the planned iteration not in a GPU slot are copied in (the least recently used others
  // evicted); returns the seconds the iteration waits for them.
  double load_adapters(Replica& r);
  void free_seq(Replica& r, Seq& q);
  bool allocate(Replica& r, Seq& q, std::int64_t new_tokens);
  // A running sequence (already out of `running`) loses its KV and waits to be recomputed: at the front of the
  // waiting queue (vLLM, the engines that preempt), or at its back (SGLang's retraction).
  void preempt(Replica& r, std::int64_t id, bool to_back = false);
  void remove_running(Replica& r, std::int64_t id);
  // The per-request metrics, throughput and latency percentiles of a finished run (serving_metrics.cpp).
  void summarize(ServingResult& res);

  const std::vector<Request>& reqs_;
  const ServingSetup& s_;
  const EngineProfile& e_;
  const IterationTimeFn& cost_;
  const AdmissionPolicy& policy_;
  std::vector<Seq> seqs_;
  std::vector<Replica> reps_;
  std::int64_t next_open_ = 0;                            // next request with a known arrival
  std::int64_t next_closed_ = 0;                          // closed loop: next request to release
  std::deque<std::pair<double, std::int64_t>> released_;  // closed loop: (time, id), time order
  std::int64_t rr_ = 0;
  std::int64_t done_ = 0;
  std::vector<SequenceWork> batch_buf_;
  // Accumulators.
  double busy_s_ = 0, seqs_s_ = 0, tokens_s_ = 0, kv_s_ = 0, kv_peak_ = 0, sum_value_ = 0, sum_low_ = 0, sum_high_ = 0;
  std::int64_t iterations_ = 0, preemptions_ = 0;
  std::int64_t prefix_query_tokens_ = 0, prefix_hit_tokens_ = 0;  // prompt tokens admitted / found cached
  TokenGaps gaps_;                                                // every request's inter-token gaps
  std::mt19937_64 spec_rng_;                                      // speculative decoding's acceptance draws
  std::int64_t spec_steps_ = 0, spec_emitted_ = 0;                // verify steps and the tokens they emitted
  std::int64_t adapter_loads_ = 0;                                // multi-LoRA: adapters copied into GPU slots
  double adapter_wait_s_ = 0;
  const bool lora_;  // some request runs with a LoRA adapter
  std::vector<IterationRecord> trace_;
};

}  // namespace llmsim::sim::des
