#pragma once
// The immutable description of a transformer model, parsed at the edge from a Hugging Face
// config.json (hf_config.h) or from the `custom` columns of a measured-run file (custom_model.h).
// Everything downstream (parameter counts, operator inventory, memory, time) reads only this struct.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "llmsim/core/dtype.h"
#include "llmsim/model/vision_tower.h"

namespace llmsim::model {

enum class NormKind { RmsNorm, LayerNorm };  // LayerNorm has a bias vector, RMSNorm does not
enum class MlpKind { Gated, Plain };         // Gated: gate/up/down (SwiGLU); Plain: up/down (GELU)
// Learned adds a max_positions x hidden table; None: no position encoding (Granite-4.0-H's "nope")
enum class PositionKind { Rope, Learned, None };
// Nvfp4: NVIDIA's 4-bit format (E2M1 with an FP8 scale per 16 weights), run as FP4 GEMMs on Blackwell.
enum class WeightQuant { None, Int8, Int4, Nf4, Fp8, Mxfp4, Nvfp4 };

std::string_view weight_quant_name(WeightQuant q);  // "none", "int8", "int4", "nf4", "fp8", "mxfp4", "nvfp4"
bool parse_weight_quant(std::string_view name, WeightQuant& out);
std::vector<std::string> weight_quant_names();  // in enum order
// Quantization methods a run may name instead of the bare format (the measured-run schema's weight_quant,
// --weight-quant): each stores its weights in one of the formats above, which is what the simulators price.
// awq, gptq, awq-marlin, gptq-marlin: 4-bit integer groups (AutoAWQ / AutoGPTQ checkpoints, vLLM's kernels);
// bnb-int8: LLM.int8(); bnb-nf4: QLoRA's NF4. The kernel a method runs (Marlin or not) is not priced apart.
std::vector<std::string> weight_quant_method_names();
// Every spelling parse_weight_quant takes: the formats, then the methods.
std::vector<std::string> weight_quant_spellings();
// The element type an inference GEMM over weights of format `q` computes in: fp8 weights run FP8 GEMMs
// on a GPU with an FP8 tensor path (`fp8_tensor_path`: Ada, Hopper and later) and are dequantized into
// `activation` in the GEMM's kernel on one without (W8A16: vLLM's FP8 Marlin on Ampere, PR #5975; whether
// an engine has such a kernel is the feasibility check's question), NVFP4 weights FP4 GEMMs with
// activations quantized on the fly (Blackwell); every other format is dequantized into `activation` (the
// one rule for the iteration cost and the feasibility check).
DType gemm_dtype(WeightQuant q, DType activation, bool fp8_tensor_path);
// The element type a weight format packs its weights in (int8, int4, nf4, fp8), or `unquantized` for none.
DType stored_dtype(WeightQuant q, DType unquantized);
// Bytes per weight element when stored in a quantized format, including its scales:
// int8 per-channel, int4 (AWQ/GPTQ group 128 with fp16 scale and 4-bit zero), NF4 with double
// quantization (Dettmers et al. 2023: 4 + 8/64 + 32/(64*256) bits), fp8 per-tensor, MXFP4 (OCP Microscaling
// Formats v1.0: 4-bit E2M1 elements with one 8-bit E8M0 scale per block of 32 = 4.25 bits).
double quantized_weight_bytes(WeightQuant q, DType fallback);
// Bytes per parameter of an inference model's weights as the engines store them, the one rule the memory
// model, the iteration cost (infer, serve, plan) and their agreement test share: the quantizable projections
// in their weight format, unquantized in the run's activation dtype (bf16 under --precision fp8 / fp4: FP8
// or FP4 GEMMs need an FP8 or NVFP4 weight format, --weight-quant fp8 / nvfp4); every other weight
// (embeddings, LM head, norms, routers) in the activation dtype.
struct InferenceWeightBytes {
  double linear = 2;
  double other = 2;
};
InferenceWeightBytes inference_weight_bytes(WeightQuant q, DType precision);

// Mixture of experts; num_experts == 0 means a dense model.
struct MoeSpec {
  std::int64_t num_experts = 0;        // routed experts per MoE layer
  std::int64_t experts_per_token = 0;  // top-k
  std::int64_t expert_ffn = 0;         // intermediate size of one routed expert
  std::int64_t shared_expert_ffn = 0;  // intermediate size of the always-on shared expert (qwen2_moe); 0 = none
  bool shared_expert_gate = false;     // qwen2_moe: a hidden->1 sigmoid gate on the shared expert
  std::int64_t sparse_step = 1;        // every sparse_step-th layer is MoE (qwen2_moe decoder_sparse_step)
  std::int64_t first_dense = 0;        // the first layers are dense (DeepSeek first_k_dense_replace)
  bool router_bias = false;            // a per-expert routing bias (DeepSeek-V3 noaux_tc e_score_correction_bias)

