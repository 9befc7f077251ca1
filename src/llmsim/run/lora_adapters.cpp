#include "llmsim/run/lora_adapters.h"

#include <algorithm>

namespace llmsim::sim {

std::vector<LoraAdapter> lora_adapters(const model::ModelSpec& m, bool moe_layer,
                                       const std::vector<std::string>& targets) {
  const auto wants = [&](const char* name) {
    return targets.empty() || std::find(targets.begin(), targets.end(), name) != targets.end();
  };
  const double h = static_cast<double>(m.hidden), q = static_cast<double>(m.q_dim()),
               kv = static_cast<double>(m.kv_dim());
  std::vector<LoraAdapter> out;
  if (wants("q")) out.push_back({.target = "q", .slot = LoraSlot::Qkv, .d_in = h, .d_out = q});
  if (wants("k")) out.push_back({.target = "k", .slot = LoraSlot::Qkv, .d_in = h, .d_out = kv});
  if (wants("v")) out.push_back({.target = "v", .slot = LoraSlot::Qkv, .d_in = h, .d_out = kv});
  if (wants("o")) out.push_back({.target = "o", .slot = LoraSlot::Out, .d_in = q, .d_out = h});
  // One MLP's projections: `pairs` copies, each token passing through `rows` of them.
  const auto mlp = [&](double ffn, double pairs, double rows, bool routed) {
    if (ffn <= 0) return;
    if (m.mlp == model::MlpKind::Gated && wants("gate"))
      out.push_back({.target = "gate",
                     .slot = LoraSlot::GateUp,
                     .d_in = h,
                     .d_out = ffn,
                     .pairs = pairs,
                     .rows_per_token = rows,
                     .routed = routed});
    if (wants("up"))
      out.push_back({.target = "up",
                     .slot = LoraSlot::GateUp,
                     .d_in = h,
                     .d_out = ffn,
                     .pairs = pairs,
                     .rows_per_token = rows,
                     .routed = routed});
    if (wants("down"))
      out.push_back({.target = "down",
                     .slot = LoraSlot::Down,
                     .d_in = ffn,
                     .d_out = h,
                     .pairs = pairs,
                     .rows_per_token = rows,
                     .routed = routed});
  };
  if (moe_layer) {
    mlp(static_cast<double>(m.moe.expert_ffn), static_cast<double>(m.moe.num_experts),
        static_cast<double>(m.moe.experts_per_token), true);
    mlp(static_cast<double>(m.moe.shared_expert_ffn), 1, 1, false);
  } else {
    mlp(static_cast<double>(m.ffn_hidden), 1, 1, false);
  }
  return out;
}

LoraParams lora_layer_params(const model::ModelSpec& m, bool moe_layer, std::int64_t rank,
                             const std::vector<std::string>& targets) {
  LoraParams p;
  const double r = static_cast<double>(rank);
  for (const LoraAdapter& a : lora_adapters(m, moe_layer, targets))
    (a.routed ? p.routed : p.unrouted) += r * (a.d_in + a.d_out) * a.pairs;
  return p;
}

}  // namespace llmsim::sim
