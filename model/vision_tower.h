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

}  // namespace llmsim::model
