#include "llmsim/report/search_document.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "llmsim/report/report.h"
#include "llmsim/report/run_summary.h"
#include "llmsim/report/train_parts.h"

namespace llmsim::report {

std::string duration_text(double s) {
  if (s >= 2 * 86400) return fmt::format("{:.1f} days", s / 86400);
  if (s >= 7200) return fmt::format("{:.1f} h", s / 3600);
  if (s >= 1) return fmt::format("{:.2f} s", s);
  return fmt::format("{:.1f} ms", s * 1e3);
}

SearchRow search_row(const sim::SearchProblem& p, const sim::SearchEntry& e) {
  SearchRow r;
  if (e.full && e.full->valid()) {
    const auto& f = *e.full;
    r.full = true;
    r.step = f.step_time_s.value;
    r.tps = f.tokens_per_s.value;
    r.per_gpu = f.tokens_per_s_per_gpu.value;
    r.mfu = f.mfu.value;
    r.mem = f.memory.gpu_bytes;
    r.time = f.total_time_s.value;
    r.cost = f.total_cost;
    r.energy = f.total_energy_J;
  } else {
    r.step = e.fast.step_time_s;
    r.tps = e.fast.tokens_per_s;
    r.per_gpu = r.tps / static_cast<double>(e.run.par.gpus);
    r.mem = e.gpu_bytes;
    if (p.train_tokens > 0) {
      r.time = std::ceil(p.train_tokens / e.fast.tokens_per_step) * r.step;
      const double price = p.price_per_gpu_hour.empty() ? 0 : p.price_per_gpu_hour[static_cast<std::size_t>(e.system)];
      r.cost = price * static_cast<double>(e.run.par.gpus) * r.time / 3600.0;
      r.energy = static_cast<double>(e.run.par.gpus) * p.systems[static_cast<std::size_t>(e.system)].gpu.tdp_W * r.time;
    }
  }
  return r;
}

std::vector<std::string> system_names(const sim::SearchProblem& p) {
  std::vector<std::string> v;
  for (const auto& s : p.systems) v.push_back(s.name);
  return v;
}

std::string status_name(sim::SearchStatus s) {
  switch (s) {
    case sim::SearchStatus::Ok: return "ok";
    case sim::SearchStatus::EmptySpace: return "empty";
    case sim::SearchStatus::Interrupted: return "interrupted";
  }
  return "ok";
}

nlohmann::json search_entry_json(const sim::SearchProblem& p, const sim::SearchEntry& e, std::size_t rank) {
  const auto& r = e.run;
  nlohmann::json j;
  if (rank > 0) j["rank"] = rank;
  j["index"] = e.index;
  j["system"] = p.systems[static_cast<std::size_t>(e.system)].name;
  j["run_summary"] = describe_run(r);
  j["config"] = {{"gpus", r.par.gpus},
                 {"tp", r.par.tp},
                 {"pp", r.par.pp},
                 {"dp", r.par.dp},
                 {"cp", r.par.cp},
                 {"ep", r.par.ep},
                 {"vp", r.par.vp},
                 {"micro-batch", r.train.micro_batch},
                 {"global-batch", r.train.global_batch},
                 {"recompute", sim::name_of(r.train.recompute)},
                 {"sequence-parallel", r.par.sequence_parallel},
                 {"zero-stage", r.train.zero_stage},
                 {"offload", sim::name_of(r.train.offload)},
                 {"flash-attn", r.train.flash_attn},
                 {"precision", dtype_name(r.train.precision)},
                 {"framework", sim::name_of(r.train.framework)},
                 {"pipeline-schedule", sim::name_of(r.train.schedule)}};
  j["fast"] = {{"step_time_s", figure(e.fast.step_time_s, "s")},
               {"tokens_per_s", figure(e.fast.tokens_per_s, "tokens/s")},
               {"gpu_bytes", figure(e.gpu_bytes, "B")},
               {"score", e.score}};
  if (e.full && e.full->valid()) {
    const auto& f = *e.full;
    j["full"] = {{"step_time_s", figure(f.step_time_s, "s")},
                 {"tokens_per_s", figure(f.tokens_per_s, "tokens/s")},
                 {"tokens_per_s_per_gpu", figure(f.tokens_per_s_per_gpu, "tokens/s")},
                 {"mfu", figure(f.mfu, "fraction")},
                 {"gpu_bytes", figure(f.memory.gpu_bytes, "B")},
                 {"fits", f.memory.fits()},
                 {"score", e.full_score}};
    if (f.total_steps > 0) j["full"]["total"] = train_totals(f);
    auto phases = nlohmann::json::array();
    for (const auto& x : f.by_phase) phases.push_back({{"name", x.name}, {"seconds", figure(x.seconds, "s")}});
    j["full"]["by_phase"] = phases;
  }
  return j;
}

nlohmann::json pruned_json(const sim::PruneTally& t) {
  auto a = nlohmann::json::array();
  for (const auto& [k, r] : t.sorted()) a.push_back({{"reason", k}, {"count", r.count}, {"example", r.example}});
  return a;
}

nlohmann::json search_document(const sim::SearchProblem& p, const sim::SearchOutcome& o) {
  nlohmann::json j = header("search train");
  j["model"] = p.model->name;
  j["systems"] = system_names(p);
  j["status"] = status_name(o.status);
  j["objective"] = sim::name_of(p.objective);
  j["space_size"] = o.space_size;
  j["processed"] = o.processed;
  j["evaluated"] = o.evaluated;
  j["feasible"] = o.feasible;
  j["pruned"] = pruned_json(o.pruned);
  j["seconds"] = figure(o.fast_seconds, "s");
  j["configs_per_s"] = o.evals_per_s();
  j["threads"] = o.threads;
  j["max_fast_error"] = o.max_fast_error;
  auto top = nlohmann::json::array();
  for (std::size_t k = 0; k < o.top.size(); ++k) top.push_back(search_entry_json(p, o.top[k], k + 1));
  j["top"] = top;
  auto front = nlohmann::json::array();
  for (const auto& e : o.pareto) front.push_back(search_entry_json(p, e, 0));
  j["pareto"] = front;
  return j;
}

// The answer in one sentence (the table's answer line; add_verdict).
Verdict plan_verdict(const sim::SearchProblem& p, const sim::PlanOutcome& o, const sim::SearchEntry* best) {
  if (!best) return {.ok = false, .text = "answer: no configuration fits and runs (see what was pruned)"};
  const auto& sys = p.systems[static_cast<std::size_t>(best->system)];
  if (o.met)
    return {.ok = true,
            .text = fmt::format("answer: {} GPUs of {} ({} nodes of {})", o.gpus, sys.name,
                                (o.gpus + sys.node.gpus_per_node - 1) / std::max(1, sys.node.gpus_per_node),
                                sys.node.gpus_per_node)};
  return {.ok = false,
          .text = fmt::format("answer: the deadline cannot be met with at most {} GPUs; the fastest configuration "
                              "found needs {}",
                              p.space.max_gpus, duration_text(search_row(p, *best).time))};
}

// The plan report (docs/output-schema.md, "plan train").
nlohmann::json plan_train_document(const sim::SearchProblem& p, const sim::PlanOutcome& o,
                                   const sim::SearchEntry* best) {
  nlohmann::json j = header("plan train");
  const Verdict verdict = plan_verdict(p, o, best);
  add_verdict(j, verdict.ok, verdict.text);
  j["model"] = p.model->name;
  j["systems"] = system_names(p);
  j["tokens"] = p.train_tokens;
  j["deadline_s"] = figure(p.deadline_s, "s");
  j["status"] = status_name(o.status);
  j["met"] = o.met;
  j["gpus"] = o.gpus;
  j["lower_bound_gpus"] = o.lower_bound_gpus;
  j["counts_tried"] = o.counts_tried;
  j["space_size"] = o.space_size;
  j["evaluated"] = o.evaluated;
  j["pruned"] = pruned_json(o.pruned);
  if (best) j["best"] = search_entry_json(p, *best, 1);
  auto alt = nlohmann::json::array();
  for (std::size_t k = 1; o.met && k < o.search.top.size(); ++k)
    alt.push_back(search_entry_json(p, o.search.top[k], k + 1));
  j["alternatives"] = alt;
  return j;
}

}  // namespace llmsim::report
