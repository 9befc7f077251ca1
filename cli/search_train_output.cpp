#include "search_train_output.h"

#include <unistd.h>

#include <cmath>
#include <fstream>
#include <iostream>
#include <map>

#include <fmt/format.h>

#include "llmsim/core/error.h"
#include "llmsim/core/suggest.h"
#include "llmsim/core/units.h"
#include "llmsim/report/report.h"
#include "llmsim/report/search_document.h"
#include "llmsim/run/sample_lengths.h"

namespace llmsim::cli::search_train {

namespace {
const char* on_off(bool b) { return b ? "on" : "off"; }
}  // namespace

std::string thousands(double v) {
  const auto n = static_cast<long long>(std::llround(v));
  std::string s = std::to_string(n < 0 ? -n : n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<std::size_t>(i), ",");
  return n < 0 ? "-" + s : s;
}

std::string objective_text(const sim::SearchProblem& p) {
  switch (p.objective) {
    case sim::Objective::TokensPerS: return "maximise tokens/s";
    case sim::Objective::TokensPerSPerGpu: return "maximise tokens/s per GPU";
    case sim::Objective::TokensPerDollar: return "maximise tokens per unit of cost";
    case sim::Objective::Time: return fmt::format("minimise the time to train {:.3g} tokens", p.train_tokens);
    case sim::Objective::Cost: return fmt::format("minimise the cost to train {:.3g} tokens", p.train_tokens);
  }
  return "";
}

void print_entries(const sim::SearchProblem& p, const std::vector<sim::SearchEntry>& v, bool with_system,
                   std::size_t first_rank) {
  const bool totals = p.train_tokens > 0;
  const bool cost = totals && !p.price_per_gpu_hour.empty();
  std::cout << fmt::format(
      "{:>3}  {}{:>5} {:>3} {:>3} {:>4} {:>3} {:>3} {:>3} {:>3}  {:<9} {:>3} {:>4}  {:<9}  {:>10} {:>11} {:>7} {:>6} "
      "{:>7}",
      "#", with_system ? fmt::format("{:<16}", "system") : "", "gpus", "tp", "pp", "dp", "cp", "vp", "mb", "m",
      "recompute", "sp", "zero", "framework", "step", "tokens/s", "/GPU", "MFU", "mem GiB");
  if (totals) std::cout << fmt::format(" {:>10}", "time");
  if (cost) std::cout << fmt::format(" {:>12}", "cost");
  std::cout << "\n";
  for (std::size_t k = 0; k < v.size(); ++k) {
    const auto& e = v[k];
    const auto& r = e.run;
    const report::SearchRow w = report::search_row(p, e);
    const std::string sys =
        with_system ? fmt::format("{:<16}", p.systems[static_cast<std::size_t>(e.system)].name) : "";
    std::cout << fmt::format(
        "{:>3}  {}{:>5} {:>3} {:>3} {:>4} {:>3} {:>3} {:>3} {:>3}  {:<9} {:>3} {:>4}  {:<9}  {:>10} {:>11} {:>7} {:>6} "
        "{:>7}",
        first_rank + k, sys, r.par.gpus, r.par.tp, r.par.pp, r.par.dp, r.par.cp, r.par.vp, r.train.micro_batch,
        r.train.global_batch / (r.train.micro_batch * r.par.dp), sim::name_of(r.train.recompute),
        on_off(r.par.sequence_parallel), r.train.zero_stage, sim::name_of(r.train.framework),
        report::duration_text(w.step), thousands(w.tps), thousands(w.per_gpu),
        w.full ? fmt::format("{:.1f}%", 100 * w.mfu) : std::string("-"), gib(w.mem));
    if (totals) std::cout << fmt::format(" {:>10}", report::duration_text(w.time));
    if (cost) std::cout << fmt::format(" {:>12}", thousands(w.cost));
    std::cout << (w.full ? "" : "  (estimate)") << "\n";
  }
}

void print_pruned(const sim::PruneTally& t, std::uint64_t space, const sim::TrainGenerator* gen, std::size_t max_rows) {
  if (t.total() == 0) return;
  std::cout << "pruned (most common reasons first):\n";
  std::size_t n = 0;
  std::uint64_t duplicates = 0;
  std::vector<std::string> duplicate_kinds;
  for (const auto& [key, r] : t.sorted()) {
    if (sim::is_duplicate_reason(key)) {
      duplicates += r.count;
      duplicate_kinds.push_back(key.substr(0, key.find(" (same as")));
      continue;
    }
    if (n++ == max_rows) {
      std::cout << "  …\n";
      continue;
    }
    if (n > max_rows) continue;
    std::string example = r.example;
    if (gen != nullptr && r.first_index < space) {
      sim::TrainCandidate cand;
      std::string k2, m2;
      gen->decode(r.first_index, cand, k2, m2);
      example =
          fmt::format("{} GPUs, tp {} pp {} cp {} vp {} mb {}, {}, ZeRO-{}: {}", cand.run.par.gpus, cand.run.par.tp,
                      cand.run.par.pp, cand.run.par.cp, cand.run.par.vp, cand.run.train.micro_batch,
                      sim::name_of(cand.run.train.framework), cand.run.train.zero_stage, r.example);
    }
    std::cout << fmt::format("  {:>12}  {}\n  {:>12}    e.g. {}\n", thousands(static_cast<double>(r.count)), key, "",
                             example);
  }
  if (duplicates > 0)
    std::cout << fmt::format("  {:>12}  duplicates of other configurations ({})\n",
                             thousands(static_cast<double>(duplicates)), join(duplicate_kinds, "; "));
}

void explain(const sim::SearchProblem& p, const sim::SearchEntry& a, const sim::SearchEntry& b) {
  std::cout << "\nwhy #1 beats #2";
  if (!a.full || !b.full || !a.full->valid() || !b.full->valid()) {
    std::cout << ": not re-evaluated with the full simulator (use --verify 2 or more)\n";
    return;
  }
  std::cout << " (full simulation, time by phase on the critical stage):\n";
  // What differs between the two configurations.
  std::vector<std::string> diff;
  auto cmp = [&](const char* name, const std::string& x, const std::string& y) {
    if (x != y) diff.push_back(fmt::format("{} {} vs {}", name, x, y));
  };
  const auto &ra = a.run, &rb = b.run;
  cmp("system", p.systems[static_cast<std::size_t>(a.system)].name, p.systems[static_cast<std::size_t>(b.system)].name);
  cmp("gpus", std::to_string(ra.par.gpus), std::to_string(rb.par.gpus));
  cmp("tp", std::to_string(ra.par.tp), std::to_string(rb.par.tp));
  cmp("pp", std::to_string(ra.par.pp), std::to_string(rb.par.pp));
  cmp("dp", std::to_string(ra.par.dp), std::to_string(rb.par.dp));
  cmp("cp", std::to_string(ra.par.cp), std::to_string(rb.par.cp));
  cmp("ep", std::to_string(ra.par.ep), std::to_string(rb.par.ep));
  cmp("vp", std::to_string(ra.par.vp), std::to_string(rb.par.vp));
  cmp("micro-batch", std::to_string(ra.train.micro_batch), std::to_string(rb.train.micro_batch));
  cmp("global batch", std::to_string(ra.train.global_batch), std::to_string(rb.train.global_batch));
  cmp("recompute", std::string(sim::name_of(ra.train.recompute)), std::string(sim::name_of(rb.train.recompute)));
  cmp("sequence parallel", on_off(ra.par.sequence_parallel), on_off(rb.par.sequence_parallel));
  cmp("ZeRO stage", std::to_string(ra.train.zero_stage), std::to_string(rb.train.zero_stage));
  cmp("offload", std::string(sim::name_of(ra.train.offload)), std::string(sim::name_of(rb.train.offload)));
  cmp("flash-attn", on_off(ra.train.flash_attn), on_off(rb.train.flash_attn));
  cmp("precision", std::string(dtype_name(ra.train.precision)), std::string(dtype_name(rb.train.precision)));
  cmp("framework", std::string(sim::name_of(ra.train.framework)), std::string(sim::name_of(rb.train.framework)));
  cmp("schedule", std::string(sim::name_of(ra.train.schedule)), std::string(sim::name_of(rb.train.schedule)));
  std::cout << "  differs in: " << (diff.empty() ? std::string("nothing") : join(diff, "; ")) << "\n";
  const auto &fa = *a.full, &fb = *b.full;
  std::vector<std::string> phases;
  for (const auto* v : {&fa.by_phase, &fb.by_phase})
    for (const auto& x : *v)
      if (std::find(phases.begin(), phases.end(), x.name) == phases.end()) phases.push_back(x.name);
  auto sec = [](const std::vector<sim::TimeShare>& v, const std::string& n) {
    for (const auto& x : v)
      if (x.name == n) return x.seconds;
    return 0.0;
  };
  std::cout << fmt::format("  {:<28} {:>12} {:>12} {:>12}\n", "phase", "#1", "#2", "#1 - #2");
  for (const auto& n : phases) {
    const double x = sec(fa.by_phase, n), y = sec(fb.by_phase, n);
    std::cout << fmt::format("  {:<28} {:>12} {:>12} {:>+11.3f}s\n", n, report::duration_text(x),
                             report::duration_text(y), x - y);
  }
  const double sa = fa.step_time_s.value, sb = fb.step_time_s.value;
  std::cout << fmt::format("  {:<28} {:>12} {:>12} {:>+11.3f}s\n", "step", report::duration_text(sa),
                           report::duration_text(sb), sa - sb);
  std::cout << fmt::format("  {:<28} {:>12} {:>12}   ({:+.1f}%)\n", "tokens/s", thousands(fa.tokens_per_s.value),
                           thousands(fb.tokens_per_s.value), 100 * (fa.tokens_per_s.value / fb.tokens_per_s.value - 1));
  // The biggest phase differences, in words.
  std::vector<std::pair<double, std::string>> d;
  for (const auto& n : phases) d.emplace_back(sec(fa.by_phase, n) - sec(fb.by_phase, n), n);
  std::sort(d.begin(), d.end());
  if (!d.empty() && d.front().first < 0)
    std::cout << fmt::format("  #1 saves most on {} ({} less per step)\n", d.front().second,
                             report::duration_text(-d.front().first));
  if (p.objective != sim::Objective::TokensPerS && a.full_score != b.full_score)
    std::cout << fmt::format("  objective ({}): {:.6g} vs {:.6g}\n", sim::name_of(p.objective), a.full_score,
                             b.full_score);
}

void write_all_csv(const std::string& path, const sim::SearchProblem& p, const std::vector<sim::SearchEntry>& all) {
  std::ofstream f(path);
  if (!f) throw_input(Location{.file = path}, "cannot open the CSV file for writing");
  f << "schema_version,index,system,gpus,tp,pp,dp,cp,ep,vp,micro_batch,global_batch,recompute,sequence_parallel,"
       "zero_stage,offload,flash_attn,precision,framework,pipeline_schedule,est_step_time_s,est_tokens_per_s,"
       "est_tokens_per_s_per_gpu,gpu_mem_gib,score\n";
  for (const auto& e : all) {
    const auto& r = e.run;
    f << fmt::format(
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.6g},{:.6g},{:.6g},{:.3f},{:.8g}\n",
        report::kSchemaVersion, e.index, report::csv_field(p.systems[static_cast<std::size_t>(e.system)].name),
        r.par.gpus, r.par.tp, r.par.pp, r.par.dp, r.par.cp, r.par.ep, r.par.vp, r.train.micro_batch,
        r.train.global_batch, sim::name_of(r.train.recompute), on_off(r.par.sequence_parallel), r.train.zero_stage,
        sim::name_of(r.train.offload), on_off(r.train.flash_attn), dtype_name(r.train.precision),
        sim::name_of(r.train.framework), sim::name_of(r.train.schedule), e.fast.step_time_s, e.fast.tokens_per_s,
        e.fast.tokens_per_s / static_cast<double>(r.par.gpus), e.gpu_bytes / units::GiB, e.score);
  }
  std::cerr << fmt::format("llmsim: wrote {} configurations to {}\n", all.size(), path);
}

