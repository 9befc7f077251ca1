#include "llmsim/model/vision_tower.h"

namespace llmsim::model {

std::int64_t pixtral_tower_params(std::int64_t hidden, std::int64_t intermediate, std::int64_t layers,
                                  std::int64_t channels, std::int64_t patch) {
  const std::int64_t conv = channels * patch * patch * hidden;
  const std::int64_t per_layer = 4 * hidden * hidden + 3 * hidden * intermediate + 2 * hidden;
  return conv + hidden + layers * per_layer;
}

std::int64_t mistral3_projector_params(std::int64_t vision_hidden, std::int64_t text_hidden, std::int64_t merge,
                                       bool bias) {
  const std::int64_t merger = vision_hidden * merge * merge * vision_hidden;
  const std::int64_t linear_1 = vision_hidden * text_hidden + (bias ? text_hidden : 0);
  const std::int64_t linear_2 = text_hidden * text_hidden + (bias ? text_hidden : 0);
  return vision_hidden + merger + linear_1 + linear_2;
}

}  // namespace llmsim::model
