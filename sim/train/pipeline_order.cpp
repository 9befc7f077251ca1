#include "llmsim/train/pipeline_order.h"

#include <algorithm>

#include <fmt/format.h>

namespace llmsim::sim {

namespace {

// GPipe (Huang et al. 2019): every forward, then every backward.
std::vector<PipeTask> gpipe(int m) {
  std::vector<PipeTask> out;
  for (int i = 0; i < m; ++i) out.push_back({i, 0, true});
  for (int i = 0; i < m; ++i) out.push_back({i, 0, false});
  return out;
}

// Megatron-LM's 1F1B schedules (schedules.py forward_backward_pipelining_{without,with}_interleaving):
// warm-up forwards, a steady one-forward-one-backward phase, cool-down backwards. Non-interleaved:
// warm-up = pp - stage - 1. Interleaved over v chunks: warm-up = (pp - stage - 1) * 2 + (v - 1) * pp,
// and virtual micro-batch k maps to chunk (k / pp) % v (backwards: v - 1 - that) and micro-batch
// (k / (pp * v)) * pp + k % pp.
std::vector<PipeTask> one_f_one_b(int pp, int v, int m, int stage) {
  const int total = m * v;
  int warmup = v == 1 ? pp - stage - 1 : (pp - stage - 1) * 2 + (v - 1) * pp;
  warmup = std::clamp(warmup, 0, total);
  auto task = [&](int k, bool fwd) {
    const int group = k / pp;
    int chunk = group % v;
    if (!fwd) chunk = v - 1 - chunk;
    const int mb = (k / (pp * v)) * pp + k % pp;
    return PipeTask{mb, chunk, fwd};
  };
  std::vector<PipeTask> out;
  out.reserve(2 * static_cast<std::size_t>(total));
  for (int k = 0; k < warmup; ++k) out.push_back(task(k, true));
  for (int i = 0; i < total - warmup; ++i) {
    out.push_back(task(warmup + i, true));
    out.push_back(task(i, false));
  }
  for (int k = total - warmup; k < total; ++k) out.push_back(task(k, false));
  return out;
}

}  // namespace

std::vector<std::vector<PipeTask>> pipeline_order(int pp, int vp, int micro_batches, PipelineSchedule s) {
  std::vector<std::vector<PipeTask>> out(static_cast<std::size_t>(pp));
  for (int stage = 0; stage < pp; ++stage)
    out[static_cast<std::size_t>(stage)] =
        s == PipelineSchedule::GPipe ? gpipe(micro_batches) : one_f_one_b(pp, vp, micro_batches, stage);
  return out;
}

}  // namespace llmsim::sim