// Progress on stderr: a live line on a terminal; in a pipe or a log, one line a minute (so that a long
// search is seen to run and how far it is; a search of under a minute prints none).
std::function<void(std::uint64_t, std::uint64_t, double)> progress_printer(const char* what) {
  if (!isatty(STDERR_FILENO)) {
    return [what, next = 60.0](std::uint64_t done, std::uint64_t total, double el) mutable {
      if (el < next) return;
      next = el + 60;
      const double rate = el > 0 ? static_cast<double>(done) / el : 0;
      std::cerr << fmt::format("llmsim: {}: {:.1f}% of {} configurations after {:.0f} s, {} configs/s{}\n", what,
                               total ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 100.0,
                               thousands(static_cast<double>(total)), el, thousands(rate),
                               rate > 0 && total > done
                                   ? fmt::format(", about {:.0f} s left", static_cast<double>(total - done) / rate)
                                   : "");
    };
  }
  return [what](std::uint64_t done, std::uint64_t total, double el) {
    std::cerr << fmt::format("\rllmsim: {}: {:5.1f}% of {} configurations, {} configs/s   ", what,
                             total ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 100.0,
                             thousands(static_cast<double>(total)),
                             thousands(el > 0 ? static_cast<double>(done) / el : 0))
              << std::flush;
  };
}

