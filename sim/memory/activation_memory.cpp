#include "llmsim/memory/activation_memory.h"

#include <algorithm>

#include "llmsim/core/dtype.h"
#include "llmsim/model/operators.h"
#include "llmsim/run/framework_profile.h"

namespace llmsim::sim {

KeptInputs kept_projection_inputs(const RunSpec& run) {
  const auto& t = run.train;
  KeptInputs k;
  if (run.workload != Workload::Finetune || t.finetune != FinetuneKind::Lora ||
      t.base_quant != model::WeightQuant::None || t.lora_targets.empty())
    return k;
  const auto has = [&](const char* name) {
    return std::find(t.lora_targets.begin(), t.lora_targets.end(), name) != t.lora_targets.end();
  };
  k.qkv = has("q") || has("k") || has("v");
  k.out = has("o");
  k.gate_up = has("gate") || has("up");
  k.down = has("down");
  return k;
}

ActivationParams training_activation_params(const RunSpec& run) {
  const auto& t = run.train;
  const auto& par = run.par;
  const FrameworkProfile& fw = framework_profile(t.framework);
  return ActivationParams{
      .micro_batch = t.micro_batch,
      .seq_len = t.seq_len,
      .tp = par.tp,
      .cp = par.cp,
      .sequence_parallel = par.sequence_parallel,
      .flash_attn = t.flash_attn,
      .act_bytes = dtype_bytes(activation_dtype(t.precision)),
      .gemm_input_bytes = t.precision == DType::FP8 && fw.fp8_saves_gemm_inputs ? dtype_bytes(DType::FP8) : 0.0,
      .glue = training_glue(fw, t),
      .selective = fw.selective,
      .kept = kept_projection_inputs(run)};
}

LayerActivations layer_activations(const model::ModelSpec& m, const ActivationParams& p, std::int64_t layer_index) {
  const double beta = p.act_bytes;
  const double gemm_in = p.gemm_input_bytes > 0 ? p.gemm_input_bytes : beta;  // the norms' outputs, the down input
  const double t = static_cast<double>(p.tp);
  // Tokens of one micro-batch on this GPU: context parallelism splits the sequence.
  const double tokens = static_cast<double>(p.micro_batch * p.seq_len) / static_cast<double>(p.cp);
  const double s = static_cast<double>(p.seq_len);
  const double h = static_cast<double>(m.hidden);
  const double q_dim = static_cast<double>(m.q_dim());
  // With TP larger than the KV heads, each rank keeps one whole KV head (replicated, not split).
  const double kv_heads = std::max(1.0, static_cast<double>(m.num_kv_heads) / t);
  const double kv_dim_per_rank = static_cast<double>(m.head_dim) * kv_heads;
  const double v_dim_per_rank = static_cast<double>(m.v_head_dim()) * kv_heads;  // values (MLA: v_head_dim)
  const double o_dim = static_cast<double>(m.o_dim());
  const double heads_per_rank = static_cast<double>(m.num_heads) / t;
  const bool dropout = m.dropout > 0;
  const double mask = dropout ? 1.0 : 0.0;  // a dropout mask is one byte per element

  // Eager glue (model::EagerGlue): the norm input lives in the residual stream's dtype (fp32 under AMP);
  // an eager RMSNorm also saves its fp32 normalised tensor for the weight gradient; autocast saves each
  // projection's own cast copy of the normed input; the attention output is saved by the attention
  // kernel and again, made contiguous, by the output projection.
  const auto& glue = p.glue;
  const double resid = glue.stream_bytes(beta);
  const double eager_norm = glue.norm_kernels(m.norm) > 1 ? 4.0 : 0.0;
  const bool casts = glue.casts_inputs(beta);
  const KeptInputs& kept = p.kept;
  const double attn_inputs = !kept.qkv ? 0.0 : casts ? model::attention_input_projections(m) : 1.0;
  const double mlp_inputs = !kept.gate_up ? 0.0 : casts ? model::mlp_input_projections(m) : 1.0;
  // FlashAttention keeps its output for backward; an unfused chain's output only the output projection needs.
  const double context = p.flash_attn || kept.out ? 1.0 : 0.0;

  LayerActivations a;
  // Attention block. Replicated over TP: the norm input, the QKV GEMM input and the residual dropout mask.
  a.replicated += (resid + eager_norm) * tokens * h     // norm input (and an eager norm's fp32 intermediate)
                  + attn_inputs * gemm_in * tokens * h  // QKV GEMM input (norm output; per projection when cast)
                  + mask * tokens * h;                  // dropout mask after the output projection
  if (m.is_linear_attention_layer(layer_index) && m.linear_attn.kind == model::LinearMixer::Mamba2) {
    // A Mamba-2 block (model/operators/mamba2.cpp), split over TP by heads: the input projection's output (z, x, B,
    // C and dt), the convolved x, B and C, dt and the cumulative decay in fp32 per head that mamba_ssm's
    // mamba_chunk_scan_combined saves with them, the scan's output (the gated norm's input) and the norm's output
    // (the output projection's input).
    const model::LinearAttentionSpec& g = m.linear_attn;
    const double inner = static_cast<double>(g.inner_dim()) / t, heads = static_cast<double>(g.ssm_heads) / t;
    const double conv = static_cast<double>(model::conv_channels_per_rank(m, p.tp));
    a.split += beta * tokens * (inner + conv + heads)  // in_proj's output: z, x, B, C and dt
               + beta * tokens * conv                  // x, B and C after the convolution
               + 4.0 * tokens * 2.0 * heads            // dt and its cumulative decay
               + beta * tokens * inner                 // the scan's output
               + context * beta * tokens * inner;      // the gated norm's output = out_proj's input
  } else if (m.is_linear_attention_layer(layer_index)) {
    // A Gated DeltaNet block (model/operators/gated_deltanet.cpp), split over TP by heads: the input projections'
    // outputs the convolution and the gated norm read (q, k, v and z), the convolved q, k and v, the fp32 gates g
    // and beta, the WY matrix (fp32, one chunk's width per token and head) that FLA's chunk_gated_delta_rule
    // saves with them for its backward, the rule's output (the gated norm's input) and the norm's output (the
    // output projection's input).
    const model::LinearAttentionSpec& g = m.linear_attn;
    const double conv = static_cast<double>(g.conv_dim()) / t, vd = static_cast<double>(g.value_dim()) / t;
    const double vh = static_cast<double>(g.value_heads) / t;
    const double chunk = static_cast<double>(g.chunk);
    a.split += beta * tokens * (conv + vd)          // in_proj_qkvz's output: q, k, v and z
               + beta * tokens * conv               // q, k and v after the convolution
               + 4.0 * tokens * vh * (2.0 + chunk)  // g, beta and the WY matrix
               + beta * tokens * vd                 // the rule's output
               + context * beta * tokens * vd;      // the gated norm's output = out_proj's input
  } else {
    // Split over TP: Q and K (scores GEMM or flash input), V, and the output-projection input.
    // qk-norm (Qwen3) saves its input, Q and K before the norm, and fp32 statistics per head.
    if (m.qk_norm)
      a.split += beta * tokens * (q_dim / t + kv_dim_per_rank) +
                 4.0 * tokens * (heads_per_rank + kv_dim_per_rank / static_cast<double>(m.head_dim));
    a.split += beta * tokens * (q_dim / t + kv_dim_per_rank)  // Q, K after RoPE
               + beta * tokens * v_dim_per_rank               // V
               + context * beta * tokens * o_dim / t          // context = out-projection input
               + (glue.attn_output_copy && kept.out ? beta * tokens * o_dim / t : 0.0);  // + its contiguous copy
    // MLA's latents, whole on every rank: q_a's and kv_a's outputs (their norms' inputs) and the normed
    // latents q_b_proj and kv_b_proj read.
    if (m.mla.enabled())
      a.replicated +=
          beta * tokens * static_cast<double>(2 * m.mla.q_lora_rank + 2 * m.mla.kv_lora_rank + m.mla.qk_rope_head_dim);
    if (p.flash_attn) {
      a.split += 4.0 * tokens * heads_per_rank;  // fp32 log-sum-exp per query and head
    } else {
      // Softmax output (beta), dropout mask (1) and dropout output (beta) over b * heads * s_q * s_k,
      // with s_q = s / cp local queries against all s keys: Korthikanti's 5as^2b with dropout.
      const double scores = tokens * heads_per_rank * s;
      a.quadratic += beta * scores + (dropout ? (1.0 + beta) * scores : 0.0);
      // HF's eager chain also keeps the fp32 softmax output (its cast back to 16 bits is the saved beta).
      if (glue.eager_softmax_chain) a.quadratic += 4.0 * scores;
    }

    // An output gate (Qwen3-Next's gated attention) saves the gate and the attention output beside their product.
    if (m.attn_output_gate) a.split += beta * tokens * (q_dim / t + o_dim / t);
  }
  // MLP block: norm input and first-GEMM input replicated; intermediates split.
  // Without its own norm (Falcon-7B's shared input_layernorm) the MLP saves no norm input.
  a.replicated += (m.shared_block_norm ? 0.0 : (resid + eager_norm) * tokens * h) + mlp_inputs * gemm_in * tokens * h +
                  mask * tokens * h;
  const auto mlp_intermediates = [&](double ffn, double toks, double down_bytes) {
    // Gated (SwiGLU) as eager code runs it, act_fn(gate) * up: gate output, up output, act(gate), and their
    // product (down input) = 4 tensors. A fused SwiGLU keeps its input (gate and up) and recomputes act(gate)
    // in backward: Megatron's BiasSwiGLUFunction (core/fusions/fused_bias_swiglu.py) saves only its input,
    // Transformer Engine's LayerNormMLP saves fc1_out and the activation's output (layernorm_mlp.py
    // save_for_backward) = 3 tensors. Plain (GELU): activation input and output = 2 tensors (Korthikanti's
    // 8sbh + 8sbh at ffn = 4h). The down projection's input (the product, or the activation's output) only
    // when backward needs it.
    const double tensors = m.mlp == model::MlpKind::Gated ? (glue.split_gated_activation ? 3.0 : 2.0) : 1.0;
    return (tensors * beta + (kept.down ? down_bytes : 0.0)) * toks * ffn / t;
  };
  if (m.is_moe_layer(layer_index)) {
    const double k = static_cast<double>(m.moe.experts_per_token);
    const double routed = tokens * k;                                  // token copies sent to experts
    a.split += 4.0 * tokens * static_cast<double>(m.moe.num_experts);  // fp32 router logits / probs
    a.split += (kept.gate_up ? beta : 0.0) * routed * h;               // dispatched expert inputs
    // The experts' grouped GEMMs keep 16-bit inputs here (their FP8 path is not read yet).
    a.split += mlp_intermediates(static_cast<double>(m.moe.expert_ffn), routed, beta);
    if (m.moe.shared_expert_ffn > 0)
      a.split += mlp_intermediates(static_cast<double>(m.moe.shared_expert_ffn), tokens, beta);
  } else {
    a.split += mlp_intermediates(static_cast<double>(m.ffn_hidden), tokens, gemm_in);
  }

  // Gemma's post-block norms keep their inputs too.
  if (m.sandwich_norms) a.replicated += 2.0 * (resid + eager_norm) * tokens * h;
  if (p.sequence_parallel) a.replicated /= t;  // SP splits the norm/dropout regions along the sequence
  return a;
}

namespace {

// The layer input a checkpointed block keeps, in the residual stream's dtype (split along the sequence
// with sequence parallelism).
double layer_input_bytes(const model::ModelSpec& m, const ActivationParams& p) {
  const double tokens = static_cast<double>(p.micro_batch * p.seq_len) / static_cast<double>(p.cp);
  const double input = p.glue.stream_bytes(p.act_bytes) * tokens * static_cast<double>(m.hidden);
  return p.sequence_parallel ? input / static_cast<double>(p.tp) : input;
}

// The op outputs torchtitan's op-level policy saves for one layer, from the layer's training inventory.
double op_checkpoint_saved_bytes(const model::ModelSpec& m, const ActivationParams& p, std::int64_t layer_index) {
  model::InventoryParams ip;
  ip.micro_batch = p.micro_batch;
  ip.q_len = p.seq_len / std::max<std::int64_t>(1, p.cp);
  ip.tp = p.tp;
  ip.sequence_parallel = p.sequence_parallel;
  ip.flash_attn = p.flash_attn;
  ip.act_dtype = p.act_bytes >= 4 ? DType::FP32 : DType::BF16;
  ip.training = true;
  ip.glue = p.glue;
  const auto inv = model::layer_ops(m, ip, layer_index);
  return model::alternate_matmul_checkpoint(m, inv.ops, ip).saved_bytes;
}

bool op_level(const ActivationParams& p, Recompute policy) {
  return policy == Recompute::Selective && p.selective == model::SelectivePolicy::AlternateMatmuls;
}

}  // namespace

double stored_layer_bytes(const model::ModelSpec& m, const ActivationParams& p, std::int64_t layer_index,
                          Recompute policy) {
  if (op_level(p, policy)) return layer_input_bytes(m, p) + op_checkpoint_saved_bytes(m, p, layer_index);
  switch (policy) {
    case Recompute::None: return layer_activations(m, p, layer_index).total();
    case Recompute::Selective: {
      const auto a = layer_activations(m, p, layer_index);
      return a.replicated + a.split;
    }
    case Recompute::Full: return layer_input_bytes(m, p);
  }
  return 0;
}

double recompute_working_bytes(const model::ModelSpec& m, const ActivationParams& p, std::int64_t layer_index,
                               Recompute policy, double stored) {
  if (policy == Recompute::Full) return layer_activations(m, p, layer_index).total();
  if (op_level(p, policy)) return std::max(0.0, layer_activations(m, p, layer_index).total() - stored);
  return 0;
}

double in_flight_factor(std::int64_t stage, std::int64_t pp, std::int64_t vp, std::int64_t micro_batches,
                        PipelineSchedule schedule) {
  if (schedule == PipelineSchedule::GPipe && pp > 1)
    return static_cast<double>(std::max<std::int64_t>(micro_batches, 1));
  const double held = static_cast<double>(std::min(pp - stage, std::max<std::int64_t>(micro_batches, 1)));
  if (vp > 1 && stage == 0) {
    // Interleaved 1F1B: the first stage holds pp micro-batches of all its chunks plus the warm-up extra.
    const double f = 1.0 + static_cast<double>(pp - 1) / static_cast<double>(pp * vp);
    return held * f;
  }
  return held;
}

}  // namespace llmsim::sim
