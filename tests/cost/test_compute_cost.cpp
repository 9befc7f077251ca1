// Kernel times on the calibrated H200 profile against the kernels measured there
// (data/calibration/h200-2026-11-29/samples.csv): a memory-bound kernel takes its launch latency plus its
// bytes over the bandwidth.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "llmsim/cost/compute_cost.h"
#include "llmsim/hardware/system_toml.h"

using namespace llmsim;

namespace {

hardware::SystemSpec calibrated_h200() {
  return hardware::resolve_system(
      std::string(LLMSIM_DATA_DIR) + "/calibration/h200-2026-11-29/hgx-h200-calibrated.toml", LLMSIM_DATA_DIR);
}

// Relative closeness (doctest's Approx adds an absolute scale of 1, far above microseconds).
bool near(double got, double want, double rel) { return std::abs(got - want) <= rel * std::abs(want); }

}  // namespace

TEST_CASE("memory-bound kernels: launch latency plus streaming, as the H200 measured") {
  const auto sys = calibrated_h200();
  REQUIRE(near(sys.efficiency.kernel_launch_s, 3.6e-6, 1e-9));
  const sim::ComputeCost cc(sys, AttentionKernel::Fa2);
  // The profile's elementwise fraction: 4800 GB/s x 0.8021.
  const double bw = 4800e9 * sys.efficiency.elementwise_bandwidth.value;
  const double mib = 1024.0 * 1024.0;
  CHECK(near(cc.memory_bound(16 * mib).value, 3.6e-6 + 16 * mib / bw, 1e-9));
  // The mem_read samples (one read pass, bytes = the buffer): 16 MiB 7.44 us, 64 MiB 18.2 us,
  // 256 MiB 61.3 us. Within 20 % with the elementwise fraction (a plain read streams faster than the
  // norm-shaped kernels the fraction was fitted on); the larger-of rule was 50 % short at 16 MiB.
  CHECK(near(cc.memory_bound(16 * mib).value, 7.44e-6, 0.2));
  CHECK(near(cc.memory_bound(64 * mib).value, 18.2e-6, 0.2));
  CHECK(near(cc.memory_bound(256 * mib).value, 61.3e-6, 0.2));
}

TEST_CASE("a decode GEMV streams its weights after the launch, as the H200 measured") {
  const auto sys = calibrated_h200();
  const sim::ComputeCost cc(sys, AttentionKernel::Fa2);
  // bf16 m=1, n=8192, k=8192 (134 MB of weights): measured 35.3 us; m=1, n=32768, k=8192 (537 MB): 123.7 us.
  const auto gemv = [&](std::int64_t n, std::int64_t k) {
    const double bytes = (static_cast<double>(k) * static_cast<double>(n) + static_cast<double>(k + n)) * 2.0;
    return cc.gemm(1, n, k, 1, 2.0 * static_cast<double>(n) * static_cast<double>(k), bytes, DType::BF16).value;
  };
  const double copy_bw = 4800e9 * sys.efficiency.memory_bandwidth.value;
  CHECK(near(gemv(8192, 8192), 3.6e-6 + (8192.0 * 8192 + 16384) * 2 / copy_bw, 1e-9));
  CHECK(near(gemv(8192, 8192), 35.3e-6, 0.08));
  CHECK(near(gemv(32768, 8192), 123.7e-6, 0.08));
}

TEST_CASE("a small GEMM takes at least the smallest library call the H200 measured") {
  const auto sys = calibrated_h200();
  const sim::ComputeCost cc(sys, AttentionKernel::Fa2);
  const auto gemm = [&](std::int64_t m, std::int64_t n, std::int64_t k) {
    const double dm = static_cast<double>(m), dn = static_cast<double>(n), dk = static_cast<double>(k);
    const double bytes = (dm * dk + dk * dn + dm * dn) * 2.0;
    return cc.gemm(m, n, k, 1, 2.0 * dm * dn * dk, bytes, DType::BF16).value;
  };
  // samples.csv: bf16 1 x 2048 x 1024 8.87 us, 256^3 8.47 us, 16 x 768 x 2048 11.5 us; the launch plus the
  // bytes at the copy bandwidth would give 4.5, 3.7 and 4.3 us.
  REQUIRE(sys.efficiency.gemm_call_s > 8e-6);
  CHECK(near(gemm(1, 2048, 1024), 8.87e-6, 0.05));
  CHECK(near(gemm(256, 256, 256), 8.47e-6, 0.05));
  CHECK(near(gemm(16, 768, 2048), 11.5e-6, 0.3));
  // Above the floor the streaming rule still holds: 1 x 12288 x 4096 (101 MB) measured 27.5 us.
  CHECK(near(gemm(1, 12288, 4096), 27.5e-6, 0.08));
}

