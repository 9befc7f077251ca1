#pragma once
// Run settings shared by the CLI flags and run-config TOML files: one table of names (the flag names
// without "--", used verbatim as TOML keys), each with its parser and rule, so both front ends accept
// exactly the same things and report errors the same way (file:line or flag, value, rule).
#include <optional>
#include <string>
#include <vector>

#include "llmsim/core/error.h"
#include "llmsim/model/model_spec.h"
#include "llmsim/run/run_spec.h"

namespace llmsim::sim {

// A run as the user described it: preset names/paths are resolved later, by the front end.
struct RunRequest {
  std::string model;   // preset name or config.json path
  std::string system;  // preset name or system TOML path
  RunSpec run;
  std::vector<std::string> given;  // setting names that were set explicitly
  bool was_given(const std::string& name) const;
};

// A pre-quantized checkpoint (quantization_config: GPTQ, AWQ, FP8, MXFP4, …) is served in its own format
// unless --weight-quant says otherwise: the request's inference weight format becomes the model's. An engine
// that computes in one dtype only (EngineProfile::compute_precision) sets the precision and KV dtype unless
// --precision / --kv-dtype say otherwise.
void apply_checkpoint_format(RunRequest& req, const model::ModelSpec& m);

enum class SettingKind {
  Text,
  PositiveInt,
  NonNegativeInt,
  Flag,
  Choice,
  List,
  Release,
  Fraction,
  Ratio,
  PositiveNumber
};

// What a setting means something for: every run, training and fine-tuning runs, or inference and serving.
enum class SettingScope { Any, Training, Inference };

struct SettingInfo {
  std::string name;  // "micro-batch"
  SettingKind kind;
  std::string help;                  // one line for --help
  std::vector<std::string> choices;  // for Choice / List
  std::int64_t max = 0;              // integers: largest accepted value (0 = any 64-bit value)
  std::string max_why;               // why larger values are refused
  SettingScope scope = SettingScope::Any;
};

// Whether a setting means something for a run of `workload` (its scope is Any or the workload's kind).
bool applies_to(const SettingInfo& info, Workload workload);

// Every setting, in help order.
const std::vector<SettingInfo>& run_settings();
// The setting named `name` ("micro-batch"), or nullptr: how other readers of the same quantities (the
// measured-run CSV's columns) apply the same bounds.
const SettingInfo* find_setting(const std::string& name);

// The value of every setting of `req` (with the run as simulated, e.g. after with_defaults), in
// run_settings() order: the canonical text apply_setting takes, or nullopt where the setting is unset and
// a simulator rule fills it. The framework's defaults that decide a training step's time are given as the
// framework applies them (optimizer-impl; overlap-grad-reduce at the run's ZeRO stage), so that a report
// shows them. The one read of a request's settings for reports (sim/report).
std::vector<std::pair<const SettingInfo*, std::optional<std::string>>> setting_values(const RunRequest& req);

// Applies `name = value` (value as text: "4", "true", "bf16", "q,v"). `where` locates the value for
// errors (a flag or file:line); unknown names are errors with a did-you-mean.
void apply_setting(RunRequest& req, const std::string& name, const std::string& value, const Location& where,
                   ErrorKind kind);

// Reads a run-config TOML: top-level keys are setting names; unknown keys are Input errors with
// file:line and a did-you-mean. Apply it before the command-line settings so that those win.
void apply_run_toml(RunRequest& req, const std::string& path);

}  // namespace llmsim::sim
