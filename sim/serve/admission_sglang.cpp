// Admission of SGLang (sgl-project/sglang python/sglang/srt/managers): a prefill batch runs whenever one can be
// formed, the running batch decodes only when none can; admission reserves the running requests' remaining
// output at a decaying new-token ratio, and a decode without room retracts requests for recomputation.
#include "llmsim/serve/serving_des.h"

#include <limits>

#include <fmt/format.h>

#include "llmsim/core/error.h"

namespace llmsim::sim::des {

namespace {

// NewTokenRatioTracker (scheduler_components/new_token_ratio_tracker.py) with the environment defaults of
// environ.py: SGLANG_INIT_NEW_TOKEN_RATIO 0.7 (x schedule_conservativeness 1.0), SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR
// 0.14, SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS 600.
constexpr double kInitRatio = 0.7;
constexpr double kMinRatio = kInitRatio * 0.14;
constexpr double kRatioDecay = (kInitRatio - kMinRatio) / 600.0;
// SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION: a request's output counts at most this much in admission.
constexpr std::int64_t kClipNewTokens = 4096;
// SGLANG_RETRACT_DECODE_STEPS: retraction frees room for this many decode steps of every remaining request.
constexpr std::int64_t kRetractDecodeSteps = 20;

}  // namespace

bool Des::plan_prefill_first(Replica& r) {
  if (r.new_token_ratio < 0) r.new_token_ratio = kInitRatio;
  if (sglang_prefill(r) || sglang_decode(r)) return true;
  if (r.running.empty() && r.waiting.empty()) r.new_token_ratio = kInitRatio;  // an idle scheduler resets it
  return false;
}

// Scheduler.get_new_batch_prefill with PrefillAdder: the chunked request's next chunk first, then waiting
// requests FCFS while the chunk budget lasts, the request pool has room and each request's prompt plus
// clipped output stays below the KV tokens free and evictable minus the reservations (rem_total_tokens).
bool Des::sglang_prefill(Replica& r) {
  const bool chunk = r.chunked >= 0;
  if (r.waiting.empty() && !chunk) return false;
  std::int64_t decoding = 0;
  double offset = 0;                // rem_total_token_offset: the running requests' remaining output x the ratio
  std::vector<std::int64_t> loras;  // multi-LoRA: the running batch's adapters and the new ones'
  for (const std::int64_t id : r.running) {
    const Seq& q = seqs_[static_cast<std::size_t>(id)];
    if (lora_) lora_admits(loras, q.adapter);
    if (id == r.chunked) continue;
    ++decoding;
    offset += dbl(std::min(q.output - q.generated, kClipNewTokens)) * r.new_token_ratio;
  }
  if (!chunk && decoding >= e_.max_num_seqs) return false;  // batch_is_full
  std::int64_t chunk_left = budget();                       // rem_chunk_tokens
  // SGLang allocates a batch's KV only when it runs; this loop allocates as it admits, so the tokens it
  // allocated count as still free for the budget (they are in the offset instead).
  std::int64_t allocated = 0;
  const auto take = [&](Seq& q, std::int64_t n) {
    const std::int64_t before = q.blocks;
    if (!allocate(r, q, n)) return false;
    allocated += (q.blocks - before) * bt();
    return true;
  };
  const auto rem_total = [&] { return dbl((r.free_blocks + r.cache.evictable()) * bt() + allocated) - offset; };

  if (chunk) {  // add_chunked_req: the next chunk of the prompt in progress
    Seq& q = seqs_[static_cast<std::size_t>(r.chunked)];
    const std::int64_t n = std::min(q.total() - q.computed, chunk_left);
    if (!take(q, n)) return false;  // no room for it now: the running batch decodes and frees some
    r.work.push_back({r.chunked, n, q.computed});
    chunk_left -= n;
    offset += dbl(n);
    if (q.computed + n >= q.total()) {  // its last chunk: it decodes from the next iteration on
      offset += dbl(std::min(q.output - q.generated, kClipNewTokens));
      r.chunked = -1;
    }
  }
  std::int64_t fresh = 0;
  while (!r.waiting.empty() && chunk_left > 0 && decoding + fresh < e_.max_num_seqs) {
    const std::int64_t id = r.waiting.front();
    Seq& q = seqs_[static_cast<std::size_t>(id)];
    // More adapters than --max-loras-per-batch: the batch is full (get_new_batch_prefill breaks).
    if (lora_ && !lora_admits(loras, q.adapter)) break;
    const std::int64_t hit = attach_prefix(r, q);  // RadixAttention: the matched prefix is not recomputed
    const std::int64_t ext = q.total() - q.computed;
    const std::int64_t est = std::min(q.output - q.generated, kClipNewTokens);
    // AddReqResult.NO_TOKEN; an engine with nothing running or batched takes its first request whatever the
    // estimate (every request fits the cache alone: feasibility()).
    const bool alone = r.running.empty() && r.work.empty();
    if (dbl(ext + est) >= rem_total() && !alone) {
      detach_prefix(r, q);
      break;
    }
    // A prompt longer than the budget left is truncated (chunked prefill); with chunking off
    // (--chunked-prefill-size -1) it runs whole, alone in its batch if need be.
    const bool whole = ext <= chunk_left || (!e_.chunked_prefill && r.work.empty());
    if (!whole && !e_.chunked_prefill) {
      detach_prefix(r, q);
      break;
    }
    const std::int64_t n = whole ? ext : chunk_left;
    if (!take(q, n)) {
      detach_prefix(r, q);
      break;
    }
    r.waiting.pop_front();
    r.running.push_back(id);
    r.work.push_back({id, n, q.computed});
    chunk_left -= n;
    offset += dbl(n) + (whole ? dbl(est) : 0.0);
    ++fresh;
    if (caching()) {
      prefix_query_tokens_ += q.prompt;
      prefix_hit_tokens_ += hit;
    }
    if (q.cached_tokens < 0) q.cached_tokens = hit;
    if (!whole) {
      r.chunked = id;
      break;
    }
  }
  return !r.work.empty();
}

// Scheduler.update_running_batch: every running request (the chunked one aside) decodes one token; without a
// slot for each, ScheduleBatch.retract_decode sends requests back to the waiting queue, fewest output tokens
// and longest prompt first, until kRetractDecodeSteps tokens per remaining request are free, and sets the
// ratio from the remaining requests' progress; otherwise the ratio decays one step.
bool Des::sglang_decode(Replica& r) {
  std::vector<std::int64_t> dec;
  dec.reserve(r.running.size());
  std::int64_t need = 0;
  for (const std::int64_t id : r.running) {
    if (id == r.chunked) continue;
    const Seq& q = seqs_[static_cast<std::size_t>(id)];
    dec.push_back(id);
    need += std::max<std::int64_t>(0, blocks_for(q.computed + 1) - q.blocks);
  }
  if (dec.empty()) return false;
  if (need > r.free_blocks + r.cache.evictable()) {
    std::vector<std::int64_t> order = dec;
    std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
      const Seq& qa = seqs_[static_cast<std::size_t>(a)];
      const Seq& qb = seqs_[static_cast<std::size_t>(b)];
      if (qa.generated != qb.generated) return qa.generated > qb.generated;
      return qa.prompt < qb.prompt;
    });
    bool first = true;
    while (order.size() > 1 && (first || (r.free_blocks + r.cache.evictable()) * bt() <
                                             kRetractDecodeSteps * static_cast<std::int64_t>(order.size()))) {
      first = false;
      const std::int64_t victim = order.back();
      order.pop_back();
      remove_running(r, victim);
      preempt(r, victim, /*to_back=*/true);  // _extend_requests_to_queue: back to the waiting queue
    }
    std::int64_t decoded = 0, max_new = 0;
    for (const std::int64_t id : order) {
      decoded += seqs_[static_cast<std::size_t>(id)].generated;
      max_new += seqs_[static_cast<std::size_t>(id)].output;
    }
    r.new_token_ratio = std::min(1.0, dbl(decoded + kRetractDecodeSteps * static_cast<std::int64_t>(order.size())) /
                                          dbl(std::max<std::int64_t>(1, max_new)));
    dec.clear();
    for (const std::int64_t id : r.running)
      if (id != r.chunked) dec.push_back(id);
  } else {
    r.new_token_ratio = std::max(r.new_token_ratio - kRatioDecay, kMinRatio);
  }
  for (const std::int64_t id : dec) {
    Seq& q = seqs_[static_cast<std::size_t>(id)];
    if (!allocate(r, q, 1) && r.chunked >= 0) {
      // The one request left cannot decode beside a prompt half prefilled (SGLang asserts here): the chunked
      // request goes back to the waiting queue so that the other can finish.
      remove_running(r, r.chunked);
      preempt(r, r.chunked);
      r.chunked = -1;
      if (allocate(r, q, 1)) {
        r.work.push_back({id, 1, q.computed});
        continue;
      }
    }
    if (q.blocks < blocks_for(q.computed + 1))
      throw Error(ErrorKind::Internal, {},
                  fmt::format("serving: SGLang retraction left request {} without a KV slot", id));
    // Speculative decoding (EAGLE, MTP as NEXTN): the decode batch verifies each request's draft tokens in the
    // same forward pass, in KV slots taken for them beyond the one token (the draft shrinks to the slots left).
    std::int64_t draft = draft_tokens(q, std::numeric_limits<std::int64_t>::max());
    while (draft > 0 && !allocate(r, q, 1 + draft)) --draft;
    r.work.push_back({id, 1 + draft, q.computed, draft});
  }
  return true;
}

}  // namespace llmsim::sim::des
