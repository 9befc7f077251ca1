#include "llmsim/infer/speculative.h"

namespace llmsim::sim {

model::ModelSpec drafter_model(const model::ModelSpec& target, const SpeculativeSpec& s) {
  if (s.method == SpecMethod::Draft && s.draft) return *s.draft;
  model::ModelSpec d = target;
  d.name = target.name + (s.method == SpecMethod::Mtp ? " MTP module" : " EAGLE head");
  d.num_layers = 1;
  d.mtp_layers = 0;
  if (s.method == SpecMethod::Mtp) {
    d.moe.first_dense = 0;  // the module's one block is as the target's last: an MoE block on an MoE model
    d.moe.sparse_step = 1;
  } else if (d.moe.enabled()) {
    if (d.ffn_hidden <= 0) d.ffn_hidden = d.moe.expert_ffn;
    d.moe = {};
  }
  return d;
}

}  // namespace llmsim::sim
