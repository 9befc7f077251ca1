#pragma once
// Small order statistics shared by the simulator's validation, the calibration's fits, the serving
// simulation's latency percentiles and the reports' latency distributions.
#include <algorithm>
#include <cstddef>
#include <vector>

namespace llmsim {

// Median of the values (mean of the two middle ones for an even count); 0 for none.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The q-quantile (0 <= q <= 1) of values already sorted ascending, interpolating linearly between the
// closest ranks (as numpy's default); 0 for none.
inline double quantile_sorted(const std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  const double pos = std::clamp(q, 0.0, 1.0) * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(pos);
  const std::size_t hi = std::min(v.size() - 1, lo + 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

// The same of values in any order.
inline double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return quantile_sorted(v, q);
}

}  // namespace llmsim
