// The Mamba-2 block (model::LinearAttentionSpec, LinearMixer::Mamba2): norm, the input projection, the causal
// convolution, the step sizes, the selective scan, the gated norm, the output projection and the block tail.
//
// The layer as transformers' BambaMixer (Granite-4.0-H's mamba layers) and vLLM's MambaMixer2 run it, sharded over
// tensor parallelism by heads: in_proj column-parallel (B and C of groups that do not split evenly replicated on
// every rank), the convolution, the scan and the gated norm per head on each rank, out_proj row-parallel with one
// all-reduce.
#include "llmsim/model/operators/op_builders.h"

namespace llmsim::model::inventory {

void add_mamba2(const Ctx& c, std::vector<Operator>& ops) {
  const ModelSpec& m = c.m;
  const LinearAttentionSpec& g = m.linear_attn;
  const i64 inner = g.inner_dim() / c.tp, heads = g.ssm_heads / c.tp;
  const i64 groups = ssm_groups_per_rank(m, c.tp);
  const i64 conv = conv_channels_per_rank(m, c.tp);
  const double T = dbl(c.T);
  ops.push_back(norm_op(c, "attn.norm", c.Tn));
  add_sp_gather(c, ops, "attn", Module::Attention);
  add_input_casts(c, ops, "attn", Module::Attention, T, 1);
  // z and x per head, B and C per group, dt per head.
  add_linear(c, ops,
             Linear{.name = "attn.in_proj",
                    .module = Module::Attention,
                    .n = 2 * inner + 2 * groups * g.ssm_state + heads,
                    .k = m.hidden,
                    .rows = T,
                    .bias = g.proj_bias,
                    .role = OpRole::QkvProj});
  // The depthwise causal convolution with its SiLU over x, B and C.
  ops.push_back(causal_conv_op(c, conv, g.conv_kernel, g.conv_bias));
  // dt = softplus(dt + dt_bias), and the decay from A_log (inside the scan's first kernel in mamba_ssm): reads dt,
  // writes it in fp32. The skip term D x is applied by the scan.
  const double dt_elems = T * dbl(heads);
  Operator dt = pointwise("attn.dt_softplus", OpKind::Elementwise, Module::Attention, 6.0 * dt_elems,
                          dt_elems * c.a + dt_elems * kFp32, 6.0 * dt_elems, 2 * dt_elems * kFp32 + dt_elems * c.a);
  dt.weight_params = 3 * heads;  // dt_bias, A_log and D
  dt.bwd_weight_flops = 2.0 * dt_elems;
  ops.push_back(dt);
  ops.push_back(recurrence_op(c, "attn.ssd_scan"));
  // RMSNorm over the inner width times silu(z) (RMSNormGated, per group): reads y and z, writes the result.
  const double out_elems = T * dbl(inner);
  Operator gated_norm =
      pointwise("attn.gated_norm", OpKind::Norm, Module::Attention, (kRmsNormFlops + 4) * out_elems,
                3 * out_elems * c.a + T * kFp32, 2 * (kRmsNormFlops + 4) * out_elems, 5 * out_elems * c.a + T * kFp32);
  gated_norm.weight_params = inner;
  gated_norm.bwd_weight_flops = 2.0 * out_elems;
  ops.push_back(gated_norm);
  add_linear(c, ops,
             Linear{.name = "attn.out_proj",
                    .module = Module::Attention,
                    .n = m.hidden,
                    .k = inner,
                    .rows = T,
                    .bias = g.proj_bias,
                    .role = OpRole::OutProj});
  add_block_tail(c, ops, "attn", Module::Attention);
}

}  // namespace llmsim::model::inventory
