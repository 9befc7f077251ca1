#pragma once
// The timing loop shared by every GPU benchmark.
//
// 1. Warm-up and batch sizing: batches of 1, 8, 64, … operations run (untimed for the result) until
//    one takes at least a quarter of the target batch time and the warm-up has lasted `warmup_s`
//    (clocks ramp up, cuBLAS picks its kernels, lazy module loading happens); the batch size is then
//    chosen so that a batch lasts about `target_batch_s`, which makes the event resolution (~0.5 µs)
//    and per-batch overhead negligible.
// 2. Timed batches: each batch is timed (CUDA events around it on the stream, or the host clock for
//    work the GPU timeline does not show, e.g. pageable copies and multi-GPU NCCL groups) and divided
//    by its operation count. After `min_batches`, the loop stops as soon as the relative spread
//    (max − min) / median of the last `window` batches is below `spread_target`; otherwise at
//    `max_batches` or when the timed work passes `time_cap_s`.
// 3. Result: the median and spread of the last `window` batches when they converged, else of every
//    timed batch (noisy = true). `repeats` is the number of batches behind that median.
#include <cuda_runtime_api.h>

#include <functional>

namespace llmsim::calibrate::cuda {

struct TimingOptions {
  double target_batch_s = 5e-3;
  long max_ops_per_batch = 20000;
  double warmup_s = 0.05;
  int window = 5;
  int min_batches = 5;
  int max_batches = 20;
  double spread_target = 0.03;
  double time_cap_s = 4.0;
};

struct Timing {
  double time_s = 0;  // median seconds per operation
  double spread = 0;  // (max - min) / median over the batches behind the median
  int repeats = 0;    // batches behind the median
  bool noisy = false;
  long ops_per_batch = 0;
  int batches = 0;  // timed batches run in all
};

enum class Clock {
  Events,  // CUDA events recorded on `stream` around the batch
  Host,    // steady_clock around enqueue + sync (sync must wait for all the batch's work)
};

struct TimedOp {
  // Enqueues (or runs) `n` operations. Events clock: on `stream`.
  std::function<void(long n)> enqueue;
  // Waits for everything enqueued (Host clock; Events clock uses the stop event).
  std::function<void()> sync;
  cudaStream_t stream = nullptr;
  Clock clock = Clock::Events;
  // Multi-process collectives (calibrate --mpi): maps this rank's batch time to the one every rank
  // uses (the slowest rank's). All of measure()'s decisions are functions of the batch times, so with
  // agreed times every rank runs the same batches, and hence the same number of collectives; a rank
  // outside the communicator runs no-op batches and contributes 0.
  std::function<double(double)> agree;
};

Timing measure(const TimedOp& op, const TimingOptions& opts = {});

}  // namespace llmsim::calibrate::cuda
