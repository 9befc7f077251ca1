#include "llmsim/hardware/efficiency.h"

#include <fmt/format.h>

#include "llmsim/core/units.h"

namespace llmsim::hardware {

// Every default below is the fraction of a DATASHEET peak that well-tuned library code reaches on
// large, regular work. They are deliberately generic across GPUs: a calibrated profile replaces
// them per system through the system TOML's [efficiency] table. Where a number is our own judgement
// rather than a published measurement, the source string says "engineering assumption".

namespace {

Fraction fraction(double value, double low, double high, std::string source) {
  return Fraction{.value = value, .low = low, .high = high, .source = std::move(source)};
}

std::map<DType, Fraction> default_gemm() {
  std::map<DType, Fraction> g;
  // Tensor-core half precision is the case every LLM step is dominated by.
  const std::string half =
      "engineering summary: large (>=4096 per side) cuBLAS/cuBLASLt bf16/fp16 GEMMs are commonly "
      "reported at ~70-85% of the dense tensor peak on A100/H100 (see NVIDIA 'Matrix Multiplication "
      "Background User's Guide' DU-09799-001 sec. 2.3 for the shape effects; its plots were not re-read "
      "for exact numbers); Megatron-LM (Narayanan et al., SC'21) sustains 163 TFLOP/s per A100 = 52% "
      "of 312 end-to-end, a lower bound for GEMMs alone since it includes non-GEMM time.";
  g[DType::BF16] = fraction(0.75, 0.60, 0.85, half);
  g[DType::FP16] = fraction(0.75, 0.60, 0.85, half);
  g[DType::TF32] =
      fraction(0.70, 0.55, 0.85,
               "engineering assumption: TF32 tensor GEMMs tile like fp16 but move twice the bytes per FLOP, so "
               "we take 5 points less than the fp16/bf16 default (same NVIDIA GEMM guide as bf16).");
  g[DType::FP32] =
      fraction(0.90, 0.80, 0.97,
               "non-tensor SGEMM: cuBLAS reaches 18.88 of 19.49 TFLOP/s (0.97) on A100 80GB PCIe and 29.17 of "
               "35.48 (0.82) on RTX 4070 Ti at M=5120,N=K=4096 (github.com/Yinghan-Li/YHs_Sample issue #4); "
               "0.90 is the midpoint.");
  g[DType::FP8] = fraction(0.65, 0.50, 0.80,
                           "engineering assumption: FP8 GEMMs on H100 (cuBLASLt / Transformer Engine) are further from "
                           "their doubled peak than bf16 because scaling and conversion epilogues cost a larger share; "
                           "no single published large-GEMM fraction was verified for this default.");
  g[DType::FP4] = fraction(0.55, 0.40, 0.75,
                           "engineering assumption: NVFP4 GEMMs on Blackwell quantize both operands with a scale per "
                           "16 elements, so their scaling epilogue costs a larger share of a peak twice FP8's: 10 "
                           "points below the fp8 default, with a wider band; no published large-GEMM fraction was "
                           "verified for this default, and the GEMM benchmark of calibrate does not run FP4 yet.");
  g[DType::INT8] = fraction(0.65, 0.50, 0.80,
                            "engineering assumption: same reasoning and band as fp8 (integer tensor GEMM with "
                            "dequantisation epilogue); no published fraction verified.");
  return g;
}

// cuDNN fused attention on Hopper, where it is the fastest kernel Transformer Engine and PyTorch pick.
Fraction hopper_cudnn_attention() {
  return fraction(0.45, 0.40, 0.62,
                  "measured on one H200 (data/calibration/h200-2026-11-29/kernel-profile.json): PyTorch SDPA's cuDNN "
                  "kernels (cudnn_generated_fort_native_sdpa_sm90_flash_fprop/bprop) ran a causal 32-head, head dim "
                  "128, 2,048-token forward + backward at 0.40 (batch 1) and 0.45 (batch 4) of the 989 TFLOP/s bf16 "
                  "peak, counting the backward as 2.5x the forward; the band's top is the forward alone in Shah et "
                  "al. 2024 'FlashAttention-3' Fig. 5 (H100 SXM5, head dim 128: cuDNN 497-617 TFLOP/s, 0.50-0.62).");
}

// Before Hopper cuDNN's attention is no faster than FlashAttention-2: Hugging Face measured cuDNN SDPA
// against FlashAttention SDPA at training shapes on six GPUs (huggingface/transformers PR #48163):
// 0.82x on A100, 0.93x on A10G (sm86), 1.00x on L40S (Ada), 0.88x on RTX PRO 6000 (Blackwell, sm120).
Fraction cudnn_attention_before_hopper(const Fraction& fa2, int compute_capability) {
  double ratio = 1.0;
  std::string why = "no measurement for this generation; taken equal to FlashAttention-2 (engineering assumption)";
  const std::pair<int, double> measured[] = {{80, 0.82}, {86, 0.93}, {89, 1.00}, {120, 0.88}};
  for (const auto& [cc, r] : measured)
    if (cc == compute_capability) {
      ratio = r;
      why = fmt::format("{:.2f}x FlashAttention-2 on compute capability {}.{}", r, cc / 10, cc % 10);
    }
  return fraction(fa2.value * ratio, fa2.low * ratio, fa2.high * ratio,
                  "huggingface/transformers PR #48163 (cuDNN vs FlashAttention SDPA at training shapes: 0.82x on A100, "
                  "0.93x on A10G, 1.00x on L40S, 0.88x on RTX PRO 6000; 1.7-2.3x on H100): " +
                      why + ", applied to the FlashAttention-2 default.");
}

}  // namespace

Efficiency default_efficiency(int compute_capability) {
  Efficiency e;
  e.calibrated = false;
  e.gemm = default_gemm();
  e.attention =
      is_hopper(compute_capability)
          ? fraction(0.35, 0.30, 0.40,
                     "Shah et al. 2024, 'FlashAttention-3' (arXiv:2407.08608) abstract: FlashAttention-2 "
                     "achieves only 35% utilization on H100 (its kernels do not use Hopper's TMA and "
                     "asynchronous WGMMA); its Fig. 5 (forward, head dim 128, H100 SXM5) has FlashAttention-2 "
                     "at 309-370 TFLOP/s of 989 (0.31-0.37) from 512 to 16k tokens.")
          : fraction(0.55, 0.40, 0.70,
                     "Dao 2023, 'FlashAttention-2' (arXiv:2307.08691) abstract: the forward pass reaches "
                     "50-73% of the theoretical maximum FLOP/s on A100, and training end to end up to 225 "
                     "TFLOP/s per A100 (72% model FLOPs utilisation); the backward pass is less efficient "
                     "than the forward, so the default sits at the low end of that range for forward and "
                     "backward alike.");
  e.attention_fa3 =
      fraction(0.60, 0.45, 0.75,
               "Shah et al. 2024, 'FlashAttention-3' (arXiv:2407.08608) abstract: 1.5-2.0x faster than "
               "FlashAttention-2 on H100, FP16 reaching up to 740 TFLOP/s (75% utilization) in the forward pass; the "
               "backward pass is slower (its own section), so forward and backward together sit lower. Hopper only.");
  e.attention_cudnn = is_hopper(compute_capability) ? hopper_cudnn_attention()
                                                    : cudnn_attention_before_hopper(e.attention, compute_capability);
  // FlashAttention-1-class kernels (flash-attn 1.x, the Triton kernel) are written for Ampere's mma.sync path, as
  // FlashAttention-2 is; on Hopper both run on that path without TMA or WGMMA, so FA1 keeps its distance to FA2
  // there: the A100 ratio (0.33 / 0.55) applied to FA2's measured Hopper fraction (0.35, Shah et al. 2024).
  const std::string fa1_source =
      "Dao 2023, 'FlashAttention-2' (arXiv:2307.08691) abstract: FlashAttention (v1) reaches only 25-40% of the "
      "theoretical maximum FLOP/s on A100; the middle of that range. The Triton FlashAttention kernel "
      "(flash-attn's flash_attn_triton.py, used by e.g. MosaicML llm-foundry's attn_impl: triton) is in the same "
      "class: its header states that Triton forward + backward is slightly slower than the CUDA (v1) kernels.";
  e.attention_fa1 = is_hopper(compute_capability)
                        ? fraction(0.35 * 0.33 / 0.55, 0.30 * 0.25 / 0.55, 0.40 * 0.40 / 0.55,
                                   fa1_source +
                                       " On Hopper (derived): it runs Ampere's mma.sync path like FlashAttention-2, "
                                       "which reaches 0.35 of the H100 peak there (Shah et al. 2024, "
                                       "'FlashAttention-3', abstract and Fig. 5), so it keeps the A100 ratio of the "
                                       "two, 0.33 / 0.55: 0.21, band 0.14-0.29.")
                        : fraction(0.33, 0.25, 0.40, fa1_source);
  e.memory_bandwidth =
      fraction(0.88, 0.80, 0.93,
               "STREAM-like copy/triad kernels (BabelStream, Deakin et al.) typically reach ~85-92% of HBM "
               "datasheet bandwidth on A100/H100 class GPUs; GDDR parts are lower (an L40S validation guide "
               "sets >83% of 864 GB/s as its pass target, ai-hpc.github.io L40S-x12 benchmarks). Engineering "
               "summary of those figures.");
  e.elementwise_bandwidth =
      fraction(0.76, 0.68, 0.85,
               "measured on one H200 (data/calibration/h200-2026-11-29): RMSNorm-, SiLU-mul-, softmax- and "
               "RoPE-shaped kernels at 256 MiB-1 GiB reach 3.3-4.0 TB/s (0.70-0.83 of 4.8 TB/s) while a device "
               "copy reaches 4.2 TB/s, and PyTorch's fused AdamW kernel moved 3.4 TB/s (0.70) in a training step "
               "(kernel-profile.json). Applied to other GPUs as an assumption: elementwise kernels reach ~0.87 of "
               "their copy bandwidth.");
  e.fabric_bandwidth =
      fraction(0.75, 0.65, 0.87,
               "NCCL all-reduce bus bandwidth (nccl-tests busbw, doc/PERFORMANCE.md) over per-GPU "
               "per-direction NVLink: ~200 GB/s of 300 (0.67) on 8x A100-80GB SXM (NVIDIA/nccl-tests issue "
               "#149); a public 8x A800-SXM4-80GB report with NCCL 2.21.5 measures 173.6 GB/s by 2*size/t at "
               "1 GiB, i.e. ~152 GB/s busbw = 0.76 of 200 GB/s (0.87 by its own metric). Large messages only.");
  e.pcie_bandwidth =
      fraction(0.85, 0.75, 0.90,
               "host<->device and peer copies over PCIe reach 80-90% of line rate: 27.1 GB/s of 31.5 (0.86) "
               "for gen4 x16 P2P on RTX 3090 (noonghunna/club-3090 docs/PCIE_P2P.md) and ~56 of 63 GB/s (0.89) "
               "for gen5 x16 (voipmonitor/rtx6kpro hardware/pcie-bandwidth.md); 26.2 GB/s H2D (0.83) on a 4x "
               "RTX 4090 box (kentino.se case study).");
  e.host_memory_bandwidth =
      fraction(0.6, 0.45, 0.8,
               "engineering assumption: STREAM triad reaches ~70-85% of the DDR datasheet bandwidth on multi-channel "
               "hosts, and a CPU matrix-vector product over block-quantized weights (llama.cpp's ggml CPU kernels) "
               "less, with its dequantization on the cores; no measurement of that kernel on these hosts was "
               "verified for this default (llmsim calibrate does not measure it yet).");
  e.network_bandwidth =
      fraction(0.85, 0.75, 0.92,
               "engineering assumption: inter-node NCCL ring bus bandwidth over InfiniBand typically reaches "
               "85-92% of NIC line rate with GPUDirect RDMA; no single published figure was verified for this "
               "default (force NCCL_ALGO=RING when measuring, per NVIDIA/nccl-tests issue #196).");
  e.comm_interference =
      fraction(0.19, 0.10, 0.40,
               "Lee et al. 2025, 'Characterizing Compute-Communication Overlap in GPU-Accelerated Distributed Deep "
               "Learning' (arXiv:2507.03114): in GPT and Llama training on 4 A100, H100, MI250 and MI210, compute "
               "runs 18.9 % slower on average (40.0 % at most) while communication overlaps it, because NCCL's "
               "kernels hold SMs and HBM bandwidth (on an H100 an FSDP-style ncclAllGather holds 24 of the 132 SMs, "
               "NVIDIA developer forum thread 337991). Taken as compute seconds lost per second of overlap; band "
               "from about half the average to the maximum. Until calibrated or fitted (calibrate fit-runs --key "
               "comm_interference_fraction; docs/training-time.md, 'Communication interference')");
  // Engineering assumption (Efficiency has no source field for it): CUDA kernel launch overhead is
  // commonly measured at 2-10 us per launch without CUDA graphs; 5 us is the middle.
  e.kernel_launch_s = 5.0 * units::us;
  // Measured, on one GPU and host: the H200 profile's small 16-bit GEMMs (data/calibration/h200-2026-11-29,
  // samples.csv: 16 cuBLAS calls of at most 8 MiB and 1 GFLOP, enqueued back to back) take a median 8.7 us,
  // 2.4x its empty-kernel launch, whatever their size; streaming their bytes would take under 2 us.
  e.gemm_call_s = 8.7 * units::us;
  e.gemm_call_source =
      "measured on one H200 + Xeon 8480C host with cuBLAS 13 (data/calibration/h200-2026-11-29: median of the 16 "
      "16-bit GEMM samples of <= 8 MiB and <= 1 GFLOP, 10-90 % 8.2-11.5 us); stands in for other GPUs and hosts "
      "until calibrated (llmsim calibrate --only gemm)";
  // The host critical path's rate (sim/cost/host_dispatch.h): fitted, not measured.
  e.host_dispatch_s = 24.0 * units::us;
  e.host_dispatch_low_s = 24.0 * units::us;  // the leave-one-source-out fits ranged 24-26 us
  e.host_dispatch_high_s = 26.0 * units::us;
  e.host_dispatch_source =
      "fitted by llmsim calibrate fit-runs --profile hf on the development files (the 128 time and throughput rows "
      "of the HF transformers profile: mean |log error| over a 0-50 us grid; leave-one-source-out picks 24-26 us "
      "for each of its sources; refitted after the gradient-accumulation and weight-gradient reduction kernels of "
      "backward (26 us [24, 26] before), HF generate's repeat_kv before transformers 4.48 (28 us [26, 28] before "
      "that) and the launch + streaming kernel rule (30 us [28, 35] before those); "
      "docs/validation.md, 'Host dispatch fit'). Eager PyTorch is commonly put at "
      "5-25 us of host work per op; transformers' module code adds Python work per launch. A property of the "
      "host CPU and PyTorch build: set host_dispatch_us per system when measured";
  // The base latency of one collective call (sim/cost/comm_cost.cpp): fitted, not measured. NCCL's
  // own cost model puts it at 6.6 us for a ring with the LL protocol (src/graph/tuning.cc, baseLat); measured
  // in engines it is far more: vLLM's one-shot custom all-reduce (vllm-project/vllm PR #2192) cut Llama-70B
  // TP4 batch 64 (256 + 256 tokens) on A100-80G from 16.37 to 14.57 s and Llama-33B TP2 from 15.88 to
  // 14.38 s, i.e. 44 and 49 us saved per NCCL all-reduce (2 per layer, 80 / 60 layers, 256 iterations: 1.80 s / (160 x
  // 256), 1.50 s / (120 x 256)).
  e.collective_base_s = 45.0 * units::us;
  e.collective_base_low_s = 35.0 * units::us;  // the leave-one-source-out fits ranged 35-50 us
  e.collective_base_high_s = 50.0 * units::us;
  e.collective_base_source =
      "fitted by llmsim calibrate fit-runs --key collective_base_us on the development files (all 1,338 time and "
      "throughput rows: mean |log error| over a 0-100 us grid; leave-one-source-out picks 45 us for 29 of the 31 "
      "sources, 35 us without FasterTransformer's GPT guide, 50 us without gpt-fast; refitted on 2026-12-03 after "
      "communication interference, the measured GEMM half-efficiency contraction and the allocator reserve rule "
      "(50 us [35, 50] before); docs/validation.md, 'Collective base latency'). NCCL's cost model gives 6.6 us per "
      "call; in engines the call also waits for the slowest rank, and vLLM PR #2192 measured 44-49 us saved per NCCL "
      "all-reduce on A100-80G. A property of the system and its software stack: set collective_base_us per "
      "system when measured";
  // The host work of one eager collective call beyond its launch (sim/cost/host_dispatch.h): off until
  // measured. On the development files fit-runs --key collective_host_us runs to the top of its grid (200 us,
  // leave-one-source-out 150-200), pulled by Megatron's inference rows in FasterTransformer's guide, whose
  // error grows with the batch (another missing term); TGI 1.0.3's TP8 rows, the eager engine it is meant
  // for, are best near 56-85 us (46.5 % -> 21-23 %) but want ~160 us at 7B and ~50 us at 70B, and the
  // serving median is worse at 200 us (24.5 -> 25.0 %). docs/validation.md, "Eager collective host work".
  e.collective_host_s = 0;
  e.collective_host_source =
      "not set: the development files do not determine a value that generalizes (fit-runs --key collective_host_us "
      "fits the top of its grid; docs/validation.md). Set collective_host_us per system when measured";
  // DeepSpeed ZeRO-3's per-module fetch and release (sim/train/train_layer_cost.cpp count_zero_hooks):
  // fitted, not measured. fit-runs --profile deepspeed --key deepspeed_hook_us picks 140 us on the development
  // files (76 rows; Qwen's ZeRO-3 step times at 256 tokens: 1.8B full-parameter -65 % -> +4 %, 7B on two GPUs
  // -67 % -> -21 %, 72B LoRA -43 % -> +2 %); leaving Qwen's README out, the rest (the HF blog's Granite-7B,
  // over-predicted for another reason) runs the fit to the top of its grid, 250 us, which still takes Qwen's
  // median from 12.0 to 10.9 %. docs/validation.md, "DeepSpeed as Qwen's scripts run it". Stages 1-2's gradient
  // hooks are priced as eager launches.
  e.deepspeed_hook_s = 140.0 * units::us;
  e.deepspeed_hook_source =
      "fitted by llmsim calibrate fit-runs --profile deepspeed --key deepspeed_hook_us on the development files "
      "(76 time and throughput rows of the deepspeed profile, mean |log error| over a 0-250 us grid: 140 us; "
      "leave-one-source-out 140-250 us; docs/validation.md, 'DeepSpeed as Qwen's scripts run it'). The Python of "
      "ZeRO-3's fetch_sub_module / release_sub_module per module and pass; a property of the host CPU, Python and "
      "DeepSpeed release: set deepspeed_hook_us per system when measured";
  // Measured, on one GPU: the H200 calibration's bf16 GEMM fit (data/calibration/h200-2026-11-29,
  // hgx-h200-calibrated.toml) gives 261 elements; its k = 1024 GEMMs of 8192-32768 x 2048 ran at 0.58-0.63
  // of the peak against 0.66-0.71 at k >= 2048 (k / (k + 261) x 0.767 = 0.61; the engineering assumption
  // of 64 used before 2026-12-03 gave 0.72). It stands in for other GPUs until they are calibrated.
  e.gemm_half_k = 261;
  e.gemm_half_k_source =
      "measured on one H200 with cuBLAS 13 (data/calibration/h200-2026-11-29: bf16 GEMM fit over 99 compute-bound "
      "shapes; its k = 1024 shapes ran at 0.58-0.63 of the peak, k >= 2048 at 0.66-0.71); stands in for other GPUs "
      "until calibrated (llmsim calibrate --only gemm). 64, an engineering assumption, before 2026-12-03";
  e.cpu_adam_params_per_s = 4.0e9;
  e.cpu_adam_source =
      "Ren et al. 2021, 'ZeRO-Offload' (USENIX ATC'21), CPU-Adam latency table: ~0.22 s per 1B and "
      "~2.6 s per 10B parameters on a DGX-2 host (2x Xeon Platinum 8168), i.e. ~4e9 params/s, 5-7x "
      "PyTorch CPU Adam (the deepspeed.ai ZeRO-Offload tutorial gives the same 5-7x; the absolute "
      "latencies are not yet checked against the paper's table). The rate scales with host memory "
      "bandwidth: calibrate it per system (llmsim calibrate --only cpu).";
  // Measured, on one host: the H200 calibration's copies of 64 MiB to 1 GiB from and to malloc'd memory
  // (data/calibration/h200-2026-11-29, `llmsim calibrate refit`) ran at 8.39 GB/s host->device and 14.86 GB/s
  // device->host against 55 GB/s pinned. A pageable copy is a host memcpy into the driver's staging buffer,
  // so the host sets its rate; this host stands in for others until calibrated (llmsim calibrate --only h2d).
  e.pageable_h2d_Bps = 8.39 * units::GBps;
  e.pageable_d2h_Bps = 14.86 * units::GBps;
  e.pageable_source =
      "measured on one host (data/calibration/h200-2026-11-29: h2d_pageable 8.39 GB/s, d2h_pageable 14.86 GB/s over "
      "copies of 64 MiB-1 GiB; pinned 55 GB/s); stands in for other hosts until calibrated (llmsim calibrate --only "
      "h2d)";
  return e;
}

}  // namespace llmsim::hardware
