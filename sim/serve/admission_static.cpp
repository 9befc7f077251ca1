// Admission of HF generate (static batching): a padded batch, prefilled at once, decoded until its
// longest output ends.
#include "llmsim/serve/serving_des.h"

namespace llmsim::sim::des {

// HF generate: a padded batch, prefilled at once, decoded until its longest output ends.
bool Des::plan_static(Replica& r) {
  if (r.batch.empty()) {
    std::int64_t pad = 0, mo = 0;
    for (const std::int64_t id : r.waiting) {
      if (static_cast<std::int64_t>(r.batch.size()) >= e_.max_num_seqs) break;
      const Seq& q = seqs_[static_cast<std::size_t>(id)];
      const std::int64_t p2 = std::max(pad, q.prompt), o2 = std::max(mo, q.output);
      const auto b2 = static_cast<std::int64_t>(r.batch.size()) + 1;
      std::int64_t cap = s_.kv_capacity_tokens;
      if (s_.static_workspace_tokens) cap -= s_.static_workspace_tokens(b2, p2);
      if (b2 * (p2 + o2) > cap) break;
      pad = p2;
      mo = o2;
      r.batch.push_back(id);
    }
    if (r.batch.empty()) return false;
    for (std::size_t i = 0; i < r.batch.size(); ++i) r.waiting.pop_front();
    r.pad_in = pad;
    r.max_out = mo;
    r.step = 0;
    for (const std::int64_t id : r.batch) r.work.push_back({id, pad, 0});
    return true;
  }
  for (const std::int64_t id : r.batch) r.work.push_back({id, 1, r.pad_in + r.step - 1});
  return true;
}

}  // namespace llmsim::sim::des
