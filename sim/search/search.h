#pragma once
// What-if search and capacity planning over a training space (sim/search/search_space.h): every tuple that
// survives the structural rules and the memory model is scored with the closed-form estimator
// (sim/train/fast_train.h); the best are re-evaluated with the full step simulator (simulate_training) for
// the reported numbers. Parallel and deterministic: worker threads take fixed blocks of the
// enumeration; results are merged by (score, enumeration index), so they do not depend on the thread
// count. Cancellation is a flag the caller may set (e.g. from a SIGINT handler); the search then
// returns what it has. Library code: never prints, never exits.
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "llmsim/hardware/system_spec.h"
#include "llmsim/model/model_spec.h"
#include "llmsim/search/search_space.h"
#include "llmsim/train/fast_train.h"
#include "llmsim/train/train_sim.h"

namespace llmsim::sim {

enum class Objective {
  TokensPerS,        // maximise tokens/s
  TokensPerSPerGpu,  // maximise tokens/s per GPU
  TokensPerDollar,   // maximise tokens per currency unit (needs prices)
  Time,              // minimise the time to train SearchProblem::train_tokens
  Cost,              // minimise the cost to train them (needs prices)
};
std::string_view name_of(Objective o);
std::vector<std::string> objective_names();
bool parse_name(std::string_view s, Objective& out);

struct SearchProblem {
  const model::ModelSpec* model = nullptr;
  std::vector<hardware::SystemSpec> systems;  // resolved TrainSpace::systems, same order
  TrainSpace space;
  Objective objective = Objective::TokensPerS;
  double train_tokens = 0;                 // > 0: time / cost / energy to train this many tokens
  double deadline_s = 0;                   // > 0 (with train_tokens): prune what trains too slowly
  std::vector<double> price_per_gpu_hour;  // per system (empty = no prices)
};

struct SearchOptions {
  int threads = 0;                            // 0 = hardware concurrency
  std::size_t top = 10;                       // configurations to report
  std::size_t verify = 20;                    // best configurations re-evaluated with simulate_training
  bool keep_all = false;                      // keep every evaluated configuration (SearchOutcome::all)
  bool pareto = true;                         // throughput-vs-GPUs front (re-evaluated too)
  const std::atomic<bool>* cancel = nullptr;  // checked by workers between small batches
  // Called from the calling thread about every `progress_interval_s` with (tuples done, total).
  std::function<void(std::uint64_t done, std::uint64_t total, double elapsed_s)> progress;
  double progress_interval_s = 0.5;
};

// One evaluated configuration.
struct SearchEntry {
  std::uint64_t index = 0;  // enumeration index (ties are broken by it)
  int system = 0;
  RunSpec run;
  FastTrainEstimate fast;
  double gpu_bytes = 0;  // memory model's peak per GPU
  double score = 0;      // objective, higher is better (fast estimate)
  // Filled for re-evaluated entries:
  std::optional<TrainResult> full;  // simulate_training with the totals of train_tokens
  double full_score = 0;
};

enum class SearchStatus { Ok, EmptySpace, Interrupted };

struct SearchOutcome {
  SearchStatus status = SearchStatus::Ok;
  std::uint64_t space_size = 0;  // tuples in the space
  std::uint64_t processed = 0;   // tuples enumerated (all of them unless interrupted)
  std::uint64_t evaluated = 0;   // tuples that reached the fast estimator
  std::uint64_t feasible = 0;    // … and met every constraint
  PruneTally pruned;
  std::vector<SearchEntry> top;     // best first (full-simulation order when re-evaluated)
  std::vector<SearchEntry> pareto;  // by GPU count: each faster than every smaller count
  std::vector<SearchEntry> all;     // when keep_all, in enumeration order (without `full`)
  double fast_seconds = 0;          // enumeration + fast evaluation
  double full_seconds = 0;          // re-evaluation
  int threads = 1;
  // Tuples per second through the rules, the memory model and the fast estimator.
  double evals_per_s() const { return fast_seconds > 0 ? static_cast<double>(processed) / fast_seconds : 0; }
  // Largest |fast / full - 1| over the re-evaluated entries.
  double max_fast_error = 0;
};

// The objective of an evaluated point (higher is better) from its step time and throughput.
double objective_score(const SearchProblem& p, int system, const RunSpec& run, double step_time_s,
                       double tokens_per_step);

SearchOutcome search_training(const SearchProblem& problem, const SearchOptions& options);

// Capacity planning: the fewest GPUs (then the lowest cost, or time without prices) that train
// `train_tokens` within `deadline_s`. GPU counts are tried in increasing order from the bound that
// even 100% MFU could not beat; the first count with a configuration meeting the deadline is the
// answer. The space's gpus axis lists the candidate counts (Free = whole nodes up to max_gpus).
struct PlanOutcome {
  SearchStatus status = SearchStatus::Ok;
  bool met = false;       // a configuration meets the deadline
  std::int64_t gpus = 0;  // the answer (when met)
  SearchOutcome search;   // the search at that count (or, when not met, the fastest overall)
  std::uint64_t counts_tried = 0;
  std::int64_t first_count = 0, last_count = 0;  // counts tried
  std::int64_t lower_bound_gpus = 0;             // fewer cannot meet the deadline even at 100% MFU
  std::uint64_t space_size = 0;                  // tuples over every count tried
  std::uint64_t evaluated = 0;
  PruneTally pruned;  // over every count tried
  double seconds = 0;
  std::optional<SearchEntry> fastest;  // when not met: the fastest configuration found
};

PlanOutcome plan_training(const SearchProblem& problem, const SearchOptions& options);

}  // namespace llmsim::sim
