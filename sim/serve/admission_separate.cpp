// Admission of TGI, LightLLM and vLLM V0: a new batch is prefilled in an iteration of its own, then joins the
// running batch; each engine decides differently which waiting requests fit.
#include "llmsim/serve/serving_des.h"

#include <fmt/format.h>

#include "llmsim/core/error.h"

namespace llmsim::sim::des {

// TGI Queue::next_batch: FCFS while the prefill budget and the total token budget (prompt + max_new_tokens
// of every running and new request) allow; None when fewer than min_size fit. vLLM V0 (no reservation):
// FCFS while the prompts' blocks (a preempted sequence's prompt and generated tokens) fit the free blocks
// beside the watermark (Scheduler._schedule_prefills, BlockSpaceManager.can_allocate).
bool Des::tgi_take(Replica& r, std::vector<std::int64_t>& out, bool has_min, std::int64_t min_size) {
  std::int64_t prefill = 0;
  const bool reserve = e_.reserve_full_output;
  std::int64_t total = reserve ? r.reserved_blocks : 0;
  // An idle engine admits its first prompt whatever the watermark (a prompt that fits the cache alone runs).
  const std::int64_t watermark =
      r.running.empty() ? 0 : static_cast<std::int64_t>(e_.kv_watermark_fraction * dbl(r.total_blocks));
  const std::int64_t room = reserve ? r.total_blocks : r.free_blocks - watermark;
  for (const std::int64_t id : r.waiting) {
    if (static_cast<std::int64_t>(r.running.size() + out.size()) >= e_.max_num_seqs) break;
    const Seq& q = seqs_[static_cast<std::size_t>(id)];
    const std::int64_t n = q.total() - q.computed;
    const std::int64_t res = reserve ? blocks_for(q.prompt + q.output) : blocks_for(q.total()) - q.blocks;
    if (prefill + n > budget() || total + res > room) break;
    prefill += n;
    total += res;
    out.push_back(id);
  }
  if (out.empty() || (has_min && static_cast<std::int64_t>(out.size()) < min_size)) {
    out.clear();
    return false;
  }
  return true;
}

// LightLLM ReqQueue.generate_new_batch with _can_add_new_req.
bool Des::lightllm_take(Replica& r, std::vector<std::int64_t>& out) {
  if (static_cast<std::int64_t>(r.running.size()) >= e_.max_num_seqs) return false;
  std::vector<std::pair<std::int64_t, std::int64_t>> base;  // (tokens held, remaining output)
  base.reserve(r.running.size() + 8);
  for (const std::int64_t id : r.running) {
    const Seq& q = seqs_[static_cast<std::size_t>(id)];
    base.emplace_back(q.prompt + q.generated, q.output - q.generated - 1);
  }
  std::int64_t prompt_tokens = 0;
  std::vector<std::pair<std::int64_t, std::int64_t>> trial;
  for (const std::int64_t id : r.waiting) {
    const Seq& q = seqs_[static_cast<std::size_t>(id)];
    trial = base;
    trial.emplace_back(q.prompt + 1, q.output - 1);
    std::sort(trial.begin(), trial.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    std::int64_t cum = 0, need = 0;
    for (std::size_t i = 0; i < trial.size(); ++i) {
      cum += trial[i].first;
      need = std::max(need, cum + trial[i].second * static_cast<std::int64_t>(i + 1));
    }
    const bool fits = need < s_.kv_capacity_tokens && static_cast<std::int64_t>(trial.size()) <= e_.max_num_seqs;
    if (!fits || prompt_tokens + q.prompt > budget()) break;
    prompt_tokens += q.prompt;
    base.emplace_back(q.prompt + 1, q.output - 1);
    out.push_back(id);
  }
  return !out.empty();
}

// TGI / LightLLM: a new batch is prefilled in an iteration of its own, then joins the running batch.
bool Des::plan_separate(Replica& r) {
  std::vector<std::int64_t> fresh;
  bool admit = false;
  // vLLM V0 multi-step: while the decode run has steps left the scheduler is not called (LLMEngine.step,
  // _has_remaining_steps), so nothing waiting is admitted until the run ends or its sequences are done.
  const bool continues_run = r.steps_left > 0 && !r.running.empty();
  if (continues_run)
    --r.steps_left;
  else
    r.steps_left = 0;
  if (!continues_run && !r.waiting.empty()) {
    if (r.running.empty()) {
      admit = e_.lightllm_admission ? lightllm_take(r, fresh) : tgi_take(r, fresh, false, 0);
    } else if (e_.lightllm_admission) {
      if (r.since_prefill >= e_.max_waiting_tokens) admit = lightllm_take(r, fresh);
    } else {
      const bool force = r.since_prefill >= e_.max_waiting_tokens;
      const auto min_size = static_cast<std::int64_t>(
          std::floor(dbl(static_cast<std::int64_t>(r.running.size())) * e_.waiting_served_ratio));
      admit = tgi_take(r, fresh, !force, min_size);
    }
  }
  if (admit) {
    for (const std::int64_t id : fresh) {
      Seq& q = seqs_[static_cast<std::size_t>(id)];
      r.waiting.pop_front();
      r.running.push_back(id);
      const std::int64_t n = q.total() - q.computed;  // the prompt; after a preemption also the tokens generated
      if (e_.reserve_full_output) {                   // TGI allocates the blocks of prompt + max_new_tokens
        q.reserved = blocks_for(q.prompt + q.output);
        r.reserved_blocks += q.reserved;
        q.blocks = q.reserved;
        r.free_blocks -= q.reserved;
      } else if (!allocate(r, q, n)) {  // LightLLM, vLLM V0: the prompt's blocks (their take rules checked room)
        throw Error(ErrorKind::Internal, {}, "serving: a separate-prefill admission rule overfilled the KV cache");
      }
      r.work.push_back({id, n, q.computed});
    }
    // TGI restarts its waiting_tokens counter at 1 after a prefill, LightLLM its has_wait_tokens at 0.
    r.since_prefill = e_.lightllm_admission ? 0 : 1;
    return true;
  }
  if (r.running.empty()) return false;
  // A decode batch the scheduler formed runs scheduler_steps steps (a prefill batch above runs one).
  if (!continues_run) r.steps_left = std::max<std::int64_t>(1, e_.scheduler_steps) - 1;
  for (std::size_t i = 0; i < r.running.size(); ++i) {
    const std::int64_t id = r.running[i];
    Seq& q = seqs_[static_cast<std::size_t>(id)];
    if (e_.lightllm_admission) {
      if (!allocate(r, q, 1))
        throw Error(ErrorKind::Internal, {}, "serving: LightLLM admission rule let the KV cache overflow");
    } else if (!e_.reserve_full_output) {
      // vLLM V0 (_schedule_running): out of blocks, the newest running sequence is preempted by recompute,
      // this one included when it is the newest.
      bool self_preempted = false;
      while (!allocate(r, q, 1)) {
        const std::int64_t victim = r.running.back();
        r.running.pop_back();
        preempt(r, victim);
        if (victim == id) {
          self_preempted = true;
          break;
        }
      }
      if (self_preempted) break;
    }
    r.work.push_back({id, 1, q.computed});
  }
  ++r.since_prefill;
  return !r.work.empty();
}

}  // namespace llmsim::sim::des
