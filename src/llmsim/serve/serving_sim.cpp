#include "llmsim/serve/serving_sim.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <string_view>

#include <fmt/format.h>

#include "llmsim/core/error.h"
#include "llmsim/core/strings.h"
#include "llmsim/core/units.h"
#include "llmsim/infer/infer_sim.h"
#include "llmsim/memory/memory_model.h"
#include "llmsim/run/feasibility.h"

namespace llmsim::sim {

IterationTimeFn exact_time(std::function<double(const std::vector<SequenceWork>&)> seconds) {
  return [f = std::move(seconds)](const std::vector<SequenceWork>& b) { return Interval::exact(f(b)); };
}

EngineProfile serving_profile(Framework f, const hardware::SystemSpec& sys) {
  EngineProfile p = engine_profile(f);
  if (f == Framework::Vllm) {
    // vllm/engine/arg_utils.py get_batch_defaults: larger defaults on >= 70 GiB GPUs other than A100
    // (PR #17885 kept A100 on the small ones), OpenAI API server usage context. vLLM itself tells A100
    // apart by the device name, so the rule matches the name too.
    if (sys.gpu.memory_bytes >= 70.0 * units::GiB && to_lower(sys.gpu.name).find("a100") == std::string::npos) {
      p.max_num_seqs = 1024;
      p.max_batched_tokens = 8192;
    }
  }
  return p;
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

double dbl(std::int64_t v) { return static_cast<double>(v); }

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return b <= 1 ? a : (a + b - 1) / b; }

struct Seq {
  std::int64_t prompt = 0, output = 0;
  std::int64_t generated = 0;  // tokens sampled so far
  std::int64_t computed = 0;   // tokens whose KV is in the cache
  std::int64_t blocks = 0;     // KV blocks held
  std::int64_t reserved = 0;   // blocks reserved to completion (reserve engines)
  std::int64_t replica = -1;
  double arrival = 0, scheduled = -1, first_token = -1, finish = -1;
  std::int64_t preemptions = 0;
  std::int64_t total() const { return prompt + generated; }
};

struct Work {
  std::int64_t seq = 0;
  std::int64_t n = 0;    // tokens computed this iteration
  std::int64_t ctx = 0;  // tokens in its cache before
};

struct Replica {
  std::deque<std::int64_t> waiting;
  std::vector<std::int64_t> running;  // admission order
  std::int64_t total_blocks = 0, free_blocks = 0, reserved_blocks = 0;
  std::int64_t since_prefill = 0;      // TGI/LightLLM: decode steps since the last prefill
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
      : reqs_(reqs), s_(s), e_(s.engine), cost_(cost) {}

  ServingResult run();

 private:
  std::int64_t bt() const { return std::max<std::int64_t>(1, e_.kv_block_tokens); }
  std::int64_t budget() const {
    if (e_.max_batched_tokens <= 0) return std::numeric_limits<std::int64_t>::max();
    std::int64_t b = e_.max_batched_tokens;
    if (e_.batched_tokens_kv_fraction > 0)
      b = std::max(b, static_cast<std::int64_t>(e_.batched_tokens_kv_fraction * dbl(s_.kv_capacity_tokens)));
    return b;
  }
  std::vector<std::string> feasibility() const;
  void dispatch(std::int64_t id, double t);
  bool plan(Replica& r);
  bool plan_static(Replica& r);
  bool plan_mixed(Replica& r);
  bool plan_separate(Replica& r);
  bool tgi_take(Replica& r, std::vector<std::int64_t>& out, bool has_min, std::int64_t min_size);
  bool lightllm_take(Replica& r, std::vector<std::int64_t>& out);
  void start(Replica& r, std::int64_t index, double t);
  void finish(Replica& r, std::int64_t index);
  void complete(std::int64_t id, double t);
  void free_seq(Replica& r, Seq& q);
  bool allocate(Replica& r, Seq& q, std::int64_t new_tokens);
  void preempt(Replica& r, std::int64_t id);
  void remove_running(Replica& r, std::int64_t id);

