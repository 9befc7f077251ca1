#pragma once
// Fitting a mechanism's parameter from measured runs (`llmsim calibrate fit-runs`): the host critical
// path's rate, Efficiency::host_dispatch_s (src/llmsim/cost/host_dispatch.h). The runs are predicted at
// each value of a grid with a profile overlay setting host_dispatch_us; the value with the least mean
// absolute log error over the time and throughput rows of the chosen framework profile (all rows when
// none is chosen) is the fit, and leave-one-source-out refits tell what a source the fit never saw gets.
// One number for every system and framework: never a value per source or row.
#include <cstddef>
#include <string>
#include <vector>

#include "llmsim/hardware/efficiency_keys.h"
#include "llmsim/validate/measured_row.h"

namespace llmsim::sim {

struct FitRunsOptions {
  // The [efficiency] key fitted, in microseconds: host_dispatch_us (the eager host rate),
  // collective_base_us (a collective call's base latency), collective_host_us (an eager collective call's host
  // work) or deepspeed_hook_us (DeepSpeed's ZeRO hooks);
  // every other key keeps the systems' values.
  std::string key = hardware::kHostDispatchKey;
  std::vector<double> grid_us = {0, 10, 15, 20, 22, 24, 26, 28, 30, 32, 35, 40, 50};
  std::string profile;      // fit on rows of this framework profile only ("hf"); empty = every row
  std::string scratch_dir;  // where the grid's overlay files are written
};

struct SourceFit {
  std::string source;
  std::size_t rows = 0;        // time and throughput rows of this source
  double loso_us = 0;          // the value fitted without this source
  double median_none_pct = 0;  // median |error| without the term (rate 0)
  double median_in_pct = 0;    // at the in-sample fit
  double median_loso_pct = 0;  // at loso_us
};

struct FitRunsResult {
  double fitted_us = 0;
  std::size_t rows = 0;         // time and throughput rows predicted at every grid value
  std::size_t fitted_rows = 0;  // of which the fit used (the profile's)
  std::vector<SourceFit> sources;
  std::vector<SourceFit> workloads;  // the same columns by workload (loso_us unused)
};

FitRunsResult fit_host_dispatch(const std::vector<MeasuredRun>& runs, const std::string& data_dir,
                                const FitRunsOptions& options);

// The fit as a profile overlay (hardware::apply_efficiency_overlay) naming what it was fitted on.
void write_fit_overlay(const std::string& path, const FitRunsResult& fit, const FitRunsOptions& options,
                       const std::vector<std::string>& files);

}  // namespace llmsim::sim
