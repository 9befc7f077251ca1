#include "llmsim/model/param_count.h"

#include "llmsim/core/error.h"

namespace llmsim::model {

namespace {

// Counts are sums of products of a config's dimensions; each dimension alone is bounded where it is read
// (hf_config.cpp), but products of three (experts x expert width x hidden) can exceed 64 bits. Checked:
// a count that cannot be represented is refused (check_param_counts names the file) instead of wrapping.
[[noreturn]] void overflow() {
  throw Error(ErrorKind::Input, {}, "the model's parameter count overflows a 64-bit integer: no model is that large");
}
std::int64_t mul(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) overflow();
  return r;
}
std::int64_t add(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) overflow();
  return r;
}
template <typename... T>
std::int64_t add(std::int64_t a, std::int64_t b, T... rest) {
  return add(add(a, b), rest...);
}

// A linear projection in -> out, with an optional bias vector of length out.
std::int64_t linear(std::int64_t in, std::int64_t out, bool bias) { return add(mul(in, out), bias ? out : 0); }

// One MLP of intermediate width `ffn`: Gated = gate, up (hidden -> ffn) and down (ffn -> hidden);
// Plain = up and down. mlp_bias puts a bias on each of them.
std::int64_t mlp_params(const ModelSpec& m, std::int64_t ffn) {
  const std::int64_t in_projections = m.mlp == MlpKind::Gated ? 2 : 1;
  return add(mul(in_projections, linear(m.hidden, ffn, m.mlp_bias)), linear(ffn, m.hidden, m.mlp_bias));
}

// One norm over the hidden vector: RMSNorm has a scale, LayerNorm a scale and a bias.
std::int64_t norm_params(const ModelSpec& m) { return m.norm == NormKind::LayerNorm ? mul(2, m.hidden) : m.hidden; }

// DeepSeek Sparse Attention's indexer (DeepSeek-V3.2-Exp inference/model.py Indexer, no biases): wq_b from the
// query latent to every index head, wk from the hidden state to one key, weights_proj to one weight per head; its
// k_norm (a LayerNorm: scale and bias) is counted with the norms.
std::int64_t indexer_linear_params(const ModelSpec& m) {
  const SparseIndexerSpec& x = m.dsa;
  if (!x.enabled()) return 0;
  return add(linear(m.mla.q_lora_rank, mul(x.heads, x.head_dim), false), linear(m.hidden, x.head_dim, false),
             linear(m.hidden, x.heads, false));
}

// Multi-head latent attention (DeepseekV3Attention): q_a_proj + q_b_proj (or one q_proj without
// q_lora_rank), kv_a_proj_with_mqa to the latent and the shared RoPE key, kv_b_proj up to every head's
// non-RoPE key and value, o_proj from the heads' values.
std::int64_t mla_attention_params(const ModelSpec& m) {
  const MlaSpec& a = m.mla;
  const std::int64_t q = a.q_lora_rank > 0
                             ? add(linear(m.hidden, a.q_lora_rank, m.qkv_bias), linear(a.q_lora_rank, m.q_dim(), false))
                             : linear(m.hidden, m.q_dim(), false);
  return add(q, linear(m.hidden, add(a.kv_lora_rank, a.qk_rope_head_dim), m.qkv_bias),
             linear(a.kv_lora_rank, mul(m.num_heads, add(a.qk_nope_head_dim, a.v_head_dim)), false),
             linear(m.o_dim(), m.hidden, m.out_bias), indexer_linear_params(m));
}

std::int64_t attention_params(const ModelSpec& m) {
  if (m.mla.enabled()) return mla_attention_params(m);
  return add(m.attention_sinks ? m.num_heads : 0,  // gpt-oss's sinks: one logit per head
             linear(m.hidden, mul(m.attn_output_gate ? 2 : 1, m.q_dim()), m.qkv_bias),  // q_proj (+ output gate)
             mul(2, linear(m.hidden, m.kv_dim(), m.qkv_bias)),                          // k_proj, v_proj
             linear(m.q_dim(), m.hidden, m.out_bias));                                  // o_proj
}

// A linear-attention layer's projections. Gated DeltaNet (Qwen3NextGatedDeltaNet, no biases): in_proj_qkvz
// (hidden -> 2 key_dim + 2 value_dim: q, k, v and the output gate z), in_proj_ba (hidden -> 2 value_heads) and
// out_proj (value_dim -> hidden); Qwen3.5 splits the input projection into in_proj_qkv, in_proj_z, in_proj_b and
// in_proj_a of the same sizes. Mamba-2 (BambaMixer): in_proj (hidden -> 2 inner + 2 groups x state + heads: z,
// x, B, C and dt) and out_proj (inner -> hidden), with biases under mamba_proj_bias.
std::int64_t linear_mixer_linear_params(const ModelSpec& m) {
  const LinearAttentionSpec& g = m.linear_attn;
  if (g.kind == LinearMixer::Mamba2)
    return add(
        linear(m.hidden, add(mul(2, g.inner_dim()), mul(2, mul(g.ssm_groups, g.ssm_state)), g.ssm_heads), g.proj_bias),
        linear(g.inner_dim(), m.hidden, g.proj_bias));
  return add(linear(m.hidden, add(mul(2, g.key_dim()), mul(2, g.value_dim())), false),
             linear(m.hidden, mul(2, g.value_heads), false), linear(g.value_dim(), m.hidden, false));
}
// ... and the rest of it: the depthwise conv1d (conv_dim x conv_kernel; Mamba-2's with a bias per channel under
// mamba_conv_bias), the per-head parameters (Gated DeltaNet: dt_bias and A_log; Mamba-2: dt_bias, A_log and D)
// and the gated RMSNorm's scale (Gated DeltaNet: one head_v_dim scale shared by the heads; Mamba-2: the inner width).
std::int64_t linear_mixer_params(const ModelSpec& m) {
  const LinearAttentionSpec& g = m.linear_attn;
  const std::int64_t conv = add(mul(g.conv_dim(), g.conv_kernel), g.conv_bias ? g.conv_dim() : 0);
  if (g.kind == LinearMixer::Mamba2)
    return add(linear_mixer_linear_params(m), conv, mul(3, g.ssm_heads), g.inner_dim());
  return add(linear_mixer_linear_params(m), conv, mul(2, g.value_heads), g.value_head_dim);
}

