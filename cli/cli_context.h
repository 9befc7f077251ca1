#pragma once
// Shared plumbing of the CLI front ends: output format, data directory, run flags.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <string>

#include "llmsim/hardware/system_spec.h"
#include "llmsim/memory/memory_model.h"
#include "llmsim/model/model_spec.h"
#include "llmsim/report/run_summary.h"
#include "llmsim/report/verdict.h"
#include "llmsim/run/run_config.h"

namespace llmsim::cli {

// Where a machine-readable output goes: nowhere (not asked for), stdout ("-" or the bare flag) or a file.
struct OutputTarget {
  bool wanted = false;
  std::string path;  // "" or "-": stdout
  bool to_stdout() const { return wanted && (path.empty() || path == "-"); }
};

// The folder of the running executable (/proc/self/exe), or `argv0`'s folder when that cannot be read (an
// empty path without argv0): where llmsim finds its sibling llmsim-calibrate and an installed tree's presets.
std::filesystem::path executable_dir(const char* argv0 = nullptr);

// Options every command has.
struct CommonOptions {
  OutputTarget json;     // --json[=FILE]
  OutputTarget csv;      // --csv[=FILE]
  OutputTarget html;     // --html FILE (or '-')
  std::string data_dir;  // --data-dir or LLMSIM_DATA_DIR; empty = the installed share/llmsim, else the build's data/
  std::string overlay;   // --overlay: a profile overlay applied to every system (commands that register it)
  std::string resolved_data_dir() const;
  // A system preset or TOML file with the --overlay (if any) applied.
  hardware::SystemSpec load_system(const std::string& name_or_path) const;
};

void add_common_options(CLI::App& app, CommonOptions& opts);
// --data-dir DIR, which the environment variable LLMSIM_DATA_DIR gives when the flag does not (CLI11 envname).
void add_data_dir_option(CLI::App& app, std::string& dir);
// --json[=FILE], --csv[=FILE] and --html FILE alone (commands that register their own --data-dir).
void add_output_options(CLI::App& app, CommonOptions& opts);
// Checks the output options after parsing: at most one of them on stdout (usage error otherwise), each in
// a folder that exists, no two on one file, no output file that is one of the command's `inputs`, and
// --html only where this build has Chart.js.
void check_outputs(const CLI::App& app, CommonOptions& opts, const std::vector<std::string>& inputs = {});
// Prints a command's result: the JSON, CSV and HTML where they were asked for (files or stdout), and `table`
// (the readable form) on stdout when none took it. `doc` is the command's report (llmsim/report/report.h).
void emit(const CommonOptions& opts, const nlohmann::json& doc, const std::function<void()>& table);
// Number checks for options: a finite number (NaN, inf and out-of-range text are refused with the value)
// that is > 0, or >= 0. They replace CLI11's PositiveNumber / NonNegativeNumber, which accept NaN and inf.
CLI::Validator finite_positive();
CLI::Validator finite_non_negative();
// A request rate: a finite number (the command checks > 0), or the word "inf" (the offline mode); "1e400",
// which a double would read as inf, and "nan" are refused.
CLI::Validator rate_or_inf();

// --shared-prefix N and --prefix-groups G of the generated request streams (serve, plan serve): N tokens of
// shared prompt prefix before every prompt (0 to 2^24), one of G different prefixes (1 to 2^24).
void add_shared_prefix_options(CLI::App& app, std::int64_t& tokens, std::int64_t& groups);

// Multi-LoRA serving's flags (serve and plan serve): adapters, their popularity, rank and projections, and the
// engine's adapters per iteration.
struct AdapterFlags {
  std::int64_t adapters = 0;
  std::string popularity = "uniform";
  std::int64_t rank = 16;
  std::vector<std::string> targets;
  std::int64_t max_loras = 0;
  double zipf() const;           // --adapter-popularity: 0 for uniform, S for zipf:S (a usage error otherwise)
  std::string describe() const;  // ", 8 LoRA adapters (zipf:1) of rank 16"
};
void add_adapter_options(CLI::App& app, AdapterFlags& flags);

// --overlay FILE (hardware::apply_efficiency_overlay), for the commands that predict time.
void add_overlay_option(CLI::App& app, CommonOptions& opts);

// Run settings as flags: --model, --tp, --micro-batch, … (sim::run_settings()) plus --config FILE.
struct RunFlags {
  std::map<std::string, std::string> values;  // flag name (without --) -> text as given
  std::map<std::string, bool> flags;          // boolean flags that were set
  std::string config;                         // --config TOML
  std::set<std::string> taken;                // flags a command read itself (build_request skips them)
};

// The workloads a command runs: its help lists only the settings that mean something for them
// (sim::SettingScope), so that `serve --help` does not offer the ZeRO stage or the LoRA targets.
enum class RunKinds { Training, Inference, Any };
void add_run_flags(CLI::App& app, RunFlags& flags, RunKinds kinds);

// The request these flags describe: the --config file's settings first, then the flags on top.
sim::RunRequest build_request(const CLI::App& app, const RunFlags& flags);

// Whether a --input-len / --output-len value is a plain token count (N) rather than one of the length
// distributions serve and plan serve also take (uniform:, lognormal:, a length sample).
bool is_token_count(const std::string& value);
// For the commands that simulate a batch of equal sequences (infer, memory): a length distribution in
// --input-len / --output-len is refused, saying which commands take one.
void refuse_length_distributions(const RunFlags& flags, const std::string& command);

// Rejects arguments CLI11 left over (unknown flags) with a did-you-mean from the command's options.
void reject_extras(const CLI::App& app);

// The run a simulating command was asked for, resolved: the request (its `run` as simulated, for the
// report's header), the model and the system it runs on, and the run with its defaults filled.
struct ResolvedRun {
  sim::RunRequest req;
  model::ModelSpec model;
  hardware::SystemSpec system;
  sim::RunSpec run;
};

// The preamble of train, infer, serve and memory, in one place: the request from the flags (build_request),
// --model and --system required, `adjust` (the command's own rules on the request: its workload, its engine,
// checks that should fail before anything loads), the model and the system loaded (the system with
// --overlay), an inference run's weights in a pre-quantized checkpoint's own format unless --weight-quant
// says otherwise (sim::apply_checkpoint_format), the GPU count the parallel sizes make unless --gpus gives
// it, and the run's defaults (sim::with_defaults).
ResolvedRun resolve_run(const CLI::App& app, const RunFlags& flags, const CommonOptions& common,
                        const std::function<void(sim::RunRequest&)>& adjust = {});

// One line describing a run's parallelism and settings, for table headers and JSON (the library's, so that
// every document and table says the same).
using report::describe_run;
using report::describe_serving_run;

// Refuses (Usage error naming `flag`) an output path that is one of the command's input files, so that
// writing a result never replaces what was read (`validate runs.csv --csv runs.csv`, `serve --trace-file
// t.csv --per-request t.csv`). Inputs that are not files (preset names) are skipped.
void refuse_overwrite(const std::string& flag, const std::string& output, const std::vector<std::string>& inputs);

// The first lines of a command's table: "llmsim COMMAND: MODEL on SYSTEM", the run, and, when the run is
// infeasible, "result: infeasible" with the reasons. Returns whether the run is feasible.
bool print_run_header(const std::string& command, const std::string& model, const std::string& system,
                      const sim::RunSpec& run, const std::vector<std::string>& problems);

// A command's answer in one sentence and the verdicts of the simulating commands (report::add_verdict), the
// library's; "12.34" GiB with two decimals and "12.3" ms with one, as they write them.
using report::gib;
using report::infeasible_verdict;
using report::infer_verdict;
using report::memory_result_verdict;
using report::memory_verdict;
using report::ms_text;
using report::Verdict;

// A positive token count as users write it: 1e12, 300B, 2T, 500M, 8K; --tokens usage errors otherwise.
double parse_tokens(const std::string& text);

// A --system value of the commands that consider several systems: "any" (or "*") is every preset of
// `data_dir`, comma-joined; anything else is returned as given.
std::string expand_any_system(const std::string& text, const std::string& data_dir);

// --price-per-gpu-hour as users write it: X for every system, or sys=X,sys2=Y for each of `systems` (the
// command's --system values); one price per system, in their order; empty when `text` is empty. Usage
// errors name the bad item, an unknown system (with a did-you-mean) or a system left without a price.
std::vector<double> parse_prices(const std::string& text, const std::vector<std::string>& systems);

}  // namespace llmsim::cli
