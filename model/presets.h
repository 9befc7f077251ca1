#pragma once
// Model presets shipped as Hugging Face folders: <data_dir>/models/<name>/config.json.
#include <string>
#include <vector>

#include "llmsim/model/model_spec.h"

namespace llmsim::model {

// Preset names, sorted.
std::vector<std::string> list_model_presets(const std::string& data_dir);

// A path to a config.json (or a folder with one) if it exists, otherwise a preset name. Unknown names
// are NotFound errors listing the presets with a did-you-mean. The spec's `name` is the preset name
// or the path as given.
ModelSpec resolve_model(const std::string& name_or_path, const std::string& data_dir);

}  // namespace llmsim::model
