// The Gated DeltaNet block (model::LinearAttentionSpec): norm, the input projections, the causal convolution,
// the gating, the gated delta rule, the gated norm, the output projection and the block tail.
//
// The layer as transformers' Qwen3NextGatedDeltaNet and vLLM's qwen3_next.py run it, sharded over tensor
// parallelism by heads: in_proj_qkvz and in_proj_ba column-parallel, the convolution, the gating and the rule per
// head on each rank, out_proj row-parallel with one all-reduce (vLLM: MergedColumnParallelLinear /
// ColumnParallelLinear in, RowParallelLinear out).
#include <algorithm>

#include "llmsim/model/operators/op_builders.h"

namespace llmsim::model::inventory {

void add_gated_deltanet(const Ctx& c, std::vector<Operator>& ops) {
  const ModelSpec& m = c.m;
  const LinearAttentionSpec& g = m.linear_attn;
  const i64 kd = g.key_dim() / c.tp, vd = g.value_dim() / c.tp, vh = g.value_heads / c.tp;
  const i64 conv = g.conv_dim() / c.tp;
  const double T = dbl(c.T);
  ops.push_back(norm_op(c, "attn.norm", c.Tn));
  add_sp_gather(c, ops, "attn", Module::Attention);
  add_input_casts(c, ops, "attn", Module::Attention, T, 2);
  // q, k, v and the output gate z; the write strength b and the decay input a per value head.
  add_linear(c, ops,
             Linear{.name = "attn.in_proj_qkvz",
                    .module = Module::Attention,
                    .n = 2 * kd + 2 * vd,
                    .k = m.hidden,
                    .rows = T,
                    .role = OpRole::QkvProj});
  add_linear(c, ops,
             Linear{.name = "attn.in_proj_ba", .module = Module::Attention, .n = 2 * vh, .k = m.hidden, .rows = T});
  // The depthwise causal convolution with its SiLU over q, k and v (Qwen3-Next's has no bias: conv_bias false).
  ops.push_back(causal_conv_op(c, conv, g.conv_kernel, g.conv_bias));
  // beta = sigmoid(b), g = -exp(A_log) softplus(a + dt_bias) (vLLM's fused_gdn_gating): reads b and a, writes
  // beta and g in fp32.
  const double gate_elems = T * dbl(vh);
  Operator gating = pointwise("attn.gdn_gating", OpKind::Elementwise, Module::Attention, 8.0 * gate_elems,
                              2 * gate_elems * c.a + 2 * gate_elems * kFp32, 8.0 * gate_elems,
                              4 * gate_elems * kFp32 + 2 * gate_elems * c.a);
  gating.weight_params = 2 * vh;  // A_log and dt_bias
  gating.bwd_weight_flops = 2.0 * gate_elems;
  ops.push_back(gating);
  ops.push_back(recurrence_op(c, "attn.gated_delta_rule"));
  // RMSNorm over each head's output times silu(z) (FusedRMSNormGated): reads the output and z, writes the result.
  const double out_elems = T * dbl(vd);
  Operator gated_norm = pointwise("attn.gated_norm", OpKind::Norm, Module::Attention, (kRmsNormFlops + 4) * out_elems,
                                  3 * out_elems * c.a + T * dbl(vh) * kFp32, 2 * (kRmsNormFlops + 4) * out_elems,
                                  5 * out_elems * c.a + T * dbl(vh) * kFp32);
  gated_norm.weight_params = g.value_head_dim;  // one head_v_dim scale shared by the heads
  gated_norm.bwd_weight_flops = 2.0 * out_elems;
  ops.push_back(gated_norm);
  add_linear(c, ops,
             Linear{.name = "attn.out_proj",
                    .module = Module::Attention,
                    .n = m.hidden,
                    .k = vd,
                    .rows = T,
                    .role = OpRole::OutProj});
  add_block_tail(c, ops, "attn", Module::Attention);
}

}  // namespace llmsim::model::inventory
