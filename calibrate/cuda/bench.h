#pragma once
// Internal interface between the runner and the benchmark families (CUDA types allowed here).
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <map>
#include <memory>
#include <string>

#include "llmsim/calibrate/cuda/cuda_util.h"
#include "llmsim/calibrate/cuda/runner.h"
#include "llmsim/calibrate/cuda/timing.h"
#include "llmsim/calibrate/gpu_bench.h"
#include "llmsim/calibrate/sample.h"

namespace llmsim::calibrate::cuda {

[[noreturn]] void throw_cublas(cublasStatus_t st, const char* call, const char* file, int line);  // Internal

#define LLMSIM_CUBLAS_CHECK(call)                                                     \
  do {                                                                                \
    const cublasStatus_t llmsim_st_ = (call);                                         \
    if (llmsim_st_ != CUBLAS_STATUS_SUCCESS)                                          \
      ::llmsim::calibrate::cuda::throw_cublas(llmsim_st_, #call, __FILE__, __LINE__); \
  } while (0)

struct NcclGroup;  // nccl_bench.cpp
struct NcclGroupDeleter {
  void operator()(NcclGroup* g) const;
};

// Per-run state. Single-GPU benchmarks run on `device` (0, or the local rank under --mpi).
struct Context {
  Context(const GpuInfo& info, Peers peers);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  GpuInfo info;
  Peers peers;  // size > 1: collectives span the ranks of an MPI run
  int device = 0;
  int cc = 0;  // 10 * major + minor
  int sm_count = 0;
  std::size_t l2_bytes = 0;
  std::unique_ptr<Stream> stream;
  cublasHandle_t blas = nullptr;  // created on first use
  cublasLtHandle_t blas_lt = nullptr;
  std::unique_ptr<DeviceBuffer> blas_workspace;
  std::map<int, std::unique_ptr<NcclGroup, NcclGroupDeleter>> nccl;  // by group size
  TimingOptions timing;

  cublasHandle_t cublas();
  cublasLtHandle_t cublas_lt();
  void* workspace();
  static constexpr std::size_t kWorkspaceBytes = 32u << 20;  // cuBLAS' recommendation for Hopper
};

// Each returns a Sample with item, flops and the timing filled; throws Skip when it cannot run here.
Sample bench_gemm(Context& ctx, const BenchItem& item, bool batched);  // gemm_bench.cpp
Sample bench_mem(Context& ctx, const BenchItem& item);                 // mem_read, mem_write     memory_bench.cpp
Sample bench_elementwise(Context& ctx, const BenchItem& item);         // memory_bench.cpp
Sample bench_launch(Context& ctx, const BenchItem& item);              // memory_bench.cpp
Sample bench_copy(Context& ctx, const BenchItem& item);                // mem_copy, h2d/d2h, p2p   copy_bench.cpp
Sample bench_nccl(Context& ctx, const BenchItem& item);                // nccl_bench.cpp

// Fills a Sample from a Timing.
Sample make_sample(const BenchItem& item, double flops, const Timing& t);

// Item bytes as a size_t, rounded down to a multiple of `multiple`; Skip if it is below `minimum`.
std::size_t item_bytes(const BenchItem& item, std::size_t multiple, std::size_t minimum);

}  // namespace llmsim::calibrate::cuda
