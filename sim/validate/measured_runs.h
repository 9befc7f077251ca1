#pragma once
// Measured-run CSV files (data/validation/SCHEMA.md, schema version 1) -> run specs. One row is one
// measured number of one run; the row becomes a ModelSpec (preset, config.json path, or `custom`), a
// system name/path and a RunSpec, with the defaults the simulator applied to empty fields listed.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "llmsim/core/error.h"
#include "llmsim/memory/memory_model.h"
#include "llmsim/model/model_spec.h"
#include "llmsim/run/run_spec.h"
#include "llmsim/search/recipe_fill.h"
#include "llmsim/serve/length_sample.h"

namespace llmsim::sim {

// The schema's `statistic` column: mean (its default), median, p90 or p99.
enum class LatencyStatistic { Mean, Median, P90, P99 };
std::string_view name_of(LatencyStatistic s);
const std::vector<std::string>& latency_statistic_names();  // "mean", "median", "p90", "p99"
bool parse_latency_statistic(std::string_view name, LatencyStatistic& out);

struct MeasuredRun {
  std::string file;  // CSV path
  int line = 0;      // 1-based line of the row (for messages)
  std::string run_id;
  std::string source;
  std::string model_column;     // the row's model column as written (source facts may name it)
  std::string finetune_column;  // the row's finetune column as written (source facts may name it)
  std::string num_gpus_column;  // the row's num_gpus column as written (source facts may select on it)
  std::string workload;         // as written: pretrain, finetune, inference, serving
  model::ModelSpec model;
  std::string system;  // preset name or path (relative paths resolved against the CSV's folder)
  RunSpec run;
  std::string framework;          // as written (free text)
  std::string framework_mapping;  // "megatron-deepspeed -> megatron TP/PP + DeepSpeed ZeRO-1 DP"
  std::string metric;
  double value = 0;
  // serving: requests per second of an open loop; 0 = not stated (closed loop at global_batch, or offline
  // when global_batch is empty too); +inf = offline (all requests at t = 0).
  double request_rate = 0;
  bool offline = false;               // serving: all requests at t = 0 (request_rate inf, or neither stated)
  std::int64_t offline_requests = 0;  // serving offline: how many requests (global_batch or the default)
  // serving: the paired request lengths of a length sample (a source fact) for rows that state no
  // input_len/output_len; null: the rows' fixed lengths.
  std::shared_ptr<const LengthSample> lengths;
  std::int64_t stream_requests = 0;      // serving open/closed loops: requests to simulate (a source fact); 0 = default
  std::int64_t engine_max_num_seqs = 0;  // serving: the engine's batch limit as the source configured it; 0 = default
  std::int64_t engine_kv_blocks = 0;     // serving: the engine's KV cache in blocks as configured; 0 = from memory
  std::int64_t engine_scheduler_steps = 0;  // serving: vLLM V0's --num-scheduler-steps as configured; 0 = default
  // Which statistic a serving latency row's value is (the `statistic` column, or a source fact for tpot_ms)
  // over the run's requests (tpot_ms: over its tokens).
  LatencyStatistic statistic = LatencyStatistic::Mean;
  std::string notes;                                     // free text, kept for reports; never interpreted
  MemoryMeasure memory_measure = MemoryMeasure::Device;  // what peak_mem_gib counts
  int source_facts = 0;  // settings taken from the source facts file (each also in `defaults`)
  // Columns the row left empty and no source fact settles, whose value the best-feasible fill may
  // choose when the recipe's own does not fit (sim/search/recipe_fill.h).
  std::vector<FillAxis> free_axes;
  std::vector<Recompute> recompute_modes;  // the modes the named software offers the fill (empty: all)
  std::vector<std::string> defaults;       // "recompute=none (not stated)", … for every empty field a default filled
  // Set when the row breaks a rule of the schema: the message names file:line, the column, the value and
  // the rule. The row is then reported as an error and not predicted; the other rows are unaffected.
  std::string error;
  Location error_where;                     // the file, line and column of the error
  ErrorKind error_kind = ErrorKind::Input;  // Input (a value breaks a rule) or NotFound (unknown model/system)
  // Set when the row is valid but no profile stands in for it ("no profile for framework llama.cpp").
  std::string unsupported;
};

// Offline serving rows that leave global_batch empty send this many requests: the default --num-prompts
// of vLLM's benchmarks/benchmark_throughput.py and of SGLang's bench_offline_throughput.py (1000).
inline constexpr std::int64_t kDefaultOfflineRequests = 1000;

// The schema's columns, in SCHEMA.md order.
const std::vector<std::string>& measured_run_columns();
// The schema's metric names.
const std::vector<std::string>& measured_run_metrics();

// Required columns of a measured-run file's header.
const std::vector<std::string>& measured_run_required_columns();

// Parses the file (RFC 4180). What makes the file unreadable is an Input/NotFound error: a missing or
// unreadable file, CSV syntax, an unknown or repeated column (with "did you mean"), a header without a
// required column, a bad facts file beside it. A row that breaks a rule (a malformed number, an unknown
// enum value or model, a wrong field count) comes back with `error` set and every other row is read as
// usual. With `use_facts`, the source facts file beside it (sim/validate/source_facts.h), when there is one,
// fills what the rows cannot state; each use is listed in the row's `defaults`.
std::vector<MeasuredRun> load_measured_runs(const std::string& path, const std::string& data_dir,
                                            bool use_facts = true);

}  // namespace llmsim::sim
