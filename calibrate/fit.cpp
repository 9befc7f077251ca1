// Fits of calibration samples (see fit.h). Conventions shared by the fits:
//  * errors are relative: a sample's residual is (fitted - measured) / measured, so microsecond latencies
//    and second-long transfers weigh the same;
//  * a band is the 95 % interval of the fitted parameter (alpha-beta: Student-t x standard error of the
//    weighted least squares) or of the samples around the fit (GEMM: +-2 standard deviations of the log
//    residuals), never a guess.
#include "llmsim/calibrate/fit.h"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "llmsim/core/error.h"
#include "llmsim/core/stats.h"
#include "llmsim/cost/compute_cost.h"

namespace llmsim::calibrate {

namespace {

bool finite(double v) { return std::isfinite(v); }

// Two-sided 95 % Student-t quantile t_{0.975, dof}: a table for small dof, linear interpolation in
// 1/dof between table points, 1.96 in the limit. Matches the exact quantile to < 0.5 % for every dof.
double student_t95(int dof) {
  if (dof <= 0) return 0.0;  // exact fit: no residual degrees of freedom, no interval
  struct Point {
    int dof;
    double t;
  };
  static constexpr Point kTable[] = {{1, 12.706}, {2, 4.303},  {3, 3.182},  {4, 2.776},  {5, 2.571},  {6, 2.447},
                                     {7, 2.365},  {8, 2.306},  {9, 2.262},  {10, 2.228}, {12, 2.179}, {15, 2.131},
                                     {20, 2.086}, {25, 2.060}, {30, 2.042}, {40, 2.021}, {60, 2.000}, {120, 1.980}};
  for (const auto& p : kTable)
    if (p.dof == dof) return p.t;
  const Point* lo = nullptr;
  for (const auto& p : kTable) {
    if (p.dof > dof) {
      // Interpolate in x = 1/dof between lo and p.
      const double x = 1.0 / dof, x0 = 1.0 / lo->dof, x1 = 1.0 / p.dof;
      return lo->t + (p.t - lo->t) * (x - x0) / (x1 - x0);
    }
    lo = &p;
  }
  // Beyond the table: between (120, 1.980) and (inf, 1.960).
  const double x = 1.0 / dof, x0 = 1.0 / 120.0;
  return 1.960 + (1.980 - 1.960) * x / x0;
}

Location where(const char* fn) { return Location{.key = fn}; }

}  // namespace

// --- alpha-beta ------------------------------------------------------------------------------------------
//
// Model t = alpha + beta * bytes with relative errors: weights 1/t_i^2. Dividing row i by a scale s_i
// turns the weighted problem into ordinary least squares A x = y with A_i = [1/s_i, bytes_i/s_i],
// y_i = t_i/s_i, whose residuals are relative errors. The first pass uses the measured times (s_i = t_i,
// the weights 1/t_i^2 asked for); weighting by measured values favours samples that happened to be fast
// (a bias of about the noise variance, enough to push the truth out of the band), so the fit is then
// iterated with s_i = fitted time (iteratively reweighted least squares, a few passes). Columns are scaled
// to unit norm before the QR solve (alpha ~ 1e-5 s, beta ~ 1e-11 s/B).
// Standard errors: s^2 = RSS / (n - p), Cov = s^2 (A^T A)^-1; 95 % band = estimate +- t_{0.975, n-p} se.
// When the unconstrained alpha comes out negative the fit is redone with alpha = 0 (beta only); alpha's
// band is then [0, upper end of the unconstrained band]. Bandwidth band: 1 / (beta +- t se_beta), the
// lower end of beta clamped at beta / 100 (the bandwidth's upper end is at most 100x the fit) so that it
// stays positive. rel_rms = sqrt(mean(((fit - t) / t)^2)) over the measured times.
namespace {

struct LineFit {
  double alpha = 0, beta = 0, se_alpha = 0, se_beta = 0;
  int dof = 0;
};

// One weighted solve with row scales `scale`; `with_alpha` false fits beta alone (alpha = 0).
LineFit solve_line(const std::vector<double>& bytes, const std::vector<double>& seconds,
                   const std::vector<double>& scale, bool with_alpha) {
  const int n = static_cast<int>(bytes.size());
  const int p = with_alpha ? 2 : 1;
  Eigen::MatrixXd a(n, p);
  Eigen::VectorXd y(n);
  for (int i = 0; i < n; ++i) {
    if (with_alpha) a(i, 0) = 1.0 / scale[i];
    a(i, p - 1) = bytes[i] / scale[i];
    y(i) = seconds[i] / scale[i];
  }
  Eigen::VectorXd norms(p);
  for (int c = 0; c < p; ++c) norms(c) = a.col(c).norm();  // > 0: two distinct sizes, one of them > 0
  const Eigen::MatrixXd as = a * norms.cwiseInverse().asDiagonal();
  const Eigen::VectorXd x = as.colPivHouseholderQr().solve(y).cwiseQuotient(norms);
  // (A^T A)^-1 = D^-1 (As^T As)^-1 D^-1.
  const Eigen::MatrixXd inv =
      norms.cwiseInverse().asDiagonal() * (as.transpose() * as).inverse() * norms.cwiseInverse().asDiagonal();
  const double rss = (a * x - y).squaredNorm();
  const double s2 = n > p ? rss / (n - p) : 0.0;
  LineFit f;
  f.dof = n - p;
  f.beta = x(p - 1);
  f.se_beta = std::sqrt(std::max(0.0, s2 * inv(p - 1, p - 1)));
  if (with_alpha) {
    f.alpha = x(0);
    f.se_alpha = std::sqrt(std::max(0.0, s2 * inv(0, 0)));
  }
  return f;
}

// Iteratively reweighted: scales start at the measured times, then follow the fitted times.
LineFit irls_line(const std::vector<double>& bytes, const std::vector<double>& seconds, bool with_alpha) {
  std::vector<double> scale = seconds;
  LineFit f = solve_line(bytes, seconds, scale, with_alpha);
  for (int pass = 0; pass < 8; ++pass) {
    bool usable = true;
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      scale[i] = f.alpha + f.beta * bytes[i];
      usable = usable && scale[i] > 0;
    }
    if (!usable) break;  // a fit predicting non-positive times: keep the previous pass
    const LineFit next = solve_line(bytes, seconds, scale, with_alpha);
    const bool converged = std::abs(next.beta - f.beta) <= 1e-12 * std::abs(f.beta) &&
                           std::abs(next.alpha - f.alpha) <= 1e-12 * std::abs(f.alpha) + 1e-300;
    f = next;
    if (converged) break;
  }
  return f;
}

}  // namespace

