#include "llmsim/calibrate/host_bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "llmsim/core/error.h"

namespace llmsim::calibrate {

namespace {

using Clock = std::chrono::steady_clock;

// Runs body(begin, end) over [0, n) split into `threads` contiguous ranges, in parallel.
template <typename F>
void parallel_for(std::size_t n, int threads, F body) {
  std::vector<std::thread> pool;
  const std::size_t t = static_cast<std::size_t>(std::max(1, threads));
  const std::size_t chunk = (n + t - 1) / t;
  for (std::size_t i = 0; i < t; ++i) {
    const std::size_t b = i * chunk, e = std::min(n, b + chunk);
    if (b >= e) break;
    pool.emplace_back([=] { body(b, e); });
  }
  for (auto& th : pool) th.join();
}

// Times `op` after one warm-up run: repeats until the spread of the last five runs is under 3 % or
// 15 runs / 10 s have passed; median of those runs.
template <typename Op>
Sample time_it(const BenchItem& item, double flops, Op op) {
  op();  // warm-up: page in the buffers, spin up the threads
  std::vector<double> t;
  const auto start = Clock::now();
  double spread = 1;
  while (true) {
    const auto a = Clock::now();
    op();
    t.push_back(std::chrono::duration<double>(Clock::now() - a).count());
    if (t.size() >= 5) {
      std::vector<double> last(t.end() - 5, t.end());
      std::sort(last.begin(), last.end());
      spread = (last.back() - last.front()) / last[2];
      if (spread < 0.03) break;
    }
    if (t.size() >= 15 || std::chrono::duration<double>(Clock::now() - start).count() > 10) break;
  }
  std::vector<double> last(t.end() - static_cast<std::ptrdiff_t>(std::min<std::size_t>(5, t.size())), t.end());
  std::sort(last.begin(), last.end());
  Sample s;
  s.item = item;
  s.flops = flops;
  s.time_s = last[last.size() / 2];
  s.spread = t.size() >= 5 ? spread : 0;
  s.repeats = static_cast<int>(t.size());
  s.noisy = s.spread >= 0.03;
  return s;
}

// Fused AdamW over fp32 parameters, gradients and both moments, as DeepSpeed's CPU Adam does per
// element (its AVX kernels do the same arithmetic; this loop is auto-vectorised by the compiler).
Sample cpu_adam(const BenchItem& item) {
  const auto n = static_cast<std::size_t>(item.bytes / 4);
  std::vector<float> p(n), g(n), m(n), v(n);
  parallel_for(n, item.group, [&](std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i) {
      p[i] = 0.01f * static_cast<float>(i % 97 + 1);
      g[i] = 0.001f * static_cast<float>(i % 89 + 1);
      m[i] = 0;
      v[i] = 0;
    }
  });
  const float lr = 1e-4f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f, wd = 0.01f, c1 = 1 - b1, c2 = 1 - b2;
  auto op = [&] {
    parallel_for(n, item.group, [&](std::size_t b, std::size_t e) {
      float* __restrict pp = p.data();
      const float* __restrict gg = g.data();
      float* __restrict mm = m.data();
      float* __restrict vv = v.data();
      for (std::size_t i = b; i < e; ++i) {
        const float gi = gg[i];
        const float mi = b1 * mm[i] + c1 * gi;
        const float vi = b2 * vv[i] + c2 * gi * gi;
        mm[i] = mi;
        vv[i] = vi;
        pp[i] -= lr * (mi / (std::sqrt(vi) + eps) + wd * pp[i]);
      }
    });
  };
  // `flops` carries the parameters updated per operation (the rate the simulator uses).
  return time_it(item, static_cast<double>(n), op);
}

// STREAM-like kernels over doubles: copy (a = b: bytes = read + written) and triad (a = b + s*c).
Sample host_stream(const BenchItem& item, bool triad) {
  const double arrays = triad ? 3.0 : 2.0;
  const auto n = static_cast<std::size_t>(item.bytes / (8.0 * arrays));
  std::vector<double> a(n), b(n), c(triad ? n : 0);
  parallel_for(n, item.group, [&](std::size_t lo, std::size_t hi) {
    for (std::size_t i = lo; i < hi; ++i) {
      a[i] = 0;
      b[i] = 1.0 + static_cast<double>(i % 7);
      if (triad) c[i] = 2.0;
    }
  });
  auto op = [&] {
    parallel_for(n, item.group, [&](std::size_t lo, std::size_t hi) {
      if (triad) {
        for (std::size_t i = lo; i < hi; ++i) a[i] = b[i] + 3.0 * c[i];
      } else {
        std::memcpy(a.data() + lo, b.data() + lo, (hi - lo) * sizeof(double));
      }
    });
  };
  // The sample keeps the planned item (its identity for resume); n * 8 * arrays equals item.bytes up to
  // rounding to whole elements.
  Sample s = time_it(item, 0, op);
  if (a[n / 2] == 0) throw Error(ErrorKind::Internal, Location{}, "host benchmark did not run");
  return s;
}

}  // namespace

bool is_host_family(const std::string& bench) {
  return bench == "cpu_adam" || bench == "host_copy" || bench == "host_triad";
}

Sample run_host_item(const BenchItem& item) {
  if (item.bench == "cpu_adam") return cpu_adam(item);
  if (item.bench == "host_copy") return host_stream(item, false);
  if (item.bench == "host_triad") return host_stream(item, true);
  throw Error(ErrorKind::Internal, Location{}, fmt::format("'{}' is not a host benchmark", item.bench));
}

void run_host_items(const std::vector<BenchItem>& items, SampleLog& log, const Progress& progress) {
  std::size_t index = 0;
  for (const auto& item : items) {
    ++index;
    if (!is_host_family(item.bench) || log.done(item)) continue;
    if (progress) progress(item, index, items.size());
    log.append(run_host_item(item));
  }
}

}  // namespace llmsim::calibrate
