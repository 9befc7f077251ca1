#include "llmsim/model/model_spec.h"

#include <algorithm>
#include <array>
#include <string>
#include <utility>

namespace llmsim::model {

namespace {
constexpr std::array<std::pair<WeightQuant, std::string_view>, 7> kQuantNames{{{WeightQuant::None, "none"},
                                                                               {WeightQuant::Int8, "int8"},
                                                                               {WeightQuant::Int4, "int4"},
                                                                               {WeightQuant::Nf4, "nf4"},
                                                                               {WeightQuant::Fp8, "fp8"},
                                                                               {WeightQuant::Mxfp4, "mxfp4"},
                                                                               {WeightQuant::Nvfp4, "nvfp4"}}};
// Methods by the format they store (AutoAWQ and AutoGPTQ: 4-bit groups with fp16 scales; vLLM's awq_marlin /
// gptq_marlin run the same checkpoints; bitsandbytes' LLM.int8() and NF4).
constexpr std::array<std::pair<std::string_view, WeightQuant>, 6> kQuantMethods{{{"awq", WeightQuant::Int4},
                                                                                 {"gptq", WeightQuant::Int4},
                                                                                 {"awq-marlin", WeightQuant::Int4},
                                                                                 {"gptq-marlin", WeightQuant::Int4},
                                                                                 {"bnb-int8", WeightQuant::Int8},
                                                                                 {"bnb-nf4", WeightQuant::Nf4}}};
}  // namespace

std::string_view weight_quant_name(WeightQuant q) {
  for (const auto& [v, n] : kQuantNames)
    if (v == q) return n;
  return "?";
}

std::string_view linear_mixer_name(LinearMixer k) {
  switch (k) {
    case LinearMixer::GatedDeltaNet: return "Gated DeltaNet";
    case LinearMixer::Mamba2: return "Mamba-2";
    case LinearMixer::None: break;
  }
  return "none";
}

double kv_layer_share(const ModelSpec& m) {
  if (!m.linear_attn.enabled() || m.num_layers <= 0) return 1.0;
  return static_cast<double>(m.attention_layers()) / static_cast<double>(m.num_layers);
}

double kv_bytes_per_token(const ModelSpec& m, std::int64_t layers, std::int64_t tp, double elem_bytes) {
  const double kv_layers = static_cast<double>(layers) * kv_layer_share(m);
  if (m.mla.enabled())
    // DeepSeek Sparse Attention keeps the indexer's fp8 key beside the latent, whatever the latent's dtype.
    return (static_cast<double>(m.mla.kv_lora_rank + m.mla.qk_rope_head_dim) * elem_bytes +
            (m.dsa.enabled() ? m.dsa.cache_bytes_per_token() : 0.0)) *
           kv_layers;
  const double heads_per_rank =
      std::max(1.0, static_cast<double>(m.num_kv_heads) / static_cast<double>(std::max<std::int64_t>(1, tp)));
  return 2.0 * heads_per_rank * static_cast<double>(m.head_dim) * kv_layers * elem_bytes;
}

std::int64_t ssm_groups_per_rank(const ModelSpec& m, std::int64_t tp) {
  const LinearAttentionSpec& g = m.linear_attn;
  if (g.kind != LinearMixer::Mamba2) return 0;
  return tp > 0 && g.ssm_groups % tp == 0 ? g.ssm_groups / tp : g.ssm_groups;
}

std::int64_t conv_channels_per_rank(const ModelSpec& m, std::int64_t tp) {
  const LinearAttentionSpec& g = m.linear_attn;
  const std::int64_t t = std::max<std::int64_t>(1, tp);
  if (g.kind == LinearMixer::Mamba2) return g.inner_dim() / t + 2 * ssm_groups_per_rank(m, t) * g.ssm_state;
  return g.conv_dim() / t;
}

double linear_state_bytes_per_sequence(const ModelSpec& m, std::int64_t layers, std::int64_t tp,
                                       double conv_elem_bytes) {
  const LinearAttentionSpec& g = m.linear_attn;
  if (!g.enabled() || m.num_layers <= 0) return 0;
  const double t = static_cast<double>(std::max<std::int64_t>(1, tp));
  const double share = 1.0 - kv_layer_share(m);
  const double state = static_cast<double>(g.state_heads()) / t * static_cast<double>(g.state_elems_per_head()) *
                       dtype_bytes(m.linear_state_dtype());
  const double conv = static_cast<double>(conv_channels_per_rank(m, tp)) *
                      static_cast<double>(std::max<std::int64_t>(0, g.conv_kernel - 1)) * conv_elem_bytes;
  return static_cast<double>(layers) * share * (state + conv);
}

AttentionShape attention_shape(const ModelSpec& m, std::int64_t tp) {
  const double t = static_cast<double>(std::max<std::int64_t>(1, tp));
  AttentionShape a;
  a.heads = static_cast<double>(m.num_heads) / t;
  a.qk = static_cast<double>(m.head_dim);
  a.v = static_cast<double>(m.v_head_dim());
  // Scores q.k over qk, values p.v over v: 2 FLOPs per multiply-add.
  a.prefill_flops_per_pair = 2.0 * a.heads * (a.qk + a.v);
  if (m.mla.enabled()) {
    const double latent = static_cast<double>(m.mla.kv_lora_rank), rope = static_cast<double>(m.mla.qk_rope_head_dim);
    a.cache_row = latent + rope;
    // Absorbed decode: each head scores against the latent and the RoPE key and sums values in the latent.
    a.decode_flops_per_pair = 2.0 * a.heads * (latent + rope) + 2.0 * a.heads * latent;
    a.decode_query_elems = a.heads * (latent + rope) + a.heads * latent;
  } else {
    a.cache_row = 2.0 * static_cast<double>(kv_heads_per_rank(m, tp)) * a.qk;
    a.decode_flops_per_pair = a.prefill_flops_per_pair;
    a.decode_query_elems = a.heads * (a.qk + a.v);
  }
  return a;
}

std::int64_t kv_heads_per_rank(const ModelSpec& m, std::int64_t tp) {
  if (tp <= 0 || m.num_kv_heads <= 0) return 0;
  if (m.num_kv_heads % tp == 0) return m.num_kv_heads / tp;
  return tp % m.num_kv_heads == 0 ? 1 : 0;
}

double replicated_kv_params(const ModelSpec& m, std::int64_t tp) {
  const std::int64_t held = kv_heads_per_rank(m, tp);
  if (held <= 0 || m.num_kv_heads % tp == 0) return 0;
  const double even = static_cast<double>(m.num_kv_heads) / static_cast<double>(tp);
  const double per_head = static_cast<double>(m.head_dim) * (static_cast<double>(m.hidden) + (m.qkv_bias ? 1.0 : 0.0));
  return 2.0 * per_head * (static_cast<double>(held) - even);
}

double replicated_mla_params(const ModelSpec& m, std::int64_t tp) {
  if (!m.mla.enabled() || tp <= 1) return 0;
  const MlaSpec& a = m.mla;
  const double bias = m.qkv_bias ? 1.0 : 0.0;
  const double hidden = static_cast<double>(m.hidden);
  double down = (hidden + bias) * static_cast<double>(a.kv_lora_rank + a.qk_rope_head_dim);
  if (a.q_lora_rank > 0) down += (hidden + bias) * static_cast<double>(a.q_lora_rank);
  return down * (1.0 - 1.0 / static_cast<double>(tp));
}

DType stored_dtype(WeightQuant q, DType unquantized) {
  switch (q) {
    case WeightQuant::Int8: return DType::INT8;
    case WeightQuant::Int4: return DType::INT4;
    case WeightQuant::Nf4: return DType::NF4;
    case WeightQuant::Fp8: return DType::FP8;
    case WeightQuant::Mxfp4: return DType::INT4;  // 4-bit elements (E2M1), dequantized by the GEMM
    case WeightQuant::Nvfp4: return DType::FP4;   // E2M1 + E4M3 scale per 16, computed in FP4 on Blackwell
    case WeightQuant::None: break;
  }
  return unquantized;
}

double quantized_weight_bytes(WeightQuant q, DType fallback) {
  switch (q) {
    case WeightQuant::None: return dtype_bytes(fallback);
    case WeightQuant::Int8: return 1.0;                        // + one fp16 scale per output channel (negligible)
    case WeightQuant::Int4: return 0.5 + (2.0 + 0.5) / 128.0;  // group 128: fp16 scale + 4-bit zero
    case WeightQuant::Nf4: return (4.0 + 8.0 / 64.0 + 32.0 / (64.0 * 256.0)) / 8.0;  // Dettmers et al. 2023 Sec. 3
    case WeightQuant::Fp8: return 1.0;                                               // per-tensor scale
    case WeightQuant::Mxfp4: return (4.0 + 8.0 / 32.0) / 8.0;  // OCP MX v1.0: E8M0 scale per 32 E2M1 elements
    case WeightQuant::Nvfp4: return dtype_bytes(DType::FP4);   // E4M3 scale per 16 (+ a per-tensor fp32 scale)
  }
  return dtype_bytes(fallback);
}

InferenceWeightBytes inference_weight_bytes(WeightQuant q, DType precision) {
  const DType act = activation_dtype(precision);
  return {quantized_weight_bytes(q, act), dtype_bytes(act)};
}

DType gemm_dtype(WeightQuant q, DType activation, bool fp8_tensor_path) {
  if (q == WeightQuant::Fp8) return fp8_tensor_path ? DType::FP8 : activation;
  if (q == WeightQuant::Nvfp4) return DType::FP4;
  return activation;
}

std::vector<std::string> weight_quant_names() {
  std::vector<std::string> names;
  for (const auto& [v, n] : kQuantNames) names.emplace_back(n);
  return names;
}

std::vector<std::string> weight_quant_method_names() {
  std::vector<std::string> names;
  for (const auto& [n, v] : kQuantMethods) names.emplace_back(n);
  return names;
}

std::vector<std::string> weight_quant_spellings() {
  std::vector<std::string> names = weight_quant_names();
  for (auto& n : weight_quant_method_names()) names.push_back(std::move(n));
  return names;
}

bool parse_weight_quant(std::string_view name, WeightQuant& out) {
  for (const auto& [v, n] : kQuantNames)
    if (n == name) {
      out = v;
      return true;
    }
  for (const auto& [n, v] : kQuantMethods)
    if (n == name) {
      out = v;
      return true;
    }
  return false;
}

}  // namespace llmsim::model