AlphaBetaFit fit_alpha_beta(const std::vector<double>& bytes, const std::vector<double>& seconds) {
  if (bytes.size() != seconds.size())
    throw_input(where("fit_alpha_beta"), "sizes and times differ in length (" + std::to_string(bytes.size()) + " vs " +
                                             std::to_string(seconds.size()) + ")");
  const int n = static_cast<int>(bytes.size());
  std::set<double> sizes;
  for (int i = 0; i < n; ++i) {
    if (!finite(seconds[i]) || seconds[i] <= 0)
      throw_input(where("fit_alpha_beta"),
                  "sample " + std::to_string(i) + " has a non-positive time (" + std::to_string(seconds[i]) + " s)");
    if (!finite(bytes[i]) || bytes[i] < 0)
      throw_input(where("fit_alpha_beta"), "sample " + std::to_string(i) + " has a negative size");
    sizes.insert(bytes[i]);
  }
  if (sizes.size() < 2)
    throw_input(where("fit_alpha_beta"), "latency + bandwidth needs samples of at least 2 distinct sizes (got " +
                                             std::to_string(sizes.size()) + ")");

  AlphaBetaFit fit;
  fit.n = n;
  LineFit line = irls_line(bytes, seconds, true);
  if (line.alpha < 0) {
    // Latency below zero is unphysical: beta alone.
    const double t_full = student_t95(line.dof);
    fit.alpha_high_s = std::max(0.0, line.alpha + t_full * line.se_alpha);
    line = irls_line(bytes, seconds, false);
    fit.alpha_s = 0;
    fit.alpha_low_s = 0;
  } else {
    const double t_full = student_t95(line.dof);
    fit.alpha_s = line.alpha;
    fit.alpha_low_s = std::max(0.0, line.alpha - t_full * line.se_alpha);
    fit.alpha_high_s = line.alpha + t_full * line.se_alpha;
  }
  if (!(line.beta > 0) || !finite(line.beta))
    throw_input(where("fit_alpha_beta"), "times do not grow with size: no bandwidth can be fitted");
  const double t95 = student_t95(line.dof);
  const double beta_low = std::max(line.beta - t95 * line.se_beta, line.beta / 100.0);
  const double beta_high = line.beta + t95 * line.se_beta;
  fit.bandwidth_Bps = 1.0 / line.beta;
  fit.bandwidth_low_Bps = 1.0 / beta_high;
  fit.bandwidth_high_Bps = 1.0 / beta_low;

  double sum = 0;
  for (int i = 0; i < n; ++i) {
    const double r = (fit.alpha_s + line.beta * bytes[i] - seconds[i]) / seconds[i];
    sum += r * r;
  }
  fit.rel_rms = std::sqrt(sum / n);
  return fit;
}

