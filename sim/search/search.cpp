#include "llmsim/search/search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <limits>
#include <memory>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "llmsim/core/error.h"
#include "llmsim/core/units.h"
#include "llmsim/model/param_count.h"

namespace llmsim::sim {

namespace {

using Clock = std::chrono::steady_clock;
double dbl(std::int64_t v) { return static_cast<double>(v); }
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

constexpr std::uint64_t kBlock = 2048;  // tuples per unit of work
constexpr std::uint64_t kCancelEvery = 256;

// Total order of results: higher score first, then lower enumeration index.
bool better(double sa, std::uint64_t ia, double sb, std::uint64_t ib) { return sa > sb || (sa == sb && ia < ib); }
bool better_entry(const SearchEntry& a, const SearchEntry& b) { return better(a.score, a.index, b.score, b.index); }
bool faster_entry(const SearchEntry& a, const SearchEntry& b) {
  return better(a.fast.tokens_per_s, a.index, b.fast.tokens_per_s, b.index);
}

const std::string kOutOfGpuMemory = "out of GPU memory";
const std::string kOutOfHostMemory = "out of host memory (offload)";
const std::string kHeadroom = "less free GPU memory than --min-headroom-gib";
const std::string kDeadline = "misses the deadline";

// What one worker collects.
struct Accumulator {
  PruneTally pruned;
  std::uint64_t evaluated = 0, feasible = 0;
  std::vector<SearchEntry> best;                 // heap: worst on top (better_entry as "less")
  std::map<std::int64_t, SearchEntry> per_gpus;  // fastest (tokens/s) per GPU count
  std::vector<SearchEntry> all;
  std::optional<SearchEntry> fastest;  // highest tokens/s, deadline or not (planning)
};

struct FastPhase {
  std::uint64_t space_size = 0;
  std::vector<Accumulator> acc;
  bool interrupted = false;
  double seconds = 0;
  int threads = 1;
  std::optional<SearchEntry> fastest;
};

int thread_count(int requested) {
  if (requested > 0) return requested;
  const unsigned hc = std::thread::hardware_concurrency();
  return hc > 0 ? static_cast<int>(hc) : 1;
}

double price_of(const SearchProblem& p, int system) {
  return p.price_per_gpu_hour.empty() ? 0.0 : p.price_per_gpu_hour[static_cast<std::size_t>(system)];
}

double train_time(const SearchProblem& p, double step_time_s, double tokens_per_step) {
  if (p.train_tokens <= 0 || tokens_per_step <= 0) return 0;
  return std::ceil(p.train_tokens / tokens_per_step) * step_time_s;
}

// Enumerates and scores every tuple of `problem`'s space (resolved as `rs`).
FastPhase fast_phase(const SearchProblem& problem, const ResolvedTrainSpace& rs, const SearchOptions& opt,
                     std::uint64_t progress_offset, std::uint64_t progress_total, bool track_fastest = false) {
  FastPhase out;
  out.space_size = rs.size;
  out.threads = thread_count(opt.threads);
  const int nt = out.threads;
  out.acc.resize(static_cast<std::size_t>(nt));
  const TrainGenerator gen(problem.space, rs, *problem.model, problem.systems);
  const std::size_t keep = std::max<std::size_t>(1, std::max(opt.top, opt.verify));
  const std::uint64_t blocks = (rs.size + kBlock - 1) / kBlock;
  std::atomic<std::uint64_t> next_block{0}, done{0};
  std::atomic<int> finished{0};
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::condition_variable cv;
  const auto t0 = Clock::now();

  auto worker = [&](int w) {
    Accumulator& acc = out.acc[static_cast<std::size_t>(w)];
    // One evaluator (and layer-cost cache) per system; pure functions, so the split does not matter.
    std::vector<std::unique_ptr<FastTrainEvaluator>> evals;
    for (const auto& sys : problem.systems) evals.push_back(std::make_unique<FastTrainEvaluator>(*problem.model, sys));
    TrainCandidate cand;
    std::string key, message;
    bool cancelled = false;
    while (!cancelled) {
      const std::uint64_t b = next_block.fetch_add(1);
      if (b >= blocks || stop.load(std::memory_order_relaxed)) break;
      const std::uint64_t begin = b * kBlock, end = std::min(rs.size, begin + kBlock);
      TrainCursor cursor = gen.seek(begin);
      std::uint64_t i = begin;
      for (; i < end; ++i, gen.advance(cursor)) {
        if ((i - begin) % kCancelEvery == 0 && opt.cancel && opt.cancel->load(std::memory_order_relaxed)) {
          stop = true;
          cancelled = true;
          break;
        }
        if (!gen.check(cursor, cand, key, message, &acc.pruned)) {
          acc.pruned.add(key, i, message);
          continue;
        }
        FastTrainEvaluator& fe = *evals[static_cast<std::size_t>(cand.system)];
        const FastMemory mem = fe.memory(cand.run);
        if (!mem.gpu_fits() || !mem.host_fits() ||
            mem.gpu_capacity_bytes - mem.gpu_bytes < problem.space.min_headroom_bytes) {
          const std::string& k = !mem.gpu_fits() ? kOutOfGpuMemory : !mem.host_fits() ? kOutOfHostMemory : kHeadroom;
          const auto it = acc.pruned.reasons().find(k);
          if (it == acc.pruned.reasons().end() || i < it->second.first_index) {
            message = !mem.host_fits() && mem.gpu_fits()
                          ? fmt::format("{:.1f} of {:.1f} GiB host memory per node", mem.host_bytes / units::GiB,
                                        mem.host_capacity_bytes / units::GiB)
                          : fmt::format("{:.1f} of {:.1f} GiB per GPU", mem.gpu_bytes / units::GiB,
                                        mem.gpu_capacity_bytes / units::GiB);
          }
          acc.pruned.add(k, i, message);
          continue;
        }
        const FastTrainEstimate est = fe.estimate(cand.run);
        ++acc.evaluated;
        const double score = objective_score(problem, cand.system, cand.run, est.step_time_s, est.tokens_per_step);
        auto make = [&] {
          SearchEntry e;
          e.index = i;
          e.system = cand.system;
          e.run = cand.run;
          e.fast = est;
          e.gpu_bytes = mem.gpu_bytes;
          e.score = score;
          return e;
        };
        if (track_fastest &&
            (!acc.fastest || better(est.tokens_per_s, i, acc.fastest->fast.tokens_per_s, acc.fastest->index)))
          acc.fastest = make();
        if (problem.deadline_s > 0 && problem.train_tokens > 0) {
          const double t = train_time(problem, est.step_time_s, est.tokens_per_step);
          if (t > problem.deadline_s) {
            const auto it = acc.pruned.reasons().find(kDeadline);
            if (it == acc.pruned.reasons().end() || i < it->second.first_index)
              message = fmt::format("{:.1f} days > deadline {:.1f} days", t / 86400, problem.deadline_s / 86400);
            acc.pruned.add(kDeadline, i, message);
            continue;
          }
        }
        ++acc.feasible;
        if (acc.best.size() < keep) {
          acc.best.push_back(make());
          std::push_heap(acc.best.begin(), acc.best.end(), better_entry);
        } else if (better(score, i, acc.best.front().score, acc.best.front().index)) {
          std::pop_heap(acc.best.begin(), acc.best.end(), better_entry);
          acc.best.back() = make();
          std::push_heap(acc.best.begin(), acc.best.end(), better_entry);
        }
        if (opt.pareto) {
          auto it = acc.per_gpus.find(cand.run.par.gpus);
          if (it == acc.per_gpus.end())
            acc.per_gpus.emplace(cand.run.par.gpus, make());
          else if (better(est.tokens_per_s, i, it->second.fast.tokens_per_s, it->second.index))
            it->second = make();
        }
        if (opt.keep_all) acc.all.push_back(make());
      }
      done.fetch_add(i - begin, std::memory_order_relaxed);
    }
    finished.fetch_add(1);
  };

  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(nt));
  for (int w = 0; w < nt; ++w)
    pool.emplace_back([&, w] {
      worker(w);
      const std::lock_guard<std::mutex> lock(mu);
      cv.notify_all();
    });
  // The calling thread reports progress until every worker is done.
  {
    std::unique_lock<std::mutex> lock(mu);
    const auto interval = std::chrono::duration<double>(std::max(0.01, opt.progress_interval_s));
    while (!cv.wait_for(lock, interval, [&] { return finished.load() >= nt; }))
      if (opt.progress) {
        const double el = since(t0);
        opt.progress(progress_offset + done.load(std::memory_order_relaxed), progress_total, el);
      }
  }
  for (auto& t : pool) t.join();
  out.seconds = since(t0);
  out.interrupted = stop.load();
  for (auto& a : out.acc)
    if (a.fastest && (!out.fastest || faster_entry(*a.fastest, *out.fastest))) out.fastest = a.fastest;
  return out;
}

// Re-evaluates `entries` with simulate_training, in parallel; results stay in place.
void verify_entries(const SearchProblem& problem, std::vector<SearchEntry*>& entries, int threads) {
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (;;) {
      const std::size_t k = next.fetch_add(1);
      if (k >= entries.size()) break;
      SearchEntry& e = *entries[k];
      if (e.full) continue;
      TrainOptions o;
      o.train_tokens = problem.train_tokens;
      o.price_per_gpu_hour = price_of(problem, e.system);
      TrainResult r = simulate_training(*problem.model, problem.systems[static_cast<std::size_t>(e.system)], e.run, o);
      e.full_score = r.valid() ? objective_score(problem, e.system, e.run, r.step_time_s.value, r.tokens_per_step)
                               : -std::numeric_limits<double>::infinity();
      e.full = std::move(r);
    }
  };
  const int nt = std::max(1, std::min<int>(threads, static_cast<int>(entries.size())));
  std::vector<std::thread> pool;
  for (int w = 0; w < nt; ++w) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
}

