#pragma once
// The serving tests' hand-computable iteration cost: 1 ms per iteration + 0.1 ms per token computed in it
// (tokens found in a prefix cache are not computed), so that schedules can be checked by hand.
#include <vector>

#include "llmsim/serve/serving_sim.h"

namespace llmsim::test {

inline sim::IterationTimeFn simple_cost() {
  return sim::exact_time([](const std::vector<sim::SequenceWork>& b) {
    double tokens = 0;
    for (const auto& s : b) tokens += static_cast<double>(s.new_tokens);
    return 1e-3 + 1e-4 * tokens;
  });
}

}  // namespace llmsim::test
