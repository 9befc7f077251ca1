#pragma once
// Helpers shared by the memory-model tests: specs built from the shipped presets and by hand.
#include <string>

#include "llmsim/hardware/system_toml.h"
#include "llmsim/memory/activation_memory.h"
#include "llmsim/memory/memory_model.h"
#include "llmsim/model/custom_model.h"
#include "llmsim/model/presets.h"

namespace llmsim::test {

inline model::ModelSpec preset_model(const std::string& name) { return model::resolve_model(name, LLMSIM_DATA_DIR); }
inline hardware::SystemSpec preset_system(const std::string& name) {
  return hardware::resolve_system(name, LLMSIM_DATA_DIR);
}

// GPT models of Korthikanti et al. 2022 Table 3 (s = 2048, vocab 51200).
inline model::ModelSpec gpt(std::int64_t layers, std::int64_t hidden, std::int64_t heads) {
  return model::make_custom_model(
      {.arch = "gpt", .layers = layers, .hidden = hidden, .heads = heads, .vocab = 51200, .max_positions = 2048},
      Location{.key = "test"});
}

inline double item(const sim::MemoryResult& r, const std::string& name) {
  for (const auto& i : r.gpu)
    if (i.name == name) return i.bytes;
  return 0.0;
}

}  // namespace llmsim::test