// Merges the workers' results into an outcome (order-independent: every choice is by the total order).
SearchOutcome merge(FastPhase&& fp) {
  SearchOutcome out;
  out.space_size = fp.space_size;
  out.fast_seconds = fp.seconds;
  out.threads = fp.threads;
  std::map<std::int64_t, SearchEntry> per_gpus;
  for (auto& a : fp.acc) {
    out.pruned.merge(a.pruned);
    out.evaluated += a.evaluated;
    out.feasible += a.feasible;
    for (auto& e : a.best) out.top.push_back(std::move(e));
    for (auto& [g, e] : a.per_gpus) {
      auto it = per_gpus.find(g);
      if (it == per_gpus.end())
        per_gpus.emplace(g, std::move(e));
      else if (faster_entry(e, it->second))
        it->second = std::move(e);
    }
    for (auto& e : a.all) out.all.push_back(std::move(e));
  }
  out.processed = out.evaluated + out.pruned.total();
  std::sort(out.top.begin(), out.top.end(), better_entry);
  std::sort(out.all.begin(), out.all.end(),
            [](const SearchEntry& a, const SearchEntry& b) { return a.index < b.index; });
  // Throughput-vs-GPUs front: each count's fastest, kept when faster than every smaller count.
  double best = -1;
  for (auto& [g, e] : per_gpus)
    if (e.fast.tokens_per_s > best) {
      best = e.fast.tokens_per_s;
      out.pareto.push_back(std::move(e));
    }
  out.status = fp.interrupted      ? SearchStatus::Interrupted
               : out.feasible == 0 ? SearchStatus::EmptySpace
                                   : SearchStatus::Ok;
  return out;
}

