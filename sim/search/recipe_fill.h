#pragma once
// A measured run ran, so its configuration fit in memory. When a run leaves settings unstated and the
// framework recipe's defaults for them (sim/run/framework_catalog.h) do not fit, the settings it most
// plausibly ran with are the feasible ones with the best throughput: a search (sim/search/search.h) over the
// unstated axes only, every stated setting fixed. Used by `llmsim validate` (docs/validation.md).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "llmsim/hardware/system_spec.h"
#include "llmsim/model/model_spec.h"
#include "llmsim/run/run_spec.h"
#include "llmsim/train/train_sim.h"

namespace llmsim::sim {

struct RecipeFill {
  RunSpec run;                      // the chosen configuration (with_defaults applied)
  TrainResult result;               // simulate_training of `run` (the search's re-evaluation of its best)
  std::vector<std::string> chosen;  // the settings that differ from the recipe's: "recompute=full", …
  std::size_t candidates = 0;       // configurations of the unstated axes that were considered
};

// The settings a fill may choose, when a run leaves them unstated.
enum class FillAxis { Recompute, SequenceParallel, ZeroStage, MicroBatch };
std::string_view name_of(FillAxis a);  // the measured-run column: "recompute", "sequence_parallel", …
std::string join_axes(const std::vector<FillAxis>& axes);  // "recompute, zero_stage"

// The best feasible setting of `free_axes` for a training run, by tokens/s; nullopt when no setting of
// them fits or none is free. A free recompute axis takes the `recompute_modes` the run's software offers
// (empty: none, selective and full).
std::optional<RecipeFill> best_feasible_fill(const model::ModelSpec& m, const hardware::SystemSpec& sys,
                                             const RunSpec& run, const std::vector<FillAxis>& free_axes,
                                             const std::vector<Recompute>& recompute_modes = {});

}  // namespace llmsim::sim