void clear_progress() {
  if (isatty(STDERR_FILENO)) std::cerr << "\r" << std::string(90, ' ') << "\r";
}

std::string header_line(const sim::SearchProblem& p, const sim::ResolvedTrainSpace& rs) {
  const auto& b = p.space.base;
  std::string gb =
      rs.one_micro_batch_per_step ? std::string(
                                        "global batch = micro-batch x dp (the optimizer steps in backward: one "
                                        "micro-batch per step; set --global-batch to fix it)")
      : rs.global_batch_min == rs.global_batch_max
          ? fmt::format("global batch {} ({:.3g} M tokens per step{})", rs.global_batch_min,
                        static_cast<double>(rs.global_batch_min) * sim::sample_shape(b.train).tokens_per_sequence / 1e6,
                        p.space.global_batch_min > 0 ? "" : ", the default; set --global-batch")
          : fmt::format("global batch the largest multiple of micro-batch x dp in {}-{}", rs.global_batch_min,
                        rs.global_batch_max);
  std::string s = fmt::format("{}, seq {}, {}", sim::name_of(b.workload), b.train.seq_len, gb);
  if (b.train.tokens_per_sample > 0)
    s += fmt::format(", samples of {:g} tokens on average (padding {})", b.train.tokens_per_sample,
                     sim::name_of(b.train.padding));
  if (b.train.optimizer != sim::Optimizer::Adam) s += fmt::format(", {}", sim::name_of(b.train.optimizer));
  if (b.train.finetune != sim::FinetuneKind::Full)
    s += fmt::format(", {} rank {}", sim::name_of(b.train.finetune), b.train.lora_rank);
  return s;
}

