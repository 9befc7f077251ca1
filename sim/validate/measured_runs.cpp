#include "llmsim/validate/measured_runs.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "llmsim/core/csv_reader.h"
#include "llmsim/core/strings.h"
#include "llmsim/core/suggest.h"
#include "llmsim/hardware/system_toml.h"
#include "llmsim/model/custom_model.h"
#include "llmsim/model/presets.h"
#include "llmsim/run/framework_catalog.h"
#include "llmsim/validate/measured_row.h"
#include "llmsim/validate/source_facts.h"

namespace llmsim::sim {

namespace fs = std::filesystem;

const std::vector<std::string>& measured_run_columns() {
  static const std::vector<std::string> columns = {
      "run_id", "source", "workload", "model", "arch", "layers", "hidden", "heads", "kv_heads", "ffn", "vocab",
      "system", "num_gpus", "tp", "pp", "dp", "cp", "ep", "vp", "micro_batch", "global_batch", "seq_len", "input_len",
      "output_len", "request_rate", "precision", "weight_quant", "recompute", "sequence_parallel", "flash_attn",
      "zero_stage", "offload", "finetune", "lora_rank", "framework", "memory_measure", "metric", "value", "notes",
      // The revision of 2026-12-04 (SCHEMA.md): what a row can state
      "framework_version", "kv_dtype", "lora_targets", "master_weights", "recompute_layers", "tokens_per_sample",
      "padding", "lengths", "statistic",
      // The revision of 2026-12-06: engine and kernel settings the facts files used to carry
      "attn_kernel", "max_num_seqs", "kv_cache_blocks", "requests", "max_model_len",
      // 2026-12-08: vLLM V0's multi-step scheduling
      "scheduler_steps"};
  return columns;
}

const std::vector<std::string>& latency_statistic_names() {
  static const std::vector<std::string> names = {"mean", "median", "p90", "p99"};
  return names;
}

std::string_view name_of(LatencyStatistic s) { return latency_statistic_names()[static_cast<std::size_t>(s)]; }

bool parse_latency_statistic(std::string_view name, LatencyStatistic& out) {
  const auto& names = latency_statistic_names();
  const auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end()) return false;
  out = static_cast<LatencyStatistic>(it - names.begin());
  return true;
}

const std::vector<std::string>& measured_run_required_columns() {
  static const std::vector<std::string> columns = {"run_id", "workload", "model", "system", "metric", "value"};
  return columns;
}

const std::vector<std::string>& measured_run_metrics() {
  static const std::vector<std::string> metrics = {"step_time_s",   "tokens_per_s",   "tokens_per_s_per_gpu",
                                                   "samples_per_s", "tflops_per_gpu", "mfu",
                                                   "hfu",           "peak_mem_gib",   "ttft_ms",
                                                   "tpot_ms",       "e2e_latency_ms", "output_tokens_per_s",
                                                   "fits"};
  return metrics;
}

