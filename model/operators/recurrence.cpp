// The recurrences of the linear-attention mixers (model::LinearAttentionSpec): their work per token in the chunked
// and the recurrent form, and the operator that runs the chunked form in a layer's inventory.
#include <algorithm>

#include "llmsim/model/operators/op_builders.h"

namespace llmsim::model {

RecurrenceWork recurrence_work(const ModelSpec& m, std::int64_t tp) {
  const LinearAttentionSpec& g = m.linear_attn;
  const double t = static_cast<double>(std::max<std::int64_t>(1, tp));
  RecurrenceWork w;
  w.chunk = g.chunk;
  const double C = static_cast<double>(g.chunk);
  if (g.kind == LinearMixer::GatedDeltaNet) {
    const double vh = static_cast<double>(g.value_heads) / t;
    const double dk = static_cast<double>(g.key_head_dim), dv = static_cast<double>(g.value_head_dim);
    // Per chunk of C tokens and value head (WY form of the chunked delta rule; Yang et al. 2024, "Parallelizing
    // Linear Transformers with the Delta Rule over Sequence Length", Sec. 3, gated in Yang, Kautz and
    // Hatamizadeh 2025, Sec. 3.3): K K^T (2 C^2 dk), the WY matrix's triangular inverse (C^3 / 3 multiply-adds),
    // W = T beta K and U = T beta V (2 C^2 dk + 2 C^2 dv), U - W S (2 C dk dv), the outputs Q S and the masked
    // (Q K^T) U (2 C dk dv + 2 C^2 dk + 2 C^2 dv) and the state update decay S + K^T U (2 C dk dv); per token,
    // divided by C.
    w.chunk_flops_per_token = vh * (6.0 * C * dk + 4.0 * C * dv + 6.0 * dk * dv + 2.0 / 3.0 * C * C);
    // One token's recurrent step (fused_recurrent_gated_delta_rule): decay the state (dk dv), S^T k (2 dk dv), the
    // rank-one update k (beta (v - S^T k))^T (2 dk dv) and the output S^T q (2 dk dv).
    w.recurrent_flops_per_token = vh * 7.0 * dk * dv;
    w.state_elems = vh * dk * dv;
    // q and k (key heads), v and the output (value heads); beta, the decay and the WY matrix's C values.
    w.io_elems_per_token = (2.0 * static_cast<double>(g.key_dim()) + 2.0 * static_cast<double>(g.value_dim())) / t;
    w.fp32_per_token = vh * (2.0 + C);
  } else if (g.kind == LinearMixer::Mamba2) {
    const double h = static_cast<double>(g.ssm_heads) / t, groups = static_cast<double>(ssm_groups_per_rank(m, tp));
    const double P = static_cast<double>(g.ssm_head_dim), N = static_cast<double>(g.ssm_state);
    // The SSD algorithm's four steps per chunk of C tokens (Dao and Gu 2024, "Transformers are SSMs", Sec. 6): the
    // intra-chunk outputs, C B^T per group (2 C N per token) times X per head (2 C P), the chunk states B^T X
    // (2 N P per head), and the outputs from the passed states C h (2 N P per head); the state passing between
    // chunks is a few operations per state element per chunk.
    w.chunk_flops_per_token = h * (2.0 * C * P + 4.0 * N * P) + groups * 2.0 * C * N;
    // One token's step (selective_state_update): h = exp(dt A) h + dt x B^T (3 N P per head) and y = C h (2 N P).
    w.recurrent_flops_per_token = h * 5.0 * N * P;
    w.state_elems = h * P * N;
    // x and the output per head, B and C per group; dt and the cumulative decay in fp32 per head.
    w.io_elems_per_token = 2.0 * static_cast<double>(g.inner_dim()) / t + 2.0 * groups * N;
    w.fp32_per_token = 2.0 * h;
  }
  return w;
}

namespace inventory {

Operator causal_conv_op(const Ctx& c, i64 channels, i64 kernel, bool bias) {
  // Reads the projections, writes the convolved ones; backward reads the input and the output gradient, writes the
  // input gradient and reduces the taps' (and biases') gradients.
  const double elems = dbl(c.T) * dbl(channels), taps = dbl(kernel);
  Operator op = pointwise("attn.conv1d", OpKind::Elementwise, Module::Attention, (2.0 * taps + 4.0) * elems,
                          2 * elems * c.a, 2 * (2.0 * taps + 4.0) * elems, 3 * elems * c.a);
  op.weight_params = channels * kernel + (bias ? channels : 0);
  op.bwd_weight_flops = 2.0 * taps * elems;
  return op;
}

// The chunked recurrence over the rank's heads for T tokens of b sequences (training and prefill; FLA's
// chunk_gated_delta_rule, mamba_ssm's mamba_chunk_scan_combined): reads and writes its per-token activations and
// fp32 values once, and writes and reads every chunk's fp32 states between its kernels. Backward recomputes the
// states and runs the transposed products: 2.5x the forward's FLOPs, as FlashAttention-2's backward (an
// assumption: the chunk kernels' backward was not counted line by line), twice its traffic.
Operator recurrence_op(const Ctx& c, std::string name) {
  const RecurrenceWork w = recurrence_work(c.m, c.tp);
  const double T = dbl(c.T);
  const double chunks = dbl(c.b) * dbl(ceil_div(c.q, std::max<i64>(1, w.chunk)));
  Operator op = make_op(std::move(name), OpKind::LinearAttn, Module::Attention);
  op.role = OpRole::AttentionCore;
  op.fwd_flops = T * w.chunk_flops_per_token;
  op.fwd_bytes = T * w.io_elems_per_token * c.a + T * w.fp32_per_token * kFp32 + 2 * chunks * w.state_elems * kFp32;
  op.bwd_flops = 2.5 * op.fwd_flops;
  op.bwd_bytes = 2 * op.fwd_bytes;
  return op;
}

}  // namespace inventory
}  // namespace llmsim::model
