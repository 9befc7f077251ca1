#pragma once
// Speculative decoding's drafter as the iteration cost runs it (run/run_spec.h SpeculativeSpec): a draft
// model, or a head of the target's own dimensions. One rule for `llmsim infer` and `llmsim serve`.
#include "llmsim/model/model_spec.h"
#include "llmsim/run/run_spec.h"

namespace llmsim::sim {

// The model the drafter runs once per draft token:
//   draft  the draft model as resolved (SpeculativeSpec::draft);
//   eagle  one dense decoder layer of the target's width and the target's LM head (EAGLE, Li et al. 2024,
//          arXiv:2401.15077: a single decoder layer over the target's features; the head is shared), its
//          MLP the target's dense one (an MoE target's: one expert's width);
//   mtp    one layer as the target's last (an MoE layer on DeepSeek-V3) and the shared LM head (DeepSeek-V3
//          technical report Sec. 2.2: each MTP module is a transformer block with a projection, sharing the
//          embedding and output head).
// The drafter's own KV cache is small beside the target's and is not counted.
model::ModelSpec drafter_model(const model::ModelSpec& target, const SpeculativeSpec& s);

}  // namespace llmsim::sim
