#include "llmsim/cost/compute_cost.h"

#include "llmsim/cost/host_dispatch.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace llmsim::sim {

// Physical default model of kernel time (refined by calibration: calibrate/, docs/calibration.md):
//  * A GEMM runs at  peak x f_large x wave x kfac , where f_large is the large-GEMM fraction of the
//    profile (hardware/efficiency.cpp cites it), wave = tiles / (waves x SMs) is the last-wave
//    quantisation for 128x128 output tiles (NVIDIA "Matrix Multiplication Background User's Guide",
//    sec. "Wave Quantization": one tile per SM per wave), and kfac = k / (k + half_k) charges the
//    prologue/epilogue of short contractions (Efficiency::gemm_half_k: 261 measured on the H200 profile,
//    calibrated per GPU; head_dim-sized contractions of unfused attention and the k = 768-2048
//    projections of small models are where it matters).
//    A GEMM is also never faster than its bytes at the achievable memory bandwidth (skinny GEMMs,
//    decode) nor than one kernel launch, nor than the measured time of the smallest library GEMM call
//    (Efficiency::gemm_call_s; graph replay lowers it with the launch floor).
//  * Fused attention runs at peak x f_attention (FlashAttention-2 figures) or its bytes' time.
//  * Memory-bound kernels take bytes / (HBM bandwidth x f_memory) plus a launch each.
// The band of each time comes from the band of the fraction used: the high fraction gives the low time.

namespace {
double dbl(std::int64_t v) { return static_cast<double>(v); }
std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
}  // namespace

double gemm_shape_factor(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch, int sm_count,
                         double half_k) {
  if (m <= 0 || n <= 0 || k <= 0 || batch <= 0) return 1.0;
  const double sms = std::max(1, sm_count);
  const double tiles = dbl(ceil_div(m, kGemmTile)) * dbl(ceil_div(n, kGemmTile)) * dbl(batch);
  const double waves = std::ceil(tiles / sms);
  const double wave = tiles / (waves * sms);
  // Partial tiles at the matrix edge compute padding: useful work / computed work. A side shorter
  // than a tile gets a narrower kernel (cuBLAS heuristics pick small tiles / GEMV paths), padded only to
  // the 16-element tensor-core granularity.
  const auto padded = [](std::int64_t d) {
    return d >= kGemmTile ? ceil_div(d, kGemmTile) * kGemmTile : ceil_div(d, 16) * 16;
  };
  const double edge = (dbl(m) * dbl(n)) / (dbl(padded(m)) * dbl(padded(n)));
  const double kfac = dbl(k) / (dbl(k) + std::max(0.0, half_k));
  return wave * edge * kfac;
}

ComputeCost::ComputeCost(const hardware::SystemSpec& sys, AttentionKernel attention)
    : sys_(sys), attention_kernel_(attention) {}

bool ComputeCost::supports(DType precision) const { return sys_.gpu.peak(precision) > 0; }

double ComputeCost::launch_s() const { return sys_.efficiency.kernel_launch_s; }
Interval ComputeCost::host_dispatch() const { return host_dispatch_band(sys_.efficiency); }
Interval ComputeCost::collective_host() const { return collective_host_band(sys_.efficiency); }
double ComputeCost::deepspeed_hook_s() const { return sys_.efficiency.deepspeed_hook_s; }

double ComputeCost::gemm_shape_factor(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch) const {
  return sim::gemm_shape_factor(m, n, k, batch, sys_.gpu.sm_count, sys_.efficiency.gemm_half_k);
}

