#pragma once
// Chrome trace-event JSON (Perfetto, chrome://tracing) of a serving simulation: one process per replica,
// its iterations on track 0 ("iterations", prefill / decode / mixed slices with their batch) with an
// engine counter of batch size and KV tokens, and each request's lifetime (queued -> prefill -> decode)
// as async slices on track 1 ("requests"). Times are written as microseconds of whole nanoseconds, start
// and end rounded apart, so back-to-back iterations meet exactly and nest in a viewer.
#include <cstddef>
#include <ostream>

#include "llmsim/serve/serving_sim.h"

namespace llmsim::sim {

// Writes the trace of `r` to `out`; returns the number of trace events written.
std::size_t write_serving_trace(std::ostream& out, const ServingResult& r);

}  // namespace llmsim::sim
