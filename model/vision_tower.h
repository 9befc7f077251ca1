#pragma once
// The vision tower of a multimodal checkpoint (Hugging Face vision_config beside text_config): stored with
// the weights and run on images, never simulated (llmsim simulates the text model). Its parameters are
// counted apart from the text model's total, where its architecture is known.
#include <cstdint>
#include <string>

namespace llmsim::model {

struct VisionTower {
  std::string model_type;             // vision_config.model_type ("pixtral"); empty: no vision tower
  bool counted = false;               // false: an architecture without a formula here (parameters unknown)
  std::int64_t tower_params = 0;      // the encoder
  std::int64_t projector_params = 0;  // the wrapper's vision-to-text projector
  bool present() const { return !model_type.empty(); }
  std::int64_t params() const { return tower_params + projector_params; }
};

// Pixtral's vision encoder (transformers PixtralVisionModel): a patch convolution without bias
// (channels x patch^2 x hidden), ln_pre (RMSNorm, hidden), and per layer q, k, v, o (hidden x hidden, no
// bias), a gated MLP (3 x hidden x intermediate, no bias) and two RMSNorms (2 x hidden); rotary positions
// have no parameters.
std::int64_t pixtral_tower_params(std::int64_t hidden, std::int64_t intermediate, std::int64_t layers,
                                  std::int64_t channels, std::int64_t patch);

// Mistral-3's projector (Mistral3MultiModalProjector): an RMSNorm over the vision hidden size, the patch
// merger's linear (vision hidden x merge^2 -> vision hidden, no bias), linear_1 (vision hidden ->
// text hidden) and linear_2 (text hidden -> text hidden), with biases when multimodal_projector_bias.
std::int64_t mistral3_projector_params(std::int64_t vision_hidden, std::int64_t text_hidden, std::int64_t merge,
                                       bool bias);

// Qwen3.5's vision encoder (transformers' Qwen3_5VisionModel, Qwen3-VL's without its deepstack mergers): a
// patch Conv3d with bias (channels x temporal_patch x patch^2 -> hidden), a learned position table
// (num_position_embeddings x hidden), and per block two LayerNorms (weight and bias), qkv (hidden -> 3 hidden)
// and proj (hidden -> hidden) with biases, and an MLP of linear_fc1 / linear_fc2 (hidden <-> intermediate) with
// biases.
std::int64_t qwen3_5_tower_params(std::int64_t hidden, std::int64_t intermediate, std::int64_t depth,
                                  std::int64_t channels, std::int64_t patch, std::int64_t temporal_patch,
                                  std::int64_t positions);
// Its patch merger (Qwen3_5VisionPatchMerger): a LayerNorm over the vision hidden size, then linear_fc1 over
// merge^2 patches (hidden x merge^2, square) and linear_fc2 to the text hidden size (out_hidden_size), with biases.
std::int64_t qwen3_5_merger_params(std::int64_t hidden, std::int64_t merge, std::int64_t out_hidden);

}  // namespace llmsim::model