// Re-evaluates the best `verify` entries and the front, re-ranks the verified ones by the full result.
void verify_outcome(const SearchProblem& problem, SearchOutcome& out, const SearchOptions& opt) {
  const auto t0 = Clock::now();
  const std::size_t nv = std::min(opt.verify, out.top.size());
  std::vector<SearchEntry*> todo;
  for (std::size_t k = 0; k < nv; ++k) todo.push_back(&out.top[k]);
  if (opt.pareto)
    for (auto& e : out.pareto) todo.push_back(&e);
  verify_entries(problem, todo, thread_count(opt.threads));
  std::stable_sort(
      out.top.begin(), out.top.begin() + static_cast<std::ptrdiff_t>(nv),
      [](const SearchEntry& a, const SearchEntry& b) { return better(a.full_score, a.index, b.full_score, b.index); });
  out.max_fast_error = 0;
  for (const SearchEntry* e : todo)
    if (e->full && e->full->valid() && e->full->step_time_s.value > 0)
      out.max_fast_error = std::max(out.max_fast_error, std::abs(e->fast.step_time_s / e->full->step_time_s.value - 1));
  out.full_seconds = since(t0);
}

}  // namespace

std::string_view name_of(Objective o) {
  switch (o) {
    case Objective::TokensPerS: return "tokens-per-s";
    case Objective::TokensPerSPerGpu: return "tokens-per-s-per-gpu";
    case Objective::TokensPerDollar: return "tokens-per-dollar";
    case Objective::Time: return "time";
    case Objective::Cost: return "cost";
  }
  return "?";
}