TEST_CASE("a decode GEMV of at most 8 rows streams its weights on a GeForce part; wider ones pad to tiles") {
  const auto sys = hardware::resolve_system("rtx3090-nvlink", LLMSIM_DATA_DIR);
  const sim::ComputeCost cc(sys, AttentionKernel::Fa2);
  // Llama-2-7B's q_proj in int4 with group-128 scales, one token: 33.5 MFLOP, 8.7 MB of weights.
  const double k = 4096, n = 4096, weights = k * n * (0.5 + 2.5 / 128);
  const double bw = sys.gpu.memory_bandwidth_Bps * sys.efficiency.memory_bandwidth.value;
  const double streaming = sys.efficiency.kernel_launch_s + weights / bw;
  const auto gemv = cc.gemm(1, 4096, 4096, 1, 2 * k * n, weights, DType::FP16);
  // As a GEMV-style kernel (llama.cpp's mul_mat_vec_q, ExLlamaV2's q_gemm, cuBLAS gemv): its bytes at the
  // memory bandwidth. Padded to a 16-row tensor-core tile on 32 of the 82 SMs it would be compute-bound, near
  // 1.8x slower: the rule this case guards against.
  CHECK(near(gemv.value, std::max(streaming, sys.efficiency.gemm_call_s), 1e-9));
  const double tile_shape = cc.gemm_shape_factor(1, 4096, 4096, 1);
  const double padded =
      2 * k * n / (sys.gpu.peak(DType::FP16) * sys.efficiency.gemm.at(DType::FP16).value * tile_shape);
  CHECK(padded > 1.5 * gemv.value);
  // Sixteen rows are a tensor-core GEMM again (tile padding and waves).
  const auto wide = cc.gemm(16, 4096, 4096, 1, 2 * 16 * k * n, weights, DType::FP16);
  CHECK(wide.value > gemv.value);
}

TEST_CASE("FP16 accumulation runs at the GeForce FP16-accumulate peak, and only where the datasheet gives one") {
  const double m = 2048, n = 4096, k = 4096, flops = 2 * m * n * k, bytes = 2 * (m * k + k * n + m * n);
  const auto rtx = hardware::resolve_system("rtx4090-pcie", LLMSIM_DATA_DIR);
  REQUIRE(rtx.gpu.peak_fp16_accumulate() == doctest::Approx(2 * rtx.gpu.peak(DType::FP16)).epsilon(0.001));
  const sim::ComputeCost geforce(rtx, AttentionKernel::Fa2);
  const double acc32 = geforce.gemm(2048, 4096, 4096, 1, flops, bytes, DType::FP16).value;
  const double acc16 = geforce.gemm(2048, 4096, 4096, 1, flops, bytes, DType::FP16, true).value;
  CHECK(near(acc16, acc32 / 2, 1e-3));  // compute-bound: half the time at twice the peak
  // BF16 has no FP16-accumulate path; an H100 states none (the same peak either way).
  CHECK(geforce.gemm(2048, 4096, 4096, 1, flops, bytes, DType::BF16, true).value ==
        geforce.gemm(2048, 4096, 4096, 1, flops, bytes, DType::BF16).value);
  const auto h100_sys = hardware::resolve_system("dgx-h100", LLMSIM_DATA_DIR);  // ComputeCost keeps a reference
  const sim::ComputeCost h100(h100_sys, AttentionKernel::Fa2);
  CHECK(h100.gemm(2048, 4096, 4096, 1, flops, bytes, DType::FP16, true).value ==
        h100.gemm(2048, 4096, 4096, 1, flops, bytes, DType::FP16).value);
}
