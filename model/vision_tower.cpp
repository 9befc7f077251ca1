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

std::int64_t qwen3_5_tower_params(std::int64_t hidden, std::int64_t intermediate, std::int64_t depth,
                                  std::int64_t channels, std::int64_t patch, std::int64_t temporal_patch,
                                  std::int64_t positions) {
  const std::int64_t patch_embed = channels * temporal_patch * patch * patch * hidden + hidden;
  const std::int64_t per_block = 2 * (2 * hidden)                        // norm1, norm2
                                 + hidden * 3 * hidden + 3 * hidden      // qkv
                                 + hidden * hidden + hidden              // proj
                                 + hidden * intermediate + intermediate  // linear_fc1
                                 + intermediate * hidden + hidden;       // linear_fc2
  return patch_embed + positions * hidden + depth * per_block;
}

std::int64_t qwen3_5_merger_params(std::int64_t hidden, std::int64_t merge, std::int64_t out_hidden) {
  const std::int64_t merged = hidden * merge * merge;
  return 2 * hidden + merged * merged + merged + merged * out_hidden + out_hidden;
}

}  // namespace llmsim::model
