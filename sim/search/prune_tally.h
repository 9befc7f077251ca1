#pragma once
// Why a search pruned tuples: each reason under a stable key, with its count and first example.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace llmsim::sim {

// Reasons a tuple was pruned: a stable key (the problem text with its numbers removed, e.g. "tp does
// not divide the attention heads"), how many tuples it removed, and the first one's full message.
struct PruneReason {
  std::uint64_t count = 0;
  std::uint64_t first_index = 0;  // enumeration index of the example
  std::string example;
};

class PruneTally {
 public:
  PruneTally() = default;
  PruneTally(const PruneTally& o) : reasons_(o.reasons_), total_(o.total_) {}
  PruneTally& operator=(const PruneTally& o) {
    reasons_ = o.reasons_;
    total_ = o.total_;
    last_ = reasons_.end();
    return *this;
  }
  void add(const std::string& key, std::uint64_t index, const std::string& message, std::uint64_t count = 1);
  bool has(const std::string& key) const;
  void merge(const PruneTally& other);
  std::uint64_t total() const { return total_; }
  // Reasons by count (largest first; ties by key).
  std::vector<std::pair<std::string, PruneReason>> sorted() const;
  const std::map<std::string, PruneReason>& reasons() const { return reasons_; }

 private:
  std::map<std::string, PruneReason> reasons_;
  std::uint64_t total_ = 0;
  std::map<std::string, PruneReason>::iterator last_ = reasons_.end();  // the reason added last
};

// The key of a problem message: its number tokens dropped ("tp 3 does not divide the 32 attention
// heads" -> "tp does not divide the attention heads").
std::string reason_key(std::string_view message);

// Whether a reason removes tuples equivalent to another tuple of the space (sequence parallelism with
// tp 1, selective recomputation under FlashAttention, ZeRO with dp 1, vp > 1 with pp 1; pruned only
// when that other tuple is in the space) rather than configurations that cannot run.
bool is_duplicate_reason(std::string_view key);

}  // namespace llmsim::sim
