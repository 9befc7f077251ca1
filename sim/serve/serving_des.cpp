// The discrete-event loop of serving: arrivals, dispatch to replicas, KV block accounting, iteration
// start and end (admission decisions are the policies of admission_*.cpp).
#include "llmsim/serve/serving_des.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "llmsim/core/error.h"

namespace llmsim::sim::des {

std::vector<std::string> Des::feasibility() const {
  std::vector<std::string> why;
  if (s_.spec_tokens > 0 && (e_.batching != Batching::Continuous || e_.separate_prefill))
    why.push_back(
        fmt::format("speculative decoding is modelled for engines that mix prefill and decode in one "
                    "iteration (vllm from 0.8.0, trt-llm, lmdeploy) and for SGLang's decode batches, not "
                    "the {} profile",
                    e_.name));
  if (lora_ && (e_.max_loras <= 0 || e_.batching != Batching::Continuous || e_.separate_prefill))
    why.push_back(
        fmt::format("multi-LoRA serving is modelled for vllm from 0.8.0 (--max-loras) and sglang "
                    "(--max-loras-per-batch), not the {} profile",
                    e_.name));
  const std::int64_t cap = s_.kv_capacity_tokens;
  if (cap <= 0) {
    why.push_back("no memory is left for the KV cache");
    return why;
  }
  std::int64_t worst = -1, worst_need = 0, count = 0;
  std::int64_t long_prompt = -1, long_count = 0;
  for (std::size_t i = 0; i < reqs_.size(); ++i) {
    const auto& q = reqs_[i];
    std::int64_t need = blocks_for(q.input_tokens + q.output_tokens) * bt();
    if (e_.batching == Batching::Static && s_.static_workspace_tokens)
      need += s_.static_workspace_tokens(1, q.input_tokens);
    if (e_.lightllm_admission) need = q.input_tokens + q.output_tokens + 1;  // its rule admits need < capacity
    if (need > cap) {
      ++count;
      if (need > worst_need) worst = static_cast<std::int64_t>(i), worst_need = need;
    }
    // Without chunking a prompt must fit the budget (SGLang runs a longer one alone in its prefill batch).
    if (e_.batching == Batching::Continuous && !e_.chunked_prefill && !e_.prefill_first) {
      if (q.input_tokens > budget()) {
        ++long_count;
        if (long_prompt < 0 || q.input_tokens > reqs_[static_cast<std::size_t>(long_prompt)].input_tokens)
          long_prompt = static_cast<std::int64_t>(i);
      }
    }
  }
  if (count > 0) {
    const auto& q = reqs_[static_cast<std::size_t>(worst)];
    why.push_back(fmt::format(
        "{} request(s) cannot fit the KV cache even alone: request {} needs {} tokens ({} + {}{}) but a replica "
        "holds {} KV tokens",
        count, q.id, worst_need, q.input_tokens, q.output_tokens,
        e_.batching == Batching::Static ? " + prefill workspace" : "", cap));
  }
  if (long_count > 0) {
    const auto& q = reqs_[static_cast<std::size_t>(long_prompt)];
    why.push_back(fmt::format(
        "{} request(s) exceed the {} token budget of {} per iteration without chunked prefill (request {}: {} "
        "prompt tokens); raise --max-batched-tokens or use --chunked-prefill",
        long_count, e_.name, budget(), q.id, q.input_tokens));
  }
  return why;
}

void Des::dispatch(std::int64_t id, double t) {
  Seq& q = seqs_[static_cast<std::size_t>(id)];
  q.arrival = t;
  q.replica = rr_++ % static_cast<std::int64_t>(reps_.size());
  reps_[static_cast<std::size_t>(q.replica)].waiting.push_back(id);
}

bool Des::allocate(Replica& r, Seq& q, std::int64_t new_tokens) {
  const std::int64_t need = blocks_for(q.computed + new_tokens) - q.blocks;
  if (need <= 0) return true;
  // Blank blocks first; then cached blocks no sequence references, least recently used first.
  if (need > r.free_blocks + r.cache.evictable()) return false;
  while (r.free_blocks < need && r.cache.evict_one()) ++r.free_blocks;
  r.free_blocks -= need;
  q.blocks += need;
  return true;
}

void Des::free_seq(Replica& r, Seq& q) {
  // Its own blocks are free again; the cached ones it referenced stay cached, evictable once unreferenced.
  r.free_blocks += q.blocks - q.shared;
  if (q.shared > 0) r.cache.release(q.prefix_key, q.shared);
  q.shared = 0;
  q.blocks = 0;
  r.reserved_blocks -= q.reserved;
  q.reserved = 0;
}

void Des::remove_running(Replica& r, std::int64_t id) {
  const auto it = std::find(r.running.begin(), r.running.end(), id);
  if (it != r.running.end()) r.running.erase(it);
}

void Des::preempt(Replica& r, std::int64_t id, bool to_back) {
  Seq& q = seqs_[static_cast<std::size_t>(id)];
  free_seq(r, q);
  q.computed = 0;
  ++q.preemptions;
  ++preemptions_;
  if (to_back)
    r.waiting.push_back(id);
  else
    r.waiting.push_front(id);
}

bool Des::plan(Replica& r) {
  r.work.clear();
  return (this->*policy_.plan)(r);
}

bool Des::lora_fits(const std::vector<std::int64_t>& scheduled, std::int64_t adapter) const {
  return adapter < 0 || std::find(scheduled.begin(), scheduled.end(), adapter) != scheduled.end() ||
         static_cast<std::int64_t>(scheduled.size()) < e_.max_loras;
}

bool Des::lora_admits(std::vector<std::int64_t>& scheduled, std::int64_t adapter) const {
  if (!lora_fits(scheduled, adapter)) return false;
  if (adapter >= 0 && std::find(scheduled.begin(), scheduled.end(), adapter) == scheduled.end())
    scheduled.push_back(adapter);
  return true;
}

double Des::load_adapters(Replica& r) {
  std::vector<std::int64_t> used;
  for (const auto& w : r.work) {
    const std::int64_t a = seqs_[static_cast<std::size_t>(w.seq)].adapter;
    if (a >= 0 && std::find(used.begin(), used.end(), a) == used.end()) used.push_back(a);
  }
  std::int64_t loads = 0;
  for (const std::int64_t a : used) {
    const auto it = std::find(r.resident.begin(), r.resident.end(), a);
    if (it != r.resident.end()) {
      r.resident.erase(it);  // most recently used: to the back
    } else {
      ++loads;
      if (static_cast<std::int64_t>(r.resident.size()) >= std::max<std::int64_t>(1, e_.max_loras)) {
        // The least recently used slot whose adapter this iteration does not run.
        const auto victim = std::find_if(r.resident.begin(), r.resident.end(), [&](std::int64_t x) {
          return std::find(used.begin(), used.end(), x) == used.end();
        });
        if (victim != r.resident.end()) r.resident.erase(victim);
      }
    }
    r.resident.push_back(a);
  }
  adapter_loads_ += loads;
  return dbl(loads) * s_.adapter_load_s;
}

void Des::start(Replica& r, std::int64_t index, double t) {
  batch_buf_.clear();
  for (const auto& w : r.work) {
    Seq& q = seqs_[static_cast<std::size_t>(w.seq)];
    batch_buf_.push_back({w.n, w.ctx, w.draft, q.adapter});
    if (q.scheduled < 0) q.scheduled = t;
  }
  r.cost = cost_(batch_buf_);
  if (lora_) {
    // The adapter copies run before the forward pass (vLLM's set_active_adapters, SGLang's LoRA memory pool).
    const double wait = load_adapters(r);
    r.cost = r.cost + Interval::exact(wait);
    adapter_wait_s_ += wait;
  }
  r.busy = true;
  r.start = t;
  r.end = t + std::max(0.0, r.cost.value);
  // KV held during the iteration (the new tokens' slots included).
  if (e_.batching == Batching::Static) {
    r.kv_tokens = static_cast<std::int64_t>(r.batch.size()) * (r.pad_in + r.step);
  } else {
    r.kv_tokens = held_blocks(r) * bt();
  }
  (void)index;
}

void Des::complete(std::int64_t id, double t) {
  Seq& q = seqs_[static_cast<std::size_t>(id)];
  q.finish = t;
  ++done_;
  if (s_.closed_loop && next_closed_ < static_cast<std::int64_t>(reqs_.size()))
    released_.emplace_back(t, next_closed_++);
  if (s_.progress && done_ % 1000 == 0) s_.progress(dbl(done_) / dbl(static_cast<std::int64_t>(reqs_.size())));
}

std::int64_t Des::draft_tokens(const Seq& q, std::int64_t budget_left) const {
  if (s_.spec_tokens <= 0) return 0;
  return std::max<std::int64_t>(0, std::min({s_.spec_tokens, q.output - q.generated - 1, budget_left - 1}));
}

std::int64_t Des::accepted(std::int64_t draft) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::int64_t j = 0;
  while (j < draft && u(spec_rng_) < s_.spec_acceptance) ++j;
  return j;
}

