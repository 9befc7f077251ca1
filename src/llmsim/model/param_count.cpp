#include "llmsim/model/param_count.h"

namespace llmsim::model {

namespace {

// A linear projection in -> out, with an optional bias vector of length out.
std::int64_t linear(std::int64_t in, std::int64_t out, bool bias) { return in * out + (bias ? out : 0); }

// One MLP of intermediate width `ffn`: Gated = gate, up (hidden -> ffn) and down (ffn -> hidden);
// Plain = up and down. mlp_bias puts a bias on each of them.
std::int64_t mlp_params(const ModelSpec& m, std::int64_t ffn) {
  const std::int64_t in_projections = m.mlp == MlpKind::Gated ? 2 : 1;
  return in_projections * linear(m.hidden, ffn, m.mlp_bias) + linear(ffn, m.hidden, m.mlp_bias);
}

// One norm over the hidden vector: RMSNorm has a scale, LayerNorm a scale and a bias.
std::int64_t norm_params(const ModelSpec& m) { return m.norm == NormKind::LayerNorm ? 2 * m.hidden : m.hidden; }

// Multi-head latent attention (DeepseekV3Attention): q_a_proj + q_b_proj (or one q_proj without
// q_lora_rank), kv_a_proj_with_mqa to the latent and the shared RoPE key, kv_b_proj up to every head's
// non-RoPE key and value, o_proj from the heads' values.
std::int64_t mla_attention_params(const ModelSpec& m) {
  const MlaSpec& a = m.mla;
  const std::int64_t q = a.q_lora_rank > 0
                             ? linear(m.hidden, a.q_lora_rank, m.qkv_bias) + linear(a.q_lora_rank, m.q_dim(), false)
                             : linear(m.hidden, m.q_dim(), false);
  return q + linear(m.hidden, a.kv_lora_rank + a.qk_rope_head_dim, m.qkv_bias) +
         linear(a.kv_lora_rank, m.num_heads * (a.qk_nope_head_dim + a.v_head_dim), false) +
         linear(m.o_dim(), m.hidden, m.out_bias);
}

std::int64_t attention_params(const ModelSpec& m) {
  if (m.mla.enabled()) return mla_attention_params(m);
  return (m.attention_sinks ? m.num_heads : 0)           // gpt-oss's sinks: one logit per head
         + linear(m.hidden, m.q_dim(), m.qkv_bias)       // q_proj
         + 2 * linear(m.hidden, m.kv_dim(), m.qkv_bias)  // k_proj, v_proj
         + linear(m.q_dim(), m.hidden, m.out_bias);      // o_proj
}

// An MoE layer: routed experts, the router (hidden -> num_experts, no bias in mixtral or qwen2_moe),
// and in qwen2_moe a shared expert with its hidden -> 1 sigmoid gate. Sets total and per-token figures.
void moe_params(const ModelSpec& m, std::int64_t& total, std::int64_t& active) {
  const std::int64_t expert = mlp_params(m, m.moe.expert_ffn);
  std::int64_t always_on = linear(m.hidden, m.moe.num_experts, m.moe.router_bias);
  if (m.moe.shared_expert_ffn > 0) always_on += mlp_params(m, m.moe.shared_expert_ffn);
  if (m.moe.shared_expert_gate) always_on += linear(m.hidden, 1, false);
  total = m.moe.num_experts * expert + always_on;
  active = m.moe.experts_per_token * expert + always_on;
}

}  // namespace

std::int64_t qk_norm_params(const ModelSpec& m) {
  if (!m.qk_norm) return 0;
  return m.qk_norm_full_width ? m.q_dim() + m.kv_dim() : 2 * m.head_dim;
}

LayerParams count_layer_params(const ModelSpec& m, std::int64_t layer_index) {
  LayerParams p;
  p.attention = attention_params(m);
  if (m.is_moe_layer(layer_index)) {
    moe_params(m, p.mlp, p.mlp_active);
  } else {
    p.mlp = p.mlp_active = mlp_params(m, m.ffn_hidden);
  }
  // Two norms per layer (before attention and before the MLP, or after them in OLMo-2: the same
  // weights); a parallel residual keeps both (gpt_neox, Falcon-40B's ln_attn and ln_mlp) unless one
  // feeds both blocks (Falcon-7B's input_layernorm).
  p.norms = ((m.shared_block_norm ? 1 : 2) + (m.sandwich_norms ? 2 : 0)) * norm_params(m) + qk_norm_params(m);
  // MLA's q_a_layernorm and kv_a_layernorm over the latents.
  if (m.mla.enabled()) p.norms += m.mla.q_lora_rank + m.mla.kv_lora_rank;
  p.linear = p.attention + p.mlp;
  return p;
}

ParamCounts count_params(const ModelSpec& m) {
  ParamCounts c;
  c.embedding = m.vocab * m.hidden;
  c.position_embedding = m.position == PositionKind::Learned ? m.max_positions * m.hidden : 0;
  c.lm_head = m.tied_embeddings ? 0 : m.vocab * m.hidden;  // no family here has an LM-head bias
  c.final_norm = norm_params(m);
  // Layers differ only in being dense or MoE (decoder_sparse_step); summing layer by layer follows
  // that pattern exactly and costs nothing at a few hundred layers.
  for (std::int64_t i = 0; i < m.num_layers; ++i) {
    const LayerParams l = count_layer_params(m, i);
    c.layers += l.total();
    c.layers_active += l.active();
    c.layers_linear += l.linear;
  }
  const std::int64_t outside = c.embedding + c.position_embedding + c.lm_head + c.final_norm;
  c.total = outside + c.layers;
  c.active = outside + c.layers_active;
  // DeepSeek-V3's MTP module (DeepseekV3 MTP in the paper's Sec. 2.2): enorm and hnorm, eh_proj
  // (2 hidden -> hidden), one decoder layer (MoE when the last layer is) and its head's norm; embedding
  // and head are the main model's.
  if (m.mtp_layers > 0) {
    const LayerParams last = count_layer_params(m, m.num_layers - 1);
    c.mtp = m.mtp_layers * (3 * norm_params(m) + linear(2 * m.hidden, m.hidden, false) + last.total());
  }
  return c;
}

}  // namespace llmsim::model
