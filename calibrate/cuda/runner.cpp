// The per-run context and the dispatch from family name to benchmark.
#include <cmath>
#include <set>
#include <string>
#include <utility>

#include "llmsim/calibrate/cuda/bench.h"
#include "llmsim/calibrate/cuda/clock_monitor.h"
#include "llmsim/calibrate/cuda/runner.h"
#include "llmsim/core/error.h"

namespace llmsim::calibrate::cuda {

void throw_cublas(cublasStatus_t st, const char* call, const char* file, int line) {
  std::string where = file;
  if (const auto slash = where.rfind('/'); slash != std::string::npos) where = where.substr(slash + 1);
  throw Error(ErrorKind::Internal, Location{},
              std::string("cuBLAS call failed: ") + call + " returned " + cublasGetStatusName(st) + " (" +
                  cublasGetStatusString(st) + ") [" + where + ":" + std::to_string(line) + "]");
}

Context::Context(const GpuInfo& gpu, Peers p) : info(gpu), peers(std::move(p)), device(peers.device) {
  LLMSIM_CUDA_CHECK(cudaSetDevice(device));
  cc = 10 * info.cc_major + info.cc_minor;
  int v = 0;
  LLMSIM_CUDA_CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, device));
  sm_count = v;
  LLMSIM_CUDA_CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrL2CacheSize, device));
  l2_bytes = static_cast<std::size_t>(v);
  stream = std::make_unique<Stream>();
}

Context::~Context() {
  nccl.clear();
  (void)cudaSetDevice(device);
  if (blas) (void)cublasDestroy(blas);
  if (blas_lt) (void)cublasLtDestroy(blas_lt);
}

void* Context::workspace() {
  if (!blas_workspace) {
    DeviceGuard g(device);
    blas_workspace = std::make_unique<DeviceBuffer>(kWorkspaceBytes);
  }
  return blas_workspace->get();
}

cublasHandle_t Context::cublas() {
  if (!blas) {
    DeviceGuard g(device);
    LLMSIM_CUBLAS_CHECK(cublasCreate(&blas));
    LLMSIM_CUBLAS_CHECK(cublasSetStream(blas, stream->get()));
    LLMSIM_CUBLAS_CHECK(cublasSetWorkspace(blas, workspace(), kWorkspaceBytes));
  }
  return blas;
}

cublasLtHandle_t Context::cublas_lt() {
  if (!blas_lt) LLMSIM_CUBLAS_CHECK(cublasLtCreate(&blas_lt));
  return blas_lt;
}

Sample make_sample(const BenchItem& item, double flops, const Timing& t) {
  Sample s;
  s.item = item;
  s.flops = flops;
  s.time_s = t.time_s;
  s.spread = t.spread;
  s.repeats = t.repeats;
  s.noisy = t.noisy;
  return s;
}

std::size_t item_bytes(const BenchItem& item, std::size_t multiple, std::size_t minimum) {
  if (!(item.bytes > 0) || !std::isfinite(item.bytes) || item.bytes > 1e15) throw Skip{"bytes must be a positive size"};
  const auto b = static_cast<std::size_t>(item.bytes) / multiple * multiple;
  if (b < minimum)
    throw Skip{"bytes below the smallest size this benchmark measures (" + std::to_string(minimum) + ")"};
  return b;
}

namespace {

const std::set<std::string>& gpu_families() {
  static const std::set<std::string> f = {"gemm",
                                          "gemm_batched",
                                          "mem_copy",
                                          "mem_read",
                                          "mem_write",
                                          "elementwise",
                                          "launch",
                                          "h2d_pinned",
                                          "d2h_pinned",
                                          "h2d_pageable",
                                          "d2h_pageable",
                                          "p2p",
                                          "nccl_all_reduce",
                                          "nccl_all_gather",
                                          "nccl_reduce_scatter",
                                          "nccl_all_to_all",
                                          "nccl_broadcast",
                                          "nccl_send_recv"};
  return f;
}

}  // namespace

bool is_gpu_family(const std::string& bench) { return gpu_families().count(bench) > 0; }

namespace {

Sample dispatch(Context& ctx, const BenchItem& item) {
  const std::string& b = item.bench;
  if (b == "gemm") return bench_gemm(ctx, item, false);
  if (b == "gemm_batched") return bench_gemm(ctx, item, true);
  if (b == "mem_read" || b == "mem_write") return bench_mem(ctx, item);
  if (b == "elementwise") return bench_elementwise(ctx, item);
  if (b == "launch") return bench_launch(ctx, item);
  if (b == "mem_copy" || b == "p2p" || b.starts_with("h2d_") || b.starts_with("d2h_")) return bench_copy(ctx, item);
  if (b.starts_with("nccl_")) return bench_nccl(ctx, item);
  throw Skip{"not a GPU benchmark family of this build", true};
}

}  // namespace

struct Runner::Impl {
  Impl(const GpuInfo& info, Peers peers) : ctx(info, std::move(peers)), clocks(ctx.device) {}
  Context ctx;
  ClockMonitor clocks;
};

Runner::Runner(const GpuInfo& info, Peers peers) : impl_(std::make_unique<Impl>(info, std::move(peers))) {}
Runner::~Runner() = default;

std::optional<Sample> Runner::measure(const BenchItem& item, SkipNote& skip) {
  Context& ctx = impl_->ctx;
  try {
    LLMSIM_CUDA_CHECK(cudaSetDevice(ctx.device));
    Sample s = dispatch(ctx, item);
    // The clock the measurement ended at: the timed batches are its last work, so this is the clock
    // they ran at (to within NVML's sampling), and whether power or heat was holding it down.
    const ClockReading clock = impl_->clocks.read();
    s.sm_clock_MHz = clock.sm_MHz;
    s.throttled = clock.throttled;
    return s;
  } catch (const Skip& s) {
    skip.why = s.why;
    skip.family_wide = s.family_wide;
    LLMSIM_CUDA_CHECK(cudaDeviceSynchronize());  // a skipped item leaves no work behind
    return std::nullopt;
  }
}

}  // namespace llmsim::calibrate::cuda