// --- GEMM ------------------------------------------------------------------------------------------------
//
// Measured efficiency e_i = flops_i / (t_i * peak). The simulator predicts e = f * shape_i(h) with
// shape_i(h) = sim::gemm_shape_factor(m, n, k, batch, sm_count, h). For a given h the least-squares f in
// log space is the geometric mean f(h) = exp(mean log(e_i / shape_i(h))); the objective is the RMS of the
// log residuals r_i = log(e_i / (f shape_i)). h is searched on {0} U 200 log-spaced points in [1, 4096]
// (ties -> the smaller h), then refined by golden-section search in log h between the grid neighbours of
// the best point. Batch: 1 for "gemm"; item.group (>= 1) for "gemm_batched", whose FLOPs cover the batch.
// Samples are memory bound, and left out, when bytes / hbm_Bps > flops / peak: the roofline at peak, the
// strictest test (the fitted compute time flops / (peak f shape) is longer still), so every sample kept is
// compute bound whatever f turns out to be; GEMMs just right of the ridge are given up for that.
// Band: f exp(-+2 sd(r)) (sd over the samples, n - 1) clamped to (0, 1.2]; f itself is not clamped.
namespace {

struct GemmPoint {
  std::int64_t m, n, k, batch;
  double flops, bytes, time, eff;
};

struct GemmEval {
  double h = 0, f = 0, rms = 0;
};

GemmEval eval_gemm(const std::vector<GemmPoint>& pts, int sm_count, double h) {
  GemmEval e{.h = h};
  std::vector<double> logs(pts.size());
  double mean = 0;
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const double s = sim::gemm_shape_factor(pts[i].m, pts[i].n, pts[i].k, pts[i].batch, sm_count, h);
    logs[i] = std::log(pts[i].eff / s);
    mean += logs[i];
  }
  mean /= static_cast<double>(pts.size());
  double ss = 0;
  for (double l : logs) ss += (l - mean) * (l - mean);
  e.f = std::exp(mean);
  e.rms = std::sqrt(ss / static_cast<double>(pts.size()));
  return e;
}

GemmEval best_half_k(const std::vector<GemmPoint>& pts, int sm_count) {
  constexpr int kGrid = 200;
  constexpr double kMax = 4096.0;
  std::vector<double> grid{0.0};
  for (int i = 0; i < kGrid; ++i) grid.push_back(std::exp(std::log(kMax) * i / (kGrid - 1)));
  std::size_t best_i = 0;
  GemmEval best = eval_gemm(pts, sm_count, grid[0]);
  for (std::size_t i = 1; i < grid.size(); ++i) {
    const GemmEval e = eval_gemm(pts, sm_count, grid[i]);
    // Strictly better (beyond rounding) replaces; a tie keeps the smaller h found first.
    if (e.rms < best.rms * (1 - 1e-12)) {
      best = e;
      best_i = i;
    }
  }
  if (best_i == 0) return best;  // h = 0 wins: nothing to refine
  // Golden-section refinement in log h over [grid[i-1], grid[i+1]] (below grid[1] = 1: from 0.5).
  double lo = std::log(best_i >= 2 ? grid[best_i - 1] : grid[1] * 0.5);
  double hi = std::log(best_i + 1 < grid.size() ? grid[best_i + 1] : grid.back());
  const double g = (std::sqrt(5.0) - 1) / 2;
  double x1 = hi - g * (hi - lo), x2 = lo + g * (hi - lo);
  GemmEval e1 = eval_gemm(pts, sm_count, std::exp(x1)), e2 = eval_gemm(pts, sm_count, std::exp(x2));
  for (int it = 0; it < 60; ++it) {
    if (e1.rms <= e2.rms) {
      hi = x2;
      x2 = x1;
      e2 = e1;
      x1 = hi - g * (hi - lo);
      e1 = eval_gemm(pts, sm_count, std::exp(x1));
    } else {
      lo = x1;
      x1 = x2;
      e1 = e2;
      x2 = lo + g * (hi - lo);
      e2 = eval_gemm(pts, sm_count, std::exp(x2));
    }
  }
  const GemmEval refined = e1.rms <= e2.rms ? e1 : e2;
  return refined.rms < best.rms ? refined : best;
}

