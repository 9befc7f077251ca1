#pragma once
// The host critical path of eager execution (docs/training-time.md and docs/serving.md, "Host critical
// path"). Eager PyTorch issues every kernel from the CPU: the Python op, the dispatcher and autograd
// bookkeeping, then cudaLaunchKernel. The GPU runs a sequence of kernels no faster than they are issued,
// so between two points where the host waits for the GPU (a layer's forward or backward pass in a
// training step, one iteration of an inference engine) the span is
//     max(GPU time, launches x host seconds per launch):
// the host runs ahead of long kernels (large GEMMs) and the GPU waits for the host behind short ones
// (small models, high tensor parallelism, batch-1 decode). Graph replay (CUDA graphs, torch.compile
// "reduce-overhead") and C++ runtimes (TensorRT-LLM) issue without the per-kernel Python work; their
// callers pass 0 host seconds, and only the launch floor of the kernel cost remains.
//
// The host seconds per launch are a property of the host CPU and the PyTorch build
// (Efficiency::host_dispatch_s); the launches per operator a property of the model code (EagerGlue).
#include "llmsim/core/interval.h"
#include "llmsim/hardware/efficiency.h"
#include "llmsim/model/operators.h"

namespace llmsim::sim {

// Kernels an operator's forward pass launches: the operator's own count, a norm split into
// `norm_kernels` kernels by eager code (EagerGlue::norm_kernels), one call per collective.
double forward_launches(const model::Operator& op, double norm_kernels = 1);
// Its backward pass: the forward's count for pointwise work and attention, the activation-gradient GEMM
// plus, with `weight_grads`, the weight-gradient GEMM and a bias's row sum, a norm's kernels plus, with
// `weight_grads`, its weight's row reduction; none for an operator without backward work.
double backward_launches(const model::Operator& op, bool weight_grads, double norm_kernels = 1);

// Collective calls an operator's forward (backward) pass makes: one per collective, none otherwise. Eager code
// pays Efficiency::collective_host_s for each on top of its launch.
double forward_collective_calls(const model::Operator& op);
double backward_collective_calls(const model::Operator& op);

// The host seconds per eager collective call beyond its launch, with their band.
Interval collective_host_band(const hardware::Efficiency& e);

// The host seconds per eager launch with their band (the efficiency's host_dispatch_s and its low/high;
// a missing edge is the value).
Interval host_dispatch_band(const hardware::Efficiency& e);

// The span of `gpu` (the kernels' time on the GPU) when the host needs `host` seconds to issue them:
// each edge of the band max(GPU edge, host edge), the fast with the fast.
inline Interval host_bound(const Interval& gpu, const Interval& host) { return max(gpu, host); }

}  // namespace llmsim::sim
