#pragma once
// The documents of `llmsim show model|system` and `llmsim list models|systems|frameworks`
// (docs/output-schema.md): a model or system as resolved, with its derived values, and the shipped presets
// and framework names. Built here, in the library, from the specs; the tables print the same figures with
// the names below.
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "llmsim/hardware/efficiency_keys.h"
#include "llmsim/hardware/system_spec.h"
#include "llmsim/model/model_spec.h"
#include "llmsim/run/run_spec.h"

namespace llmsim::report {

// How a model's pieces are named in documents and tables.
std::string_view norm_name(model::NormKind n);
std::string_view mlp_name(model::MlpKind k);
std::string_view position_name(model::PositionKind p);
// KV-cache bytes per token of the whole model (one GPU, every layer) at `elem_bytes` per element.
double model_kv_bytes_per_token(const model::ModelSpec& m, double elem_bytes);
// A fraction of the [efficiency] table, or nothing for an absent per-collective one.
const hardware::Fraction* efficiency_fraction(const hardware::Efficiency& e, const hardware::FractionKey& k);
// The profile that stands in for a framework name ("-": none is a fair stand-in).
std::string framework_profile_text(const std::optional<sim::Framework>& f);

nlohmann::json model_document(const model::ModelSpec& m);
nlohmann::json system_document(const hardware::SystemSpec& s);
// Every framework name a measured run may hold, with the profiles that stand in and their recipes.
nlohmann::json frameworks_document();
// `what`: "models" or "systems", the presets in `data_dir`.
nlohmann::json preset_list_document(const std::string& what, const std::string& data_dir);

}  // namespace llmsim::report
