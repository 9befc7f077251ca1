#include "llmsim/report/search_document.h"

#include "llmsim/report/report.h"
#include "llmsim/report/run_summary.h"

namespace llmsim::report {

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
    if (f.total_steps > 0)
      j["full"]["total"] = {{"steps", f.total_steps},
                            {"time_s", figure(f.total_time_s, "s")},
                            {"cost", f.total_cost},
                            {"energy_J", figure(f.total_energy_J, "J")}};
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

}  // namespace llmsim::report
