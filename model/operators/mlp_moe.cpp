// The MLP block (dense or gated) and the mixture-of-experts block: router, top-k, dispatch and combine
// all-to-alls, routed experts, optional shared expert.
#include <algorithm>
#include <cmath>

#include "llmsim/model/operators/op_builders.h"

namespace llmsim::model::inventory {

namespace {

// Activation (and the gated multiply) over rows x width. Gated: read gate and up, write h; backward
// reads gate, up and dh, writes dgate and dup. Plain: read x, write y; backward reads x, dy, writes dx.
Operator activation_op(const Ctx& c, std::string name, Module module, double rows, i64 width) {
  const std::string& act = c.m.activation;
  const double per = act.find("gelu") != std::string::npos ? 8.0
                     : act == "relu"                       ? 1.0
                                                           : 4.0;  // silu: exp, add, div, mul
  const double elems = rows * dbl(width);
  // Split (eager): act(gate) writes a tensor the product reads back: forward 2 + 3 passes instead of 3;
  // backward: the product's (read 3, write 2) plus the activation's (read 2, write 1).
  const bool split = c.p.glue.split_gated_activation;
  if (c.m.mlp == MlpKind::Gated) {
    Operator op = pointwise(std::move(name), OpKind::Elementwise, module, (per + 1) * elems,
                            (split ? 5 : 3) * elems * c.a, 2 * (per + 1) * elems, (split ? 8 : 5) * elems * c.a);
    if (split) op.launches = 2;
    return op;
  }
  return pointwise(std::move(name), OpKind::Elementwise, module, per * elems, 2 * elems * c.a, 2 * per * elems,
                   3 * elems * c.a);
}

// One feed-forward network (dense MLP, the routed experts or the shared expert), `ffn` columns per GPU.
// Gated MLPs use one fused gate+up GEMM (n = 2*ffn/tp, Megatron's fc1); same FLOPs as two GEMMs and
// reads the input once.
void add_ffn(const Ctx& c, std::vector<Operator>& ops, const std::string& prefix, Module module, i64 ffn_local,
             double rows, i64 batch, i64 held) {
  const bool gated = c.m.mlp == MlpKind::Gated;
  add_linear(c, ops,
             Linear{.name = prefix + (gated ? "gate_up_proj" : "up_proj"),
                    .module = module,
                    .n = (gated ? 2 : 1) * ffn_local,
                    .k = c.m.hidden,
                    .rows = rows,
                    .batch = batch,
                    .held = held,
                    .bias = c.m.mlp_bias,
                    .role = gated ? OpRole::GateUpProj : OpRole::Other});
  if (gated && c.p.glue.reference_projections) ops.back().launches = mlp_input_projections(c.m);
  ops.push_back(activation_op(c, prefix + "act", module, rows, ffn_local));
  add_linear(c, ops,
             Linear{.name = prefix + "down_proj",
                    .module = module,
                    .n = c.m.hidden,
                    .k = ffn_local,
                    .rows = rows,
                    .batch = batch,
                    .held = held,
                    .bias = c.m.mlp_bias});
}

}  // namespace

void add_mlp(const Ctx& c, std::vector<Operator>& ops) {
  if (c.m.ffn_hidden == 0) return;  // a dense layer without MLP (only possible in hand-made specs)
  // Falcon-7B's MLP reads the attention block's normed input (one input_layernorm per layer).
  if (!c.m.shared_block_norm) ops.push_back(norm_op(c, "mlp.norm", c.Tn));
  add_sp_gather(c, ops, "mlp", Module::Mlp);
  add_input_casts(c, ops, "mlp", Module::Mlp, dbl(c.T), mlp_input_projections(c.m));
  add_ffn(c, ops, "mlp.", Module::Mlp, c.m.ffn_hidden / c.tp, dbl(c.T), 1, 1);
  if (c.m.sandwich_norms) ops.push_back(norm_op(c, "mlp.post_norm", c.Tn));  // Gemma's post_feedforward_layernorm
  add_block_tail(c, ops, "mlp", Module::Mlp);
}

// MoE block. Balanced routing: every expert that gets tokens gets T*top_k/E of them (the
// load-balancing loss aims at it), and min(E, T*top_k) experts receive tokens, so decode reads only
// the experts it uses. Experts are TP-sharded like the dense MLP; the dispatch/combine all-to-alls
// are always listed and only cost anything when the simulator applies expert parallelism.
void add_moe(const Ctx& c, std::vector<Operator>& ops) {
  const MoeSpec& e = c.m.moe;
  const double h = dbl(c.m.hidden), T = dbl(c.T);
  const double routed = T * dbl(e.experts_per_token);  // (token, expert) assignments
  const i64 active = std::min(e.num_experts, c.T * e.experts_per_token);
  ops.push_back(norm_op(c, "moe.norm", c.Tn));
  add_sp_gather(c, ops, "moe", Module::Moe);
  add_linear(c, ops,
             Linear{.name = "moe.router",
                    .module = Module::Moe,
                    .n = e.num_experts,
                    .k = c.m.hidden,
                    .rows = T,
                    .bias = e.router_bias,
                    .quantizable = false,
                    .role = OpRole::Router});
  // Softmax + top-k in fp32: read the logits, write the probabilities and the chosen (index, weight) pairs.
  const double logits = T * dbl(e.num_experts);
  ops.push_back(pointwise("moe.topk", OpKind::Elementwise, Module::Moe, kSoftmaxFlops * logits,
                          logits * (c.a + kFp32) + routed * (kIndexBytes + kFp32), 4 * logits,
                          logits * (kFp32 + c.a) * 2));
  // Permute: copy each token once per chosen expert into expert order; the inverse gathers back.
  const double perm = (T * h + routed * h) * c.a;
  ops.push_back(pointwise("moe.permute", OpKind::Elementwise, Module::Moe, 0, perm, 0, perm));
  const double a2a = routed * h * c.a;
  ops.push_back(comm("moe.dispatch", OpKind::MoeComm, Module::Moe, a2a, Collective::AllToAll, Collective::AllToAll));
  // The routed experts' operators (their projections, activation and dequant kernels): EP shards them.
  const std::size_t first_expert_op = ops.size();
  add_ffn(c, ops, "moe.experts_", Module::Moe, e.expert_ffn / c.etp, routed, active, e.num_experts);
  for (std::size_t i = first_expert_op; i < ops.size(); ++i) ops[i].routed_expert = true;
  ops.push_back(comm("moe.combine", OpKind::MoeComm, Module::Moe, a2a, Collective::AllToAll, Collective::AllToAll));
  // Unpermute: weighted sum of each token's top-k expert outputs (multiply + add per element).
  ops.push_back(pointwise("moe.unpermute", OpKind::Elementwise, Module::Moe, 2 * routed * h, perm + routed * kFp32,
                          2 * 2 * routed * h, 2 * perm));
  if (e.shared_expert_ffn > 0) {
    add_ffn(c, ops, "moe.shared_", Module::Moe, e.shared_expert_ffn / c.tp, T, 1, 1);
    if (e.shared_expert_gate)
      add_linear(c, ops,
                 Linear{.name = "moe.shared_gate",
                        .module = Module::Moe,
                        .n = 1,
                        .k = c.m.hidden,
                        .rows = T,
                        .quantizable = false,
                        .role = OpRole::SharedGate});
    // Add the shared expert's output (times sigmoid(gate) when gated) to the routed output.
    const double elems = T * h;
    const double flops = (e.shared_expert_gate ? 2.0 : 1.0) * elems;
    ops.push_back(pointwise("moe.shared_add", OpKind::Elementwise, Module::Moe, flops, 3 * elems * c.a, 2 * flops,
                            4 * elems * c.a));
  }
  add_block_tail(c, ops, "moe", Module::Moe);
}

}  // namespace llmsim::model::inventory
