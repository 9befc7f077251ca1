#pragma once
// LoRA adapters of one transformer layer: which projections get an A (d_in x r) / B (r x d_out) pair, on
// every routed expert as well (PEFT wraps each expert's linear modules when they are targeted), and how
// many parameters one GPU holds. The one list the memory model, the step graph's adapter GEMMs and the
// search's fast estimator all use.
#include <cstdint>
#include <string>
#include <vector>

#include "llmsim/model/model_spec.h"

namespace llmsim::sim {

// Where a projection sits: q, k and v read one input (the fused QKV projection), gate and up another (the MLP's
// first GEMMs); o and down read the tensor-parallel-sharded dimension (row-parallel projections).
enum class LoraSlot { Qkv, Out, GateUp, Down };

struct LoraAdapter {
  const char* target = "";  // "q", "k", "v", "o", "gate", "up", "down"
  LoraSlot slot = LoraSlot::Qkv;
  double d_in = 0, d_out = 0;  // the projection's dimensions before tensor-parallel sharding
  double pairs = 1;            // A/B pairs in the layer: one per expert on the routed experts, else 1
  double rows_per_token = 1;   // rows each token sends through them together (top_k on the routed experts)
  bool routed = false;         // on the routed experts: sharded over expert parallelism
};

// The adapters of one layer (`moe_layer`: its MLP is the routed experts plus any shared expert) for the
// LoRA targets `targets` (empty = every linear projection; valid names: sim::lora_target_names()).
std::vector<LoraAdapter> lora_adapters(const model::ModelSpec& m, bool moe_layer,
                                       const std::vector<std::string>& targets);

// Adapter parameters of one layer, split by how they shard.
struct LoraParams {
  double unrouted = 0;  // attention, dense MLP and shared-expert adapters: sharded over TP
  double routed = 0;    // routed-expert adapters: sharded over TP and EP
  // What one GPU holds with this tensor- and expert-parallel size (LoRA A and B both split over TP, as
  // Megatron/NeMo's parallel adapters do).
  double per_gpu(std::int64_t tp, std::int64_t ep) const {
    return (unrouted + routed / static_cast<double>(ep)) / static_cast<double>(tp);
  }
};

LoraParams lora_layer_params(const model::ModelSpec& m, bool moe_layer, std::int64_t rank,
                             const std::vector<std::string>& targets);

}  // namespace llmsim::sim
