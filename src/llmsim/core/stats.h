#pragma once
// Small order statistics shared by the simulator's validation and the calibration's fits.
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

}  // namespace llmsim
