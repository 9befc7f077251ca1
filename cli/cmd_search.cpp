// `llmsim search train`: what-if search over a training configuration space (flags and the problem in
// search_train_flags, printers in search_train_output; `llmsim plan` is cmd_plan.cpp).
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "llmsim/core/strings.h"
#include "llmsim/core/suggest.h"
#include "llmsim/report/report.h"
#include "llmsim/report/search_document.h"

#include "commands.h"
#include "search_train_flags.h"
#include "search_train_output.h"

namespace llmsim::cli {

namespace {
using namespace search_train;  // NOLINT(google-build-using-namespace): this file's own helpers

void print_search_table(const SearchCommand& c, const sim::SearchProblem& p, const sim::SearchOutcome& o,
                        const sim::ResolvedTrainSpace& rs, const sim::TrainGenerator& gen,
                        const sim::SearchOptions& opt);

int run_search(const CLI::App& app, SearchCommand& c) {
  // Every file the search reads: the --config TOML and any model or system given as a path.
  std::vector<std::string> inputs = {c.config};
  for (const char* k : {"model", "system"})
    if (const auto it = c.values.find(k); it != c.values.end())
      for (const auto v : split_fields(it->second, ',')) inputs.emplace_back(trim_space(v));
  refuse_overwrite("--all-csv", c.all_csv, inputs);
  check_outputs(app, c.common, inputs);
  Built b = build_problem(app, c);
  sim::SearchProblem& p = b.problem;
  sim::SearchOptions opt;
  opt.threads = c.threads;
  opt.top = c.top;
  opt.verify = std::max(c.verify, c.explain ? std::size_t{2} : std::size_t{0});
  opt.keep_all = !c.all_csv.empty();
  SigintGuard guard;
  opt.cancel = &g_interrupted;
  opt.progress = progress_printer("search");
  const sim::SearchOutcome o = sim::search_training(p, opt);
  clear_progress();
  std::cerr << fmt::format(
      "llmsim: search: {} configurations in {:.2f} s ({} configs/s, {} threads); {} re-evaluated "
      "with the full simulator in {:.2f} s\n",
      thousands(static_cast<double>(o.processed)), o.fast_seconds, thousands(o.evals_per_s()), o.threads,
      o.status == sim::SearchStatus::Ok ? std::min(opt.verify, o.feasible) : 0, o.full_seconds);
  if (!c.all_csv.empty()) write_all_csv(c.all_csv, p, o.all);

  const sim::ResolvedTrainSpace rs = sim::resolve_train_space(p.space, *p.model, p.systems);
  const sim::TrainGenerator gen(p.space, rs, *p.model, p.systems);
  const int rc = o.status == sim::SearchStatus::EmptySpace    ? kExitEmptySpace
                 : o.status == sim::SearchStatus::Interrupted ? kExitInterrupted
                                                              : 0;
  const nlohmann::json j = report::search_document(p, o);
  emit(c.common, j, [&] { print_search_table(c, p, o, rs, gen, opt); });
  return rc;
}

void print_search_table(const SearchCommand& c, const sim::SearchProblem& p, const sim::SearchOutcome& o,
                        const sim::ResolvedTrainSpace& rs, const sim::TrainGenerator& gen,
                        const sim::SearchOptions& opt) {
  const bool multi_system = p.systems.size() > 1;
  std::vector<std::string> names;
  for (const auto& sys : p.systems) names.push_back(sys.name);
  const std::string systems = join(names, ", ");
  std::cout << fmt::format("llmsim search train: {} on {}\n", p.model->name, systems);
  std::cout << fmt::format("fixed: {}\n", header_line(p, rs));
  const std::string searched = o.processed < o.space_size ? fmt::format(" ({} searched before the interrupt)",
                                                                        thousands(static_cast<double>(o.processed)))
                                                          : std::string();
  std::cout << fmt::format(
      "space: {} configurations{}; {} estimated, {} feasible, {} pruned ({:.2f} s, {} configs/s, {} "
      "threads)\n",
      thousands(static_cast<double>(o.space_size)), searched, thousands(static_cast<double>(o.evaluated)),
      thousands(static_cast<double>(o.feasible)), thousands(static_cast<double>(o.pruned.total())), o.fast_seconds,
      thousands(o.evals_per_s()), o.threads);
  if (o.status == sim::SearchStatus::EmptySpace) {
    print_empty(o, o.pruned, &gen);
    return;
  }
  print_pruned(o.pruned, o.space_size, &gen, 6);
  if (o.status == sim::SearchStatus::Interrupted)
    std::cout << "\nINTERRUPTED: the best configurations found so far (fast estimates, not re-evaluated):\n";
  else
    std::cout << fmt::format(
        "\nobjective: {}; {} re-evaluated with the full simulator (the fast estimate is within "
        "{:.1f}% of it on them)\n",
        objective_text(p), reverified(o, opt.verify), 100 * o.max_fast_error);
  std::cout << "\n";
  print_entries(p, o.top, multi_system);
  if (o.pareto.size() > 1) {
    std::cout << "\nPareto front, throughput vs GPUs (by the estimate, each faster than every configuration with fewer "
                 "GPUs):\n";
    print_entries(p, o.pareto, multi_system);
  }
  if (c.explain && o.top.size() >= 2) explain(p, o.top[0], o.top[1]);
}

}  // namespace

Runner add_search_command(CLI::App& app) {
  CLI::App* top = app.add_subcommand(
      "search", "what-if search: the best configurations of a parallelism / memory / precision space");
  top->require_subcommand(1);
  auto cmd = std::make_shared<SearchCommand>();
  CLI::App* sub = top->add_subcommand(
      "train", "llmsim search train --model M --system S --gpus 64 [--tp 1,2,4,8] [--micro-batch pow2:1-16] …");
  sub->allow_extras();
  add_flags(*sub, *cmd);
  return [cmd, sub]() -> int {
    reject_extras(*sub);
    return run_search(*sub, *cmd);
  };
}

}  // namespace llmsim::cli
