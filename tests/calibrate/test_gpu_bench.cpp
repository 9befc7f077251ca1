// GPU benchmarks on the local GPU. Compiles everywhere (it only uses calibrate/gpu_bench.h); without a
// usable GPU (or in a build without CUDA) it prints why and exits 77, which CTest reports as skipped.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "llmsim/calibrate/gpu_bench.h"
#include "llmsim/calibrate/process_group.h"
#include "test_util.h"

using namespace llmsim::calibrate;

namespace {

constexpr int kSkipped = 77;  // SKIP_RETURN_CODE in tests/CMakeLists.txt

GpuInfo gpu_or_skip() {
  std::string why;
  const auto info = probe_gpus(why);
  if (!info) {
    std::printf("test_gpu_bench skipped: %s\n", why.c_str());
    std::fflush(stdout);
    std::exit(kSkipped);
  }
  return *info;
}

std::string fresh_log_path() {
  const std::filesystem::path dir = llmsim::test::fresh_temp_dir("gpu_bench");
  const auto path = dir / "samples.csv";
  std::filesystem::remove(path);
  return path.string();
}

}  // namespace

TEST_CASE("probe, a bf16 GEMM and a device copy on the local GPU") {
  const GpuInfo gpu = gpu_or_skip();
  MESSAGE(gpu.name << " cc " << gpu.cc_major << "." << gpu.cc_minor << ", " << gpu.device_count << " GPU(s), "
                   << gpu.sm_count << " SMs, driver " << gpu.driver_version << ", runtime " << gpu.runtime_version
                   << ", cuBLAS " << gpu.cublas_version << ", NCCL '" << gpu.nccl_version << "'");
  CHECK(gpu_benchmarks_built());
  CHECK(gpu.device_count >= 1);
  CHECK(!gpu.name.empty());
  CHECK(gpu.cc_major >= 7);
  CHECK(gpu.sm_count > 0);
  CHECK(gpu.memory_bytes > 1e9);
  CHECK(!gpu.runtime_version.empty());
  CHECK(!gpu.cublas_version.empty());

  const double copy_bytes = 2.0 * 256 * 1024 * 1024;  // read + written: a 256 MiB copy
  BenchItem gemm{"gemm", "bf16", 4096, 4096, 4096, 3.0 * 4096 * 4096 * 2, 1};
  BenchItem copy{"mem_copy", "", 0, 0, 0, copy_bytes, 1};
  BenchItem host{"cpu_adam", "fp32", 0, 0, 0, 4e6, 1};  // a host family: run_gpu_items leaves it alone

  SampleLog log(fresh_log_path());
  std::vector<std::string> skipped;
  int progressed = 0;
  run_gpu_items(
      {gemm, copy, host}, &log, [&](const BenchItem&, std::size_t, std::size_t) { ++progressed; }, skipped, {},
      *single_process());
  for (const auto& s : skipped) MESSAGE("skipped: " << s);
  CHECK(skipped.empty());
  REQUIRE(log.samples().size() == 2);
  CHECK(progressed == 2);

  const Sample& g = log.samples()[0];
  CHECK(g.item.bench == "gemm");
  CHECK(g.flops == doctest::Approx(2.0 * 4096.0 * 4096.0 * 4096.0));
  CHECK(g.time_s > 0);
  CHECK(g.repeats >= 3);
  CHECK(g.spread >= 0);
  const double tflops = g.flops / g.time_s / 1e12;
  MESSAGE("gemm bf16 4096^3: " << g.time_s * 1e6 << " us, " << tflops << " TFLOP/s, spread " << g.spread << ", repeats "
                               << g.repeats << (g.noisy ? ", noisy" : ""));
  CHECK(tflops > 1);
  CHECK(tflops < 2500);  // above any datasheet: the timing or the FLOP count would be wrong

  const Sample& c = log.samples()[1];
  CHECK(c.item.bench == "mem_copy");
  CHECK(c.time_s > 0);
  const double GBps = c.item.bytes / c.time_s / 1e9;
  MESSAGE("mem_copy 256 MiB: " << c.time_s * 1e6 << " us, " << GBps << " GB/s (read + written), spread " << c.spread
                               << ", repeats " << c.repeats << (c.noisy ? ", noisy" : ""));
  CHECK(GBps > 100);
  CHECK(GBps < 20000);

  // Resume: measured items are not measured again.
  run_gpu_items(
      {gemm, copy}, &log, [&](const BenchItem&, std::size_t, std::size_t) { ++progressed; }, skipped, {},
      *single_process());
  CHECK(log.samples().size() == 2);
  CHECK(progressed == 2);
}
