#pragma once
// Honest leave-one-source-out (`llmsim validate --loso`): every source predicted as a user's own file would
// be. Its rows lose every source fact (a user's file has none; another source's facts never cover its rows),
// every constant fitted on the development files is refitted without its rows (the keys of
// refitted_constants(), each by fit-runs' grid over the other sources), and its band comes from the other
// sources' honest residuals (apply_loso_intervals). The caller loads the runs without facts.
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "llmsim/validate/fit_runs.h"
#include "llmsim/validate/measured_runs.h"
#include "llmsim/validate/validation.h"

namespace llmsim::sim {

// A constant shipped fitted (hardware/efficiency.cpp says "fitted by llmsim calibrate fit-runs") with the
// profile and grid it was fitted over.
struct RefittedConstant {
  std::string key;      // its [efficiency] key
  std::string profile;  // fitted on that profile's rows ("" = every row)
  std::vector<double> grid;
};
// host_dispatch_us (hf rows, 0-50 us), collective_base_us (every row, 0-100 us), deepspeed_hook_us
// (deepspeed rows, 0-250 us): the grids their shipped values were chosen on.
const std::vector<RefittedConstant>& refitted_constants();

struct ConstantRefit {
  std::string key;
  std::size_t rows = 0;           // rows the fit read (0: nothing to fit; every source keeps the profile's value)
  double all_sources = 0;         // fitted on every source (no facts)
  double low = 0, high = 0;       // the range of the per-source refits
  std::size_t sources_moved = 0;  // sources whose refit differs from all_sources
  // Sources that keep the profile's own value: no other source has rows to refit it on (a fit over no rows
  // would be the grid's first value, not a measurement).
  std::size_t sources_kept = 0;
};

struct HonestLosoResult {
  std::vector<ValidationRow> rows;  // in the runs' order, with LOSO bands
  std::vector<ConstantRefit> refits;
  std::size_t overlays = 0;  // distinct sets of refitted constants the sources were predicted with
};

struct HonestLosoOptions {
  std::string scratch_dir;  // the grids' and sources' overlay files
  LosoOptions bands;
  std::function<void(const std::string&)> progress;  // one line per stage (stderr in the CLI); may be empty
};

HonestLosoResult honest_loso(const std::vector<MeasuredRun>& runs, const std::string& data_dir,
                             const HonestLosoOptions& options);

}  // namespace llmsim::sim
