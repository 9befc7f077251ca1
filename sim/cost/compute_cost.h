#pragma once
// Time of kernels on one GPU: GEMMs (tile/wave-quantised fraction of the tensor peak, or bandwidth
// bound, whichever is slower), fused attention, memory-bound kernels (bytes over the achievable
// bandwidth, after each kernel's launch latency). Every time is an Interval from the efficiency bands of the
// system profile (calibrated values, or the documented defaults of hardware/efficiency.cpp).
#include <cstdint>
#include <string>

#include "llmsim/core/interval.h"
#include "llmsim/hardware/attention_kernel.h"
#include "llmsim/hardware/system_spec.h"
#include "llmsim/model/operators.h"

namespace llmsim::sim {

// Shape effects of the physical default model (see compute_cost.cpp for the why of each number).
inline constexpr std::int64_t kGemmTile = 128;  // output tile edge (elements) of a large cuBLAS kernel
// Rows up to which a GEMM runs as a GEMV-style kernel on the CUDA cores (llama.cpp's mul_mat_vec_q up to
// MMVQ_MAX_BATCH_SIZE = 8 rows, ggml-cuda/mmvq.cuh; cuBLAS's gemv kernels at m = 1; ExLlamaV2's q_gemm and AWQ's
// GEMV kernels at decode): every SM streams a slice of the weights, split over n and the contraction, so no
// tensor-core output tile pads the rows; their FLOPs run at the FP32 (CUDA-core) rate.
inline constexpr std::int64_t kGemvMaxRows = 8;

// Fraction of the large-GEMM throughput a GEMM of this shape reaches on a GPU of `sm_count` SMs: wave
// quantisation x edge padding x k / (k + half_k). Shared by the simulator and the calibration fit.
double gemm_shape_factor(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch, int sm_count,
                         double half_k);

class ComputeCost {
 public:
  // `attention`: the fused-attention kernel generation whose fraction prices FlashAttn operators.
  explicit ComputeCost(const hardware::SystemSpec& sys, AttentionKernel attention = AttentionKernel::Fa2);

  // Whether the GPU has a tensor (or fp32) path for this compute precision.
  bool supports(DType precision) const;

  // Fraction of the precision's peak a GEMM of this shape reaches (best estimate): the large-GEMM
  // fraction times wave quantisation times the short-contraction factor.
  double gemm_shape_factor(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch) const;

  // One GEMM (or `batch` of them) of `flops` FLOPs moving `bytes` bytes, shape m x n x k. `half_accumulate`:
  // an FP16 GEMM that accumulates in FP16 (cublasHgemm), at GpuSpec::peak_fp16_accumulate().
  Interval gemm(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch, double flops, double bytes,
                DType precision, bool half_accumulate = false) const;
  // A fused attention kernel of `flops` FLOPs and `bytes` bytes (at the constructor's kernel's fraction).
  Interval attention(double flops, double bytes, DType precision) const;
  // A linear-attention recurrence's kernels (model::OpKind::LinearAttn: the gated delta rule), at the Triton
  // attention kernels' fraction of the peak or their bytes' time.
  Interval linear_attention(double flops, double bytes, DType precision) const;
  // A memory-bound compute kernel (or `kernels` of them: norms, activations, casts, the optimizer update)
  // moving `bytes` bytes in total, at the elementwise bandwidth (below a plain copy's).
  Interval memory_bound(double bytes, double kernels = 1) const;

  // A kernel of `blocks` thread blocks that each stream `bytes_per_block` bytes one after another and can
  // only run one per SM (FlashAttention-2's decode: one block per sequence and query head): each block
  // moves at most its SM's share of the achievable memory bandwidth, so a kernel with fewer blocks than
  // SMs leaves the rest of the bandwidth unused (ceil(blocks / SMs) waves of one block's time).
  Interval streamed_by_blocks(double bytes_per_block, double blocks) const;
  // `bytes` the SMs read out of the L2 cache (data another thread block already brought in from HBM), at the
  // GPU's stated L2 read bandwidth (GpuSpec::l2_read_bandwidth_Bps) times the fraction a streaming kernel
  // reaches of its memory's peak (Efficiency::memory_bandwidth; an assumption for L2: no L2 stream was
  // calibrated). Zero when the GPU's L2 bandwidth is not stated.
  Interval l2_read(double bytes) const;

  // Forward / backward time of one inventory operator on the compute stream. Communication operators
  // (TpComm, MoeComm) cost 0 here: CommCost prices them. `weight_grads` false drops the
  // weight-gradient GEMM (frozen weights). `norm_kernels`: kernels a norm is split into by the
  // framework (1 = fused), each re-reading and writing the tensor.
  Interval forward(const model::Operator& op, DType precision, double norm_kernels = 1) const;
  Interval backward(const model::Operator& op, DType precision, bool weight_grads, double norm_kernels = 1) const;

  double launch_s() const;           // seconds per kernel launch (GPU-side latency ahead of every kernel's streaming)
  Interval host_dispatch() const;    // host seconds per eager kernel launch, banded (sim/cost/host_dispatch.h)
  Interval collective_host() const;  // host seconds per eager collective call beyond its launch, banded (likewise)
  double deepspeed_hook_s() const;   // host seconds per DeepSpeed ZeRO hook call (Efficiency::deepspeed_hook_s)

 private:
  Interval roofline(double flops, double peak_fraction_value, double frac_low, double frac_high, double bytes,
                    DType precision, double kernels, const hardware::Fraction& memory) const;
  const hardware::SystemSpec& sys_;
  AttentionKernel attention_kernel_;
};

}  // namespace llmsim::sim