std::vector<std::string> objective_names() {
  return {"tokens-per-s", "tokens-per-s-per-gpu", "tokens-per-dollar", "time", "cost"};
}

bool parse_name(std::string_view s, Objective& out) {
  for (auto o : {Objective::TokensPerS, Objective::TokensPerSPerGpu, Objective::TokensPerDollar, Objective::Time,
                 Objective::Cost})
    if (name_of(o) == s) {
      out = o;
      return true;
    }
  return false;
}

double objective_score(const SearchProblem& p, int system, const RunSpec& run, double step_time_s,
                       double tokens_per_step) {
  if (step_time_s <= 0) return -std::numeric_limits<double>::infinity();
  const double tps = tokens_per_step / step_time_s;
  const double gpus = dbl(run.par.gpus);
  const double price = price_of(p, system);
  const double time = p.train_tokens > 0 ? train_time(p, step_time_s, tokens_per_step) : step_time_s / tokens_per_step;
  switch (p.objective) {
    case Objective::TokensPerS: return tps;
    case Objective::TokensPerSPerGpu: return tps / gpus;
    case Objective::TokensPerDollar: return price > 0 ? tps / (gpus * price / 3600.0) : tps / gpus;
    case Objective::Time: return -time;
    case Objective::Cost: return -(time * gpus * (price > 0 ? price : 1.0) / 3600.0);
  }
  return tps;
}

SearchOutcome search_training(const SearchProblem& problem, const SearchOptions& options) {
  if (problem.model == nullptr) throw Error(ErrorKind::Internal, Location{}, "search without a model");
  const ResolvedTrainSpace rs = resolve_train_space(problem.space, *problem.model, problem.systems);
  SearchOutcome out = merge(fast_phase(problem, rs, options, 0, rs.size));
  if (out.status == SearchStatus::Ok) verify_outcome(problem, out, options);
  if (out.top.size() > options.top) out.top.resize(options.top);
  return out;
}