Interval ComputeCost::roofline(double flops, double frac, double frac_low, double frac_high, double bytes,
                               DType precision, double kernels, const hardware::Fraction& mem) const {
  const double peak = sys_.gpu.peak(precision);
  const double bw = sys_.gpu.memory_bandwidth_Bps;
  // A memory-bound kernel streams its bytes after its launch latency: time = launch + bytes / bandwidth,
  // not the larger of the two. Measured on one H200 (data/calibration/h200-2026-11-29/samples.csv
  // mem_read): 1 MiB 3.99 us, 16 MiB 7.44 us, 64 MiB 18.2 us, 256 MiB 61.3 us against 3.6 us launch +
  // bytes / 4.50 TB/s = 3.83, 7.33, 18.5, 63.2 us; the larger-of rule gave 3.6, 3.7, 14.9, 59.6. Skinny
  // (decode) GEMMs of 100-540 MB follow the same line there. Compute-bound kernels keep their fitted
  // fraction, which already holds their launch.
  const double floor = kernels * launch_s();
  auto one = [&](double f, double fm) {
    const double compute = (flops > 0 && peak > 0 && f > 0) ? flops / (peak * f) : 0.0;
    const double memory = (bytes > 0 && bw > 0 && fm > 0) ? bytes / (bw * fm) : 0.0;
    return std::max(compute, memory > 0 ? memory + floor : floor);
  };
  return Interval{one(frac, mem.value), one(frac_high, mem.high), one(frac_low, mem.low)};
}

Interval ComputeCost::gemm(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch, double flops,
                           double bytes, DType precision, bool half_accumulate) const {
  const auto it = sys_.efficiency.gemm.find(precision);
  const hardware::Fraction f = it != sys_.efficiency.gemm.end() ? it->second : hardware::Fraction{0.5, 0.4, 0.6, ""};
  // A skinny GEMM is a GEMV-style kernel (kGemvMaxRows): the FP32 rate at the fitted fraction, no tile padding.
  const bool gemv = m > 0 && m <= kGemvMaxRows && sys_.gpu.peak(DType::FP32) > 0;
  // FP16 accumulation runs at its own peak: the fraction scales by its ratio to the FP32-accumulate peak.
  const double acc16 = !gemv && half_accumulate && precision == DType::FP16 && sys_.gpu.peak(DType::FP16) > 0
                           ? sys_.gpu.peak_fp16_accumulate() / sys_.gpu.peak(DType::FP16)
                           : 1.0;
  const double shape = (gemv ? 1.0 : gemm_shape_factor(m, n, k, batch)) * acc16;
  const Interval t = roofline(flops, f.value * shape, f.low * shape, f.high * shape, bytes,
                              gemv ? DType::FP32 : precision, 1, sys_.efficiency.memory_bandwidth);
  // A GEMM issued by its own library call takes at least the measured call floor (Efficiency::gemm_call_s):
  // on the H200 profile a 256^3 or a 1 x 2048 x 1024 GEMM takes 8.2-9 us where its launch and bytes give 4.
  return max(t, Interval::exact(sys_.efficiency.gemm_call_s));
}

Interval ComputeCost::attention(double flops, double bytes, DType precision) const {
  const auto& f = sys_.efficiency.attention_for(attention_kernel_);
  // fp8 and NVFP4 recipes (Transformer Engine) keep attention in 16 bits: its FLOPs run at the bf16 peak.
  const DType p = precision == DType::FP8 || precision == DType::FP4 ? DType::BF16 : precision;
  return roofline(flops, f.value, f.low, f.high, bytes, p, 1, sys_.efficiency.memory_bandwidth);
}

Interval ComputeCost::linear_attention(double flops, double bytes, DType precision) const {
  // FLA's gated delta rule kernels are Triton kernels on the mma.sync path, the class of the Triton
  // FlashAttention kernel (Efficiency::attention_fa1, cited there), whatever fused-attention kernel the run's
  // full-attention layers use. An assumption: no measurement of the chunk kernels was verified.
  const auto& f = sys_.efficiency.attention_fa1;
  const DType p = precision == DType::FP8 || precision == DType::FP4 ? DType::BF16 : precision;
  return roofline(flops, f.value, f.low, f.high, bytes, p, 1, sys_.efficiency.memory_bandwidth);
}

