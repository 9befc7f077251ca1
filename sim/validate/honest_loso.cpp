#include "llmsim/validate/honest_loso.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "llmsim/hardware/efficiency_keys.h"

namespace llmsim::sim {

const std::vector<RefittedConstant>& refitted_constants() {
  static const std::vector<RefittedConstant> constants = {
      {hardware::kHostDispatchKey, "hf", {0, 10, 15, 20, 22, 24, 26, 28, 30, 32, 35, 40, 50}},
      {hardware::kCollectiveBaseKey, "", {0, 10, 20, 30, 35, 40, 45, 50, 60, 80, 100}},
      {hardware::kDeepSpeedHookKey, "deepspeed", {0, 50, 100, 120, 140, 160, 200, 250}},
  };
  return constants;
}

namespace {

// The profile a run is predicted as (before any fill): what fit-runs' --profile selects.
std::string profile_of(const MeasuredRun& r) {
  return std::string(name_of(r.run.workload == Workload::Inference ? r.run.infer.framework : r.run.train.framework));
}

}  // namespace

HonestLosoResult honest_loso(const std::vector<MeasuredRun>& runs, const std::string& data_dir,
                             const HonestLosoOptions& options) {
  namespace fs = std::filesystem;
  fs::create_directories(options.scratch_dir);
  const auto say = [&](const std::string& s) {
    if (options.progress) options.progress(s);
  };
  HonestLosoResult out;
  // Per source, the value of each constant fitted without it; nullopt: no other source's rows, so the
  // profile's own value stays.
  std::map<std::string, std::vector<std::optional<double>>> per_source;
  for (const MeasuredRun& r : runs) per_source[source_document(r.source)];
  for (const RefittedConstant& c : refitted_constants()) {
    // The grid needs only the rows the fit reads.
    std::vector<MeasuredRun> fitted;
    for (const MeasuredRun& r : runs)
      if (r.error.empty() && r.unsupported.empty() && (c.profile.empty() || profile_of(r) == c.profile))
        fitted.push_back(r);
    say(fmt::format("refitting {} on {} rows{} over {} grid values", c.key, fitted.size(),
                    c.profile.empty() ? "" : " of the " + c.profile + " profile", c.grid.size()));
    FitRunsOptions fo;
    fo.key = c.key;
    fo.grid = c.grid;
    fo.profile = c.profile;
    fo.scratch_dir = (fs::path(options.scratch_dir) / c.key).string();
    const FitRunsResult fit = fit_runs_parameter(fitted, data_dir, fo);
    ConstantRefit refit{
        .key = c.key, .rows = fit.fitted_rows, .all_sources = fit.fitted, .low = fit.fitted, .high = fit.fitted};
    std::map<std::string, const SourceFit*> by_source;
    for (const SourceFit& s : fit.sources) by_source[s.source] = &s;
    for (auto& [source, values] : per_source) {
      // A source without rows in this fit leaves the fit as it is on every source; one whose rows are all the
      // fit has leaves nothing to refit on.
      const auto it = by_source.find(source);
      const std::size_t own = it == by_source.end() ? 0 : it->second->rows;
      if (fit.fitted_rows <= own) {
        values.emplace_back(std::nullopt);
        ++refit.sources_kept;
        continue;
      }
      const double v = it == by_source.end() ? fit.fitted : it->second->loso;
      values.emplace_back(v);
      refit.low = std::min(refit.low, v);
      refit.high = std::max(refit.high, v);
      if (v != fit.fitted) ++refit.sources_moved;
    }
    if (refit.rows == 0)
      say(fmt::format("  {}: no rows to fit; every source keeps the profile's value", c.key));
    else
      say(
          fmt::format("  {} = {:g} on every source; {:g} to {:g} without one ({} sources moved it, {} keep the "
                      "profile's value)",
                      c.key, fit.fitted, refit.low, refit.high, refit.sources_moved, refit.sources_kept));
    out.refits.push_back(refit);
  }
  // Predict each source's rows with its own refitted constants; sources sharing a set share an overlay.
  std::map<std::vector<std::optional<double>>, std::vector<std::string>> groups;
  for (const auto& [source, values] : per_source) groups[values].push_back(source);
  out.overlays = groups.size();
  say(fmt::format("predicting {} sources with {} sets of refitted constants", per_source.size(), groups.size()));
  std::map<std::string, std::string> overlay_of;
  std::size_t n = 0;
  for (const auto& [values, members] : groups) {
    const std::string path = (fs::path(options.scratch_dir) / fmt::format("loso-{}.toml", n++)).string();
    std::vector<std::pair<std::string, double>> keyed;
    for (std::size_t k = 0; k < values.size(); ++k)
      if (values[k]) keyed.emplace_back(refitted_constants()[k].key, *values[k]);
    write_efficiency_values(path, keyed, "llmsim validate --loso: constants refitted without the source");
    for (const auto& s : members) overlay_of[s] = path;
  }
  // predict_rows resolves each system once per call: one call per overlay, the rows put back in order.
  out.rows.resize(runs.size());
  std::map<std::string, std::vector<std::size_t>> rows_of;
  for (std::size_t i = 0; i < runs.size(); ++i) rows_of[overlay_of.at(source_document(runs[i].source))].push_back(i);
  for (const auto& [path, idx] : rows_of) {
    std::vector<MeasuredRun> part;
    part.reserve(idx.size());
    for (std::size_t i : idx) part.push_back(runs[i]);
    std::vector<ValidationRow> predicted = predict_rows(part, data_dir, path);
    for (std::size_t j = 0; j < idx.size(); ++j) out.rows[idx[j]] = std::move(predicted[j]);
  }
  apply_loso_intervals(out.rows, options.bands);
  return out;
}

}  // namespace llmsim::sim
