#pragma once
// Which layers a pipeline stage runs: the one layout used by the memory model, the step graph and the
// search's fast estimator. Layers split evenly over the pp stages and the last num_layers % pp stages
// take one more (Megatron-LM's uneven split puts the remainder at the end); with interleaving (vp > 1)
// stage s runs chunks c = 0..vp-1 of num_layers / (pp x vp) layers each, chunk c holding layers
// [(c x pp + s) x per, …) (Narayanan et al. 2021, Sec. 2.2).
//
// Interleaving over layers that pp x vp does not divide runs as Megatron-core splits them when the embedding
// and the loss count as one layer each (account_for_embedding_in_pipeline_split and
// account_for_loss_in_pipeline_split; megatron/core/transformer/transformer_block.py get_num_layers_to_build,
// which Megatron-Bridge's Llama-3.1-405B recipes set): (num_layers + 2) / (pp x vp) slots per chunk, the first
// chunk of stage 0 giving one slot to the embedding and the last chunk of the last stage one to the loss
// (126 layers at pp 8 x vp 8: 2 layers per chunk, 1 in those two). Megatron asserts that every chunk holds
// the same number of slots, so no other split of its flags runs such a layer count when num_layers is not a
// multiple of vp (its first/last-stage counts must be multiples of vp too); the rule needs num_layers + 2 to
// divide by pp x vp, and the feasibility check refuses the rest with why.
#include <cstdint>

namespace llmsim::sim {

struct StageLayers {
  std::int64_t first = 0;  // first layer (0-based)
  std::int64_t count = 0;  // layers
};

// Whether interleaving runs the embedding- and loss-aware split above.
inline bool embedding_loss_split(std::int64_t pp, std::int64_t vp, std::int64_t num_layers) {
  const std::int64_t chunks = pp * vp;
  return vp > 1 && chunks > 0 && num_layers % chunks != 0 && (num_layers + 2) % chunks == 0;
}

// Chunk `chunk` of stage `stage` with `vp` virtual stages per GPU; vp <= 1 is the whole stage (below).
inline StageLayers stage_chunk(std::int64_t stage, std::int64_t chunk, std::int64_t pp, std::int64_t vp,
                               std::int64_t num_layers);

// Stage `stage` of `pp`: its layers as one run (with interleaving, from its first chunk's first layer, the
// count of all its chunks: the memory model's and the fast estimator's count per stage).
inline StageLayers stage_layers(std::int64_t stage, std::int64_t pp, std::int64_t num_layers, std::int64_t vp = 1) {
  if (embedding_loss_split(pp, vp, num_layers)) {
    StageLayers all{stage_chunk(stage, 0, pp, vp, num_layers).first, 0};
    for (std::int64_t c = 0; c < vp; ++c) all.count += stage_chunk(stage, c, pp, vp, num_layers).count;
    return all;
  }
  const std::int64_t base = num_layers / pp, plain = pp - num_layers % pp;
  return {stage * base + (stage > plain ? stage - plain : 0), base + (stage >= plain ? 1 : 0)};
}

inline StageLayers stage_chunk(std::int64_t stage, std::int64_t chunk, std::int64_t pp, std::int64_t vp,
                               std::int64_t num_layers) {
  if (vp <= 1) return stage_layers(stage, pp, num_layers);
  const std::int64_t v = chunk * pp + stage;  // the virtual stage, in model order
  if (embedding_loss_split(pp, vp, num_layers)) {
    const std::int64_t per = (num_layers + 2) / (pp * vp);
    const bool embeds = v == 0, ends = v == pp * vp - 1;
    return {v == 0 ? 0 : v * per - 1, per - (embeds ? 1 : 0) - (ends ? 1 : 0)};
  }
  const std::int64_t per = num_layers / (pp * vp);
  return {v * per, per};
}

}  // namespace llmsim::sim