  bool enabled() const { return num_experts > 0; }
};

// Multi-head latent attention (DeepSeek-V2/V3, Liu et al. 2024 arXiv:2405.04434 Sec. 2.1): queries from a
// low-rank q_a / q_b pair (q_lora_rank; 0 = one q_proj), keys and values up-projected (kv_b_proj) from a
// compressed latent of kv_lora_rank plus one RoPE key of qk_rope_head_dim shared by the heads. A head
// scores with qk_nope_head_dim + qk_rope_head_dim (ModelSpec::head_dim) and returns v_head_dim values.
// Inference engines (vLLM, SGLang, TensorRT-LLM) cache only the latent and the RoPE key per token and
// layer, on every tensor-parallel rank, and decode with the up-projections absorbed into the query and
// output (the paper's Sec. 2.1.2).
struct MlaSpec {
  std::int64_t q_lora_rank = 0;
  std::int64_t kv_lora_rank = 0;  // 0 = no MLA
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t v_head_dim = 0;
  bool enabled() const { return kv_lora_rank > 0; }
};

// DeepSeek Sparse Attention (DeepSeek-V3.2; deepseek-ai/DeepSeek-V3.2-Exp inference/model.py, class Indexer, and
// the V3.2 report): a lightning indexer scores every earlier token for each query with `heads` heads of `head_dim`
// in fp8 (wq_b from MLA's query latent, one key per token from wk over the hidden state and a LayerNorm,
// weights_proj mixing the heads), and MLA, in its absorbed (MQA) form, attends only to the `topk` best-scored
// keys. The indexer runs whole on every tensor-parallel rank (its top-k is one per token) and keeps its own fp8
// key, with one fp32 scale per 128 elements, per token and layer beside the latent.
struct SparseIndexerSpec {
  std::int64_t heads = 0;     // index_n_heads
  std::int64_t head_dim = 0;  // index_head_dim
  std::int64_t topk = 0;      // index_topk; 0 = dense attention
  bool enabled() const { return topk > 0; }
  // Bytes of the indexer's key cache per token and layer: fp8 keys and an fp32 scale per 128-wide block.
  double cache_bytes_per_token() const {
    return static_cast<double>(head_dim) + 4.0 * static_cast<double>((head_dim + 127) / 128);
  }
};

// The token mixer of a layer that keeps a fixed-size recurrent state per sequence instead of K and V per token.
//  * GatedDeltaNet (Yang, Kautz and Hatamizadeh, "Gated Delta Networks: Improving Mamba2 with Delta Rule", ICLR
//    2025), the linear_attention layers of Qwen3-Next and Qwen3.5 (transformers' Qwen3NextGatedDeltaNet):
//    in_proj_qkvz projects the normed input to queries and keys of key_heads x key_head_dim and to values and an
//    output gate z of value_heads x value_head_dim, in_proj_ba to a write strength b and a decay input a per
//    value head; a depthwise causal convolution over q, k and v; the gated delta rule keeps one key_head_dim x
//    value_head_dim state per value head (key heads repeated to the value heads); an RMSNorm over each head's
//    output gated by silu(z) feeds out_proj.
//  * Mamba2 (Dao and Gu, "Transformers are SSMs", ICML 2024), the mamba layers of Granite-4.0-H and Bamba
//    (transformers' BambaMixer): in_proj to z and x (ssm_heads x ssm_head_dim each), B and C (ssm_groups x
//    ssm_state each) and dt per head; a depthwise causal convolution over x, B and C; the selective scan keeps one
//    ssm_head_dim x ssm_state state per head; a gated RMSNorm over the inner width feeds out_proj.
// Instead of K and V per token such a layer keeps, per sequence, its states (at state_dtype) and the
// convolution's last conv_kernel - 1 inputs.
enum class LinearMixer { None, GatedDeltaNet, Mamba2 };
std::string_view linear_mixer_name(LinearMixer k);  // "none", "Gated DeltaNet", "Mamba-2"
struct LinearAttentionSpec {
  LinearMixer kind = LinearMixer::None;
  // Gated DeltaNet (linear_num_key_heads, linear_key_head_dim, ...).
  std::int64_t key_heads = 0;
  std::int64_t key_head_dim = 0;
  std::int64_t value_heads = 0;
  std::int64_t value_head_dim = 0;
  // Mamba-2 (mamba_n_heads, mamba_d_head, mamba_d_state, mamba_n_groups).
  std::int64_t ssm_heads = 0;
  std::int64_t ssm_head_dim = 0;
  std::int64_t ssm_state = 0;
  std::int64_t ssm_groups = 0;
  bool conv_bias = false;  // the convolution's per-channel bias (mamba_conv_bias)
  bool proj_bias = false;  // in_proj's and out_proj's biases (mamba_proj_bias)
  std::int64_t conv_kernel = 0;
  std::int64_t chunk = 0;            // tokens per chunk of the chunked kernels (FLA's 64; mamba_chunk_size)
  std::vector<bool> layers;          // per layer: this mixer (layer_types "linear_attention" / "mamba") or attention
  std::optional<DType> state_dtype;  // the recurrent state's elements (mamba_ssm_dtype); nullopt: the checkpoint's
  bool enabled() const { return kind != LinearMixer::None; }
  std::int64_t key_dim() const { return key_heads * key_head_dim; }
  std::int64_t value_dim() const { return value_heads * value_head_dim; }
  std::int64_t inner_dim() const { return ssm_heads * ssm_head_dim; }  // Mamba-2's x and z width
  // Channels through the convolution: q, k and v (Gated DeltaNet) or x, B and C (Mamba-2).
  std::int64_t conv_dim() const {
    return kind == LinearMixer::Mamba2 ? inner_dim() + 2 * ssm_groups * ssm_state : 2 * key_dim() + value_dim();
  }
  // The recurrence's output per token, out_proj's input: the value heads' width, or Mamba-2's inner width.
  std::int64_t output_dim() const { return kind == LinearMixer::Mamba2 ? inner_dim() : value_dim(); }
  // Heads the state is kept per (value heads, or Mamba-2's heads) and the state's elements per head.
  std::int64_t state_heads() const { return kind == LinearMixer::Mamba2 ? ssm_heads : value_heads; }
  std::int64_t state_elems_per_head() const {
    return kind == LinearMixer::Mamba2 ? ssm_head_dim * ssm_state : key_head_dim * value_head_dim;
  }
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
  bool parallel_residual = false;  // gpt_neox, falcon: attention and MLP read the same input
  // With parallel_residual: one norm feeds both blocks (Falcon-7B's input_layernorm), not one each.
  bool shared_block_norm = false;
  // RMSNorm over each head's query and key after the projection (Qwen3's q_norm / k_norm: one head_dim
  // scale each, shared by the heads), before RoPE.
  bool qk_norm = false;
  // With qk_norm: the norms span the whole projected query (num_heads * head_dim) and key
  // (num_kv_heads * head_dim), one scale per element (OLMo-2's q_norm / k_norm), not one head_dim each.
  bool qk_norm_full_width = false;
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
  // With a window: every global_every-th layer (layer + 1 divisible by it) attends to everything, the rest
  // through the window (Gemma-2 and gpt-oss alternate: 2; Gemma-3: 6); 0 = every layer windowed (Mistral).
  std::int64_t global_every = 0;
  // Gemma-2/3 norm both sides of each block (input_layernorm and post_attention_layernorm around attention,
  // pre_ and post_feedforward_layernorm around the MLP): four norms per layer instead of two.
  bool sandwich_norms = false;
  // One learned logit per query head that joins every softmax (gpt-oss's attention sinks): heads
  // parameters per layer, no measurable work.
  bool attention_sinks = false;