void Des::token_sampled(Seq& q, double t) {
  if (q.first_token < 0) q.first_token = t;
  if (q.last_token >= 0) gaps_.add(t - q.last_token);
  q.last_token = t;
}

void Des::finish(Replica& r, std::int64_t index) {
  const double t = r.end, d = r.end - r.start;
  std::int64_t prefill = 0, decode = 0;
  for (const auto& w : r.work) (w.n == 1 && w.ctx > 0 ? decode : prefill) += w.n;
  ++iterations_;
  busy_s_ += d;
  seqs_s_ += d * dbl(static_cast<std::int64_t>(r.work.size()));
  tokens_s_ += d * dbl(prefill + decode);
  const double util = s_.kv_capacity_tokens > 0 ? dbl(r.kv_tokens) / dbl(s_.kv_capacity_tokens) : 0;
  kv_s_ += d * util;
  kv_peak_ = std::max(kv_peak_, util);
  sum_value_ += r.cost.value;
  sum_low_ += r.cost.low;
  sum_high_ += r.cost.high;
  if (s_.keep_trace)
    trace_.push_back({index, r.start, t, static_cast<std::int64_t>(r.work.size()), prefill, decode, r.kv_tokens});

  if (e_.batching == Batching::Static) {
    for (const std::int64_t id : r.batch) {
      Seq& q = seqs_[static_cast<std::size_t>(id)];
      if (q.generated < q.output) {
        ++q.generated;
        token_sampled(q, t);
      }
      q.computed = r.step == 0 ? r.pad_in : q.computed + 1;
    }
    ++r.step;
    if (r.step >= r.max_out) {  // generate() returns the whole batch now
      for (const std::int64_t id : r.batch) complete(id, t);
      r.batch.clear();
    }
  } else {
    for (const auto& w : r.work) {
      Seq& q = seqs_[static_cast<std::size_t>(w.seq)];
      // A verify step keeps the accepted draft tokens' KV and emits them with one token of its own.
      const std::int64_t kept = w.draft > 0 ? accepted(w.draft) : 0;
      q.computed += w.n - (w.draft - kept);
      donate_prefix(r, q);
      if (q.computed < q.total()) continue;  // a prefill chunk: no token yet
      for (std::int64_t k = 0; k <= kept && q.generated < q.output; ++k) {
        ++q.generated;
        token_sampled(q, t);
        if (w.draft > 0) ++spec_emitted_;
      }
      if (w.draft > 0) ++spec_steps_;
      if (q.generated >= q.output) {
        free_seq(r, q);
        remove_running(r, w.seq);
        complete(w.seq, t);
      }
    }
  }
  r.busy = false;
  r.work.clear();
}