PlanOutcome plan_training(const SearchProblem& problem, const SearchOptions& options) {
  if (problem.model == nullptr) throw Error(ErrorKind::Internal, Location{}, "plan without a model");
  const auto t0 = Clock::now();
  PlanOutcome out;
  const ResolvedTrainSpace rs = resolve_train_space(problem.space, *problem.model, problem.systems);
  out.space_size = 0;

  // Candidate GPU counts (every slice's), and how many tuples each count has per slice.
  std::map<std::int64_t, std::uint64_t> tuples_at;
  for (const auto& sl : rs.slices) {
    const auto& g = sl.values[static_cast<std::size_t>(TrainAxis::Gpus)];
    if (g.empty()) continue;
    for (const auto v : g) tuples_at[v] += sl.size / g.size();
  }
  // Fewer GPUs than this cannot train the tokens in time even at 100% MFU: model FLOPs per token are
  // at least 6 (LoRA: 4) per weight of the transformer layers a token passes through.
  const bool lora =
      problem.space.base.workload == Workload::Finetune && problem.space.base.train.finetune != FinetuneKind::Full;
  const double flops_per_token = (lora ? 4.0 : 6.0) * dbl(model::count_params(*problem.model).layers_active);
  double best_peak = 0;
  for (const auto& sl : rs.slices) {
    const auto& sys = problem.systems[static_cast<std::size_t>(sl.system)];
    for (const auto p : sl.values[static_cast<std::size_t>(TrainAxis::Precision)])
      best_peak = std::max(best_peak, sys.gpu.peak(static_cast<DType>(p)));
  }
  // The largest count that even 100% MFU leaves short of the deadline.
  if (problem.deadline_s > 0 && best_peak > 0)
    out.lower_bound_gpus = static_cast<std::int64_t>(
                               std::ceil(problem.train_tokens * flops_per_token / (problem.deadline_s * best_peak))) -
                           1;

  std::uint64_t total = 0;
  for (const auto& [g, n] : tuples_at) total += n;
  std::uint64_t progress_done = 0;
  std::optional<SearchEntry> fastest;  // by fast time over every count
  SearchOptions sub = options;
  sub.pareto = false;
  sub.keep_all = false;
  for (const auto& [g, n] : tuples_at) {
    if (g <= out.lower_bound_gpus) {
      out.pruned.add("too few GPUs to meet the deadline even at 100% MFU", 0,
                     fmt::format("{} GPUs <= {}: the tokens' model FLOPs at peak FLOP/s take longer than the deadline",
                                 g, out.lower_bound_gpus),
                     n);
      out.space_size += n;
      progress_done += n;
      continue;
    }
    SearchProblem p = problem;
    Axis fixed_g;
    fixed_g.values = {g};
    p.space.axis(TrainAxis::Gpus) = fixed_g;
    const ResolvedTrainSpace prs = resolve_train_space(p.space, *p.model, p.systems);
    FastPhase fp = fast_phase(p, prs, sub, progress_done, total, true);
    if (fp.fastest && (!fastest || faster_entry(*fp.fastest, *fastest))) fastest = fp.fastest;
    SearchOutcome s = merge(std::move(fp));
    progress_done += prs.size;
    ++out.counts_tried;
    if (out.first_count == 0) out.first_count = g;
    out.last_count = g;
    out.space_size += s.space_size;
    out.evaluated += s.evaluated;
    out.pruned.merge(s.pruned);
    if (s.status == SearchStatus::Interrupted) {
      out.status = SearchStatus::Interrupted;
      out.search = std::move(s);
      out.fastest = fastest;
      out.seconds = since(t0);
      return out;
    }
    if (s.status != SearchStatus::Ok) continue;
    verify_outcome(p, s, sub);
    // Met when a re-evaluated configuration trains the tokens in time by the full simulation.
    bool met = false;
    for (const auto& e : s.top)
      if (e.full && e.full->valid() && e.full->memory.fits() && e.full->total_time_s.value <= problem.deadline_s)
        met = true;
    if (!met) continue;
    std::erase_if(s.top, [&](const SearchEntry& e) {
      return e.full && (!e.full->valid() || e.full->total_time_s.value > problem.deadline_s);
    });
    if (s.top.size() > options.top) s.top.resize(options.top);
    out.met = true;
    out.gpus = g;
    out.search = std::move(s);
    out.seconds = since(t0);
    return out;
  }
  // Not met within the counts: report the fastest configuration seen (re-evaluated).
  if (fastest) {
    std::vector<SearchEntry*> todo{&*fastest};
    verify_entries(problem, todo, thread_count(options.threads));
    out.fastest = fastest;
  }
  out.status = out.evaluated == 0 ? SearchStatus::EmptySpace : SearchStatus::Ok;
  out.seconds = since(t0);
  return out;
}

}  // namespace llmsim::sim
