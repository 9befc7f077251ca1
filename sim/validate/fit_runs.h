#pragma once
// Fitting a mechanism's parameter from measured runs (`llmsim calibrate fit-runs`): one [efficiency] key of
// fit_keys() (the host critical path's rate host_dispatch_us by default, sim/cost/host_dispatch.h).
// The runs are predicted at each value of a grid with a profile overlay setting the key; the value with the
// least mean absolute log error over the time and throughput rows of the chosen framework profile (all rows
// when none is chosen) is the fit, and leave-one-source-out refits tell what a source the fit never saw gets.
// One number for every system and framework: never a value per source or row.
#include <cstddef>
#include <string>
#include <vector>

#include "llmsim/hardware/efficiency_keys.h"
#include "llmsim/validate/measured_row.h"

namespace llmsim::sim {

// A key fit-runs can fit: its [efficiency] name, the unit its values are in, and the largest value a grid may
// hold. 0 always means "without the mechanism" (the grid's baseline).
struct FitKey {
  const char* name;
  const char* unit;  // "us", or "" for a fraction
  double max;        // grid values must be in [0, max]
};
// host_dispatch_us (the eager host rate), collective_base_us (a collective call's base latency),
// collective_host_us (an eager collective call's host work), deepspeed_hook_us (DeepSpeed's ZeRO hooks),
// comm_interference_fraction (compute lost per second of overlapped communication).
const std::vector<FitKey>& fit_keys();
const FitKey* find_fit_key(const std::string& name);

struct FitRunsOptions {
  // The [efficiency] key fitted (fit_keys()); every other key keeps the systems' values.
  std::string key = hardware::kHostDispatchKey;
  std::vector<double> grid = {0, 10, 15, 20, 22, 24, 26, 28, 30, 32, 35, 40, 50};  // in the key's unit
  std::string profile;      // fit on rows of this framework profile only ("hf"); empty = every row
  std::string scratch_dir;  // where the grid's overlay files are written
};

struct SourceFit {
  std::string source;
  std::size_t rows = 0;        // time and throughput rows of this source
  double loso = 0;             // the value fitted without this source
  double median_none_pct = 0;  // median |error| without the term (rate 0)
  double median_in_pct = 0;    // at the in-sample fit
  double median_loso_pct = 0;  // at loso_us
};

struct FitRunsResult {
  double fitted = 0;            // in the key's unit
  std::size_t rows = 0;         // time and throughput rows predicted at every grid value
  std::size_t fitted_rows = 0;  // of which the fit used (the profile's)
  std::vector<SourceFit> sources;
  std::vector<SourceFit> workloads;  // the same columns by workload (loso unused)
};

FitRunsResult fit_runs_parameter(const std::vector<MeasuredRun>& runs, const std::string& data_dir,
                                 const FitRunsOptions& options);

// A profile overlay (hardware::apply_efficiency_overlay) setting each key to its value, with its source line:
// the grid's overlays and honest LOSO's refitted constants.
void write_efficiency_values(const std::string& path, const std::vector<std::pair<std::string, double>>& values,
                             const std::string& source);

// The fit as a profile overlay (hardware::apply_efficiency_overlay) naming what it was fitted on.
void write_fit_overlay(const std::string& path, const FitRunsResult& fit, const FitRunsOptions& options,
                       const std::vector<std::string>& files);

}  // namespace llmsim::sim
