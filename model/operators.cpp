// Per-layer operator inventory for one GPU of a Megatron-style tensor-parallel group.
//
// Sharding: QKV and gate/up are column-parallel (output features split over tp), the attention output
// projection and the MLP down projection are row-parallel (input features split, partial sums
// reduced by a TpComm op), the embedding table and the LM head are vocab-parallel.
//
// Conventions (the simulator and the docs rely on them):
//  * GEMM forward FLOPs = 2*m*n*k*batch. Backward = 2x forward: the activation-gradient GEMM and the
//    weight-gradient GEMM each cost one forward. bwd_weight_flops = forward for GEMMs with weights,
//    0 for the attention score/context batched GEMMs (both of their gradients are activation
//    gradients). Bias adds are fused into the GEMM epilogue: they count in bytes and weight_params,
//    not in FLOPs, so GEMM FLOPs stay exactly 2mnk.
//  * GEMM forward bytes = A + B + C once each: activations in the activation dtype, weights in the
//    weight dtype (the dequantized act dtype when a dequant op precedes the GEMM). Backward bytes are
//    the two backward GEMMs' reads and writes: dgrad reads dY and W and writes dX, wgrad reads X and
//    dY and writes dW (= 2x forward bytes).
//  * Memory-bound kernels: bytes = tensors read + tensors written; FLOPs = a small per-element count
//    (constants below). Their backward figures are written out per kernel (see each builder).
//  * Flash attention forward FLOPs = 2*b*heads/tp*(head_dim + v_head_dim)*pairs (4*b*heads/tp*head_dim
//    without MLA), pairs = q_len*kv_len without a
//    causal mask, half of that for causal prefill (q_len == kv_len); backward = 2.5x forward
//    (FlashAttention-2: the recomputed scores plus the four backward matmuls).
//  * Each TpComm op stands for one collective of comm_bytes in forward (`collective`) and one in
//    backward (`bwd_collective`); comm_bytes is the full unsharded tensor.
//  * Backward figures are zero when InventoryParams::training is false.
#include "llmsim/model/operators.h"

#include <fmt/format.h>

#include "llmsim/core/error.h"
#include "llmsim/model/operators/op_builders.h"

