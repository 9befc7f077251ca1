// The replica's prefix cache: references, insertion and least-recently-used eviction of shared KV blocks.
#include "llmsim/serve/prefix_cache.h"

namespace llmsim::sim::des {

std::int64_t PrefixCache::attach(std::int64_t key, std::int64_t most) {
  std::int64_t n = 0;
  for (; n < most; ++n) {
    const auto it = blocks_.find({key, n});
    if (it == blocks_.end()) break;
    if (it->second.refs == 0) lru_.erase({it->second.tick, it->first});
    ++it->second.refs;
  }
  return n;
}

void PrefixCache::release(std::int64_t key, std::int64_t count) {
  // Tail first: the later a block, the earlier its tick, so that a prefix is evicted from its end.
  for (std::int64_t j = count - 1; j >= 0; --j) {
    const auto it = blocks_.find({key, j});
    if (it == blocks_.end() || it->second.refs <= 0) continue;
    if (--it->second.refs == 0) {
      it->second.tick = ++tick_;
      lru_.insert({it->second.tick, it->first});
    }
  }
}

bool PrefixCache::insert(std::int64_t key, std::int64_t index) {
  return blocks_.try_emplace(PrefixBlock{key, index}, Entry{1, 0}).second;
}

bool PrefixCache::evict_one() {
  if (lru_.empty()) return false;
  const PrefixBlock b = lru_.begin()->second;
  lru_.erase(lru_.begin());
  blocks_.erase(b);
  return true;
}

}  // namespace llmsim::sim::des