  // transformers' flash-attention class of this architecture expands K and V to the query heads (repeat_kv)
  // before calling the kernel, up to the attention-interface refactor of 4.48.0 (MistralFlashAttention2 and the
  // classes copied from it: Mixtral, Qwen2, Qwen2-MoE; LlamaFlashAttention2 passes the KV heads as they are).
  // Only HF generate's cost reads it (EngineProfile::repeat_kv_for_flash).
  bool flash_class_repeats_kv = false;

  // Full-attention layers project a sigmoid output gate beside the queries (Qwen3-Next's q_proj of 2 x q_dim,
  // attn_output_gate): the attention output times sigmoid(gate) feeds o_proj.
  bool attn_output_gate = false;

  MoeSpec moe;
  MlaSpec mla;
  SparseIndexerSpec dsa;  // DeepSeek Sparse Attention over MLA (DeepSeek-V3.2); off for dense attention
  LinearAttentionSpec linear_attn;
  // DeepSeek-V3's multi-token prediction modules (num_nextn_predict_layers): stored with the checkpoint,
  // used for training signal and speculative decoding; counted apart (param_count.h), never simulated.
  std::int64_t mtp_layers = 0;
  // A multimodal checkpoint's vision tower (vision_tower.h): counted apart, never simulated.
  VisionTower vision;
  // Keys of the config.json that no reader asked for (hf_config.cpp), in file order.
  std::vector<std::string> unread_keys;
  DType dtype = DType::BF16;  // checkpoint dtype (torch_dtype / dtype)
  QuantSpec quant;            // pre-quantized checkpoint; format None otherwise

