#pragma once
// The immutable description of a transformer model, parsed at the edge from a Hugging Face
// config.json (hf_config.h) or from the `custom` columns of a measured-run file (custom_model.h).
// Everything downstream (parameter counts, operator inventory, memory, time) reads only this struct.
#include <cstdint>
#include <string>
#include <vector>

#include "llmsim/core/dtype.h"

namespace llmsim::model {

enum class NormKind { RmsNorm, LayerNorm };  // LayerNorm has a bias vector, RMSNorm does not
enum class MlpKind { Gated, Plain };         // Gated: gate/up/down (SwiGLU); Plain: up/down (GELU)
enum class PositionKind { Rope, Learned };   // Learned adds a max_positions x hidden table
enum class WeightQuant { None, Int8, Int4, Nf4, Fp8 };

std::string_view weight_quant_name(WeightQuant q);  // "none", "int8", "int4", "nf4", "fp8"
bool parse_weight_quant(std::string_view name, WeightQuant& out);
std::vector<std::string> weight_quant_names();  // in enum order
// The element type a weight format packs its weights in (int8, int4, nf4, fp8), or `unquantized` for none.
DType stored_dtype(WeightQuant q, DType unquantized);
// Bytes per weight element when stored in a quantized format, including its scales:
// int8 per-channel, int4 (AWQ/GPTQ group 128 with fp16 scale and 4-bit zero), NF4 with double
// quantization (Dettmers et al. 2023: 4 + 8/64 + 32/(64*256) bits), fp8 per-tensor.
double quantized_weight_bytes(WeightQuant q, DType fallback);

// Mixture of experts; num_experts == 0 means a dense model.
struct MoeSpec {
  std::int64_t num_experts = 0;        // routed experts per MoE layer
  std::int64_t experts_per_token = 0;  // top-k
  std::int64_t expert_ffn = 0;         // intermediate size of one routed expert
  std::int64_t shared_expert_ffn = 0;  // intermediate size of the always-on shared expert (qwen2_moe); 0 = none
  bool shared_expert_gate = false;     // qwen2_moe: a hidden->1 sigmoid gate on the shared expert
  std::int64_t sparse_step = 1;        // every sparse_step-th layer is MoE (qwen2_moe decoder_sparse_step)

  bool enabled() const { return num_experts > 0; }
};

// Pre-quantized checkpoints (quantization_config) or a requested storage format.
struct QuantSpec {
  WeightQuant format = WeightQuant::None;
  std::string method;           // "bitsandbytes", "gptq", "awq", "fp8", … (informational)
  std::int64_t group_size = 0;  // elements per scale (0 = per-channel or not applicable)
  bool double_quant = false;    // bitsandbytes nested quantization of the NF4 scales
};

struct ModelSpec {
  std::string name;        // preset name or path it was read from
  std::string model_type;  // Hugging Face model_type ("llama", "gpt2", …) or "custom-gpt"/"custom-llama"

  std::int64_t num_layers = 0;
  std::int64_t hidden = 0;        // d_model
  std::int64_t num_heads = 0;     // query heads
  std::int64_t num_kv_heads = 0;  // key/value heads (== num_heads without GQA)
  std::int64_t head_dim = 0;      // per head (usually hidden / num_heads)
  std::int64_t ffn_hidden = 0;    // dense MLP intermediate size (0 for all-MoE models is allowed)
  std::int64_t vocab = 0;
  std::int64_t max_positions = 0;  // context length the model was built for

  NormKind norm = NormKind::RmsNorm;
  MlpKind mlp = MlpKind::Gated;
  PositionKind position = PositionKind::Rope;
  std::string activation = "silu";

  bool qkv_bias = false;  // biases on q/k/v projections
  bool out_bias = false;  // bias on the attention output projection
  bool mlp_bias = false;  // biases on the MLP projections
  bool tied_embeddings = false;
  bool parallel_residual = false;  // gpt_neox: attention and MLP read the same input
  // RMSNorm over each head's query and key after the projection (Qwen3's q_norm / k_norm: one head_dim
  // scale each, shared by the heads), before RoPE.
  bool qk_norm = false;
  // One projection reads the attention block's normed input (a fused QKV: GPT-2 c_attn, GPT-NeoX
  // query_key_value, Phi-3 qkv_proj) rather than q_proj, k_proj and v_proj; and one the MLP's
  // (Phi-3 gate_up_proj) rather than gate_proj and up_proj. Only eager glue (per-projection casts)
  // depends on it.
  bool fused_qkv = false;
  bool fused_gate_up = false;
  double rotary_fraction = 1.0;  // fraction of head_dim rotated by RoPE (gpt_neox rotary_pct)
  double rope_theta = 10000.0;
  double dropout = 0.0;  // training dropout probability (attention probs and residual); decides dropout masks
  std::int64_t sliding_window = 0;  // 0 = full attention

  MoeSpec moe;
  DType dtype = DType::BF16;  // checkpoint dtype (torch_dtype / dtype)
  QuantSpec quant;            // pre-quantized checkpoint; format None otherwise

  std::int64_t q_dim() const { return num_heads * head_dim; }
  std::int64_t kv_dim() const { return num_kv_heads * head_dim; }
  bool is_moe_layer(std::int64_t layer) const { return moe.enabled() && ((layer + 1) % moe.sparse_step == 0); }
};

// KV-cache bytes per token of `layers` layers on one GPU of a `tp`-way tensor-parallel group, at
// `elem_bytes` per element: K and V of every KV head the GPU holds; beyond tp = KV heads each rank keeps
// one whole head. The one formula of the memory model, the inference iteration cost and `show model`.
double kv_bytes_per_token(const ModelSpec& m, std::int64_t layers, std::int64_t tp, double elem_bytes);

// Key/value heads one rank of a `tp`-way group holds: num_kv_heads / tp when tp divides them; one head,
// replicated on tp / num_kv_heads ranks, when the KV heads divide tp (vLLM's QKVParallelLinear, SGLang and
// TensorRT-LLM replicate them this way; Megatron-LM training does not, run/feasibility.h says where);
// 0 when neither divides the other.
std::int64_t kv_heads_per_rank(const ModelSpec& m, std::int64_t tp);
// Parameters of one layer's K and V projections a rank holds beyond an even 1/tp share, because its KV head
// is replicated (0 when tp divides the KV heads).
double replicated_kv_params(const ModelSpec& m, std::int64_t tp);

}  // namespace llmsim::model
