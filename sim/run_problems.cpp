#include "sim/run_problems.h"

#include "sim/infer_sim.h"
#include "sim/train_sim.h"

namespace llmsim::sim {

std::vector<std::string> run_problems(const model::ModelSpec& m, const hardware::SystemSpec& sys, const RunSpec& run_in) {
  const RunSpec run = with_defaults(run_in);
  std::vector<std::string> why = structural_problems(run, m);
  const auto more = run.workload == Workload::Inference ? inference_problems(m, sys, run) : training_problems(m, sys, run);
  why.insert(why.end(), more.begin(), more.end());
  return why;
}

}  // namespace llmsim::sim
