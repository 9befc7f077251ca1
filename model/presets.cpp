#include "llmsim/model/presets.h"

#include <algorithm>
#include <filesystem>

#include "llmsim/core/error.h"
#include "llmsim/core/suggest.h"
#include "llmsim/model/hf_config.h"

namespace llmsim::model {

namespace fs = std::filesystem;

namespace {
fs::path preset_file(const std::string& data_dir, const std::string& name) {
  return fs::path(data_dir) / "models" / name / "config.json";
}

// A name that can only be meant as a path (it has a folder separator or names a .json file).
bool looks_like_path(const std::string& s) {
  return s.find('/') != std::string::npos || (s.size() > 5 && s.ends_with(".json"));
}
}  // namespace

std::vector<std::string> list_model_presets(const std::string& data_dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(fs::path(data_dir) / "models", ec)) {
    if (entry.is_directory() && fs::is_regular_file(entry.path() / "config.json"))
      names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

ModelSpec resolve_model(const std::string& name_or_path, const std::string& data_dir) {
  // An existing file or folder wins over a preset of the same name. A path the system cannot even stat
  // (a symbolic-link loop, a component without permission) is the user's input error, said as such.
  std::error_code ec;
  const bool exists = !name_or_path.empty() && fs::exists(name_or_path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory)
    throw_input(Location{.file = name_or_path}, "cannot read: " + ec.message());
  if (exists) {
    ModelSpec m = load_hf_config(name_or_path);
    m.name = name_or_path;
    return m;
  }
  if (looks_like_path(name_or_path))
    throw_not_found(Location{.file = name_or_path},
                    "no such file or folder (a model is a preset name, a config.json, or a folder holding one)");
  if (!name_or_path.empty() && fs::is_regular_file(preset_file(data_dir, name_or_path))) {
    ModelSpec m = load_hf_config(preset_file(data_dir, name_or_path).string());
    m.name = name_or_path;
    return m;
  }
  const std::vector<std::string> presets = list_model_presets(data_dir);
  throw_not_found(Location{}, "unknown model '" + name_or_path + "' (not a file or folder, and not a preset in " +
                                  (fs::path(data_dir) / "models").string() +
                                  "); presets: " + (presets.empty() ? std::string("none") : join(presets)) +
                                  did_you_mean(name_or_path, presets));
}

}  // namespace llmsim::model
