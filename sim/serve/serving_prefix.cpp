// Prefix caching in the serving loop: what a sequence takes from its replica's cache when admitted, what it
// gives back when its prefix blocks are computed, and the accounting of both.
#include "llmsim/serve/serving_des.h"

namespace llmsim::sim::des {

std::int64_t Des::attach_prefix(Replica& r, Seq& q) {
  if (!caching() || q.prefix_key < 0 || q.computed > 0 || q.blocks > 0) return 0;
  // Whole blocks of the prefix, leaving at least the last prompt token to compute: its logits give the
  // first output token (vLLM V1 KVCacheManager.get_computed_blocks: max_cache_hit_length = num_tokens - 1).
  const std::int64_t most = std::min(q.prefix_tokens, q.total() - 1) / bt();
  const std::int64_t hit = r.cache.attach(q.prefix_key, most);
  q.shared = hit;
  q.blocks = hit;
  q.computed = hit * bt();
  return q.computed;
}

void Des::detach_prefix(Replica& r, Seq& q) {
  if (q.shared == 0) return;
  r.cache.release(q.prefix_key, q.shared);
  q.blocks -= q.shared;
  q.shared = 0;
  q.computed = 0;
}

void Des::donate_prefix(Replica& r, Seq& q) {
  if (!caching() || q.prefix_key < 0) return;
  // Computed tokens are the prompt's, then the reply's (a decode step computes the KV of the token sampled
  // before it), so a conversation's reply is cached for its next turn as vLLM V1 caches every full block.
  const std::int64_t full = std::min(q.prefix_tokens, q.computed) / bt();
  // Only a run of blocks from the first can be found again; a block another sequence cached first stays
  // this one's own, and so do the blocks after it.
  while (q.shared < full && r.cache.insert(q.prefix_key, q.shared)) ++q.shared;
}

}  // namespace llmsim::sim::des
