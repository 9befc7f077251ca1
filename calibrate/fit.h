#pragma once
// Fitting raw samples into the parameters the simulator uses (Eigen least squares), each with its
// residual error and a confidence band:
//  * latency + bytes / bandwidth (alpha-beta) for copies, memory-bound kernels, links and collectives;
//  * the GEMM model form of sim/cost/compute_cost.h (large-GEMM fraction x wave/edge quantisation x
//    k / (k + half_k)) per precision;
//  * a rate (CPU Adam parameters/s, host bandwidth) from repeated measurements.
#include <string>
#include <vector>

#include "llmsim/calibrate/sample.h"

namespace llmsim::calibrate {

struct AlphaBetaFit {
  double alpha_s = 0;            // seconds: fixed cost per operation (latency)
  double bandwidth_Bps = 0;      // bytes/s: 1 / slope
  double bandwidth_low_Bps = 0;  // band: slope's 95 % confidence interval mapped to bandwidth
  double bandwidth_high_Bps = 0;
  double alpha_low_s = 0, alpha_high_s = 0;
  double rel_rms = 0;  // root-mean-square relative residual of the fitted times
  int n = 0;           // samples used
};

// Weighted least squares of time = alpha + bytes / bandwidth (weights 1/time^2, i.e. relative error),
// alpha clamped at >= 0. Needs at least 2 distinct sizes (Input error otherwise).
AlphaBetaFit fit_alpha_beta(const std::vector<double>& bytes, const std::vector<double>& seconds);

struct GemmFit {
  double fraction = 0;      // large-GEMM throughput / dense peak
  double fraction_low = 0;  // band covering ~95 % of the samples' fitted fractions
  double fraction_high = 0;
  double half_k = 0;   // elements (see hardware::Efficiency::gemm_half_k)
  double rel_rms = 0;  // relative RMS error of predicted vs measured GEMM time
  int n = 0;           // compute-bound samples used
};

// Fits the GEMM model form to samples of one dtype: `peak_flops` is the dense datasheet peak for that
// dtype, `sm_count` the GPU's SMs, `hbm_Bps` its memory bandwidth (samples whose bytes at that bandwidth
// take longer than their FLOPs at peak are memory bound and left out).
// Samples are "gemm" (batch 1) or "gemm_batched", whose batch count is item.group (FLOPs and bytes cover
// the whole batch); samples without FLOPs or time are skipped. Method and band: see fit.cpp.
GemmFit fit_gemm(const std::vector<Sample>& samples, double peak_flops, int sm_count, double hbm_Bps);

struct RateFit {
  double rate = 0;           // units per second (median over samples)
  double low = 0, high = 0;  // min / max over samples
  int n = 0;
};

// Rate = amount / time over samples, amount = flops (cpu_adam: parameters) or bytes.
RateFit fit_rate(const std::vector<double>& amount, const std::vector<double>& seconds);

}  // namespace llmsim::calibrate
