// gpu_bench.h for a build without CUDA (LLMSIM_WITH_CUDA=OFF): no GPU can be measured, and every entry
// point says why and how to get a build that can.
#include "llmsim/calibrate/gpu_bench.h"

#include "llmsim/core/error.h"

namespace llmsim::calibrate {
namespace {
constexpr const char* kNoCuda =
    "this build has no CUDA benchmarks (configure with -DLLMSIM_WITH_CUDA=ON and the CUDA toolkit)";
}

bool gpu_benchmarks_built() { return false; }

std::optional<GpuInfo> probe_gpus(std::string& why) {
  why = kNoCuda;
  return std::nullopt;
}

bool run_gpu_items(const std::vector<BenchItem>&, SampleLog*, const Progress&, std::vector<std::string>&,
                   const StopCheck&, ProcessGroup&) {
  throw Error(ErrorKind::NoDevice, Location{}, kNoCuda);
}

}  // namespace llmsim::calibrate
