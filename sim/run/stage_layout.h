#pragma once
// Which layers a pipeline stage runs: the one layout used by the memory model, the step graph and the
// search's fast estimator. Layers split evenly over the pp stages and the last num_layers % pp stages
// take one more (Megatron-LM's uneven split puts the remainder at the end); with interleaving (vp > 1)
// stage s runs chunks c = 0..vp-1 of num_layers / (pp x vp) layers each, chunk c holding layers
// [(c x pp + s) x per, …) (Narayanan et al. 2021, Sec. 2.2).
#include <cstdint>

namespace llmsim::sim {

struct StageLayers {
  std::int64_t first = 0;  // first layer (0-based)
  std::int64_t count = 0;  // layers
};

// Stage `stage` of `pp` without interleaving.
inline StageLayers stage_layers(std::int64_t stage, std::int64_t pp, std::int64_t num_layers) {
  const std::int64_t base = num_layers / pp, plain = pp - num_layers % pp;
  return {stage * base + (stage > plain ? stage - plain : 0), base + (stage >= plain ? 1 : 0)};
}

// Chunk `chunk` of stage `stage` with `vp` virtual stages per GPU (vp <= 1: the whole stage).
inline StageLayers stage_chunk(std::int64_t stage, std::int64_t chunk, std::int64_t pp, std::int64_t vp,
                               std::int64_t num_layers) {
  if (vp <= 1) return stage_layers(stage, pp, num_layers);
  const std::int64_t per = num_layers / (pp * vp);
  return {(chunk * pp + stage) * per, per};
}

}  // namespace llmsim::sim
