#pragma once
// The documents of the commands that simulate one run (docs/output-schema.md, "train", "memory" and
// "infer"): the header with the run as simulated, the verdict, and the figures with their bands, built here
// in the library from the simulators' records. The callers add what only they know (the measured-run bands
// they loaded, train's --schedule spans).
#include <vector>

#include <nlohmann/json.hpp>

#include "llmsim/hardware/system_spec.h"
#include "llmsim/infer/infer_sim.h"
#include "llmsim/memory/memory_advice.h"
#include "llmsim/memory/memory_model.h"
#include "llmsim/model/model_spec.h"
#include "llmsim/run/run_config.h"
#include "llmsim/train/train_sim.h"

namespace llmsim::report {

nlohmann::json train_document(const model::ModelSpec& m, const hardware::SystemSpec& sys, const sim::RunRequest& req,
                              const sim::RunSpec& run, const sim::TrainResult& r);
// `fixes`: the single changes that would make a run that does not fit fit (sim::fit_suggestions).
nlohmann::json memory_document(const model::ModelSpec& m, const hardware::SystemSpec& sys, const sim::RunRequest& req,
                               const sim::RunSpec& run, const sim::MemoryResult& r,
                               const std::vector<sim::FitSuggestion>& fixes);
nlohmann::json infer_document(const model::ModelSpec& m, const hardware::SystemSpec& sys, const sim::RunRequest& req,
                              const sim::RunSpec& run, const sim::InferResult& r);

}  // namespace llmsim::report