ServingResult Des::run() {
  ServingResult res;
  res.profile = e_;
  res.engine = e_.name;
  res.replicas = s_.replicas;
  res.gpus = s_.replicas * s_.gpus_per_replica;
  res.kv_capacity_tokens = s_.kv_capacity_tokens;
  res.problems = feasibility();
  if (!res.problems.empty() || reqs_.empty()) return res;

  seqs_.resize(reqs_.size());
  bool shares = false;
  for (std::size_t i = 0; i < reqs_.size(); ++i) {
    seqs_[i].prompt = reqs_[i].input_tokens;
    seqs_[i].output = reqs_[i].output_tokens;
    seqs_[i].prefix_key = reqs_[i].prefix_key;
    seqs_[i].adapter = reqs_[i].adapter;
    // KV transferred from a prefill pool counts as computed; its blocks are allocated at admission.
    seqs_[i].computed = std::clamp<std::int64_t>(reqs_[i].kv_ready_tokens, 0, reqs_[i].input_tokens);
    seqs_[i].generated = std::clamp<std::int64_t>(reqs_[i].generated_tokens, 0, reqs_[i].output_tokens);
    seqs_[i].prefix_tokens =
        std::clamp<std::int64_t>(reqs_[i].prefix_tokens, 0, reqs_[i].input_tokens + reqs_[i].output_tokens);
    shares = shares || (reqs_[i].prefix_key >= 0 && reqs_[i].prefix_tokens > 0);
  }
  res.prefix_caching = caching();
  if (shares && e_.prefix_caching && !caching())
    res.notes.push_back(fmt::format("prefix caching is not modelled for {}: every prompt is computed whole",
                                    s_.kv_window.caps()
                                        ? "a KV cache whose windowed layers reuse their blocks cyclically"
                                        : "an engine that prefills in iterations of its own or batches statically"));
  reps_.resize(static_cast<std::size_t>(std::max<std::int64_t>(1, s_.replicas)));
  for (auto& r : reps_) {
    r.total_blocks = s_.kv_capacity_tokens / bt();
    r.free_blocks = r.total_blocks;
  }
  const auto n = static_cast<std::int64_t>(reqs_.size());
  // Open loop: every arrival is known. Closed loop: the first `concurrency` at their times, the rest released.
  const std::int64_t known = s_.closed_loop ? std::min(n, std::max<std::int64_t>(1, s_.concurrency)) : n;
  next_closed_ = known;

  while (true) {
    const double ta_open = next_open_ < known ? reqs_[static_cast<std::size_t>(next_open_)].arrival_s : kInf;
    const double ta_rel = released_.empty() ? kInf : released_.front().first;
    double te = kInf;
    for (const auto& r : reps_)
      if (r.busy) te = std::min(te, r.end);
    const double t = std::min({ta_open, ta_rel, te});
    if (t == kInf) break;
    // 1. Iterations ending now.
    for (std::size_t i = 0; i < reps_.size(); ++i)
      if (reps_[i].busy && reps_[i].end == t) finish(reps_[i], static_cast<std::int64_t>(i));
    // 2. Arrivals now (including closed-loop requests released by the completions above).
    while (next_open_ < known && reqs_[static_cast<std::size_t>(next_open_)].arrival_s <= t) dispatch(next_open_++, t);
    while (!released_.empty() && released_.front().first <= t) {
      dispatch(released_.front().second, t);
      released_.pop_front();
    }
    // 3. Idle replicas with work start their next iteration.
    for (std::size_t i = 0; i < reps_.size(); ++i) {
      Replica& r = reps_[i];
      if (r.busy) continue;
      if (plan(r)) {
        start(r, static_cast<std::int64_t>(i), t);
      } else if (!r.waiting.empty() && r.running.empty() && r.batch.empty()) {
        throw Error(
            ErrorKind::Internal, {},
            fmt::format("serving: replica {} cannot schedule request {} on an empty engine", i, r.waiting.front()));
      }
    }
  }
  if (done_ != n) throw Error(ErrorKind::Internal, {}, fmt::format("serving: {} of {} requests completed", done_, n));
  // Every block is free or cached again once every sequence is done.
  for (std::size_t i = 0; i < reps_.size(); ++i)
    if (e_.batching == Batching::Continuous && reps_[i].free_blocks + reps_[i].cache.cached() != reps_[i].total_blocks)
      throw Error(ErrorKind::Internal, {},
                  fmt::format("serving: replica {} ends with {} free and {} cached of {} KV blocks", i,
                              reps_[i].free_blocks, reps_[i].cache.cached(), reps_[i].total_blocks));
  summarize(res);
  return res;
}

}  // namespace llmsim::sim::des