Interval ComputeCost::memory_bound(double bytes, double kernels) const {
  return roofline(0, 1, 1, 1, bytes, DType::BF16, kernels, sys_.efficiency.elementwise_bandwidth);
}

Interval ComputeCost::streamed_by_blocks(double bytes_per_block, double blocks) const {
  const double sms = std::max(1, sys_.gpu.sm_count);
  const double bw = sys_.gpu.memory_bandwidth_Bps / sms;  // one SM's share
  const auto& f = sys_.efficiency.memory_bandwidth;
  if (bytes_per_block <= 0 || blocks <= 0 || bw <= 0) return {};
  const double waves = std::ceil(blocks / sms);
  auto t = [&](double frac) { return frac > 0 ? waves * bytes_per_block / (bw * frac) : 0.0; };
  return Interval{t(f.value), t(f.high), t(f.low)};
}

Interval ComputeCost::l2_read(double bytes) const {
  const double bw = sys_.gpu.l2_read_bandwidth_Bps();
  const auto& f = sys_.efficiency.memory_bandwidth;
  if (bytes <= 0 || bw <= 0) return {};
  auto t = [&](double frac) { return frac > 0 ? bytes / (bw * frac) : 0.0; };
  return Interval{t(f.value), t(f.high), t(f.low)};
}

namespace {
bool is_comm(const model::Operator& op) {
  return op.kind == model::OpKind::TpComm || op.kind == model::OpKind::MoeComm;
}
}  // namespace

Interval ComputeCost::forward(const model::Operator& op, DType precision, double norm_kernels) const {
  using model::OpKind;
  if (is_comm(op)) return {};
  switch (op.kind) {
    case OpKind::Gemm: return gemm(op.m, op.n, op.k, op.batch, op.fwd_flops, op.fwd_bytes, precision);
    case OpKind::FlashAttn: return attention(op.fwd_flops, op.fwd_bytes, precision);
    case OpKind::LinearAttn: return linear_attention(op.fwd_flops, op.fwd_bytes, precision);
    case OpKind::Norm: return memory_bound(op.fwd_bytes * norm_kernels, norm_kernels);
    default: return memory_bound(op.fwd_bytes);
  }
}

Interval ComputeCost::backward(const model::Operator& op, DType precision, bool weight_grads,
                               double norm_kernels) const {
  using model::OpKind;
  if (is_comm(op) || (op.bwd_flops <= 0 && op.bwd_bytes <= 0)) return {};
  switch (op.kind) {
    case OpKind::Gemm: {
      if (op.bwd_weight_flops > 0) {
        // dX[m,k] = dY[m,n] W^T[n,k]: contraction over n; dW[k,n] = X^T[k,m] dY[m,n]: contraction over m.
        Interval t = gemm(op.m, op.k, op.n, op.batch, op.bwd_flops - op.bwd_weight_flops,
                          op.bwd_bytes - op.bwd_weight_bytes, precision);
        if (weight_grads) t += gemm(op.k, op.n, op.m, op.batch, op.bwd_weight_flops, op.bwd_weight_bytes, precision);
        return t;
      }
      // Weightless batched GEMM (attention scores / context): two activation-gradient GEMMs of the
      // forward's size and shape.
      return gemm(op.m, op.n, op.k, op.batch, op.bwd_flops / 2, op.bwd_bytes / 2, precision) * 2.0;
    }
    case OpKind::FlashAttn: return attention(op.bwd_flops, op.bwd_bytes, precision);
    case OpKind::LinearAttn: return linear_attention(op.bwd_flops, op.bwd_bytes, precision);
    // The dgamma (dbeta) reduction rides along in the same pass, frozen or not.
    case OpKind::Norm: return memory_bound(op.bwd_bytes * norm_kernels, norm_kernels);
    default: return memory_bound(op.bwd_bytes);
  }
}

}  // namespace llmsim::sim
