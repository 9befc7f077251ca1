#pragma once
// The CUDA-free face of llmsim_calibrate_cuda, used by gpu_bench.cpp (compiled into llmsim_calibrate,
// which owns SampleLog). Nothing here names a CUDA type.
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "llmsim/calibrate/gpu_bench.h"
#include "llmsim/calibrate/sample.h"

namespace llmsim::calibrate::cuda {

// probe_gpus() of the CUDA build.
std::optional<GpuInfo> probe(std::string& why);

// True for the families this library measures; false for everything else (cpu_*, host_* run on the
// host; unknown names are reported by the caller).
bool is_gpu_family(const std::string& bench);

// Why the item cannot be measured here; family_wide when it holds for every item of its family.
struct SkipNote {
  std::string why;
  bool family_wide = false;
};

// The other processes of an MPI run (calibrate --mpi), as the CUDA code needs them; no MPI type here.
// The default is this process alone, measuring collectives over its own GPUs.
struct Peers {
  int rank = 0;
  int size = 1;
  int device = 0;                               // the GPU this process measures on (its local rank)
  std::function<void(std::string&)> broadcast;  // rank 0's bytes to every rank
  std::function<double(double)> max;            // the largest value of all ranks, on every rank
};

// Owns the per-run state (the device's context, stream, cuBLAS(Lt) handles, NCCL communicators).
class Runner {
 public:
  explicit Runner(const GpuInfo& info, Peers peers = {});
  ~Runner();
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  // One sample of `item`, or nullopt with `skip` filled when it cannot run on this machine/build.
  // Throws llmsim::Error on a CUDA/cuBLAS/NCCL failure.
  std::optional<Sample> measure(const BenchItem& item, SkipNote& skip);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace llmsim::calibrate::cuda
