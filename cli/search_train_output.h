#pragma once
// The printers of `llmsim search train` and `llmsim plan train`: the ranked table, the pruning tally,
// the explanation of the winner's lead, JSON and CSV records, progress lines.
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_context.h"
#include "llmsim/search/search.h"

namespace llmsim::cli::search_train {

std::string thousands(double v);
std::string objective_text(const sim::SearchProblem& p);
void print_entries(const sim::SearchProblem& p, const std::vector<sim::SearchEntry>& v, bool with_system,
                   std::size_t first_rank = 1);
void print_pruned(const sim::PruneTally& t, std::uint64_t space, const sim::TrainGenerator* gen, std::size_t max_rows);
void explain(const sim::SearchProblem& p, const sim::SearchEntry& a, const sim::SearchEntry& b);
void write_all_csv(const std::string& path, const sim::SearchProblem& p, const std::vector<sim::SearchEntry>& all);
std::function<void(std::uint64_t, std::uint64_t, double)> progress_printer(const char* what);
void clear_progress();
std::string header_line(const sim::SearchProblem& p, const sim::ResolvedTrainSpace& rs);
void print_empty(const sim::SearchOutcome& o, const sim::PruneTally& t, const sim::TrainGenerator* gen);
std::string reverified(const sim::SearchOutcome& o, std::size_t verify);

}  // namespace llmsim::cli::search_train