  std::int64_t q_dim() const { return num_heads * head_dim; }      // queries (and keys per head) that score
  std::int64_t kv_dim() const { return num_kv_heads * head_dim; }  // keys
  std::int64_t v_head_dim() const { return mla.enabled() ? mla.v_head_dim : head_dim; }
  std::int64_t v_dim() const { return num_kv_heads * v_head_dim(); }  // values
  std::int64_t o_dim() const { return num_heads * v_head_dim(); }     // attention output = o_proj input
  // The attention window of a layer (0 = full attention).
  std::int64_t window_of(std::int64_t layer) const {
    if (sliding_window <= 0) return 0;
    return global_every > 0 && (layer + 1) % global_every == 0 ? 0 : sliding_window;
  }
  // Layers whose window_of is a window (the rest attend to every key).
  std::int64_t windowed_layers() const {
    std::int64_t n = 0;
    for (std::int64_t l = 0; l < num_layers; ++l) n += window_of(l) > 0 ? 1 : 0;
    return n;
  }
  // A Gated DeltaNet layer (LinearAttentionSpec) rather than full attention.
  bool is_linear_attention_layer(std::int64_t layer) const {
    return linear_attn.enabled() && layer >= 0 && layer < static_cast<std::int64_t>(linear_attn.layers.size()) &&
           linear_attn.layers[static_cast<std::size_t>(layer)];
  }
  std::int64_t linear_attention_layers() const {
    std::int64_t n = 0;
    for (std::int64_t l = 0; l < num_layers; ++l) n += is_linear_attention_layer(l) ? 1 : 0;
    return n;
  }
  // The element type of the Gated DeltaNet layers' recurrent state (vLLM's gated_delta_net_state_dtype with
  // mamba_cache_dtype "auto": the config's mamba_ssm_dtype, else the checkpoint's dtype).
  DType linear_state_dtype() const { return linear_attn.state_dtype.value_or(dtype); }
  // Layers that keep K and V per token (all but the Gated DeltaNet ones).
  std::int64_t attention_layers() const { return num_layers - linear_attention_layers(); }
  bool is_moe_layer(std::int64_t layer) const {
    return moe.enabled() && layer >= moe.first_dense && ((layer + 1) % moe.sparse_step == 0);
  }
};

// KV-cache bytes per token of `layers` layers on one GPU of a `tp`-way tensor-parallel group, at
// `elem_bytes` per element: K and V of every KV head the GPU holds; beyond tp = KV heads each rank keeps
// one whole head; under MLA the latent and the RoPE key, whole on every rank (with DeepSeek Sparse Attention
// also the indexer's fp8 key and scale, SparseIndexerSpec). The one formula of the
// memory model, the inference iteration cost and `show model`.
double kv_bytes_per_token(const ModelSpec& m, std::int64_t layers, std::int64_t tp, double elem_bytes);

// Of `layers` layers on one GPU, the share that keeps K and V (hybrids of Gated DeltaNet or Mamba-2 layers: the
// attention layers' share of the model; 1 otherwise): kv_bytes_per_token counts these. Exact for a whole model
// and for pipeline stages that hold whole periods of the layer pattern (Qwen3-Next's 4 layers).
double kv_layer_share(const ModelSpec& m);
// Mamba-2's B/C groups one rank of a `tp`-way group computes: ssm_groups / tp when tp divides them, else all of
// them, replicated (vLLM's MambaMixer2 replicates groups that do not split evenly); 0 for other mixers.
std::int64_t ssm_groups_per_rank(const ModelSpec& m, std::int64_t tp);
// Channels of a linear-attention layer's convolution on one rank: q, k and v / tp (Gated DeltaNet), x / tp and the
// rank's groups' B and C (Mamba-2).
std::int64_t conv_channels_per_rank(const ModelSpec& m, std::int64_t tp);
// The recurrent state one sequence keeps in the linear-attention layers among `layers` layers on one GPU of a
// `tp`-way group (their share of the model, as kv_layer_share): per layer state_heads / tp states of
// state_elems_per_head at state_dtype, and the convolution's last conv_kernel - 1 inputs of its rank's channels
// at `conv_elem_bytes` (the activation dtype: vLLM's and transformers' conv_states). 0 for a model without such
// layers. The one formula of the memory model, the serving KV pool and `show model`.
double linear_state_bytes_per_sequence(const ModelSpec& m, std::int64_t layers, std::int64_t tp,
                                       double conv_elem_bytes);

// Key/value heads one rank of a `tp`-way group holds: num_kv_heads / tp when tp divides them; one head,
// replicated on tp / num_kv_heads ranks, when the KV heads divide tp (vLLM's QKVParallelLinear, SGLang and
// TensorRT-LLM replicate them this way; Megatron-LM training does not, run/feasibility.h says where);
// 0 when neither divides the other.
std::int64_t kv_heads_per_rank(const ModelSpec& m, std::int64_t tp);
// The shape of one layer's attention on a rank of a `tp`-way group, for the costs that read or write it.
struct AttentionShape {
  double heads = 0;                   // query heads on the rank
  double qk = 0, v = 0;               // per-head score and value widths
  double cache_row = 0;               // cached elements per token (K and V of the rank's KV heads, or the MLA latent)
  double prefill_flops_per_pair = 0;  // FLOPs per (query, key) pair over the rank's heads, K and V expanded
  double decode_flops_per_pair = 0;   // the same for a decode step (MLA: absorbed, over the latent)
  double decode_query_elems = 0;      // query + output elements per decode token (MLA: in latent space)
};
AttentionShape attention_shape(const ModelSpec& m, std::int64_t tp);

// Parameters of one layer's K and V projections a rank holds beyond an even 1/tp share, because its KV head
// is replicated (0 when tp divides the KV heads).
double replicated_kv_params(const ModelSpec& m, std::int64_t tp);
// Multi-head latent attention's down projections (q_a_proj and kv_a_proj_with_mqa) are replicated on every
// TP rank, their outputs being latents (vLLM ReplicatedLinear, Megatron-core's duplicated down projections;
// the layer inventory reads them whole): the parameters a rank holds beyond the even 1/tp share.
double replicated_mla_params(const ModelSpec& m, std::int64_t tp);

}  // namespace llmsim::model
