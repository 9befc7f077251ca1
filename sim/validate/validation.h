#pragma once
// Validation against measured runs: each measured-run row (sim/validate/measured_runs.h) becomes a prediction of
// the same metric by the simulator, with its relative error, and the rows are summarised by workload,
// metric, system and feature. Prediction rules are in docs/validation.md. No printing here.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "llmsim/core/stats.h"
#include "llmsim/run/run_spec.h"
#include "llmsim/validate/measured_runs.h"

namespace llmsim::sim {

inline constexpr const char* kValidationOk = "ok";
inline constexpr std::string_view kValidationErrorPrefix = "error: ";              // the row breaks a schema rule
inline constexpr std::string_view kValidationUnsupportedPrefix = "unsupported: ";  // valid, but not predicted

struct ValidationRow {
  std::string file;  // measured-run CSV
  int line = 0;      // 1-based line of the row in it
  std::string run_id, workload, metric, system, framework;
  std::string framework_profile;  // the profile that stood in for `framework` ("fsdp"), or "" when none
  std::string source;             // the document the row cites: its source column up to " @", " (" or ","
  double measured = 0;
  double predicted = 0, low = 0, high = 0;  // best estimate and band (only when ok)
  double error_pct = 0;                     // (predicted - measured) / measured * 100; fits: 0 agree, 100 disagree
  std::string status;                       // "ok", "error: file:line: column: value: rule" or "unsupported: reason"
  std::string error_column;           // error rows: the column whose value breaks the rule ("" for the row's shape)
  std::string note;                   // e.g. "predicted OOM (…)": the prediction assumes the run executed
  std::vector<std::string> features;  // tp, pp, vp, cp, ep, sp, dp, zero1..3, recompute-*, offload, lora, …
  std::vector<std::string> defaults;  // defaults the reader filled for fields the source did not state

