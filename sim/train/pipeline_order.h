#pragma once
// The order in which each pipeline stage runs its forward and backward passes over the micro-batches
// (and, interleaved, over its model chunks): GPipe, 1F1B (PipeDream-Flush) and Megatron's interleaved
// 1F1B. Pure functions of (pp, vp, micro-batches); the step graph builder turns them into edges.
#include <cstdint>
#include <string>
#include <vector>

#include "llmsim/run/run_spec.h"

namespace llmsim::sim {

struct PipeTask {
  int micro_batch = 0;
  int chunk = 0;  // model chunk (virtual stage) on this GPU, 0..vp-1
  bool forward = true;
};

// Per stage (index 0..pp-1) its task sequence; each holds micro_batches * vp forwards and as many
// backwards.
std::vector<std::vector<PipeTask>> pipeline_order(int pp, int vp, int micro_batches, PipelineSchedule s);

}  // namespace llmsim::sim
