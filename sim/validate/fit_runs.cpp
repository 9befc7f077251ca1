#include "llmsim/validate/fit_runs.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "llmsim/core/error.h"
#include "llmsim/core/stats.h"
#include "llmsim/validate/validation.h"

namespace llmsim::sim {

namespace {

struct Scored {
  std::string key;  // file:line:metric, the same row at every grid value
  std::string source, workload, profile;
  double log_ratio = 0;  // log(predicted / measured)
};

std::vector<Scored> score(const std::vector<ValidationRow>& rows) {
  std::vector<Scored> out;
  for (const ValidationRow& r : rows) {
    if (!band_scored(r) || metric_kind(r.metric) == MetricKind::Memory) continue;
    out.push_back({fmt::format("{}:{}:{}", r.file, r.line, r.metric), r.source, r.workload,
                   r.framework_profile.empty() ? r.framework : r.framework_profile,
                   std::log(r.predicted / r.measured)});
  }
  return out;
}

double median_pct(const std::vector<double>& logs) {
  if (logs.empty()) return 0;
  std::vector<double> e;
  for (double l : logs) e.push_back(100.0 * std::abs(std::expm1(l)));
  return median(e);
}

}  // namespace

const std::vector<FitKey>& fit_keys() {
  static const std::vector<FitKey> keys = {
      {hardware::kHostDispatchKey, "us", 1e6},
      {hardware::kCollectiveBaseKey, "us", 1e6},
      {hardware::kCollectiveHostKey, "us", 1e6},
      {hardware::kDeepSpeedHookKey, "us", 1e6},
      {hardware::fraction_key(hardware::FractionField::CommInterference).toml_key, "", 0.95},
  };
  return keys;
}

const FitKey* find_fit_key(const std::string& name) {
  for (const FitKey& k : fit_keys())
    if (name == k.name) return &k;
  return nullptr;
}

FitRunsResult fit_runs_parameter(const std::vector<MeasuredRun>& runs, const std::string& data_dir,
                                 const FitRunsOptions& options) {
  const FitKey* fk = find_fit_key(options.key);
  if (!fk) throw_input(Location{.key = "key"}, fmt::format("'{}' is not a key fit-runs fits", options.key));
  std::vector<double> grid = options.grid;
  if (std::find(grid.begin(), grid.end(), 0.0) == grid.end()) grid.insert(grid.begin(), 0.0);
  for (double g : grid)
    if (!std::isfinite(g) || g < 0 || g > fk->max)
      throw_input(Location{.key = "grid"},
                  fmt::format("grid value {} of {} must be a finite number in [0, {}]{}", g, fk->name, fk->max,
                              *fk->unit ? fmt::format(" ({})", fk->unit) : ""));
  std::filesystem::create_directories(options.scratch_dir);
  // Predictions at every grid value, keyed by row.
  std::vector<std::map<std::string, Scored>> at(grid.size());
  for (std::size_t i = 0; i < grid.size(); ++i) {
    const std::string overlay = (std::filesystem::path(options.scratch_dir) / fmt::format("host-{}.toml", i)).string();
    write_efficiency_values(overlay, {{options.key, grid[i]}}, "fit grid");
    for (Scored& s : score(predict_rows(runs, data_dir, overlay))) at[i].emplace(s.key, std::move(s));
  }
  // Rows predicted at every value.
  std::vector<std::string> keys;
  for (const auto& [k, s] : at[0]) {
    bool everywhere = true;
    for (const auto& m : at) everywhere = everywhere && m.count(k);
    if (everywhere) keys.push_back(k);
  }
  const auto& base = at[0];
  const auto fitted = [&](const std::string& k) {
    return options.profile.empty() || base.at(k).profile == options.profile;
  };
  const auto best = [&](const std::string& left_out) {
    double best_us = grid[0], best_err = INFINITY;
    for (std::size_t i = 0; i < grid.size(); ++i) {
      double sum = 0;
      std::size_t n = 0;
      for (const auto& k : keys)
        if (fitted(k) && base.at(k).source != left_out) {
          sum += std::abs(at[i].at(k).log_ratio);
          ++n;
        }
      const double err = n > 0 ? sum / static_cast<double>(n) : INFINITY;
      if (err < best_err) best_err = err, best_us = grid[i];
    }
    return best_us;
  };
  const auto index_of = [&](double us) {
    return static_cast<std::size_t>(std::find(grid.begin(), grid.end(), us) - grid.begin());
  };
  FitRunsResult r;
  r.fitted = best("");
  r.rows = keys.size();
  r.fitted_rows = static_cast<std::size_t>(std::count_if(keys.begin(), keys.end(), fitted));
  const std::size_t in = index_of(r.fitted);
  std::map<std::string, std::vector<std::string>> by_source, by_workload;
  for (const auto& k : keys) {
    by_source[base.at(k).source].push_back(k);
    by_workload[base.at(k).workload].push_back(k);
  }
  std::map<std::string, double> loso_log;  // each row at its source's left-out fit
  for (const auto& [src, ks] : by_source) {
    SourceFit f{.source = src, .rows = ks.size(), .loso = best(src)};
    const std::size_t lo = index_of(f.loso);
    std::vector<double> none, ins, loso;
    for (const auto& k : ks) {
      none.push_back(base.at(k).log_ratio);
      ins.push_back(at[in].at(k).log_ratio);
      loso.push_back(at[lo].at(k).log_ratio);
      loso_log[k] = at[lo].at(k).log_ratio;
    }
    f.median_none_pct = median_pct(none);
    f.median_in_pct = median_pct(ins);
    f.median_loso_pct = median_pct(loso);
    r.sources.push_back(std::move(f));
  }
  for (const auto& [w, ks] : by_workload) {
    SourceFit f{.source = w, .rows = ks.size()};
    std::vector<double> none, ins, loso;
    for (const auto& k : ks) {
      none.push_back(base.at(k).log_ratio);
      ins.push_back(at[in].at(k).log_ratio);
      loso.push_back(loso_log.at(k));
    }
    f.median_none_pct = median_pct(none);
    f.median_in_pct = median_pct(ins);
    f.median_loso_pct = median_pct(loso);
    r.workloads.push_back(std::move(f));
  }
  return r;
}

void write_efficiency_values(const std::string& path, const std::vector<std::pair<std::string, double>>& values,
                             const std::string& source) {
  std::ofstream o(path);
  if (!o) throw_input(Location{.file = path}, "cannot open the overlay for writing");
  o << "schema_version = 1\n[efficiency]\n";
  for (const auto& [key, value] : values) o << fmt::format("{} = {}\n", key, value);
  o << fmt::format("source = \"{}\"\n", source);
}

void write_fit_overlay(const std::string& path, const FitRunsResult& fit, const FitRunsOptions& options,
                       const std::vector<std::string>& files) {
  std::ofstream o(path);
  if (!o) throw_input(Location{.file = path}, "cannot open the overlay for writing");
  o << fmt::format("# Written by llmsim calibrate fit-runs: {} fitted on\n", options.key);
  for (const auto& f : files) o << "#   " << f << "\n";
  o << fmt::format("# ({} of {} time/throughput rows{}; leave-one-source-out fits in the command's report).\n",
                   fit.fitted_rows, fit.rows, options.profile.empty() ? "" : ", profile " + options.profile);
  o << "schema_version = 1\n[efficiency]\n";
  o << fmt::format("{} = {}\n", options.key, fit.fitted);
  // The band: the range of the leave-one-source-out fits (what the value is, a source away), for the keys
  // that carry one.
  double lo = fit.fitted, hi = fit.fitted;
  for (const auto& s : fit.sources) lo = std::min(lo, s.loso), hi = std::max(hi, s.loso);
  const auto& us = hardware::banded_us_keys();
  const auto fractions = hardware::banded_fraction_keys();
  if (std::find(us.begin(), us.end(), options.key) != us.end() ||
      std::find(fractions.begin(), fractions.end(), options.key) != fractions.end())
    o << fmt::format("{0}_low = {1}\n{0}_high = {2}\n", options.key, lo, hi);
  o << "source = \"fitted by llmsim calibrate fit-runs on measured runs\"\n";
}

}  // namespace llmsim::sim