  bool ok() const { return status == kValidationOk; }
  bool is_error() const { return status.starts_with(kValidationErrorPrefix); }
};

// Features of a run spec used to group errors (after with_defaults): training "tp", "pp", "vp", "cp",
// "ep", "dp", "sp" (sequence parallel), "zero1".."zero3", "recompute-selective", "recompute-full",
// "offload", "offload-params", "lora", "qlora", "flash", "gpipe"; inference "tp", "pp", "quant-<fmt>",
// "kv-fp8". Sorted by the order above; empty for a plain single-GPU run.
std::vector<std::string> run_features(const RunSpec& run);

// True when a tflops_per_gpu row's notes say the source counts the activation-recomputation FLOPs
// (hardware FLOPs): case-insensitive "includes recompute(ation)", "including the recompute", "counts
// recompute", "recompute FLOPs are counted", "hardware flops", or Narayanan et al. 2021's "Eq.3"/"Eq. 3"
// (whose FLOP formula assumes the recomputation forward pass); not right after a negation. The schema
// asks sources to say this in the notes.
bool notes_count_recompute_flops(const std::string& notes);
// True when they say the source's formula halves the attention FLOPs for the causal mask ("causal
// attention halved", xtuner's ThroughputHook); llmsim's own convention counts them in full.
bool notes_halve_causal_attention(const std::string& notes);

// The document a row cites, for grouping and for leaving a source out: its source column cut before the
// first " @" (commit), " (" (details) or "," (section), e.g. "Narayanan et al. 2021 (arXiv:2104.04473)
// Table 1" -> "Narayanan et al. 2021".
std::string source_document(const std::string& source);

// Predicts one row. Never throws llmsim::Error: an error while predicting (unknown system file, …)
// becomes status "unsupported: <message>".
ValidationRow predict_row(const MeasuredRun& run, const std::string& data_dir, const std::string& overlay = {});

// Every row of every run, in order.
std::vector<ValidationRow> predict_rows(const std::vector<MeasuredRun>& runs, const std::string& data_dir,
                                        const std::string& overlay = {});

struct WorstRow {
  std::string run_id, metric;
  double error_pct = 0;
};

// Statistics of one group of rows. Error statistics use ok rows whose metric is not `fits`.
struct GroupStats {
  std::string key;            // the group's value, e.g. "pretrain"; "all" for the overall group
  std::size_t rows = 0;       // all rows in the group
  std::size_t count = 0;      // ok non-fits rows (the error statistics' sample)
  double median_abs_pct = 0;  // median |error_pct| (0 when count is 0)
  double mape = 0;            // mean |error_pct| (0 when count is 0)
  double mean_pct = 0;        // mean signed error_pct: > 0 over-predicts on average
  std::size_t in_band = 0;    // of the `count` rows, those whose measurement lies in [low, high]
  double in_band_fraction() const { return count > 0 ? static_cast<double>(in_band) / static_cast<double>(count) : 0; }
  std::vector<WorstRow> worst;  // up to 5 rows with the largest |error_pct|, largest first
  std::size_t fits_agree = 0;   // ok fits rows whose prediction equals the measurement
  std::size_t fits_total = 0;   // ok fits rows
  std::size_t unsupported = 0;  // valid rows that were not predicted (no profile, unsupported metric, …)
  std::size_t errors = 0;       // rows that break a rule of the schema
};

struct Grouping {
  std::string by;                  // "workload", "metric", "system", "feature"
  std::vector<GroupStats> groups;  // sorted by key; rows without features are in feature "none"
};

struct ValidationSummary {
  GroupStats overall;               // key "all"
  std::vector<Grouping> groupings;  // by workload, metric, system, feature (in that order)
};

// Median of the values (core/stats.h), used for the error summaries.
using llmsim::median;

ValidationSummary summarize(const std::vector<ValidationRow>& rows);

// Leave-one-source-out intervals. For each predicted row (not `fits`), the band that the rows of the
// *other* sources in its regime give: the prediction and the 10th and 90th percentiles of their
// time ratios (band_interval). The regime is the first of regime_keys() that holds at least `min_rows`
// such rows of other sources. This is
// what a user's own run can expect: its source is never among those the band was drawn from. The
// rows' low / high are replaced and the note says where the band came from; the predictions stay.
struct LosoOptions {
  double low_quantile = 0.10;
  double high_quantile = 0.90;
  std::size_t min_rows = 8;
  // A regime's band needs rows of at least this many sources, else the next wider regime's applies: with
  // one or two other sources a band is their bias, not the spread a new source meets. 3 is the choice on
  // the development files (LOSO coverage 70.4 % with 1, 72.1 % with 2, 74.1 % with 3, 69.3 % with 4).
  std::size_t min_sources = 3;
  // Source as a random effect: each source's rows weigh 1 / (its rows) together, so that a band is the spread
  // of whole sources, not of the one that published most rows; and the band's half-widths (in log ratio,
  // about the weighted median) grow by sqrt(1 + 1/k) for k sources, the predictive spread of a new member of
  // k groups. validate --loso sets both.
  bool weigh_sources = false;
};

// One measured / predicted time ratio and the source it came from.
struct BandSample {
  double ratio = 1;
  const std::string* source = nullptr;
};
// The options' quantiles of the samples' ratios, and how many distinct sources they hold.
std::pair<double, double> band_quantiles(const std::vector<BandSample>& samples, const LosoOptions& options);
// The weighted quantile q of values (weights > 0), interpolated on the cumulative weight.
double weighted_quantile(std::vector<std::pair<double, double>> value_weight, double q);
std::size_t distinct_sources(const std::vector<BandSample>& samples);
void apply_loso_intervals(std::vector<ValidationRow>& rows, const LosoOptions& options = {});

// How a metric's errors are oriented and pooled in bands: a rate (throughput, TFLOP/s, MFU: higher is
// faster), a time (step time, latencies) or a memory figure. A rate's ratio is inverted, so that one band
// of measured time / predicted time serves a regime's rates and times together.
enum class MetricKind { Time, Rate, Memory };
MetricKind metric_kind(const std::string& metric);
// measured / predicted for times and memory, predicted / measured for rates.
double time_ratio(const ValidationRow& r);
// The interval a band of time ratios [low, high] gives a predicted `value` of `metric`.
std::pair<double, double> band_interval(const std::string& metric, double value, double low, double high);

// The regimes a prediction belongs to, narrowest first: "workload / profile / metric",
// "workload / profile / kind", "workload / metric", "workload / kind", "kind" (profile: the framework or
// engine profile it ran as; kind: "time" for times and rates, "memory"). The metric's own level across
// profiles comes before the kind's: a decode step (tpot) is bandwidth-bound and lands closer than a prefill
// or a throughput, whichever engine ran it.
std::vector<std::string> regime_keys(const std::string& workload, const std::string& profile,
                                     const std::string& metric);
// Whether a row takes part in the bands: predicted, not a `fits` row, both values positive.
bool band_scored(const ValidationRow& r);
// The regime keys of a predicted row.
std::vector<std::string> regime_keys(const ValidationRow& r);

}  // namespace llmsim::sim