GemmFit finish_gemm(const std::vector<GemmPoint>& pts, int sm_count, const GemmEval& best) {
  GemmFit fit;
  fit.n = static_cast<int>(pts.size());
  fit.fraction = best.f;
  fit.half_k = best.h;
  double ss = 0, rel = 0;
  for (const auto& p : pts) {
    const double s = sim::gemm_shape_factor(p.m, p.n, p.k, p.batch, sm_count, best.h);
    const double r = std::log(p.eff / (best.f * s));
    ss += r * r;
    // Predicted time flops / (peak f s) vs measured t: (pred - t) / t = e / (f s) - 1.
    const double rt = p.eff / (best.f * s) - 1.0;
    rel += rt * rt;
  }
  const double sd = pts.size() > 1 ? std::sqrt(ss / static_cast<double>(pts.size() - 1)) : 0.0;
  constexpr double kMaxFraction = 1.2;
  constexpr double kMinFraction = 1e-6;
  fit.fraction_low = std::clamp(best.f * std::exp(-2 * sd), kMinFraction, kMaxFraction);
  fit.fraction_high = std::clamp(best.f * std::exp(2 * sd), kMinFraction, kMaxFraction);
  fit.rel_rms = std::sqrt(rel / static_cast<double>(pts.size()));
  return fit;
}

}  // namespace

GemmFit fit_gemm(const std::vector<Sample>& samples, double peak_flops, int sm_count, double hbm_Bps) {
  if (!(peak_flops > 0) || !finite(peak_flops))
    throw_input(where("fit_gemm"), "the dtype's peak FLOP/s must be positive");
  if (sm_count <= 0) throw_input(where("fit_gemm"), "the GPU's SM count must be positive");
  std::vector<GemmPoint> pts;
  std::string dtype;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const Sample& s = samples[i];
    const BenchItem& it = s.item;
    if (it.bench != "gemm" && it.bench != "gemm_batched")
      throw_input(where("fit_gemm"),
                  "sample " + std::to_string(i) + " is a '" + it.bench + "' measurement, not a GEMM");
    if (i == 0) dtype = it.dtype;
    if (it.dtype != dtype)
      throw_input(where("fit_gemm"),
                  "samples mix dtypes '" + dtype + "' and '" + it.dtype + "': fit one precision at a time");
    if (!(s.flops > 0) || !finite(s.flops) || !(s.time_s > 0) || !finite(s.time_s)) continue;
    if (it.m <= 0 || it.n <= 0 || it.k <= 0) continue;
    if (hbm_Bps > 0 && it.bytes / hbm_Bps > s.flops / peak_flops) continue;  // memory bound at peak
    const std::int64_t batch = it.bench == "gemm_batched" ? std::max(1, it.group) : 1;
    pts.push_back({it.m, it.n, it.k, batch, s.flops, it.bytes, s.time_s, s.flops / (s.time_s * peak_flops)});
  }
  if (pts.empty())
    throw_input(where("fit_gemm"), "no compute-bound GEMM sample with positive FLOPs and time" +
                                       (dtype.empty() ? std::string() : " for dtype '" + dtype + "'"));

  return finish_gemm(pts, sm_count, best_half_k(pts, sm_count));
}

// --- rate ------------------------------------------------------------------------------------------------

RateFit fit_rate(const std::vector<double>& amount, const std::vector<double>& seconds) {
  if (amount.size() != seconds.size())
    throw_input(where("fit_rate"), "amounts and times differ in length (" + std::to_string(amount.size()) + " vs " +
                                       std::to_string(seconds.size()) + ")");
  if (amount.empty()) throw_input(where("fit_rate"), "no samples");
  std::vector<double> rates;
  for (std::size_t i = 0; i < amount.size(); ++i) {
    if (!(seconds[i] > 0) || !finite(seconds[i]))
      throw_input(where("fit_rate"), "sample " + std::to_string(i) + " has a non-positive time");
    if (!(amount[i] > 0) || !finite(amount[i]))
      throw_input(where("fit_rate"), "sample " + std::to_string(i) + " has a non-positive amount");
    rates.push_back(amount[i] / seconds[i]);
  }
  RateFit fit;
  fit.n = static_cast<int>(rates.size());
  fit.rate = median(rates);
  const auto [lo, hi] = std::minmax_element(rates.begin(), rates.end());
  fit.low = *lo;
  fit.high = *hi;
  return fit;
}

}  // namespace llmsim::calibrate
