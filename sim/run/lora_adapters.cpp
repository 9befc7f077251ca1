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
  // One projection's adapter, if targeted: `pairs` copies of it in the layer, each token through `rows`.
  const auto add = [&](const char* target, LoraSlot slot, double d_in, double d_out, double pairs = 1, double rows = 1,
                       bool routed = false) {
    if (wants(target))
      out.push_back({.target = target,
                     .slot = slot,
                     .d_in = d_in,
                     .d_out = d_out,
                     .pairs = pairs,
                     .rows_per_token = rows,
                     .routed = routed});
  };
  add("q", LoraSlot::Qkv, h, q);
  add("k", LoraSlot::Qkv, h, kv);
  add("v", LoraSlot::Qkv, h, kv);
  add("o", LoraSlot::Out, q, h);
  // One MLP's projections.
  const auto mlp = [&](double ffn, double pairs, double rows, bool routed) {
    if (ffn <= 0) return;
    if (m.mlp == model::MlpKind::Gated) add("gate", LoraSlot::GateUp, h, ffn, pairs, rows, routed);
    add("up", LoraSlot::GateUp, h, ffn, pairs, rows, routed);
    add("down", LoraSlot::Down, ffn, h, pairs, rows, routed);
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
