#include "llmsim/calibrate/cuda/timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <vector>

#include "llmsim/calibrate/cuda/cuda_util.h"

namespace llmsim::calibrate::cuda {
namespace {

class Event {
 public:
  Event() { LLMSIM_CUDA_CHECK(cudaEventCreate(&e_)); }
  ~Event() { (void)cudaEventDestroy(e_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

struct Stats {
  double median = 0, spread = 0;
};

Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  Stats s;
  s.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  s.spread = s.median > 0 ? (v.back() - v.front()) / s.median : 0;
  return s;
}

}  // namespace

Timing measure(const TimedOp& op, const TimingOptions& o) {
  std::optional<Event> start, stop;
  if (op.clock == Clock::Events) {
    start.emplace();
    stop.emplace();
  }
  // Seconds for a batch of n operations on this rank.
  const auto time_local = [&](long n) -> double {
    if (op.clock == Clock::Events) {
      LLMSIM_CUDA_CHECK(cudaEventRecord(start->get(), op.stream));
      op.enqueue(n);
      LLMSIM_CUDA_CHECK(cudaEventRecord(stop->get(), op.stream));
      LLMSIM_CUDA_CHECK(cudaEventSynchronize(stop->get()));
      float ms = 0;
      LLMSIM_CUDA_CHECK(cudaEventElapsedTime(&ms, start->get(), stop->get()));
      return static_cast<double>(ms) * 1e-3;
    }
    op.sync();
    const auto t0 = std::chrono::steady_clock::now();
    op.enqueue(n);
    op.sync();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  const auto time_batch = [&](long n) -> double {
    const double t = time_local(n);
    return op.agree ? op.agree(t) : t;
  };

  // Warm-up and batch sizing: at least two batches and warmup_s of work, growing the batch 8x until it
  // lasts a quarter of the target.
  long n = 1;
  double warm = 0, t = 0;
  for (int batches = 1;; ++batches) {
    t = time_batch(n);
    warm += t;
    const bool long_enough = t >= o.target_batch_s / 4 || n >= o.max_ops_per_batch;
    if ((long_enough && batches >= 2 && warm >= o.warmup_s) || warm >= o.time_cap_s) break;
    if (!long_enough) n = std::min(n * 8, o.max_ops_per_batch);
  }
  const double per_op = std::max(t / static_cast<double>(n), 1e-9);
  const long ops = std::clamp(std::lround(o.target_batch_s / per_op), 1L, o.max_ops_per_batch);

  Timing r;
  r.ops_per_batch = ops;
  std::vector<double> times;
  double timed = 0;
  bool converged = false;
  const auto window = static_cast<std::size_t>(std::max(o.window, 2));
  while (static_cast<int>(times.size()) < o.max_batches) {
    const double bt = time_batch(ops);
    timed += bt;
    times.push_back(bt / static_cast<double>(ops));
    const std::size_t have = times.size();
    const bool capped = timed >= o.time_cap_s && have >= 3;
    if (have >= static_cast<std::size_t>(o.min_batches) || capped) {
      const std::size_t w = std::min(window, have);
      const Stats s = stats(std::vector<double>(times.end() - static_cast<std::ptrdiff_t>(w), times.end()));
      if (s.spread < o.spread_target) {
        converged = true;
        r.time_s = s.median;
        r.spread = s.spread;
        r.repeats = static_cast<int>(w);
        break;
      }
    }
    if (capped) break;
  }
  r.batches = static_cast<int>(times.size());
  if (!converged) {
    const Stats s = stats(times);
    r.time_s = s.median;
    r.spread = s.spread;
    r.repeats = r.batches;
    r.noisy = true;
  }
  return r;
}

}  // namespace llmsim::calibrate::cuda
