// The attention block: norm, QKV projection, RoPE, the fused (FlashAttention) or unfused core, the
// output projection and the block tail.
#include <algorithm>
#include <cmath>

#include "llmsim/model/operators/op_builders.h"

namespace llmsim::model::inventory {

Operator latent_norm_op(const Ctx& c, std::string name, i64 width);  // below

namespace {

// (query, key) pairs one head of one sequence evaluates in a fused kernel that skips masked tiles.
// Causal: the keys visible to the queries grow linearly from kv-q to kv (continuous approximation),
// capped by a sliding window. q == kv gives exactly q*kv/2; decode (q == 1) sees all kv keys.
double attended_pairs(i64 q, i64 kv, bool causal, i64 window) {
  if (!causal) return dbl(q) * dbl(kv);
  const double w = window > 0 ? dbl(window) : dbl(kv);
  if (q == 1) return std::min(dbl(kv), w);
  const double lo = dbl(kv - q), hi = dbl(kv);
  if (w >= hi) return (hi * hi - lo * lo) / 2;
  if (w <= lo) return dbl(q) * w;
  return (w * w - lo * lo) / 2 + (hi - w) * w;
}

// FlashAttention: q, k, v read once and o (+ fp32 logsumexp) written; no q x kv tensor in memory.
// Backward reads q, k, v, o, do (+ lse) and writes dq, dk, dv: twice the forward traffic.
Operator flash_op(const Ctx& c) {
  const i64 heads = c.m.num_heads / c.tp, kv_heads = kv_heads_per_rank(c.m, c.tp);
  const i64 window = c.window;
  // With a sliding window the kernel only loads the keys some query can see.
  const i64 kv_read = (window > 0 && c.p.causal) ? std::min(c.kv, window + c.q - 1) : c.kv;
  // Queries and keys score over head_dim, values and outputs are v_head_dim wide (they differ under MLA).
  const double qk = dbl(c.m.head_dim), v = dbl(c.m.v_head_dim());
  const double q_tokens = dbl(c.T) * dbl(heads), kv_tokens = dbl(c.b) * dbl(kv_read) * dbl(kv_heads);
  const double lse = dbl(c.T) * dbl(heads) * kFp32;
  Operator op = make_op("attn.flash", OpKind::FlashAttn, Module::Attention);
  op.role = OpRole::AttentionCore;
  if (c.m.dsa.enabled()) {
    // DeepSeek Sparse Attention: MLA in its absorbed (MQA) form over each query's top-k keys, gathered from the
    // latent cache: min(visible, topk) keys per query (the sliding-window count with the window at topk), each
    // head scoring over the latent and RoPE key and summing values in the latent; the context is read once.
    const double latent = dbl(c.m.mla.kv_lora_rank), rope = dbl(c.m.mla.qk_rope_head_dim);
    op.fwd_flops =
        2.0 * dbl(c.b) * dbl(heads) * (2 * latent + rope) * attended_pairs(c.q, c.kv, c.p.causal, c.m.dsa.topk);
    op.fwd_bytes = (q_tokens * (2 * latent + rope) + dbl(c.b) * dbl(c.kv) * (latent + rope)) * c.a + lse;
  } else {
    op.fwd_flops = 2.0 * dbl(c.b) * dbl(heads) * (qk + v) * attended_pairs(c.q, c.kv, c.p.causal, window);
    op.fwd_bytes = (q_tokens * (qk + v) + kv_tokens * (qk + v)) * c.a + lse;
  }
  op.bwd_flops = 2.5 * op.fwd_flops;
  op.bwd_bytes = 2 * op.fwd_bytes;
  return op;
}

// DeepSeek Sparse Attention's lightning indexer (SparseIndexerSpec; DeepSeek-V3.2-Exp inference/model.py
// Indexer.forward), whole on every TP rank: wq_b from the query latent, wk and its LayerNorm from the normed
// input, weights_proj; then one kernel scores every visible (query, key) pair over the index heads (fp8_index:
// ReLU(q.k) weighted per head and summed), writing an fp32 logit per pair that top-k reads back: a GEMM of the
// index heads' queries against the one shared key per token, over the visible pairs only. Training prices it at
// the run's precision (backward, for the indexer's own loss: twice the forward); inference at fp8 where the GPU
// has fp8 tensor cores, as the reference's fp8_index and vLLM's DeepGEMM kernel compute it.
void add_sparse_indexer(const Ctx& c, std::vector<Operator>& ops) {
  const ModelSpec& m = c.m;
  const SparseIndexerSpec& x = m.dsa;
  struct Projection {
    const char* name;
    i64 n, k;
  };
  for (const Projection& p :
       {Projection{"attn.indexer_q", x.heads * x.head_dim, m.mla.q_lora_rank},
        Projection{"attn.indexer_k", x.head_dim, m.hidden}, Projection{"attn.indexer_weights", x.heads, m.hidden}})
    add_linear(c, ops,
               Linear{.name = p.name,
                      .module = Module::Attention,
                      .n = p.n,
                      .k = p.k,
                      .rows = dbl(c.T),
                      .role = OpRole::QkvProj});
  Operator norm = latent_norm_op(c, "attn.indexer_k_norm", x.head_dim);
  norm.weight_params = 2 * x.head_dim;  // a LayerNorm: scale and bias
  ops.push_back(norm);
  const double pairs = dbl(c.b) * attended_pairs(c.q, c.kv, c.p.causal, 0);
  // An MQA-logits GEMM (DeepGEMM fp8_mqa_logits in vLLM): the tensor cores multiply every index head's query
  // (rows: queries x heads) with the shared keys over head_dim, and the epilogue sums the heads in registers, so
  // one fp32 logit per (query, key) leaves the kernel. Its short contraction is priced by the GEMM shape rule.
  Operator op = batched_gemm(c, "attn.indexer", c.b, c.q * x.heads, c.kv, x.head_dim);
  op.role = OpRole::AttentionCore;
  op.fwd_flops = 2.0 * dbl(x.heads) * dbl(x.head_dim) * pairs;
  // fp8 queries and their per-head weights, the keys' cache once, and the logits written and read by top-k.
  op.fwd_bytes = dbl(c.T) * dbl(x.heads) * (dbl(x.head_dim) + kFp32) +
                 dbl(c.b) * dbl(c.kv) * x.cache_bytes_per_token() + 2 * kFp32 * pairs;
  op.bwd_flops = 2 * op.fwd_flops;
  op.bwd_bytes = 2 * op.fwd_bytes;
  op.launches = 2;  // the scores, then top-k
  ops.push_back(op);
}

// The unfused chain (eager attention): real kernels compute and mask the full q x kv score matrix, so
// no causal halving. Softmax backward reads y and dy and writes dx.
void add_unfused_attention(const Ctx& c, std::vector<Operator>& ops) {
  const i64 heads = c.m.num_heads / c.tp;
  const i64 batch = c.b * heads;
  const double scores = dbl(batch) * dbl(c.q) * dbl(c.kv);
  ops.push_back(batched_gemm(c, "attn.scores", batch, c.q, c.kv, c.m.head_dim));
  ops.back().role = OpRole::AttentionCore;
  // Fused (Megatron's scaled masked softmax): read and write the scores once. HF eager chain: scale
  // (2a), mask add (2a), fp32 softmax (a + 4), cast back (4 + a); backward: cast (a + 4), fp32 softmax
  // backward (3 x 4), scale (2a).
  const bool chain = c.p.glue.eager_softmax_chain;
  ops.push_back(pointwise("attn.softmax", OpKind::Elementwise, Module::Attention, kSoftmaxFlops * scores,
                          scores * (chain ? 6 * c.a + 2 * kFp32 : 2 * c.a), 4 * scores,
                          scores * (chain ? 3 * c.a + 4 * kFp32 : 3 * c.a)));
  ops.back().role = OpRole::AttentionCore;
  if (has_dropout(c)) {
    ops.push_back(dropout_op(c, "attn.dropout", Module::Attention, scores));
    ops.back().role = OpRole::AttentionCore;
  }
  ops.push_back(batched_gemm(c, "attn.context", batch, c.q, c.m.v_head_dim(), c.kv));
  ops.back().role = OpRole::AttentionCore;
}

}  // namespace

// RMSNorm over a `width`-wide latent of every token (MLA's q_a_layernorm / kv_a_layernorm): reads and
// writes the latent, keeps an fp32 statistic per row; backward like the block norms.
Operator latent_norm_op(const Ctx& c, std::string name, i64 width) {
  const double elems = dbl(c.T) * dbl(width), stats = dbl(c.T) * kFp32, params = dbl(width);
  Operator op = pointwise(std::move(name), OpKind::Norm, Module::Attention, kRmsNormFlops * elems,
                          2 * elems * c.a + params * c.wdense + stats, 2 * kRmsNormFlops * elems,
                          3 * elems * c.a + 2 * params * c.wdense + stats);
  op.bwd_weight_flops = 2 * elems;
  op.weight_params = static_cast<i64>(params);
  return op;
}

// Multi-head latent attention's projections (DeepseekV3Attention; vLLM's and Megatron-Core's layout):
// q_a_proj and kv_a_proj_with_mqa read the normed input whole on every TP rank (replicated: their outputs
// are latents), their latent norms, then q_b_proj (or one q_proj) and kv_b_proj column-parallel over the
// heads. Training and prefill up-project the latent for every token (kv_b_proj on T rows); a decode step's
// absorbed form multiplies the same weights once per new token, so one inventory serves both.
void add_mla_projections(const Ctx& c, std::vector<Operator>& ops) {
  const ModelSpec& m = c.m;
  const MlaSpec& a = m.mla;
  const i64 heads = m.num_heads / c.tp;
  if (a.q_lora_rank > 0) {
    add_linear(c, ops,
               Linear{.name = "attn.q_a_proj",
                      .module = Module::Attention,
                      .n = a.q_lora_rank,
                      .k = m.hidden,
                      .rows = dbl(c.T),
                      .bias = m.qkv_bias,
                      .role = OpRole::QkvProj});
    ops.push_back(latent_norm_op(c, "attn.q_a_norm", a.q_lora_rank));
  }
  add_linear(c, ops,
             Linear{.name = a.q_lora_rank > 0 ? "attn.q_b_proj" : "attn.q_proj",
                    .module = Module::Attention,
                    .n = heads * m.head_dim,
                    .k = a.q_lora_rank > 0 ? a.q_lora_rank : m.hidden,
                    .rows = dbl(c.T),
                    .role = OpRole::QkvProj});
  add_linear(c, ops,
             Linear{.name = "attn.kv_a_proj",
                    .module = Module::Attention,
                    .n = a.kv_lora_rank + a.qk_rope_head_dim,
                    .k = m.hidden,
                    .rows = dbl(c.T),
                    .bias = m.qkv_bias,
                    .role = OpRole::QkvProj});
  ops.push_back(latent_norm_op(c, "attn.kv_a_norm", a.kv_lora_rank));
  add_linear(c, ops,
             Linear{.name = "attn.kv_b_proj",
                    .module = Module::Attention,
                    .n = heads * (a.qk_nope_head_dim + a.v_head_dim),
                    .k = a.kv_lora_rank,
                    .rows = dbl(c.T),
                    .role = OpRole::QkvProj});
}

void add_attention(const Ctx& c, std::vector<Operator>& ops) {
  const ModelSpec& m = c.m;
  ops.push_back(norm_op(c, "attn.norm", c.Tn));
  add_sp_gather(c, ops, "attn", Module::Attention);
  add_input_casts(c, ops, "attn", Module::Attention, dbl(c.T), attention_input_projections(m));
  if (m.mla.enabled()) {
    add_mla_projections(c, ops);
    if (m.dsa.enabled()) add_sparse_indexer(c, ops);
  } else
    add_linear(
        c, ops,
        Linear{.name = "attn.qkv_proj",
               .module = Module::Attention,
               // KV heads may be replicated; an output gate doubles the queries' columns (Qwen3-Next's q_proj).
               .n = (m.attn_output_gate ? 2 : 1) * m.q_dim() / c.tp + 2 * kv_heads_per_rank(m, c.tp) * m.head_dim,
               .k = m.hidden,
               .rows = dbl(c.T),
               .bias = m.qkv_bias,
               .role = OpRole::QkvProj});
  if (c.p.glue.reference_projections && !m.mla.enabled()) ops.back().launches = attention_input_projections(m);
  if (m.qk_norm) {
    // Qwen3's q_norm / k_norm: RMSNorm over head_dim of every query and key head of this rank. Forward
    // reads q, k and writes them normed (+ fp32 statistics per head); backward reads x, dy and the
    // statistics, writes dx and reduces the two head_dim scales, as the block norms do.
    const double rows = dbl(c.T) * dbl(m.num_heads / c.tp + kv_heads_per_rank(m, c.tp));
    const double elems = rows * dbl(m.head_dim);
    const double params = 2.0 * dbl(m.head_dim);
    const double stats = rows * kFp32;
    Operator qk = pointwise("attn.qk_norm", OpKind::Norm, Module::Attention, kRmsNormFlops * elems,
                            2 * elems * c.a + params * c.wdense + stats, 2 * kRmsNormFlops * elems,
                            3 * elems * c.a + 2 * params * c.wdense + stats);
    qk.bwd_weight_flops = 2 * elems;
    // OLMo-2's norms span the whole projection: the rank holds the scales of its query and key heads
    // (the traffic above stays the per-head estimate; the scales are a few KiB either way).
    qk.weight_params = m.qk_norm_full_width ? (m.num_heads / c.tp + kv_heads_per_rank(m, c.tp)) * m.head_dim
                                            : static_cast<i64>(params);
    ops.push_back(qk);
  }
  if (m.position == PositionKind::Rope) {
    // Rotated in place: read and write the rotated part of q and k (cos/sin tables are cache-resident).
    // Eager code runs it as several kernels (EagerGlue::rope_kernels), each a read and a write.
    // MLA rotates each query head's qk_rope_head_dim part and the one shared RoPE key.
    const double elems = m.mla.enabled() ? dbl(c.T) * dbl(m.num_heads / c.tp + 1) * dbl(m.mla.qk_rope_head_dim)
                                         : dbl(c.T) * dbl(m.num_heads / c.tp + kv_heads_per_rank(m, c.tp)) *
                                               dbl(m.head_dim) * m.rotary_fraction;
    const double passes = std::max(1, c.p.glue.rope_kernels);
    ops.push_back(pointwise("attn.rope", OpKind::Elementwise, Module::Attention, kRopeFlops * elems,
                            passes * 2 * elems * c.a, kRopeFlops * elems, passes * 2 * elems * c.a));
    ops.back().role = OpRole::Rope;
    if (passes > 1) ops.back().launches = 2 * passes;  // eager: the passes on q, then on k
  }
  // Flash attention applies attention-probability dropout inside the kernel (no extra traffic).
  if (c.p.flash_attn)
    ops.push_back(flash_op(c));
  else
    add_unfused_attention(c, ops);
  if (m.attn_output_gate) {
    // attn_output * sigmoid(gate) (Qwen3NextAttention): reads the output and the gate, writes the product;
    // backward reads the output gradient, the output and the gate, writes both gradients.
    const double out = dbl(c.T) * dbl(m.o_dim() / c.tp);
    ops.push_back(pointwise("attn.output_gate", OpKind::Elementwise, Module::Attention, 5 * out, 3 * out * c.a, 8 * out,
                            5 * out * c.a));
  }
  if (c.p.glue.attn_output_copy) {
    // (b, heads, s, d) -> (b, s, heads * d) made contiguous for the output projection; its gradient likewise.
    const double out = dbl(c.T) * dbl(m.o_dim() / c.tp) * c.a;
    ops.push_back(pointwise("attn.output_copy", OpKind::Elementwise, Module::Attention, 0, 2 * out, 0, 2 * out));
  }
  add_linear(c, ops,
             Linear{.name = "attn.out_proj",
                    .module = Module::Attention,
                    .n = m.hidden,
                    .k = m.o_dim() / c.tp,
                    .rows = dbl(c.T),
                    .bias = m.out_bias,
                    .role = OpRole::OutProj});
  if (m.attention_sinks) ops.back().weight_params += m.num_heads / c.tp;    // gpt-oss's per-head sink logits
  if (m.sandwich_norms) ops.push_back(norm_op(c, "attn.post_norm", c.Tn));  // Gemma's post_attention_layernorm
  add_block_tail(c, ops, "attn", Module::Attention);
}

}  // namespace llmsim::model::inventory
