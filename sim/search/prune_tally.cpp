#include "llmsim/search/prune_tally.h"

#include <algorithm>

#include "llmsim/core/strings.h"

namespace llmsim::sim {

std::string reason_key(std::string_view message) {
  std::string out;
  std::string_view prev;
  for (const std::string_view word : split_fields(message, ' ')) {
    if (word.empty()) continue;
    const bool number =
        std::all_of(word.begin(), word.end(),
                    [](char c) { return (c >= '0' && c <= '9') || c == '.' || c == ',' || c == '(' || c == ')'; }) &&
        std::any_of(word.begin(), word.end(), [](char c) { return c >= '0' && c <= '9'; });
    // Numbers that are part of the rule ("vp > 1") stay; those describing the tuple go.
    const bool rule = prev == ">" || prev == "<" || prev == ">=" || prev == "<=";
    prev = word;
    if (number && !rule) continue;
    if (!out.empty()) out += ' ';
    out += word;
  }
  return out;
}

bool is_duplicate_reason(std::string_view key) { return key.find("(same as") != std::string_view::npos; }

bool PruneTally::has(const std::string& key) const {
  if (last_ != reasons_.end() && last_->first == key) return true;
  return reasons_.count(key) != 0;
}

void PruneTally::add(const std::string& key, std::uint64_t index, const std::string& message, std::uint64_t count) {
  if (count == 0) return;
  // Consecutive tuples are often pruned for the same reason.
  if (last_ != reasons_.end() && last_->first == key && index >= last_->second.first_index) {
    last_->second.count += count;
    total_ += count;
    return;
  }
  auto [it, inserted] = reasons_.try_emplace(key);
  last_ = it;
  PruneReason& r = it->second;
  if (inserted || (index < r.first_index && !message.empty())) {
    r.first_index = index;
    r.example = message;
  }
  r.count += count;
  total_ += count;
}

void PruneTally::merge(const PruneTally& other) {
  for (const auto& [key, r] : other.reasons_) {
    auto [it, inserted] = reasons_.try_emplace(key, r);
    if (!inserted) {
      if (r.first_index < it->second.first_index) {
        it->second.first_index = r.first_index;
        it->second.example = r.example;
      }
      it->second.count += r.count;
    }
  }
  total_ += other.total_;
}

std::vector<std::pair<std::string, PruneReason>> PruneTally::sorted() const {
  std::vector<std::pair<std::string, PruneReason>> v(reasons_.begin(), reasons_.end());
  std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second.count > b.second.count; });
  return v;
}

}  // namespace llmsim::sim
