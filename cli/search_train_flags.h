#pragma once
// What `llmsim search train` (cmd_search.cpp) and `llmsim plan train` (cmd_plan.cpp) share: their
// flags, the search problem they build from them, and the Ctrl-C flag the search workers check.
#include <CLI/CLI.hpp>

#include <atomic>
#include <csignal>
#include <map>
#include <memory>
#include <string>

#include "cli_context.h"
#include "llmsim/model/model_spec.h"
#include "llmsim/search/search.h"

namespace llmsim::cli::search_train {

// Exit codes of the search commands beyond main()'s: an empty space, and an interrupted search.
constexpr int kExitEmptySpace = 6;
constexpr int kExitInterrupted = 130;

// SIGINT: a flag the workers check; the first Ctrl-C stops the search, a second one kills.
extern std::atomic<bool> g_interrupted;
struct SigintGuard {
  struct sigaction old {};
  SigintGuard();
  ~SigintGuard();
  SigintGuard(const SigintGuard&) = delete;
  SigintGuard& operator=(const SigintGuard&) = delete;
};

struct SearchCommand {
  bool plan = false;
  CommonOptions common;
  std::string config;
  std::map<std::string, std::string> values;  // fixed settings and axes, as given
  std::map<std::string, bool> flags;          // boolean fixed settings (qlora)
  std::map<std::string, bool> negated;        // --no-sequence-parallel, --no-flash-attn
  std::string objective;
  std::string tokens;
  std::string deadline;
  std::string price;
  std::int64_t max_gpus = 0;
  std::int64_t min_gpus = 0;
  double min_headroom_gib = 0;
  double max_configs = 1e10;  // the largest search space run (docs/search.md)
  std::size_t top = 10;
  std::size_t verify = 20;
  std::string all_csv;
  bool explain = false;
  int threads = 0;
};

// Registers the fixed settings, axes and search options on a `train` subcommand.
void add_flags(CLI::App& app, SearchCommand& c);

struct Built {
  std::unique_ptr<model::ModelSpec> model;
  sim::SearchProblem problem;
};

// The search problem the parsed flags describe (usage errors thrown with the flag they name).
Built build_problem(const CLI::App& app, SearchCommand& c);

}  // namespace llmsim::cli::search_train