// The builders live in operators/: op_builders (single operators and the shared context), attention,
// mlp_moe and embedding_head (the blocks); this file assembles a decoder layer and names the enums.
namespace llmsim::model {

namespace {
using namespace inventory;  // NOLINT(google-build-using-namespace): the builders of this inventory
}  // namespace

int attention_input_projections(const ModelSpec& m) {
  if (m.mla.enabled()) return 2;  // q_a_proj (or q_proj) and kv_a_proj_with_mqa
  return m.fused_qkv ? 1 : 3;
}

int mlp_input_projections(const ModelSpec& m) { return m.mlp == MlpKind::Gated && !m.fused_gate_up ? 2 : 1; }

std::string_view op_kind_name(OpKind k) {
  switch (k) {
    case OpKind::Gemm: return "gemm";
    case OpKind::FlashAttn: return "flash_attn";
    case OpKind::LinearAttn: return "linear_attn";
    case OpKind::Elementwise: return "elementwise";
    case OpKind::Norm: return "norm";
    case OpKind::Embedding: return "embedding";
    case OpKind::Loss: return "loss";
    case OpKind::TpComm: return "tp_comm";
    case OpKind::MoeComm: return "moe_comm";
  }
  return "?";
}

std::string_view module_name(Module m) {
  switch (m) {
    case Module::Embedding: return "embedding";
    case Module::Attention: return "attention";
    case Module::Mlp: return "mlp";
    case Module::Moe: return "moe";
    case Module::Norm: return "norm";
    case Module::Residual: return "residual";
    case Module::Head: return "head";
    case Module::Loss: return "loss";
  }
  return "?";
}

std::string_view collective_name(Collective c) {
  switch (c) {
    case Collective::None: return "none";
    case Collective::AllReduce: return "all_reduce";
    case Collective::ReduceScatter: return "reduce_scatter";
    case Collective::AllGather: return "all_gather";
    case Collective::AllToAll: return "all_to_all";
  }
  return "?";
}

double LayerInventory::fwd_flops() const {
  double s = 0;
  for (const Operator& op : ops) s += op.fwd_flops;
  return s;
}
double LayerInventory::bwd_flops() const {
  double s = 0;
  for (const Operator& op : ops) s += op.bwd_flops;
  return s;
}
double LayerInventory::fwd_bytes() const {
  double s = 0;
  for (const Operator& op : ops) s += op.fwd_bytes;
  return s;
}
double LayerInventory::bwd_bytes() const {
  double s = 0;
  for (const Operator& op : ops) s += op.bwd_bytes;
  return s;
}

// gpt_neox parallel_residual (x + attn(ln1(x)) + mlp(ln2(x))) executes the same kernels as the
// sequential layout; only the dependency between the blocks differs, so the inventory is the same.
LayerInventory layer_ops(const ModelSpec& m, const InventoryParams& p, std::int64_t layer_index) {
  validate(m, p);
  if (layer_index < 0 || (m.num_layers > 0 && layer_index >= m.num_layers))
    throw_input(Location{.key = "layer"},
                fmt::format("layer index {} is outside 0..{}", layer_index, m.num_layers - 1));
  Ctx c = make_ctx(m, p);
  c.window = m.window_of(layer_index);
  LayerInventory inv;
  if (!m.is_linear_attention_layer(layer_index))
    add_attention(c, inv.ops);
  else if (m.linear_attn.kind == LinearMixer::Mamba2)
    add_mamba2(c, inv.ops);
  else
    add_gated_deltanet(c, inv.ops);
  if (m.is_moe_layer(layer_index))
    add_moe(c, inv.ops);
  else
    add_mlp(c, inv.ops);
  add_weight_casts(c, inv, "layer.weight_cast", Module::Attention);
  finish(c, inv);
  return inv;
}

bool is_attention_core(const Operator& op) { return op.role == OpRole::AttentionCore; }

Operator on_busiest_expert_rank(Operator op, double imbalance, double weight_bytes) {
  const double f = std::max(1.0, imbalance);
  if (f == 1.0) return op;
  if (op.kind == OpKind::MoeComm) {
    op.comm_bytes *= f;
    return op;
  }
  if (op.kind != OpKind::Gemm || !op.routed_expert) return op;
  // The weights are read once whatever the rows; everything else moves with them. Backward reads them again
  // for the activation gradient; a trained expert's weight gradient writes their size as well.
  const auto rest = [f](double total, double fixed) {
    const double w = std::min(total, fixed);
    return w + (total - w) * f;
  };
  op.m = static_cast<std::int64_t>(std::ceil(static_cast<double>(op.m) * f));
  op.fwd_bytes = rest(op.fwd_bytes, weight_bytes);
  op.bwd_bytes = rest(op.bwd_bytes, weight_bytes * (op.bwd_weight_flops > 0 ? 2.0 : 1.0));
  op.bwd_weight_bytes = rest(op.bwd_weight_bytes, weight_bytes);
  op.fwd_flops *= f;
  op.bwd_flops *= f;
  op.bwd_weight_flops *= f;
  return op;
}

Operator on_own_experts(Operator op, std::int64_t ep, double weight_bytes) {
  if (ep <= 1 || !op.routed_expert) return op;
  const double others = 1.0 - 1.0 / static_cast<double>(ep);
  if (op.kind == OpKind::Gemm) {
    const double w = std::min(op.fwd_bytes, weight_bytes) * others;
    op.fwd_bytes -= w;
    op.bwd_bytes = std::max(0.0, op.bwd_bytes - w * (op.bwd_weight_flops > 0 ? 2.0 : 1.0));
    op.bwd_weight_bytes = std::max(0.0, op.bwd_weight_bytes - w);
    return op;
  }
  if (op.role == OpRole::Dequant) {
    const double own = 1.0 / static_cast<double>(ep);
    op.fwd_bytes *= own;
    op.bwd_bytes *= own;
    op.fwd_flops *= own;
    op.bwd_flops *= own;
  }
  return op;
}

}  // namespace llmsim::model
