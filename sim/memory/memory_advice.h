#pragma once
// "Which option would make it fit": single changes to a run that does not fit, each re-evaluated with
// the same memory model, in order from least to most invasive.
#include <string>
#include <vector>

#include "llmsim/memory/memory_model.h"

namespace llmsim::sim {

struct FitSuggestion {
  std::string change;    // as flags, e.g. "--recompute full"
  double gpu_bytes = 0;  // peak per-GPU bytes with the change
  double host_bytes = 0;
};

// At most `limit` changes that make the run fit (empty when none of the single changes does).
std::vector<FitSuggestion> suggest_fits(const model::ModelSpec& m, const hardware::SystemSpec& sys, const RunSpec& run,
                                        std::size_t limit = 4);

}  // namespace llmsim::sim