  const std::vector<Request>& reqs_;
  const ServingSetup& s_;
  const EngineProfile& e_;
  const IterationTimeFn& cost_;
  std::vector<Seq> seqs_;
  std::vector<Replica> reps_;
  std::int64_t next_open_ = 0;                          // next request with a known arrival
  std::int64_t next_closed_ = 0;                        // closed loop: next request to release
  std::deque<std::pair<double, std::int64_t>> released_;  // closed loop: (time, id), time order
  std::int64_t rr_ = 0;
  std::int64_t done_ = 0;
  std::vector<SequenceWork> batch_buf_;
  // Accumulators.
  double busy_s_ = 0, seqs_s_ = 0, tokens_s_ = 0, kv_s_ = 0, kv_peak_ = 0, sum_value_ = 0, sum_low_ = 0, sum_high_ = 0;
  std::int64_t iterations_ = 0, preemptions_ = 0;
  std::vector<IterationRecord> trace_;
};

std::vector<std::string> Des::feasibility() const {
  std::vector<std::string> why;
  const std::int64_t cap = s_.kv_capacity_tokens;
  if (cap <= 0) {
    why.push_back("no memory is left for the KV cache");
    return why;
  }
  std::int64_t worst = -1, worst_need = 0, count = 0;
  std::int64_t long_prompt = -1, long_count = 0;
  for (std::size_t i = 0; i < reqs_.size(); ++i) {
    const auto& q = reqs_[i];
    std::int64_t need = ceil_div(q.input_tokens + q.output_tokens, bt()) * bt();
    if (e_.batching == Batching::Static && s_.static_workspace_tokens)
      need += s_.static_workspace_tokens(1, q.input_tokens);
    if (e_.lightllm_admission) need = q.input_tokens + q.output_tokens + 1;  // its rule admits need < capacity
    if (need > cap) {
      ++count;
      if (need > worst_need) worst = static_cast<std::int64_t>(i), worst_need = need;
    }
    // Without chunking a prompt must fit the budget.
    if (e_.batching == Batching::Continuous && !e_.chunked_prefill) {
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
  const std::int64_t need = ceil_div(q.computed + new_tokens, bt()) - q.blocks;
  if (need <= 0) return true;
  if (need > r.free_blocks) return false;
  r.free_blocks -= need;
  q.blocks += need;
  return true;
}

void Des::free_seq(Replica& r, Seq& q) {
  r.free_blocks += q.blocks;
  q.blocks = 0;
  r.reserved_blocks -= q.reserved;
  q.reserved = 0;
}

void Des::remove_running(Replica& r, std::int64_t id) {
  const auto it = std::find(r.running.begin(), r.running.end(), id);
  if (it != r.running.end()) r.running.erase(it);
}

void Des::preempt(Replica& r, std::int64_t id) {
  Seq& q = seqs_[static_cast<std::size_t>(id)];
  free_seq(r, q);
  q.computed = 0;
  ++q.preemptions;
  ++preemptions_;
  r.waiting.push_front(id);
}

// vLLM V1 / TensorRT-LLM: one forward pass mixes decodes, prefill chunks and new prompts.
bool Des::plan_mixed(Replica& r) {
  std::int64_t budget_left = budget();
  bool preempted = false;
  for (std::size_t i = 0; i < r.running.size() && budget_left > 0;) {
    const std::int64_t id = r.running[i];
    Seq& q = seqs_[static_cast<std::size_t>(id)];
    std::int64_t n = q.total() - q.computed;
    if (!e_.chunked_prefill && n > budget_left) {
      ++i;
      continue;
    }
    n = std::min(n, budget_left);
    bool self_preempted = false;
    while (!allocate(r, q, n)) {
      // Out of blocks: preempt the most recently admitted running sequence by recompute (vLLM).
      const std::int64_t victim = r.running.back();
      r.running.pop_back();
      preempt(r, victim);
      preempted = true;
      if (victim == id) {
        self_preempted = true;
        break;
      }
    }
    if (self_preempted) break;
    r.work.push_back({id, n, q.computed});
    budget_left -= n;
    ++i;
  }
  // vLLM admits nothing in a step that preempted; if that left the step empty, the next step (at the same
  // instant) admits from the waiting queue, which is what falling through does.
  if (preempted && !r.work.empty()) return true;
  while (!r.waiting.empty() && budget_left > 0) {
    if (static_cast<std::int64_t>(r.running.size()) >= e_.max_num_seqs) break;
    const std::int64_t id = r.waiting.front();
    Seq& q = seqs_[static_cast<std::size_t>(id)];
    std::int64_t n = q.total() - q.computed;
    if (!e_.chunked_prefill && n > budget_left) {
      // A recomputation (prompt + tokens generated before a preemption) longer than the whole budget
      // runs alone rather than never.
      if (!(n > budget() && r.work.empty())) break;
      budget_left = n;
    }
    n = std::min(n, budget_left);
    std::int64_t res = 0;
    if (e_.reserve_full_output) {
      res = ceil_div(q.prompt + q.output, bt());
      if (r.reserved_blocks + res > r.total_blocks) break;
    }
    if (!allocate(r, q, n)) break;
    q.reserved = res;
    r.reserved_blocks += res;
    r.waiting.pop_front();
    r.running.push_back(id);
    r.work.push_back({id, n, q.computed});
    budget_left -= n;
  }
  return !r.work.empty();
}

// TGI Queue::next_batch: FCFS while the prefill budget and the total token budget (prompt + max_new_tokens
// of every running and new request) allow; None when fewer than min_size fit.
bool Des::tgi_take(Replica& r, std::vector<std::int64_t>& out, bool has_min, std::int64_t min_size) {
  std::int64_t prefill = 0;
  std::int64_t total = r.reserved_blocks;
  for (const std::int64_t id : r.waiting) {
    if (static_cast<std::int64_t>(r.running.size() + out.size()) >= e_.max_num_seqs) break;
    const Seq& q = seqs_[static_cast<std::size_t>(id)];
    const std::int64_t res = ceil_div(q.prompt + q.output, bt());
    if (prefill + q.prompt > budget() || total + res > r.total_blocks) break;
    prefill += q.prompt;
    total += res;
    out.push_back(id);
  }
  if (out.empty() || (has_min && static_cast<std::int64_t>(out.size()) < min_size)) {
    out.clear();
    return false;
  }
  return true;
}

// LightLLM ReqQueue.generate_new_batch with _can_add_new_req.
bool Des::lightllm_take(Replica& r, std::vector<std::int64_t>& out) {
  if (static_cast<std::int64_t>(r.running.size()) >= e_.max_num_seqs) return false;
  std::vector<std::pair<std::int64_t, std::int64_t>> base;  // (tokens held, remaining output)
  base.reserve(r.running.size() + 8);
  for (const std::int64_t id : r.running) {
    const Seq& q = seqs_[static_cast<std::size_t>(id)];
    base.emplace_back(q.prompt + q.generated, q.output - q.generated - 1);
  }
  std::int64_t prompt_tokens = 0;
  std::vector<std::pair<std::int64_t, std::int64_t>> trial;
  for (const std::int64_t id : r.waiting) {
    const Seq& q = seqs_[static_cast<std::size_t>(id)];
    trial = base;
    trial.emplace_back(q.prompt + 1, q.output - 1);
    std::sort(trial.begin(), trial.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    std::int64_t cum = 0, need = 0;
    for (std::size_t i = 0; i < trial.size(); ++i) {
      cum += trial[i].first;
      need = std::max(need, cum + trial[i].second * static_cast<std::int64_t>(i + 1));
    }
    const bool fits = need < s_.kv_capacity_tokens && static_cast<std::int64_t>(trial.size()) <= e_.max_num_seqs;
    if (!fits || prompt_tokens + q.prompt > budget()) break;
    prompt_tokens += q.prompt;
    base.emplace_back(q.prompt + 1, q.output - 1);
    out.push_back(id);
  }
  return !out.empty();
}

// TGI / LightLLM: a new batch is prefilled in an iteration of its own, then joins the running batch.
bool Des::plan_separate(Replica& r) {
  std::vector<std::int64_t> fresh;
  bool admit = false;
  if (!r.waiting.empty()) {
    if (r.running.empty()) {
      admit = e_.lightllm_admission ? lightllm_take(r, fresh) : tgi_take(r, fresh, false, 0);
    } else if (e_.lightllm_admission) {
      if (r.since_prefill >= e_.max_waiting_tokens) admit = lightllm_take(r, fresh);
    } else {
      const bool force = r.since_prefill >= e_.max_waiting_tokens;
      const auto min_size =
          static_cast<std::int64_t>(std::floor(dbl(static_cast<std::int64_t>(r.running.size())) * e_.waiting_served_ratio));
      admit = tgi_take(r, fresh, !force, min_size);
    }
  }
  if (admit) {
    for (const std::int64_t id : fresh) {
      Seq& q = seqs_[static_cast<std::size_t>(id)];
      r.waiting.pop_front();
      r.running.push_back(id);
      if (e_.lightllm_admission) {
        allocate(r, q, q.prompt);
      } else {  // TGI allocates the blocks of prompt + max_new_tokens at prefill
        q.reserved = ceil_div(q.prompt + q.output, bt());
        r.reserved_blocks += q.reserved;
        q.blocks = q.reserved;
        r.free_blocks -= q.reserved;
      }
      r.work.push_back({id, q.prompt, 0});
    }
    // TGI restarts its waiting_tokens counter at 1 after a prefill, LightLLM its has_wait_tokens at 0.
    r.since_prefill = e_.lightllm_admission ? 0 : 1;
    return true;
  }
  if (r.running.empty()) return false;
  for (const std::int64_t id : r.running) {
    Seq& q = seqs_[static_cast<std::size_t>(id)];
    if (e_.lightllm_admission && !allocate(r, q, 1))
      throw Error(ErrorKind::Internal, {}, "serving: LightLLM admission rule let the KV cache overflow");
    r.work.push_back({id, 1, q.computed});
  }
  ++r.since_prefill;
  return true;
}

// HF generate: a padded batch, prefilled at once, decoded until its longest output ends.
bool Des::plan_static(Replica& r) {
  if (r.batch.empty()) {
    std::int64_t pad = 0, mo = 0;
    for (const std::int64_t id : r.waiting) {
      if (static_cast<std::int64_t>(r.batch.size()) >= e_.max_num_seqs) break;
      const Seq& q = seqs_[static_cast<std::size_t>(id)];
      const std::int64_t p2 = std::max(pad, q.prompt), o2 = std::max(mo, q.output);
      const auto b2 = static_cast<std::int64_t>(r.batch.size()) + 1;
      std::int64_t cap = s_.kv_capacity_tokens;
      if (s_.static_workspace_tokens) cap -= s_.static_workspace_tokens(b2, p2);
      if (b2 * (p2 + o2) > cap) break;
      pad = p2;
      mo = o2;
      r.batch.push_back(id);
    }
    if (r.batch.empty()) return false;
    for (std::size_t i = 0; i < r.batch.size(); ++i) r.waiting.pop_front();
    r.pad_in = pad;
    r.max_out = mo;
    r.step = 0;
    for (const std::int64_t id : r.batch) r.work.push_back({id, pad, 0});
    return true;
  }
  for (const std::int64_t id : r.batch) r.work.push_back({id, 1, r.pad_in + r.step - 1});
  return true;
}

bool Des::plan(Replica& r) {
  r.work.clear();
  if (e_.batching == Batching::Static) return plan_static(r);
  if (e_.separate_prefill) return plan_separate(r);
  return plan_mixed(r);
}

void Des::start(Replica& r, std::int64_t index, double t) {
  batch_buf_.clear();
  for (const auto& w : r.work) {
    batch_buf_.push_back({w.n, w.ctx});
    Seq& q = seqs_[static_cast<std::size_t>(w.seq)];
    if (q.scheduled < 0) q.scheduled = t;
  }
  r.cost = cost_(batch_buf_);
  r.busy = true;
  r.start = t;
  r.end = t + std::max(0.0, r.cost.value);
  // KV held during the iteration (the new tokens' slots included).
  if (e_.batching == Batching::Static) {
    r.kv_tokens = static_cast<std::int64_t>(r.batch.size()) * (r.pad_in + r.step);
  } else {
    r.kv_tokens = (r.total_blocks - r.free_blocks) * bt();
  }
  (void)index;
}

void Des::complete(std::int64_t id, double t) {
  Seq& q = seqs_[static_cast<std::size_t>(id)];
  q.finish = t;
  ++done_;
  if (s_.closed_loop && next_closed_ < static_cast<std::int64_t>(reqs_.size())) released_.emplace_back(t, next_closed_++);
  if (s_.progress && done_ % 1000 == 0) s_.progress(dbl(done_) / dbl(static_cast<std::int64_t>(reqs_.size())));
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
        if (q.first_token < 0) q.first_token = t;
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
      q.computed += w.n;
      if (q.computed < q.total()) continue;  // a prefill chunk: no token yet
      ++q.generated;
      if (q.first_token < 0) q.first_token = t;
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
  for (std::size_t i = 0; i < reqs_.size(); ++i) {
    seqs_[i].prompt = reqs_[i].input_tokens;
    seqs_[i].output = reqs_[i].output_tokens;
  }
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
        throw Error(ErrorKind::Internal, {},
                    fmt::format("serving: replica {} cannot schedule request {} on an empty engine", i,
                                r.waiting.front()));
      }
    }
  }
  if (done_ != n) throw Error(ErrorKind::Internal, {}, fmt::format("serving: {} of {} requests completed", done_, n));

  // Per-request metrics.
  double first_arrival = kInf, last_finish = 0;
  res.requests.reserve(reqs_.size());
  for (std::size_t i = 0; i < reqs_.size(); ++i) {
    const Seq& q = seqs_[i];
    RequestMetrics m;
    m.id = reqs_[i].id;
    m.replica = q.replica;
    m.input_tokens = q.prompt;
    m.output_tokens = q.output;
    m.arrival_s = q.arrival;
    m.scheduled_s = q.scheduled;
    m.first_token_s = q.first_token;
    m.finish_s = q.finish;
    m.queue_s = q.scheduled - q.arrival;
    m.ttft_s = q.first_token - q.arrival;
    m.e2e_s = q.finish - q.arrival;
    m.tpot_s = q.output > 1 ? (q.finish - q.first_token) / dbl(q.output - 1) : 0;
    m.preemptions = q.preemptions;
    m.meets_slo = (s_.slo_ttft_s <= 0 || m.ttft_s <= s_.slo_ttft_s) &&
                  (s_.slo_tpot_s <= 0 || q.output <= 1 || m.tpot_s <= s_.slo_tpot_s);
    first_arrival = std::min(first_arrival, q.arrival);
    last_finish = std::max(last_finish, q.finish);
    res.input_tokens += q.prompt;
    res.output_tokens += q.output;
    res.requests.push_back(m);
  }
  res.completed = n;
  res.duration_s = std::max(1e-12, last_finish - first_arrival);
  res.iterations = iterations_;
  res.preemptions = preemptions_;
  res.time_ratio_low = sum_value_ > 0 ? sum_low_ / sum_value_ : 1;
  res.time_ratio_high = sum_value_ > 0 ? sum_high_ / sum_value_ : 1;
  const auto rate = [&](double amount) {
    return Interval{amount / res.duration_s, amount / (res.duration_s * res.time_ratio_high),
                    amount / (res.duration_s * res.time_ratio_low)};
  };
  res.requests_per_s = rate(dbl(n));
  res.input_tokens_per_s = rate(dbl(res.input_tokens));
  res.output_tokens_per_s = rate(dbl(res.output_tokens));
  const double g = dbl(std::max<std::int64_t>(1, res.gpus));
  res.output_tokens_per_s_per_gpu = res.output_tokens_per_s * (1.0 / g);
  res.requests_per_s_per_gpu = res.requests_per_s * (1.0 / g);

  const auto stats = [&](auto field, bool tpot) {
    std::vector<double> v;
    v.reserve(res.requests.size());
    for (const auto& m : res.requests)
      if (!tpot || m.output_tokens > 1) v.push_back(field(m));
    LatencyStats st;
    if (v.empty()) return st;
    std::sort(v.begin(), v.end());
    double sum = 0;
    for (const double x : v) sum += x;
    const auto pct = [&](double p) {  // linear interpolation between closest ranks
      const double pos = p * dbl(static_cast<std::int64_t>(v.size()) - 1);
      const auto lo = static_cast<std::size_t>(std::floor(pos));
      const std::size_t hi = std::min(v.size() - 1, lo + 1);
      return v[lo] + (v[hi] - v[lo]) * (pos - std::floor(pos));
    };
    st.mean = sum / dbl(static_cast<std::int64_t>(v.size()));
    st.p50 = pct(0.5);
    st.p90 = pct(0.9);
    st.p99 = pct(0.99);
    st.max = v.back();
    return st;
  };
  res.ttft = stats([](const RequestMetrics& m) { return m.ttft_s; }, false);
  res.tpot = stats([](const RequestMetrics& m) { return m.tpot_s; }, true);
  res.e2e = stats([](const RequestMetrics& m) { return m.e2e_s; }, false);
  res.queue = stats([](const RequestMetrics& m) { return m.queue_s; }, false);
  if (busy_s_ > 0) {
    res.mean_batch = seqs_s_ / busy_s_;
    res.mean_batch_tokens = tokens_s_ / busy_s_;
    res.kv_utilization = kv_s_ / busy_s_;
  }
  res.kv_peak_utilization = kv_peak_;
  res.busy_fraction = busy_s_ / (dbl(static_cast<std::int64_t>(reps_.size())) * res.duration_s);
  res.slo_given = s_.slo_ttft_s > 0 || s_.slo_tpot_s > 0;
  std::int64_t good = 0;
  for (const auto& m : res.requests) good += m.meets_slo ? 1 : 0;
  res.slo_fraction = dbl(good) / dbl(n);
  res.goodput_rps = dbl(good) / res.duration_s;
  res.trace = std::move(trace_);
  return res;
}

// Workspace bytes (memory model "workspace" item) of a prefill of `batch` x `input_len` tokens.
double workspace_bytes(const model::ModelSpec& m, const hardware::SystemSpec& sys, RunSpec run, std::int64_t batch,
                       std::int64_t input_len) {
  run.workload = Workload::Inference;
  run.infer.batch = std::max<std::int64_t>(1, batch);
  run.infer.input_len = std::max<std::int64_t>(1, input_len);
  run.infer.output_len = 1;
  const MemoryResult mem = evaluate_memory(m, sys, run);
  for (const auto& item : mem.gpu)
    if (item.name == "workspace") return item.bytes;
  return 0;
}

}  // namespace

