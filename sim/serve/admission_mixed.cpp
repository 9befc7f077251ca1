// Admission of vLLM (V1 scheduler) and TensorRT-LLM: one forward pass mixes decodes, prefill chunks
// and new prompts under a token budget, preempting the newest sequence when KV blocks run out.
#include "llmsim/serve/serving_des.h"

namespace llmsim::sim::des {

// vLLM V1 / TensorRT-LLM: one forward pass mixes decodes, prefill chunks and new prompts.
bool Des::plan_mixed(Replica& r) {
  std::int64_t budget_left = budget();
  bool preempted = false;
  std::vector<std::int64_t> loras;  // multi-LoRA: the adapters this step runs (vLLM V1 scheduled_loras)
  for (std::size_t i = 0; i < r.running.size() && budget_left > 0;) {
    const std::int64_t id = r.running[i];
    Seq& q = seqs_[static_cast<std::size_t>(id)];
    std::int64_t n = q.total() - q.computed;
    if (!e_.chunked_prefill && n > budget_left) {
      ++i;
      continue;
    }
    n = std::min(n, budget_left);
    bool self_preempted = false;
    while (!allocate(r, q, n)) {
      // Out of blocks: preempt the most recently admitted running sequence by recompute (vLLM).
      const std::int64_t victim = r.running.back();
      r.running.pop_back();
      preempt(r, victim);
      preempted = true;
      if (victim == id) {
        self_preempted = true;
        break;
      }
    }
    if (self_preempted) break;
    // A decode step verifies its draft tokens too (their KV slots are the lookahead vLLM allocates).
    std::int64_t draft = 0;
    if (n == 1 && q.generated > 0) {
      draft = draft_tokens(q, budget_left);
      while (draft > 0 && !allocate(r, q, 1 + draft)) --draft;
    }
    r.work.push_back({id, n + draft, q.computed, draft});
    budget_left -= n + draft;
    if (lora_) lora_admits(loras, q.adapter);
    ++i;
  }
  // vLLM admits nothing in a step that preempted; if that left the step empty, the next step (at the same
  // instant) admits from the waiting queue, which is what falling through does.
  if (preempted && !r.work.empty()) return true;
  // A waiting request whose adapter would exceed max_loras is skipped for this step and the next one looked at
  // (vLLM V1: skipped_waiting_requests); without adapters the loop takes the queue's front every time.
  std::size_t wi = 0;
  while (wi < r.waiting.size() && budget_left > 0) {
    if (static_cast<std::int64_t>(r.running.size()) >= e_.max_num_seqs) break;
    const std::int64_t id = r.waiting[wi];
    Seq& q = seqs_[static_cast<std::size_t>(id)];
    if (lora_ && !lora_fits(loras, q.adapter)) {
      ++wi;
      continue;
    }
    // With prefix caching the cached blocks of its prefix count as computed (vLLM V1 schedules only the
    // tokens after the cache hit).
    const std::int64_t hit = attach_prefix(r, q);
    std::int64_t n = q.total() - q.computed;
    if (!e_.chunked_prefill && n > budget_left) {
      // A recomputation (prompt + tokens generated before a preemption) longer than the whole budget
      // runs alone rather than never.
      if (!(n > budget() && r.work.empty())) {
        detach_prefix(r, q);
        break;
      }
      budget_left = n;
    }
    n = std::min(n, budget_left);
    std::int64_t res = 0;
    if (e_.reserve_full_output) {
      res = blocks_for(q.prompt + q.output);
      if (r.reserved_blocks + res > r.total_blocks) {
        detach_prefix(r, q);
        break;
      }
    }
    if (!allocate(r, q, n)) {
      detach_prefix(r, q);
      break;
    }
    q.reserved = res;
    r.reserved_blocks += res;
    if (wi == 0)
      r.waiting.pop_front();
    else
      r.waiting.erase(r.waiting.begin() + static_cast<std::ptrdiff_t>(wi));
    r.running.push_back(id);
    if (lora_) lora_admits(loras, q.adapter);
    r.work.push_back({id, n, q.computed});
    budget_left -= n;
    if (caching()) {  // every admission queries the cache (vLLM's prefix cache hit rate: hits / queries)
      prefix_query_tokens_ += q.prompt;
      prefix_hit_tokens_ += hit;
    }
    if (q.cached_tokens < 0) q.cached_tokens = hit;
  }
  return !r.work.empty();
}

}  // namespace llmsim::sim::des
