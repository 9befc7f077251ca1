// `llmsim plan train`: capacity planning, the fewest GPUs (then the lowest cost) that train N tokens by a
// deadline (flags and the problem shared with search in search_train_flags); `plan serve` is
// cmd_plan_serve.cpp.
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "llmsim/core/suggest.h"
#include "llmsim/report/report.h"
#include "llmsim/report/search_document.h"

#include "commands.h"
#include "search_train_flags.h"
#include "search_train_output.h"

namespace llmsim::cli {

namespace {
using namespace search_train;  // NOLINT(google-build-using-namespace): this file's own helpers

// The plan as a table: the answer, its time, cost and energy, the configuration, alternatives and what
// was pruned.
void print_plan_table(const SearchCommand& c, const sim::SearchProblem& p, const sim::PlanOutcome& o,
                      const sim::SearchEntry* best) {
  const bool multi_system = p.systems.size() > 1;
  const sim::ResolvedTrainSpace rs = sim::resolve_train_space(p.space, *p.model, p.systems);
  std::vector<std::string> names;
  for (const auto& sys : p.systems) names.push_back(sys.name);
  std::cout << fmt::format("llmsim plan train: {}, {:.3g} tokens within {} on {}\n", p.model->name, p.train_tokens,
                           report::duration_text(p.deadline_s), join(names, ", "));
  std::cout << fmt::format("fixed: {}\n", header_line(p, rs));
  if (o.counts_tried > 0)
    std::cout << fmt::format("searched: {} GPU counts from {} to {} ({} configurations, {} estimated, {:.2f} s)",
                             o.counts_tried, o.first_count, o.last_count, thousands(static_cast<double>(o.space_size)),
                             thousands(static_cast<double>(o.evaluated)), o.seconds);
  else
    std::cout << fmt::format("searched: no GPU count ({} configurations)",
                             thousands(static_cast<double>(o.space_size)));
  if (o.lower_bound_gpus > 0)
    std::cout << fmt::format("; {} GPUs or fewer cannot meet the deadline even at 100% MFU",
                             thousands(static_cast<double>(o.lower_bound_gpus)));
  std::cout << "\n";
  if (o.counts_tried == 0 && o.lower_bound_gpus >= p.space.max_gpus && p.space.max_gpus > 0)
    std::cout << fmt::format("contradictory constraints: --max-gpus {} is below the {} GPUs that 100% MFU would need\n",
                             p.space.max_gpus, thousands(static_cast<double>(o.lower_bound_gpus + 1)));
  if (o.status == sim::SearchStatus::EmptySpace) {
    sim::SearchOutcome dummy;
    dummy.space_size = o.space_size;
    print_empty(dummy, o.pruned, nullptr);
    return;
  }
  if (o.status == sim::SearchStatus::Interrupted) std::cout << "\nINTERRUPTED: best so far below (fast estimate)\n";
  if (!best) return;
  const report::SearchRow w = report::search_row(p, *best);
  const auto& sys = p.systems[static_cast<std::size_t>(best->system)];
  std::cout << "\n";
  std::cout << report::plan_verdict(p, o, best).text << "\n";
  if (best->full && best->full->valid()) {
    const auto& f = *best->full;
    std::cout << fmt::format("  time           {}  [{} .. {}]  for {} steps\n",
                             report::duration_text(f.total_time_s.value), report::duration_text(f.total_time_s.low),
                             report::duration_text(f.total_time_s.high), thousands(f.total_steps));
    if (o.met && f.total_time_s.high > p.deadline_s)
      std::cout << fmt::format("                 (the interval's slow edge misses the deadline: the profile is {})\n",
                               sys.efficiency.calibrated ? "calibrated" : "uncalibrated; see llmsim calibrate");
  } else {
    std::cout << fmt::format("  time           {} (estimate)\n", report::duration_text(w.time));
  }
  if (!p.price_per_gpu_hour.empty())
    std::cout << fmt::format("  cost           {} at {:.2f} per GPU-hour ({} GPU-hours)\n", thousands(w.cost),
                             p.price_per_gpu_hour[static_cast<std::size_t>(best->system)],
                             thousands(static_cast<double>(best->run.par.gpus) * w.time / 3600));
  else
    std::cout << fmt::format("  GPU-hours      {} (give --price-per-gpu-hour for the cost)\n",
                             thousands(static_cast<double>(best->run.par.gpus) * w.time / 3600));
  std::cout << fmt::format("  energy         {:.3g} MWh of GPU energy at TDP ({} GPUs x {:.0f} W x time)\n",
                           w.energy / 3.6e9, best->run.par.gpus, sys.gpu.tdp_W);
  std::cout << fmt::format("  configuration  {}\n", describe_run(best->run));
  std::cout << fmt::format("  step           {}, {} tokens/s ({} per GPU){}, {} of {} GiB per GPU\n",
                           report::duration_text(w.step), thousands(w.tps), thousands(w.per_gpu),
                           w.full ? fmt::format(", MFU {:.1f}%", 100 * w.mfu) : "", gib(w.mem),
                           gib(sys.gpu.memory_bytes));
  if (o.met && o.search.top.size() > 1) {
    std::cout << fmt::format("\nconfigurations meeting the deadline at {} GPUs (best first):\n", o.gpus);
    print_entries(p, o.search.top, multi_system);
  }
  if (c.explain && o.met && o.search.top.size() >= 2) explain(p, o.search.top[0], o.search.top[1]);
  std::cout << "\n";
  print_pruned(o.pruned, o.space_size, nullptr, 5);
}

int run_plan(const CLI::App& app, SearchCommand& c) {
  check_outputs(app, c.common);
  Built b = build_problem(app, c);
  sim::SearchProblem& p = b.problem;
  sim::SearchOptions opt;
  opt.threads = c.threads;
  opt.top = c.top;
  opt.verify = std::max<std::size_t>(c.verify, 1);
  SigintGuard guard;
  opt.cancel = &g_interrupted;
  opt.progress = progress_printer("plan");
  const sim::PlanOutcome o = sim::plan_training(p, opt);
  clear_progress();
  std::cerr << fmt::format("llmsim: plan: {} GPU counts, {} configurations in {:.2f} s\n", o.counts_tried,
                           thousands(static_cast<double>(o.space_size)), o.seconds);
  const int rc = o.status == sim::SearchStatus::EmptySpace    ? kExitEmptySpace
                 : o.status == sim::SearchStatus::Interrupted ? kExitInterrupted
                 : o.met                                      ? 0
                                                              : 1;
  const sim::SearchEntry* best = o.met && !o.search.top.empty() ? &o.search.top.front()
                                 : o.fastest                    ? &*o.fastest
                                                                : nullptr;
  emit(c.common, report::plan_train_document(p, o, best), [&] { print_plan_table(c, p, o, best); });
  return rc;
}

}  // namespace

Runner add_plan_command(CLI::App& app) {
  CLI::App* top = app.add_subcommand(
      "plan", "capacity planning: the fewest GPUs (then the lowest cost) that train N tokens by a deadline");
  top->require_subcommand(1);
  auto cmd = std::make_shared<SearchCommand>();
  cmd->plan = true;
  CLI::App* sub = top->add_subcommand("train",
                                      "llmsim plan train --model M --tokens 1e12 --deadline 30d [--system S…] "
                                      "[--max-gpus N] [--price-per-gpu-hour X]");
  sub->allow_extras();
  add_flags(*sub, *cmd);
  Runner serve = add_plan_serve_subcommand(*top);
  return [cmd, sub, serve]() -> int {
    if (!sub->parsed()) return serve();
    reject_extras(*sub);
    return run_plan(*sub, *cmd);
  };
}

}  // namespace llmsim::cli