ServingResult run_serving(const std::vector<Request>& requests, const ServingSetup& setup, const IterationTimeFn& cost) {
  Des des(requests, setup, cost);
  return des.run();
}

ServingResult simulate_serving(const model::ModelSpec& m, const hardware::SystemSpec& sys, const RunSpec& run_in,
                               const ServingConfig& cfg, const std::vector<Request>& requests) {
  RunSpec run = with_defaults(run_in);
  run.workload = Workload::Inference;
  // Requests beyond the model's context are input errors: nothing could serve them.
  std::int64_t max_in = 1, max_out = 1;
  for (const auto& q : requests) {
    if (m.max_positions > 0 && q.input_tokens + q.output_tokens > m.max_positions)
      throw_input(Location{},
                  fmt::format("request {}: input {} + output {} = {} tokens exceed {}'s maximum context of {}", q.id,
                              q.input_tokens, q.output_tokens, q.input_tokens + q.output_tokens, m.name,
                              m.max_positions));
    max_in = std::max(max_in, q.input_tokens);
    max_out = std::max(max_out, q.output_tokens);
  }
  run.infer.input_len = max_in;
  run.infer.output_len = max_out;
  run.infer.batch = 1;

  ServingResult res;
  res.engine = cfg.engine.name;
  res.profile = cfg.engine;
  res.problems = structural_problems(run, m);
  for (auto& p : inference_problems(m, sys, run)) res.problems.push_back(std::move(p));
  if (!res.problems.empty()) return res;

  const EngineProfile& e = cfg.engine;
  const std::int64_t per_replica = run.par.tp * run.par.pp;
  const std::int64_t replicas = std::max<std::int64_t>(1, run.par.gpus / per_replica);

  IterationOptions eager;
  eager.overhead_s = e.iteration_overhead_s;
  eager.glue = e.glue;
  auto eager_model = std::make_shared<IterationCostModel>(m, sys, run.par, run.infer, eager);
  std::shared_ptr<IterationCostModel> graph_model;
  if (e.cuda_graphs && e.cuda_graph_max_batch > 0) {
    IterationOptions g = eager;
    g.kernel_floor_s = kCudaGraphKernelFloor_s;
    graph_model = std::make_shared<IterationCostModel>(m, sys, run.par, run.infer, g);
  }
  const std::int64_t gmax = e.cuda_graph_max_batch;
  IterationTimeFn cost = [eager_model, graph_model, gmax](const std::vector<SequenceWork>& b) {
    if (graph_model && static_cast<std::int64_t>(b.size()) <= gmax) {
      bool decode_only = true;
      for (const auto& s : b)
        if (s.new_tokens != 1 || s.context <= 0) {
          decode_only = false;
          break;
        }
      if (decode_only) return graph_model->iteration(b).time_s;
    }
    return eager_model->iteration(b).time_s;
  };

  // KV capacity of one replica: the GPU of its peak stage.
  const double mem = sys.gpu.memory_bytes;
  res.kv_bytes_per_token = eager_model->kv_bytes_per_token();
  res.weight_bytes = eager_model->weight_bytes_per_gpu();
  res.runtime_bytes = sys.runtime.cuda_context_bytes;
  const bool is_static = e.batching == Batching::Static;
  ServingSetup setup;
  if (is_static) {
    // PyTorch caching allocator: no reservation, fragmentation as in the memory model; the workspace of
    // each batch's prefill is charged when the batch is formed.
    res.runtime_bytes += sys.runtime.allocator_reserve_fraction * mem;
    res.kv_budget_bytes = mem * e.gpu_memory_utilization - res.weight_bytes - res.runtime_bytes;
    auto cache = std::make_shared<std::map<std::pair<std::int64_t, std::int64_t>, std::int64_t>>();
    const double kvpt = res.kv_bytes_per_token;
    setup.static_workspace_tokens = [cache, &m, &sys, run, kvpt](std::int64_t b, std::int64_t len) {
      const auto key = std::make_pair(b, len);
      if (const auto it = cache->find(key); it != cache->end()) return it->second;
      const auto v = static_cast<std::int64_t>(std::ceil(workspace_bytes(m, sys, run, b, len) / kvpt));
      (*cache)[key] = v;
      return v;
    };
  } else {
    // The engines' memory profiling runs one forward pass at the token budget (vLLM profile_run with
    // max_num_batched_tokens over max_num_seqs sequences; TGI warmup at max_batch_prefill_tokens).
    const std::int64_t tokens = std::max<std::int64_t>(1, e.max_batched_tokens);
    const std::int64_t seqs = std::clamp<std::int64_t>(e.max_num_seqs, 1, tokens);
    res.workspace_bytes = workspace_bytes(m, sys, run, seqs, ceil_div(tokens, seqs));
    const double rest = mem - res.weight_bytes - res.workspace_bytes - res.runtime_bytes;
    res.kv_budget_bytes = e.utilization_of_free_memory
                              ? rest * e.gpu_memory_utilization
                              : mem * e.gpu_memory_utilization - res.weight_bytes - res.workspace_bytes - res.runtime_bytes;
  }
  const std::int64_t block = std::max<std::int64_t>(1, e.kv_block_tokens);
  std::int64_t cap = 0;
  if (res.kv_budget_bytes > 0 && res.kv_bytes_per_token > 0)
    cap = static_cast<std::int64_t>(std::floor(res.kv_budget_bytes / res.kv_bytes_per_token / dbl(block))) * block;
  res.kv_capacity_tokens = cap;
  if (cap <= 0) {
    res.problems.push_back(fmt::format(
        "no memory left for the KV cache: {:.2f} GiB per GPU x {:.2f} utilization minus weights {:.2f} GiB, "
        "workspace {:.2f} GiB and runtime {:.2f} GiB is {:.2f} GiB",
        mem / units::GiB, e.gpu_memory_utilization, res.weight_bytes / units::GiB, res.workspace_bytes / units::GiB,
        res.runtime_bytes / units::GiB, res.kv_budget_bytes / units::GiB));
    return res;
  }

  setup.engine = e;
  setup.replicas = replicas;
  setup.gpus_per_replica = per_replica;
  setup.kv_capacity_tokens = cap;
  setup.closed_loop = cfg.closed_loop;
  setup.concurrency = cfg.concurrency;
  setup.slo_ttft_s = cfg.slo_ttft_s;
  setup.slo_tpot_s = cfg.slo_tpot_s;
  setup.keep_trace = cfg.keep_trace;
  setup.progress = cfg.progress;
  ServingResult out = run_serving(requests, setup, cost);
  out.kv_bytes_per_token = res.kv_bytes_per_token;
  out.weight_bytes = res.weight_bytes;
  out.workspace_bytes = res.workspace_bytes;
  out.runtime_bytes = res.runtime_bytes;
  out.kv_budget_bytes = res.kv_budget_bytes;
  return out;
}

}  // namespace llmsim::sim
