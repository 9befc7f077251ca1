#include "measured_bands.h"

#include <filesystem>
#include <iostream>

#include <fmt/format.h>

namespace llmsim::cli {

void add_bands_option(CLI::App& app, std::string& file) {
  app.add_option("--bands", file,
                 "measured-run bands to print beside the prediction (default: <data>/validation/bands.toml, "
                 "drawn by validate --write-bands; 'none' for none)")
      ->type_name("FILE|none");
}

std::optional<sim::RegimeBands> load_measured_bands(const std::string& option, const CommonOptions& common) {
  if (option == "none") return std::nullopt;
  if (!option.empty()) return sim::load_regime_bands(option);
  const auto path = std::filesystem::path(common.resolved_data_dir()) / "validation" / "bands.toml";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return std::nullopt;
  return sim::load_regime_bands(path.string());
}

void print_measured_bands(const std::optional<sim::RegimeBands>& bands, const std::string& workload,
                          const std::string& profile, const std::vector<BandedFigure>& figures) {
  if (!bands) return;
  bool first = true;
  for (const BandedFigure& f : figures) {
    const auto b = sim::band_for(*bands, workload, profile, f.metric);
    if (!b) continue;
    if (first)
      std::cout << (bands->residuals == sim::BandResiduals::HonestLoso
                        ? "measured-run bands (where 10-90 % of a new source's measured runs of this regime can be "
                          "expected: the development files' honest leave-one-source-out residuals, each source "
                          "weighing alike)\n"
                        : "measured-run bands (where 10-90 % of the development files' measured runs of this regime "
                          "fell around their predictions)\n");
    first = false;
    const auto [lo, hi] = sim::band_interval(f.metric, f.value, b->low, b->high);
    std::cout << fmt::format("  {:<22} {:.4g} .. {:.4g}   ({} rows of {} sources: {})\n", f.metric, lo, hi, b->rows,
                             b->sources, b->regime);
  }
}

nlohmann::json measured_bands_json(const std::optional<sim::RegimeBands>& bands, const std::string& workload,
                                   const std::string& profile, const std::vector<BandedFigure>& figures) {
  if (!bands) return nullptr;
  nlohmann::json figs = nlohmann::json::object();
  for (const BandedFigure& f : figures)
    if (const auto b = sim::band_for(*bands, workload, profile, f.metric)) {
      const auto [lo, hi] = sim::band_interval(f.metric, f.value, b->low, b->high);
      figs[f.metric] = {{"low", lo}, {"high", hi}, {"regime", b->regime}, {"rows", b->rows}, {"sources", b->sources}};
    }
  return {{"source", bands->source},
          {"file", bands->file},
          {"residuals", sim::name_of(bands->residuals)},
          {"figures", figs}};
}

}  // namespace llmsim::cli
