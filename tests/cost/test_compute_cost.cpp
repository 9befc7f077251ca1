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
    const double bytes = (static_cast<double>(m) * k + static_cast<double>(k) * n + static_cast<double>(m) * n) * 2.0;
    return cc.gemm(m, n, k, 1, 2.0 * static_cast<double>(m) * n * k, bytes, DType::BF16).value;
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
