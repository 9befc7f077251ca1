#pragma once
// Bands of measured / predicted by regime: the range the development files' measured runs of a kind of
// prediction fell in, around the prediction. `llmsim validate FILES --write-bands OUT` draws them from
// every source (the 10th and 90th percentiles of time_ratio() per regime, docs/validation.md);
// data/validation/bands.toml ships them, and `train`, `infer` and `serve` print the band of each headline
// figure beside the efficiency interval. Their coverage on a source they were not drawn from is what
// `validate --loso` measures.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "llmsim/validate/validation.h"

namespace llmsim::sim {

struct RegimeBand {
  std::string regime;        // one of regime_keys(): "pretrain / megatron / step_time_s", ..., "time"
  double low = 1, high = 1;  // time_ratio() at the low and high quantiles (band_interval applies them)
  std::size_t rows = 0;      // rows it was drawn from
  std::size_t sources = 0;   // distinct sources among them
};

// Which residuals a bands file was drawn from: the predictions of `validate --loso` (each source as a user's
// own file, each source weighing alike; the bands llmsim ships) or those of a plain `validate` run.
enum class BandResiduals { InSample, HonestLoso };
std::string_view name_of(BandResiduals v);                // "in-sample", "honest-loso" (the TOML and JSON value)
bool parse_name(std::string_view s, BandResiduals& out);  // false when unknown (out untouched)

struct RegimeBands {
  std::vector<RegimeBand> bands;
  BandResiduals residuals = BandResiduals::InSample;
  std::string source;  // what they were drawn from
  std::string file;    // where they were read from ("" when drawn in this process)
};

// One band per regime that holds at least options.min_rows scored rows (every level of regime_keys()).
RegimeBands draw_regime_bands(const std::vector<ValidationRow>& rows, const LosoOptions& options, std::string source);

// TOML: schema_version = 1, source, residuals ("honest-loso" or "in-sample", the default), and one [[band]]
// per regime (regime, low, high, rows, sources).
void write_regime_bands(const std::string& path, const RegimeBands& bands);
RegimeBands load_regime_bands(const std::string& path);

// The band of the narrowest regime of (workload, profile, metric) that has one.
std::optional<RegimeBand> band_for(const RegimeBands& bands, const std::string& workload, const std::string& profile,
                                   const std::string& metric);

}  // namespace llmsim::sim
