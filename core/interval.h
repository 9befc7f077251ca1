#pragma once
// A predicted quantity with its confidence band: `value` is the best estimate, [low, high] the range
// that follows from the calibration (or default) bands of the efficiencies it was computed from.
// Times add and scale like the value; a band never inverts.
#include <algorithm>

namespace llmsim::sim {

struct Interval {
  double value = 0;  // best estimate (unit of the quantity it describes)
  double low = 0;    // lower edge of the band
  double high = 0;   // upper edge of the band

  static Interval exact(double v) { return Interval{v, v, v}; }
  // A fitted value with its band as profiles store it: an edge of 0 means "the value itself".
  static Interval banded(double v, double low, double high) {
    return Interval{v, low > 0 ? low : v, high > 0 ? high : v};
  }
  Interval& operator+=(const Interval& o) {
    value += o.value;
    low += o.low;
    high += o.high;
    return *this;
  }
  friend Interval operator+(Interval a, const Interval& b) { return a += b; }
  friend Interval operator*(Interval a, double s) { return Interval{a.value * s, a.low * s, a.high * s}; }
  friend Interval operator*(double s, Interval a) { return a * s; }
  // Element-wise maximum: the time of two overlapped activities.
  friend Interval max(const Interval& a, const Interval& b) {
    return Interval{std::max(a.value, b.value), std::max(a.low, b.low), std::max(a.high, b.high)};
  }
};

// What of `a` is left when `b` runs beside it: max(0, a - b) on each edge (the fast edge of both with
// the fast edge, as the band's edges come from the same efficiencies), reordered so the band never
// inverts.
inline Interval exposed_beyond(const Interval& a, const Interval& b) {
  double e[3] = {std::max(0.0, a.low - b.low), std::max(0.0, a.value - b.value), std::max(0.0, a.high - b.high)};
  std::sort(e, e + 3);
  return Interval{e[1], e[0], e[2]};
}

// `amount` per unit of `time`: the fast edge of the time gives the high rate (0 for a zero time).
inline Interval per_second(double amount, const Interval& time) {
  auto f = [&](double t) { return t > 0 ? amount / t : 0.0; };
  return Interval{f(time.value), f(time.high), f(time.low)};
}

}  // namespace llmsim::sim
