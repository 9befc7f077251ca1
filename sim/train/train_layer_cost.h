#pragma once
// Costs of one micro-batch through one layer (or the embedding / LM head) on one GPU of a training
// run: forward, backward and recomputation time on the compute stream (tensor/expert/context-parallel
// collectives included, since they block it), FLOPs, parameters and gradient bytes, and the time split
// by module and operator class for the breakdown tables. Computed once per kind of layer and reused for
// every identical layer and micro-batch.
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "llmsim/core/interval.h"
#include "llmsim/cost/comm_cost.h"
#include "llmsim/cost/compute_cost.h"
#include "llmsim/hardware/system_spec.h"
#include "llmsim/model/model_spec.h"
#include "llmsim/run/framework_profile.h"
#include "llmsim/run/run_spec.h"

namespace llmsim::sim {

enum class LayerKind { Embedding, Dense, Moe, Head };

// Seconds (best estimate) per breakdown key; keys are module names ("attention.qkv", "mlp", …) or
// operator classes ("gemm", "all_reduce", …).
using TimeSplit = std::map<std::string, double>;

struct LayerCost {
  LayerKind kind = LayerKind::Dense;
  Interval fwd, bwd, recompute;                              // seconds per micro-batch on the compute stream
  Interval fwd_comm, bwd_comm, recompute_comm;               // the blocking-collective part of the above
  double fwd_flops = 0, bwd_flops = 0, recompute_flops = 0;  // FLOPs executed per micro-batch on one GPU
  // Kernels each pass launches (sim/cost/host_dispatch.h); fwd, bwd and recompute above are
  // already spans: at least these launches times the host's seconds per eager launch.
  double fwd_launches = 0, bwd_launches = 0, recompute_launches = 0;
  // Of which collective calls: eager code spends Efficiency::collective_host_s on each beyond its launch.
  double fwd_calls = 0, bwd_calls = 0, recompute_calls = 0;
  // DeepSpeed ZeRO hook calls each pass makes on the host (FrameworkProfile::zero_hooks): modules holding
  // parameters (each nn.Linear / norm operator, and a LoRA adapter's A and B) and trainable parameter
  // tensors (one per such module: its weight; biases ride with it).
  double param_modules = 0, trainable_tensors = 0;
  // Trainable parameter tensors counted one by one (a projection's weight and bias apart, a LayerNorm's weight and
  // bias): all of them, and those a fused weight-gradient GEMM does not accumulate (biases, norms, LoRA's A and B
  // are GEMM weights too). FrameworkProfile::grad_accumulation adds kernels for them.
  double grad_tensors = 0, unfused_grad_tensors = 0;
  double fwd_hooks = 0, bwd_hooks = 0, recompute_hooks = 0;
  double params = 0;            // parameters held on one GPU (after TP / EP sharding, before ZeRO)
  double trainable_params = 0;  // of which trainable (LoRA: the adapters)
  // Bytes one ZeRO-3 / FSDP all-gather of these parameters moves: what the shards store (a LoRA base in its
  // quantized format with its scales, frozen_linear_bytes; every other parameter in 16 bits).
  double gather_bytes = 0;
  TimeSplit by_module;  // fwd + bwd + recompute seconds per micro-batch
  TimeSplit by_class;
};

// The groups a layer's collectives run over.
struct LayerGroups {
  CommGroup tp, cp, ep;
};

struct LayerCostInputs {
  const model::ModelSpec& model;
  const RunSpec& run;  // with_defaults applied
  const FrameworkProfile& framework;
  const ComputeCost& compute;
  const CommCost& comm;
  LayerGroups groups;
};

// The share of each operator's forward that recomputation runs again in backward, for `ops` built with
// `p`: full = all of every operator of a transformer block (`block`; the embedding and head run once);
// selective = the unfused attention core (Megatron) or, under the
// op-level policy, what it does not save (model/op_checkpoint.h) inside transformer blocks
// (`block`) only. One rule for the step graph's times and the fast estimate's hardware FLOPs.
std::vector<double> recompute_shares(const model::ModelSpec& m, const std::vector<model::Operator>& ops,
                                     const model::InventoryParams& p, Recompute recompute,
                                     model::SelectivePolicy selective, bool block);

// Cost of one layer of `kind` (layer_index picks dense vs MoE for Dense/Moe kinds; ignored otherwise).
LayerCost layer_cost(const LayerCostInputs& in, LayerKind kind, std::int64_t layer_index);

// The module a breakdown row of an inventory operator belongs to ("attention.qkv", "attention.rope",
// "attention.core", "attention.out_proj", "mlp", "moe", "norm", "residual", "embedding", "lm_head_loss",
// "dequantization", "communication.tp", "communication.ep").
std::string breakdown_module(const model::Operator& op);

}  // namespace llmsim::sim
