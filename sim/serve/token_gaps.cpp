#include "llmsim/serve/token_gaps.h"

#include <algorithm>
#include <cmath>

namespace llmsim::sim {

void TokenGaps::add(double gap_s) {
  const double g = std::max(0.0, gap_s);
  ++count_;
  sum_ += g;
  max_ = std::max(max_, g);
  // The sequences decoded in one iteration all see the same gap (the iteration since their last token):
  // the last gap's bin is reused, so most tokens cost no logarithm.
  if (g != last_gap_) {
    const double x = g <= kMin ? 0 : std::log10(g / kMin) * kBinsPerDecade;
    last_bin_ = std::clamp(static_cast<int>(x), 0, kBins - 1);
    last_gap_ = g;
  }
  ++bins_[static_cast<std::size_t>(last_bin_)];
}

double TokenGaps::percentile(double p) const {
  if (count_ == 0) return 0;
  // The rank's bin, then geometric interpolation inside it.
  const double rank = std::clamp(p, 0.0, 1.0) * static_cast<double>(count_);
  double seen = 0;
  for (int b = 0; b < kBins; ++b) {
    const auto n = static_cast<double>(bins_[static_cast<std::size_t>(b)]);
    if (n <= 0) continue;
    if (seen + n >= rank) {
      const double frac = n > 0 ? (rank - seen) / n : 0;
      const double v = kMin * std::pow(10.0, (b + frac) / kBinsPerDecade);
      return std::min(v, max_);
    }
    seen += n;
  }
  return max_;
}

}  // namespace llmsim::sim
