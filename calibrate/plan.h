#pragma once
// The calibration plan: which benchmark families exist and which points each measures. Pure functions
// (no GPU needed), so `llmsim calibrate --list` and `--dry-run` work anywhere.
//
// Families and their `bytes` convention:
//   gemm            cuBLAS(Lt) GEMM m x n x k per dtype; bytes = A + B + C once
//   gemm_batched    batched GEMM (unfused attention shapes); bytes as gemm over the batch
//   mem_copy        device-to-device copy; bytes = read + written
//   mem_read / mem_write   streaming read-only / write-only kernels; bytes touched
//   elementwise     RMSNorm-, SiLU-mul-, softmax- and RoPE-shaped kernels; bytes read + written
//   launch          empty-kernel launch overhead; bytes = 0
//   h2d_pinned, d2h_pinned, h2d_pageable, d2h_pageable   host<->device copies; bytes copied
//   p2p             peer copy between two GPUs; bytes copied
//   nccl_all_reduce, nccl_all_gather, nccl_reduce_scatter, nccl_all_to_all, nccl_broadcast, nccl_send_recv
//                   NCCL collectives over `group` GPUs (or MPI ranks, spanning `nodes` hosts); bytes = the
//                   nccl-tests "size" (per-rank buffer)
//   cpu_adam        fused AdamW over `bytes / 4` fp32 parameters with `group` threads
//   host_copy, host_triad   host memory bandwidth (STREAM-like) with `group` threads; bytes touched
#include <string>
#include <vector>

#include "llmsim/calibrate/sample.h"

namespace llmsim::calibrate {

struct Family {
  std::string name;   // as in BenchItem::bench
  std::string group;  // the --only group it belongs to: gemm, memory, h2d, p2p, nccl, cpu
  bool needs_gpu = true;
  std::string what;  // one line for --list
};

// Every family, in run order.
const std::vector<Family>& families();

// --only groups: "gemm", "memory", "h2d", "p2p", "nccl", "cpu".
std::vector<std::string> only_groups();

struct PlanOptions {
  std::vector<std::string> only;  // empty = every group
  bool quick = false;             // a few points per family (minutes instead of an hour)
  int gpus = 1;                   // GPUs visible (collective group sizes 2..gpus)
  // GEMM precisions the GPU supports, in run order: the ones LLM work uses most come first, so a run cut
  // short by --time-budget-s has measured them.
  std::vector<std::string> dtypes = {"bf16", "fp16", "tf32", "fp32"};
  int host_threads = 0;  // threads for host benchmarks (0 = hardware concurrency)
  // calibrate --mpi: the host of every rank, in rank order. With two or more ranks the NCCL families
  // run over the first 2, 4, 8, … and all ranks (one GPU each), each item recording the nodes its
  // group spans; `gpus` still sizes the single-process families (p2p) of rank 0.
  std::vector<std::string> rank_hosts;
};

std::vector<BenchItem> make_plan(const PlanOptions& opts);

}  // namespace llmsim::calibrate
