#pragma once
// Exact parameter counts of a ModelSpec (golden-tested against published totals).
#include <cstdint>

#include "llmsim/core/error.h"
#include "llmsim/model/model_spec.h"

namespace llmsim::model {

struct LayerParams {
  std::int64_t attention = 0;   // q, k, v, o projections with their biases
  std::int64_t mlp = 0;         // dense MLP, or all experts + router + shared expert of an MoE layer
  std::int64_t mlp_active = 0;  // what one token uses: top-k experts + router + shared expert (== mlp when dense)
  std::int64_t norms = 0;       // the layer's norm weights (and biases for LayerNorm)
  std::int64_t total() const { return attention + mlp + norms; }
  std::int64_t active() const { return attention + mlp_active + norms; }
  // Parameters inside linear projections (the ones weight quantization and LoRA apply to).
  std::int64_t linear = 0;
};

struct ParamCounts {
  std::int64_t embedding = 0;           // token embedding table
  std::int64_t position_embedding = 0;  // learned position table (0 with RoPE)
  std::int64_t lm_head = 0;             // 0 when tied to the embedding
  std::int64_t final_norm = 0;
  std::int64_t layers = 0;         // sum over all layers
  std::int64_t layers_active = 0;  // sum over layers of what one token uses
  std::int64_t layers_linear = 0;  // sum over layers of linear-projection parameters
  std::int64_t total = 0;          // everything, counted once
  std::int64_t active = 0;         // per token (MoE: top-k experts only)
  std::int64_t mtp = 0;            // multi-token prediction modules, apart from total (ModelSpec::mtp_layers)
};

// An MoE layer's router (hidden -> num_experts) and shared-expert gate: replicated on every tensor- and
// expert-parallel rank and kept in 16 bits by the weight formats (vLLM's ReplicatedLinear gate without a
// quant_config, Megatron's TopKRouter weight; the layer inventory marks them not quantizable). Counted in
// LayerParams::mlp and linear.
std::int64_t moe_replicated_params(const ModelSpec& m);
// The q/k norms' weights of one layer: 2 * head_dim per-head (Qwen3), q_dim + kv_dim full-width (OLMo-2).
std::int64_t qk_norm_params(const ModelSpec& m);
LayerParams count_layer_params(const ModelSpec& m, std::int64_t layer_index);
// Upper bounds of a model's dimensions, for every reader of user input (hf_config, custom_model): far above
// any published model (hidden 16k-64k, vocab 256k, contexts to 10 M tokens, a few hundred layers), low enough
// that the simulators' products stay exact and per-layer loops end.
inline constexpr std::int64_t kMaxModelDimension = std::int64_t{1} << 24;  // 16,777,216
inline constexpr std::int64_t kMaxModelLayers = 10000;

// An Input error (no location) when a count overflows 64 bits: sizes no model has, which a reader refuses
// first through check_param_counts.
ParamCounts count_params(const ModelSpec& m);
// Refuses, as an Input error at `where`, a model whose parameter counts cannot be represented. Every reader
// that builds a ModelSpec from user input calls it (hf_config, custom_model).
void check_param_counts(const ModelSpec& m, const Location& where);

}  // namespace llmsim::model
