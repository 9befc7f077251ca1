#pragma once
// Measured-run CSV files (data/validation/SCHEMA.md, schema version 1) -> run specs. One row is one
// measured number of one run; the row becomes a ModelSpec (preset, config.json path, or `custom`), a
// system name/path and a RunSpec, with the defaults the simulator applied to empty fields listed.
#include <string>
#include <vector>

#include "model/model_spec.h"
#include "sim/run_spec.h"

namespace llmsim::sim {

struct MeasuredRun {
  std::string file;                    // CSV path
  int line = 0;                        // 1-based line of the row (for messages)
  std::string run_id;
  std::string source;
  std::string workload;                // as written: pretrain, finetune, inference, serving
  model::ModelSpec model;
  std::string system;                  // preset name or path (relative paths resolved against the CSV's folder)
  RunSpec run;
  std::string framework;               // as written
  std::string metric;
  double value = 0;
  double request_rate = 0;             // serving: requests per second; 0 = closed loop (not stated)
  std::string notes;                   // free text, kept for reports; never interpreted
  bool peak_mem_tensors_only = false;  // peak_mem_gib counts tensors only (a source fact; default device memory)
  int source_facts = 0;                // settings taken from the source facts file (each also in `defaults`)
  std::vector<std::string> defaults;   // "recompute=none (not stated)", … for every empty field a default filled
};

// The schema's columns, in SCHEMA.md order.
const std::vector<std::string>& measured_run_columns();
// The schema's metric names.
const std::vector<std::string>& measured_run_metrics();

// Parses the file (RFC 4180). Unknown columns, malformed numbers, unknown enum values and unknown
// models are Input/NotFound errors naming file:line and the column. With `use_facts`, the source facts
// file beside it (sim/source_facts.h), when there is one, fills what the rows cannot state; each use is
// listed in the row's `defaults`.
std::vector<MeasuredRun> load_measured_runs(const std::string& path, const std::string& data_dir,
                                            bool use_facts = true);

}  // namespace llmsim::sim
