#include "llmsim/validate/regime_bands.h"

#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>

#include "llmsim/core/error.h"
#include "llmsim/core/stats.h"
#include "llmsim/core/toml_reader.h"

namespace llmsim::sim {

std::string_view name_of(BandResiduals v) { return v == BandResiduals::HonestLoso ? "honest-loso" : "in-sample"; }

bool parse_name(std::string_view s, BandResiduals& out) {
  for (const BandResiduals v : {BandResiduals::InSample, BandResiduals::HonestLoso})
    if (s == name_of(v)) {
      out = v;
      return true;
    }
  return false;
}

RegimeBands draw_regime_bands(const std::vector<ValidationRow>& rows, const LosoOptions& options, std::string source) {
  std::map<std::string, std::vector<BandSample>> samples;
  for (const ValidationRow& r : rows) {
    if (!band_scored(r)) continue;
    for (const std::string& k : regime_keys(r)) samples[k].push_back({time_ratio(r), &r.source});
  }
  RegimeBands out;
  out.source = std::move(source);
  for (const auto& [k, v] : samples) {
    const std::size_t sources = distinct_sources(v);
    if (v.size() < options.min_rows || sources < options.min_sources) continue;
    const auto [lo, hi] = band_quantiles(v, options);
    out.bands.push_back(RegimeBand{.regime = k, .low = lo, .high = hi, .rows = v.size(), .sources = sources});
  }
  return out;
}

void write_regime_bands(const std::string& path, const RegimeBands& b) {
  std::ofstream o(path);
  if (!o) throw_input(Location{.file = path}, "cannot open the bands file for writing");
  o << "# Written by llmsim validate --write-bands (sim/validate/regime_bands.h): per regime, the 10th and "
       "90th\n"
       "# percentiles (low, high) of measured / predicted time; a rate's band is its prediction / high .. / low.\n";
  if (b.residuals == BandResiduals::HonestLoso)
    o << "# Drawn from honest leave-one-source-out residuals (validate --loso): each source predicted as a user's\n"
         "# own file; each source's rows weigh alike, and a band's half-widths grow by sqrt(1 + 1/k) for k sources.\n";
  o << "schema_version = 1\n";
  o << fmt::format("source = \"{}\"\n", b.source);
  o << fmt::format("residuals = \"{}\"\n", name_of(b.residuals));
  for (const RegimeBand& r : b.bands)
    o << fmt::format("\n[[band]]\nregime = \"{}\"\nlow = {:.6g}\nhigh = {:.6g}\nrows = {}\nsources = {}\n", r.regime,
                     r.low, r.high, r.rows, r.sources);
}

RegimeBands load_regime_bands(const std::string& path) {
  const toml::table root = parse_toml_file(path);
  TomlReader top(root, path);
  top.require_schema_version(1, "bands files");
  RegimeBands out;
  out.file = path;
  out.source = top.opt_string("source").value_or("");
  if (const auto r = top.opt_string("residuals"); r && !parse_name(*r, out.residuals))
    throw_input(top.where("residuals"),
                fmt::format("residuals = '{}' is not one of: {}, {}", *r, name_of(BandResiduals::HonestLoso),
                            name_of(BandResiduals::InSample)));
  top.ignore("band");
  top.finish();
  const toml::node* node = root.get("band");
  if (!node) return out;
  const toml::array* list = node->as_array();
  if (!list || !list->is_array_of_tables())
    throw_input(top.where("band"), "'band' must be an array of tables ([[band]])");
  for (std::size_t i = 0; i < list->size(); ++i) {
    TomlReader t(*list->get(i)->as_table(), path, fmt::format("band[{}]", i));
    RegimeBand r;
    r.regime = t.string("regime");
    r.low = t.positive("low");
    r.high = t.positive("high");
    if (r.high < r.low) throw_input(t.where("high"), fmt::format("high = {} must be >= low = {}", r.high, r.low));
    r.rows = static_cast<std::size_t>(t.integer("rows"));
    r.sources = static_cast<std::size_t>(t.integer("sources"));
    t.finish();
    out.bands.push_back(std::move(r));
  }
  return out;
}

std::optional<RegimeBand> band_for(const RegimeBands& bands, const std::string& workload, const std::string& profile,
                                   const std::string& metric) {
  for (const std::string& k : regime_keys(workload, profile, metric))
    for (const RegimeBand& b : bands.bands)
      if (b.regime == k) return b;
  return std::nullopt;
}

}  // namespace llmsim::sim
