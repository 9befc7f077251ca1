#pragma once
// Hugging Face config.json -> ModelSpec, dispatching on model_type with Hugging Face's own defaults
// for keys the file leaves out. Never guesses the architecture from ratios.
#include <string>
#include <vector>

#include "llmsim/core/json_reader.h"
#include "llmsim/model/model_spec.h"

namespace llmsim::model {

// model_type values llmsim understands: llama, mistral, mixtral, qwen2, qwen2_moe, gpt_neox, gpt2.
std::vector<std::string> supported_model_types();

// `path` is a config.json or a folder holding one. Errors: NotFound (missing), Input (malformed JSON
// with line, unknown model_type listing the supported ones, missing or non-positive dimensions).
ModelSpec load_hf_config(const std::string& path);

// The same from an already parsed document (the name is taken from doc.file).
ModelSpec model_from_hf_json(const JsonDocument& doc);

}  // namespace llmsim::model
