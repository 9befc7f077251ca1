#pragma once
// Inter-token latencies of a serving run: the gap between a request's consecutive tokens, over every
// token after each request's first (vLLM's benchmark_serving "ITL", token-weighted). The mean is exact
// (a sum and a count); percentiles come from a log-spaced histogram of 100 bins per decade (bin ratio
// 1.023, so a percentile is within one bin, 2.3 %, of the exact order statistic), which keeps the per-token cost at
// one logarithm and an increment however long the run.
#include <cstdint>
#include <vector>

namespace llmsim::sim {

class TokenGaps {
 public:
  void add(double gap_s);
  std::int64_t count() const { return count_; }
  double mean() const { return count_ > 0 ? sum_ / static_cast<double>(count_) : 0; }
  double max() const { return max_; }
  double percentile(double p) const;  // p in [0, 1]; 0 when empty

 private:
  static constexpr double kMin = 1e-7;        // seconds: the first bin's lower edge (shorter gaps go there)
  static constexpr int kBinsPerDecade = 100;  // 1e-7 .. 1e5 s
  static constexpr int kBins = 12 * kBinsPerDecade;
  std::vector<std::int64_t> bins_ = std::vector<std::int64_t>(kBins, 0);
  std::int64_t count_ = 0;
  double sum_ = 0, max_ = 0;
  double last_gap_ = -1;  // the last gap added and its bin (most gaps repeat within an iteration)
  int last_bin_ = 0;
};

}  // namespace llmsim::sim
