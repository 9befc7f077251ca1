#pragma once
// Chrome trace-event JSON (opens in Perfetto or chrome://tracing) of a scheduled step: one process per
// pipeline stage, one thread (track) per resource of that stage.
#include <ostream>
#include <vector>

#include "llmsim/train/train_sim.h"

namespace llmsim::sim {

void write_chrome_trace(std::ostream& out, const std::vector<TraceEvent>& events);

}  // namespace llmsim::sim
