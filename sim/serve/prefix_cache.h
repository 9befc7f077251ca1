#pragma once
// The prefix cache of one serving replica (internal to sim/serve/): which whole KV blocks of shared
// prompt prefixes are cached, how many running sequences reference each, and the least-recently-used order
// of the unreferenced ones, which are evicted first when the engine needs a blank block (vLLM V1's block
// pool: freed blocks keep their hash until reallocated, a request's blocks freed tail first; TensorRT-LLM's
// reusable blocks in a radix tree, evicted LRU). A block is named by its prefix and its index in it: two
// requests with the same prefix key share block j when both prefixes cover it. The caller keeps the free
// block count: cached blocks are neither free nor any sequence's own.
#include <cstdint>
#include <set>
#include <unordered_map>
#include <utility>

namespace llmsim::sim::des {

struct PrefixBlock {
  std::int64_t key = 0;    // Request::prefix_key
  std::int64_t index = 0;  // block index in the prompt (tokens index*B .. (index+1)*B - 1)
  friend bool operator==(const PrefixBlock&, const PrefixBlock&) = default;
  friend auto operator<=>(const PrefixBlock&, const PrefixBlock&) = default;
};

struct PrefixBlockHash {
  std::size_t operator()(const PrefixBlock& b) const {
    // splitmix64 of the pair: keys and indices are small integers, which std::hash leaves unmixed.
    std::uint64_t x = static_cast<std::uint64_t>(b.key) * 0x9E3779B97F4A7C15ULL + static_cast<std::uint64_t>(b.index);
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return static_cast<std::size_t>(x ^ (x >> 31));
  }
};

class PrefixCache {
 public:
  // References the cached blocks 0, 1, ... of prefix `key`, at most `most`, stopping at the first missing
  // one; returns how many (the sequence's first blocks from now on).
  std::int64_t attach(std::int64_t key, std::int64_t most);
  // Drops one reference to each of the blocks 0..count-1 of `key`; blocks left unreferenced become
  // evictable, the last block first in line (a request's blocks are freed tail first).
  void release(std::int64_t key, std::int64_t count);
  // Caches block `index` of `key`, referenced once by the sequence that computed it; false if it is
  // already cached (the caller keeps its own copy: engines do not merge duplicates).
  bool insert(std::int64_t key, std::int64_t index);
  // Evicts the least recently used unreferenced block; false when there is none.
  bool evict_one();
  std::int64_t evictable() const { return static_cast<std::int64_t>(lru_.size()); }
  std::int64_t cached() const { return static_cast<std::int64_t>(blocks_.size()); }
  // Whether block `index` of `key` is cached (tests).
  bool contains(std::int64_t key, std::int64_t index) const { return blocks_.count({key, index}) > 0; }

 private:
  struct Entry {
    std::int64_t refs = 0;
    std::uint64_t tick = 0;  // when it became unreferenced (its place in lru_)
  };
  std::unordered_map<PrefixBlock, Entry, PrefixBlockHash> blocks_;
  std::set<std::pair<std::uint64_t, PrefixBlock>> lru_;  // unreferenced blocks, oldest first
  std::uint64_t tick_ = 0;
};

}  // namespace llmsim::sim::des
