#pragma once
// The part of a hardware profile that calibration fills in: achievable fractions of datasheet peaks.
// Until a system is calibrated, every entry holds a documented default derived from published
// achievable fractions, and `calibrated` says which one applies.
#include <map>
#include <optional>
#include <string>

#include "llmsim/core/dtype.h"
#include "llmsim/hardware/attention_kernel.h"

namespace llmsim::hardware {

// One fitted (or default) quantity with its confidence band and where it came from.
struct Fraction {
  double value = 0;    // best estimate, fraction of the datasheet peak (0..1]
  double low = 0;      // lower edge of the confidence band
  double high = 0;     // upper edge of the confidence band
  std::string source;  // citation for a default, or the calibration run that measured it
};

struct Efficiency {
  bool calibrated = false;         // false: all values below are documented defaults
  std::map<DType, Fraction> gemm;  // large-GEMM throughput / peak, per precision
  Fraction attention;              // FlashAttention-2 kernel throughput / 16-bit tensor peak
  Fraction attention_fa1;          // FlashAttention-1-generation kernel (CUDA v1, Triton) likewise
  Fraction attention_fa3;          // FlashAttention-3 (Hopper only) likewise
  Fraction attention_cudnn;        // cuDNN fused attention (TE FusedAttention, SDPA cuDNN) likewise
  Fraction memory_bandwidth;       // streaming copy bandwidth / datasheet HBM bandwidth (weight and KV
                                   // streaming in GEMMs and attention)
  Fraction elementwise_bandwidth;  // memory-bound compute kernels (norms, activations, softmax, RoPE,
                                   // casts, the optimizer update) / datasheet HBM bandwidth
  Fraction fabric_bandwidth;       // collective bus bandwidth / per-GPU fabric bandwidth (all-reduce, and
                                   // every other collective without a fraction of its own below)
  // Calibrated per-collective fractions of the NVLink/NVSwitch fabric (nccl-tests bus bandwidth of that
  // collective); absent = fabric_bandwidth applies. send_recv: pipeline point-to-point sends.
  std::optional<Fraction> fabric_all_gather, fabric_reduce_scatter, fabric_all_to_all, fabric_send_recv;
  Fraction pcie_bandwidth;  // host<->device copy bandwidth / PCIe datasheet
  // Host DRAM bandwidth a CPU matrix-vector product streams weights at / the node's datasheet host memory
  // bandwidth (layers an inference engine keeps in host memory: llama.cpp --n-gpu-layers).
  Fraction host_memory_bandwidth;
  Fraction network_bandwidth;  // inter-node bus bandwidth / NIC line rate
  // Compute seconds lost per second that a collective runs beside the compute stream on the same GPU
  // (NCCL's kernels hold SMs and move HBM bytes while GEMMs and attention run): the interference of
  // overlapped communication (train/list_scheduler.cpp, train/step_terms.h). 0 = none.
  Fraction comm_interference;
  double kernel_launch_s = 0;  // seconds per kernel launch (overhead floor)
  // Seconds a GEMM issued by its own library call (cuBLAS/cuBLASLt, one call per GEMM, no graph replay)
  // takes at least, however small: the library's host work per call and its smallest kernels. Measured
  // by calibrate as the median time of its small 16-bit GEMMs (about 2.4 launches on the H200 profile).
  double gemm_call_s = 0;
  std::string gemm_call_source;
  // Seconds of host CPU work to issue one kernel from eager PyTorch (the Python op, the dispatcher and
  // autograd bookkeeping, cudaLaunchKernel): the rate at which eager code can keep the GPU fed. Where a
  // sequence of kernels is shorter than its issue time the GPU waits (cost/host_dispatch.h).
  double host_dispatch_s = 0;
  double host_dispatch_low_s = 0, host_dispatch_high_s = 0;  // its band (0: the value itself)
  std::string host_dispatch_source;
  // Seconds of host work per DeepSpeed ZeRO hook call (sim/train/train_layer_cost.cpp, "DeepSpeed
  // hooks"): ZeRO-3's per-module fetch and release around every forward and backward, and the per-parameter
  // gradient hooks of ZeRO-1/2/3, all Python on the host critical path. Fitted on measured runs.
  double deepspeed_hook_s = 0;
  std::string deepspeed_hook_source;
  // Seconds one collective call costs on top of its alpha-beta ring time (cost/comm_cost.cpp): NCCL's own
  // cost model charges every call a base latency besides its per-step latencies (src/graph/tuning.cc,
  // baseLat), and inside a TP group every call also waits for the slowest rank. Fitted on measured runs.
  double collective_base_s = 0;
  double collective_base_low_s = 0, collective_base_high_s = 0;  // its band (0: the value itself)
  std::string collective_base_source;
  // Host seconds eager code spends on one collective call beyond its kernel launch (torch.distributed's
  // ProcessGroupNCCL: stream synchronisation events, the Work object, NCCL's host-side enqueue), on the
  // host critical path with the kernel launches (cost/host_dispatch.h). Fitted on measured runs.
  double collective_host_s = 0;
  double collective_host_low_s = 0, collective_host_high_s = 0;  // its band (0: the value itself)
  std::string collective_host_source;
  double gemm_half_k = 261;  // elements: GEMM contraction length at which the main loop runs at half efficiency
  std::string gemm_half_k_source;
  double cpu_adam_params_per_s = 0;  // parameters/s of a CPU Adam update over the node's cores
  std::string cpu_adam_source;
  // Bytes/s of one large host<->device copy from or to pageable (not page-locked) host memory: the driver
  // stages it through a pinned buffer with a host memcpy, so the host, not the PCIe link, sets the rate
  // (a copy runs at the lower of this and the pinned rate). ZeRO-Offload's host gradient buffers are
  // pageable unless pinned (sim/run/framework_profile.h, OffloadCopies).
  double pageable_h2d_Bps = 0, pageable_d2h_Bps = 0;
  std::string pageable_source;

  // The fused-attention fraction of a kernel generation.
  const Fraction& attention_for(AttentionKernel k) const {
    switch (k) {
      case AttentionKernel::Fa1: return attention_fa1;
      case AttentionKernel::Fa3: return attention_fa3;
      case AttentionKernel::Cudnn: return attention_cudnn;
      case AttentionKernel::Fa2: break;
    }
    return attention;
  }
};

// Defaults from published achievable fractions (sources in efficiency.cpp); used for uncalibrated presets.
// `compute_capability` (10 x major + minor; 0 = unknown) selects the attention kernels' figures, which
// differ by GPU generation (FlashAttention-2 reaches far less of Hopper's peak than of Ampere's).
Efficiency default_efficiency(int compute_capability = 0);

// Hopper (compute capability 9.0): the only generation FlashAttention-3 runs on.
inline bool is_hopper(int compute_capability) { return compute_capability == 90; }

}  // namespace llmsim::hardware
