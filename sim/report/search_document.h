#pragma once
// The documents of `llmsim search train` and the parts `llmsim plan train` shares with it
// (docs/output-schema.md, "search train" and "plan train"): each configuration as ranked, with the fast
// estimate, the full simulation where it ran, and what was pruned. Built here, in the library, from the
// search's records.
#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmsim/report/verdict.h"
#include "llmsim/search/search.h"

namespace llmsim::report {

// The figures of one configuration as its table row and the plan's verdict give them: the full simulation's
// where it ran (`full`), else the fast estimate's; time, cost and energy to train the problem's tokens.
struct SearchRow {
  double step = 0, tps = 0, per_gpu = 0, mfu = 0, mem = 0, time = 0, cost = 0, energy = 0;
  bool full = false;
};
SearchRow search_row(const sim::SearchProblem& p, const sim::SearchEntry& e);
// A duration as tables and verdicts write it: days from 2 days, hours from 2 h, seconds from 1 s, else ms.
std::string duration_text(double s);

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

// `plan train`'s answer in one sentence: the GPUs of the cheapest configuration that meets the deadline, or
// why none does (nothing fits, or the fastest found needs longer).
Verdict plan_verdict(const sim::SearchProblem& p, const sim::PlanOutcome& o, const sim::SearchEntry* best);
// The whole `plan train` document; `best` is the plan's configuration (null when none fits).
nlohmann::json plan_train_document(const sim::SearchProblem& p, const sim::PlanOutcome& o,
                                   const sim::SearchEntry* best);

}  // namespace llmsim::report
