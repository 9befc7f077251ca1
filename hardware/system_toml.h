#pragma once
// System TOML -> SystemSpec. Units are in the keys (memory_GiB, hbm_bandwidth_GBps, …) and converted to
// SI here, once. Unknown keys are Input errors with file:line and a did-you-mean.
#include <string>
#include <vector>

#include "llmsim/hardware/system_spec.h"

namespace llmsim::hardware {

SystemSpec load_system_toml(const std::string& path);

// A profile overlay: a TOML file with schema_version and an [efficiency] table whose keys replace those
// of a system already loaded (the keys and rules of a system file's [efficiency] table). Fitted mechanism
// parameters (llmsim calibrate fit-runs) or a user's own measurements applied to every preset without
// editing it; `train`, `infer`, `serve` and `validate` take one with --overlay FILE.
void apply_efficiency_overlay(SystemSpec& s, const std::string& path);
// Reads the overlay once against the defaults, so that a bad file fails before any run (Input error
// with its file, key and rule).
void check_efficiency_overlay(const std::string& path);

// Presets: <data_dir>/hardware/<name>.toml, sorted names.
std::vector<std::string> list_system_presets(const std::string& data_dir);
// A path to a TOML file if it exists, otherwise a preset name (NotFound with the list when unknown).
SystemSpec resolve_system(const std::string& name_or_path, const std::string& data_dir);

}  // namespace llmsim::hardware
