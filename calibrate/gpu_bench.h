#pragma once
// GPU microbenchmarks. The interface has no CUDA types: the implementation is calibrate/cuda/ when the
// build has CUDA (LLMSIM_HAS_CUDA), and gpu_bench_stub.cpp otherwise, which reports that GPU
// measurements need a CUDA build.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "llmsim/calibrate/sample.h"

namespace llmsim::calibrate {

struct GpuInfo {
  int device_count = 0;
  std::string name;  // device 0, as the driver reports it
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  double memory_bytes = 0;
  double sm_clock_Hz = 0;  // current max SM clock
  double memory_clock_Hz = 0;
  std::string driver_version;   // e.g. "580.65.06" or the CUDA driver API version "13.0"
  std::string runtime_version;  // CUDA runtime
  std::string cublas_version;
  std::string nccl_version;  // "" when built without NCCL
  bool p2p_all = false;      // every pair of devices can access each other's memory
};

// True when this build contains the CUDA benchmarks.
bool gpu_benchmarks_built();

// The GPUs, or nullopt with the reason in `why` (no CUDA in this build, no driver, no device, …).
std::optional<GpuInfo> probe_gpus(std::string& why);

using Progress = std::function<void(const BenchItem& item, std::size_t index, std::size_t total)>;
// Asked before each item: true stops the run there (e.g. a --time-budget-s deadline has passed); the
// items measured so far stay in the log and a later --resume continues with the rest.
using StopCheck = std::function<bool()>;

class ProcessGroup;  // process_group.h

// Measures every GPU item of `items` not already in `log`, appending each sample as it completes.
// Items of families that need something this build lacks (e.g. NCCL) are skipped with a note in
// `skipped`; so is an item whose CUDA/cuBLAS/NCCL call fails (the note names the call), unless the
// failure means the GPU is gone. Returns false when `stop` ended the run early.
// Throws llmsim::Error (NoDevice) when no GPU is usable.
//
// With a multi-process `group` (calibrate --mpi) every rank calls this with the same `items`: rank 0
// (the only one with a `log`; the others pass nullptr) decides which items remain and when to stop,
// and sends that to the others; NCCL items run on every rank, everything else on rank 0 alone. A
// rank without a usable GPU makes every rank throw NoDevice; a failing collective ends every rank
// (what was measured is in the log; --resume continues).
bool run_gpu_items(const std::vector<BenchItem>& items, SampleLog* log, const Progress& progress,
                   std::vector<std::string>& skipped, const StopCheck& stop, ProcessGroup& group);

}  // namespace llmsim::calibrate
