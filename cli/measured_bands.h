#pragma once
// The measured-run bands of a command's headline figures (sim/validate/regime_bands.h): read
// once from --bands FILE (default <data>/validation/bands.toml; "none" turns them off) and printed by
// `train`, `infer` and `serve` beside the efficiency interval, as table lines and as JSON.
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli_context.h"
#include "llmsim/validate/regime_bands.h"

namespace llmsim::cli {

// --bands FILE|none.
void add_bands_option(CLI::App& app, std::string& file);
// The bands to print with: the file named, else the data folder's, else none.
std::optional<sim::RegimeBands> load_measured_bands(const std::string& option, const CommonOptions& common);

// One headline figure: `value` of `metric` (a measured-run metric name, data/validation/SCHEMA.md), in
// that metric's unit (tpot_ms in ms).
struct BandedFigure {
  std::string metric;
  double value = 0;
};

// "measured-run bands" lines: each figure x its regime's [low .. high], the regime and its rows.
void print_measured_bands(const std::optional<sim::RegimeBands>& bands, const std::string& workload,
                          const std::string& profile, const std::vector<BandedFigure>& figures);
// The same as JSON: {"source", "file", "figures": {metric: {low, high, regime, rows, sources}}}; null when none.
nlohmann::json measured_bands_json(const std::optional<sim::RegimeBands>& bands, const std::string& workload,
                                   const std::string& profile, const std::vector<BandedFigure>& figures);

}  // namespace llmsim::cli
