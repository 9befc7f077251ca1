#pragma once
// Every reason a run cannot execute at all, whatever the memory: the structural rules of the run spec
// and what the framework, engine, attention kernel or GPU does not support. One list for
// `llmsim memory` and its fit advice, so that neither offers a configuration the time simulators reject.
#include <string>
#include <vector>

#include "hardware/system_spec.h"
#include "model/model_spec.h"
#include "sim/run_spec.h"

namespace llmsim::sim {

std::vector<std::string> run_problems(const model::ModelSpec& m, const hardware::SystemSpec& sys, const RunSpec& run);

}  // namespace llmsim::sim