// An MoE layer: routed experts, the router (hidden -> num_experts, no bias in mixtral or qwen2_moe),
// and in qwen2_moe a shared expert with its hidden -> 1 sigmoid gate. Sets total and per-token figures.
void moe_params(const ModelSpec& m, std::int64_t& total, std::int64_t& active) {
  const std::int64_t expert = mlp_params(m, m.moe.expert_ffn);
  std::int64_t always_on = linear(m.hidden, m.moe.num_experts, m.moe.router_bias);
  if (m.moe.shared_expert_ffn > 0) always_on = add(always_on, mlp_params(m, m.moe.shared_expert_ffn));
  if (m.moe.shared_expert_gate) always_on = add(always_on, linear(m.hidden, 1, false));
  total = add(mul(m.moe.num_experts, expert), always_on);
  active = add(mul(m.moe.experts_per_token, expert), always_on);
}

}  // namespace

std::int64_t moe_replicated_params(const ModelSpec& m) {
  if (!m.moe.enabled()) return 0;
  std::int64_t n = linear(m.hidden, m.moe.num_experts, m.moe.router_bias);
  if (m.moe.shared_expert_gate) n = add(n, linear(m.hidden, 1, false));
  return n;
}

std::int64_t qk_norm_params(const ModelSpec& m) {
  if (!m.qk_norm) return 0;
  return m.qk_norm_full_width ? add(m.q_dim(), m.kv_dim()) : mul(2, m.head_dim);
}

LayerParams count_layer_params(const ModelSpec& m, std::int64_t layer_index) {
  LayerParams p;
  const bool linear_attention = m.is_linear_attention_layer(layer_index);
  p.attention = linear_attention ? linear_mixer_params(m) : attention_params(m);
  if (m.is_moe_layer(layer_index)) {
    moe_params(m, p.mlp, p.mlp_active);
  } else {
    p.mlp = p.mlp_active = mlp_params(m, m.ffn_hidden);
  }
  // Two norms per layer (before attention and before the MLP, or after them in OLMo-2: the same
  // weights); a parallel residual keeps both (gpt_neox, Falcon-40B's ln_attn and ln_mlp) unless one
  // feeds both blocks (Falcon-7B's input_layernorm).
  // A linear-attention layer has no q/k norms (its own norm is counted in its attention).
  p.norms = add(mul((m.shared_block_norm ? 1 : 2) + (m.sandwich_norms ? 2 : 0), norm_params(m)),
                linear_attention ? 0 : qk_norm_params(m));
  // MLA's q_a_layernorm and kv_a_layernorm over the latents.
  if (m.mla.enabled()) p.norms = add(p.norms, m.mla.q_lora_rank, m.mla.kv_lora_rank);
  if (m.dsa.enabled() && !linear_attention) p.norms = add(p.norms, mul(2, m.dsa.head_dim));  // the indexer's k_norm
  p.linear = add(linear_attention ? linear_mixer_linear_params(m) : p.attention, p.mlp);
  (void)add(p.attention, p.mlp, p.norms);  // total() and active() are sums of these: refused here if they overflow
  return p;
}

ParamCounts count_params(const ModelSpec& m) {
  ParamCounts c;
  c.embedding = mul(m.vocab, m.hidden);
  c.position_embedding = m.position == PositionKind::Learned ? mul(m.max_positions, m.hidden) : 0;
  c.lm_head = m.tied_embeddings ? 0 : mul(m.vocab, m.hidden);  // no family here has an LM-head bias
  c.final_norm = norm_params(m);
  // Layers differ in being dense or MoE (decoder_sparse_step) and in their token mixer (Gated DeltaNet or
  // attention); summing layer by layer follows those patterns exactly and costs nothing at a few hundred layers.
  for (std::int64_t i = 0; i < m.num_layers; ++i) {
    const LayerParams l = count_layer_params(m, i);
    c.layers = add(c.layers, l.total());
    c.layers_active = add(c.layers_active, l.active());
    c.layers_linear = add(c.layers_linear, l.linear);
  }
  const std::int64_t outside = add(c.embedding, c.position_embedding, c.lm_head, c.final_norm);
  c.total = add(outside, c.layers);
  c.active = add(outside, c.layers_active);
  // DeepSeek-V3's MTP module (DeepseekV3 MTP in the paper's Sec. 2.2): enorm and hnorm, eh_proj
  // (2 hidden -> hidden), one decoder layer (MoE when the last layer is) and its head's norm; embedding
  // and head are the main model's.
  if (m.mtp_layers > 0) {
    const LayerParams last = count_layer_params(m, m.num_layers - 1);
    c.mtp = mul(m.mtp_layers, add(mul(3, norm_params(m)), linear(mul(2, m.hidden), m.hidden, false), last.total()));
  }
  // The sums the simulators form from these (total + mtp, the whole checkpoint) stay representable too.
  (void)add(c.total, c.mtp);
  return c;
}

void check_param_counts(const ModelSpec& m, const Location& where) {
  try {
    (void)count_params(m);
  } catch (const Error& e) {
    throw Error(ErrorKind::Input, where, e.message());
  }
}

}  // namespace llmsim::model