void print_empty(const sim::SearchOutcome& o, const sim::PruneTally& t, const sim::TrainGenerator* gen) {
  std::cout << "\nresult: EMPTY SEARCH SPACE — no configuration is feasible.\n";
  const auto v = t.sorted();
  for (const auto& [k, r] : v) {
    if (sim::is_duplicate_reason(k)) continue;
    std::cout << fmt::format("most common reason: {} ({} of {} configurations)\n", k,
                             thousands(static_cast<double>(r.count)), thousands(static_cast<double>(o.space_size)));
    break;
  }
  print_pruned(t, o.space_size, gen, 8);
  // Contradictory constraints, spelled out.
  std::uint64_t binding = 0;
  for (const auto& [k, r] : v)
    if (!sim::is_duplicate_reason(k)) binding += r.count;
  for (const auto& [k, r] : v) {
    if (k == "more GPUs than --max-gpus" && r.count == binding)
      std::cout << "--max-gpus is smaller than every GPU count of the space\n";
    if (k.find("global batch") != std::string::npos && r.count * 2 >= binding)
      std::cout << "the global batch does not divide into micro-batch x dp for most configurations: try "
                   "--global-batch as a range (e.g. 512-2048) or other --micro-batch / --gpus values\n";
  }
}

std::string reverified(const sim::SearchOutcome& o, std::size_t verify) {
  const std::size_t n = std::min<std::size_t>(verify, o.feasible);
  std::string s = n > 0 ? fmt::format("the best {}", n) : std::string("none of the best (--verify 0)");
  if (o.pareto.size() > 1) s += n > 0 ? " and the Pareto front" : "; the Pareto front";
  return s;
}

}  // namespace llmsim::cli::search_train
