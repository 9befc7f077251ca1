#pragma once
// The documents of `llmsim search train` and the parts `llmsim plan train` shares with it
// (docs/output-schema.md, "search train" and "plan train"): each configuration as ranked, with the fast
// estimate, the full simulation where it ran, and what was pruned. Built here, in the library, from the
// search's records.
#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmsim/search/search.h"

namespace llmsim::report {

// The systems searched, by name.
std::vector<std::string> system_names(const sim::SearchProblem& p);
// "ok", "empty" or "interrupted".
std::string status_name(sim::SearchStatus s);
// One configuration: its rank (omitted when 0: a Pareto point), index, system, run summary, settings, the fast
// estimate and, where the full simulator ran, its figures and phases.
nlohmann::json search_entry_json(const sim::SearchProblem& p, const sim::SearchEntry& e, std::size_t rank);
// Every pruning reason with its count and an example, most frequent first.
nlohmann::json pruned_json(const sim::PruneTally& t);
// The whole `search train` document.
nlohmann::json search_document(const sim::SearchProblem& p, const sim::SearchOutcome& o);

}  // namespace llmsim::report