namespace {

using measured::FileContext;
using measured::Header;
using measured::map_measured_row;
using measured::RowReader;

// ---------------------------------------------------------------------------------------------
// The file and its header (records: core/csv_reader; rows: measured_row.h)

std::string read_text(const std::string& path) {
  if (!fs::is_regular_file(path)) throw_not_found(Location{.file = path}, "no such measured-run file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_not_found(Location{.file = path}, "cannot open the measured-run file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Header read_header(const CsvRecord& rec, const std::string& file) {
  const auto& known = measured_run_columns();
  Header h;
  for (std::size_t i = 0; i < rec.fields.size(); ++i) {
    const std::string name(trim_blanks(rec.fields[i]));
    const Location where{.file = file, .line = rec.line, .key = name};
    if (std::find(known.begin(), known.end(), name) == known.end())
      throw_input(where, "unknown column '" + name + "'" + did_you_mean(name, known) + "; columns are " + join(known));
    for (const auto& [n, idx] : h)
      if (n == name) throw_input(where, "column '" + name + "' appears twice");
    h.emplace_back(name, i);
  }
  std::vector<std::string> missing;
  for (const auto& col : measured_run_required_columns())
    if (std::none_of(h.begin(), h.end(), [&](const auto& c) { return c.first == col; })) missing.push_back(col);
  if (!missing.empty())
    throw_input(Location{.file = file, .line = rec.line},
                fmt::format("the header lacks the required column{} {}; every file needs {}",
                            missing.size() == 1 ? "" : "s", join(missing), join(measured_run_required_columns())));
  return h;
}

}  // namespace

std::vector<MeasuredRun> load_measured_runs(const std::string& path, const std::string& data_dir, bool use_facts) {
  // Spreadsheet programs save "CSV UTF-8" with a byte-order mark; parse_csv leaves it out of the first
  // column's name.
  const std::vector<CsvRecord> records = parse_csv(read_text(path), path);
  if (records.empty()) throw_input(Location{.file = path, .line = 1}, "empty file: the first line must be the header");
  const Header header = read_header(records.front(), path);
  FileContext ctx{.file = path,
                  .folder = fs::path(path).parent_path(),
                  .data_dir = data_dir,
                  .system_presets = hardware::list_system_presets(data_dir),
                  .facts = {}};
  if (const std::string facts_path = use_facts ? find_source_facts(path, data_dir) : ""; !facts_path.empty())
    ctx.facts = load_source_facts(facts_path);
  std::vector<MeasuredRun> runs;
  runs.reserve(records.size() - 1);
  // Per row: its configuration as written (every column but the measured number's own), to check that the
  // rows sharing a run_id describe one configuration.
  std::vector<std::vector<std::pair<std::string, std::string>>> configs;
  configs.reserve(records.size() - 1);
  for (std::size_t i = 1; i < records.size(); ++i) {
    const RowReader row(header, records[i], path);
    auto& config = configs.emplace_back();
    for (const auto& [name, idx] : header)
      if (name != "metric" && name != "value" && name != "notes" && name != "memory_measure" && name != "statistic")
        config.emplace_back(name, row.text(name));
    MeasuredRun run;
    try {
      row.check_shape();
      map_measured_row(ctx, row, run);
    } catch (const Error& e) {
      // The row alone is in error: keep what identifies it and the message (file:line: column: value: rule).
      MeasuredRun bad;
      bad.file = path;
      bad.line = row.line();
      bad.run_id = row.text("run_id");
      bad.source = row.text("source");
      bad.workload = row.text("workload");
      bad.metric = row.text("metric");
      bad.framework = row.text("framework");
      bad.system = row.text("system");
      const std::string v = row.text("value");
      double x = 0;
      if (std::from_chars(v.data(), v.data() + v.size(), x).ec == std::errc() && std::isfinite(x)) bad.value = x;
      bad.error = e.what();
      bad.error_where = e.where();
      bad.error_kind = e.kind();
      run = std::move(bad);
    }
    runs.push_back(std::move(run));
  }
  // One number per run and metric: a second row for the same (run_id, metric) is an error of that row
  // (which of two different measurements would be compared?), the first is still predicted.
  // Rows sharing a run_id describe one run: a row whose configuration differs from the run's first row is
  // an error of that row, naming the first column that differs.
  std::map<std::pair<std::string, std::string>, int> first_line;
  std::map<std::string, std::size_t> first_row;  // run_id -> index of its first valid row
  for (std::size_t i = 0; i < runs.size(); ++i) {
    MeasuredRun& r = runs[i];
    if (!r.error.empty() || r.run_id.empty()) continue;
    const auto [first, new_run] = first_row.emplace(r.run_id, i);
    if (!new_run) {
      const auto& a = configs[first->second];
      const auto& b = configs[i];
      const auto differ = std::mismatch(a.begin(), a.end(), b.begin()).first;
      if (differ != a.end()) {
        const auto& [col, was] = *differ;
        const std::string here = b[static_cast<std::size_t>(differ - a.begin())].second;
        r.error = fmt::format(
            "{}:{}: {}: run_id = '{}': {} = '{}' here but '{}' on line {} (rows sharing a run_id describe one "
            "configuration; give this one its own run_id)",
            path, r.line, col, r.run_id, col, here, was, runs[first->second].line);
        r.error_where = Location{.file = path, .line = r.line, .key = col};
        r.error_kind = ErrorKind::Input;
        continue;
      }
    }
    const auto [it, fresh] = first_line.emplace(std::make_pair(r.run_id, r.metric), r.line);
    if (fresh) continue;
    r.error = fmt::format(
        "{}:{}: run_id = '{}': metric {} of this run is already on line {} (one row per run and "
        "metric)",
        path, r.line, r.run_id, r.metric, it->second);
    r.error_where = Location{.file = path, .line = r.line, .key = "run_id"};
    r.error_kind = ErrorKind::Input;
  }
  // A fact that covers no row is a typo in its prefix (or a stale fact): say so instead of ignoring it.
  std::set<const SourceFact*> used;
  for (const MeasuredRun& r : runs)
    used.insert(fact_for(ctx.facts, {r.source, r.model_column, r.finetune_column, r.num_gpus_column}));
  for (const SourceFact& f : ctx.facts) {
    if (!used.contains(&f))
      throw_input(f.where, fmt::format("source_prefix '{}' covers no row of {} (rows are matched by the start of "
                                       "their source column)",
                                       f.source_prefix, path));
  }
  return runs;
}

}  // namespace llmsim::sim
