#include "llmsim/report/plan_serve_document.h"

#include <fmt/format.h>

#include "llmsim/report/report.h"
#include "llmsim/run/engine_profile.h"

namespace llmsim::report {

// How a candidate serves: aggregated, or its prefill and decode pools ("2P+1D").
std::string serve_layout(const sim::ServePlanCandidate& k) {
  return k.prefill_replicas > 0 ? fmt::format("{}P+{}D", k.prefill_replicas, k.decode_replicas) : "aggregated";
}

// A p99 of a candidate with the iteration model's band (its run's latency ratio band).
sim::Interval p99_band(double p99, const sim::ServePlanCandidate& k) {
  return sim::Interval{p99, p99 * k.latency_band_low, p99 * k.latency_band_high};
}

namespace {
// "replica" or "replicas" for n of them.
std::string_view replicas(std::int64_t n) { return n == 1 ? "replica" : "replicas"; }
}  // namespace

// The answer in one sentence (the table's answer line; add_verdict): the cheapest candidate that meets
// the SLOs, or that none does within the GPUs allowed.
Verdict serve_plan_verdict(const sim::ServePlan& plan, std::int64_t max_gpus) {
  if (!plan.found()) return {.ok = false, .text = fmt::format("no candidate meets the SLOs within {} GPUs", max_gpus)};
  const auto& b = plan.candidates.front();
  return {.ok = true,
          .text = fmt::format(
              "answer: {} GPU{} of {}: {} on {}{}; p99 TTFT {:.0f} ms, p99 TPOT {:.1f} ms, {:.0f} output tokens/s{}",
              b.gpus, b.gpus == 1 ? "" : "s", b.system,
              b.prefill_replicas > 0 ? fmt::format("{} prefill {} of TP{} + {} decode {} of TP{}", b.prefill_replicas,
                                                   replicas(b.prefill_replicas), b.tp, b.decode_replicas,
                                                   replicas(b.decode_replicas), b.decode_tp)
                                     : fmt::format("{} {} of TP{}", b.replicas, replicas(b.replicas), b.tp),
              sim::name_of(b.engine),
              b.weight_quant != model::WeightQuant::None
                  ? fmt::format(" ({} weights)", model::weight_quant_name(b.weight_quant))
                  : "",
              b.ttft_p99_s * 1e3, b.tpot_p99_s * 1e3, b.output_tokens_per_s,
              b.cost_per_hour > 0 ? fmt::format(", {:.2f} per hour", b.cost_per_hour) : "")};
}

// The plan report (docs/output-schema.md, "plan serve"): the question as an object (model, rate, SLOs,
// lengths, what was considered) and every evaluated candidate, feasible first.
nlohmann::json plan_serve_document(const model::ModelSpec& m, const std::vector<hardware::SystemSpec>& systems,
                                   const sim::ServePlanSpec& spec, const sim::ServePlan& plan) {
  nlohmann::json j = header("plan serve");
  const Verdict verdict = serve_plan_verdict(plan, spec.max_gpus);
  add_verdict(j, verdict.ok, verdict.text);
  nlohmann::json q{{"model", m.name},
                   {"rate_per_s", spec.rate},
                   {"slo_ttft_p99_s", figure(spec.slo_ttft_p99_s, "s")},
                   {"slo_tpot_p99_s", figure(spec.slo_tpot_p99_s, "s")},
                   {"input_len", spec.input.describe()},
                   {"output_len", spec.output.describe()},
                   {"shared_prefix_tokens", spec.shared_prefix_tokens},
                   {"prefix_groups", spec.prefix_groups},
                   {"adapters", spec.adapters},
                   {"precision", dtype_name(spec.precision)},
                   {"max_gpus", spec.max_gpus},
                   {"requests_per_replica", spec.requests_per_replica},
                   {"price_per_gpu_hour", spec.price_per_gpu_hour}};
  for (const auto& s : systems) q["systems"].push_back(s.name);
  for (const auto e : spec.engines) q["engines"].push_back(sim::serving_engine_name(e));
  q["tp"] = spec.tps;
  q["pp"] = spec.pps;
  j["question"] = q;
  j["found"] = plan.found();
  j["candidates"] = nlohmann::json::array();
  for (const auto& k : plan.candidates)
    j["candidates"].push_back({{"system", k.system},
                               {"layout", serve_layout(k)},
                               {"prefill_replicas", k.prefill_replicas},
                               {"decode_replicas", k.decode_replicas},
                               {"engine", sim::serving_engine_name(k.engine)},
                               {"tp", k.tp},
                               {"decode_tp", k.decode_tp},
                               {"pp", k.pp},
                               {"weight_quant", model::weight_quant_name(k.weight_quant)},
                               {"kv_dtype", dtype_name(k.kv_dtype)},
                               {"max_num_seqs", k.max_num_seqs},
                               {"chunked_prefill", k.chunked_prefill},
                               {"feasible", k.feasible},
                               {"replicas", k.replicas},
                               {"gpus", k.gpus},
                               {"ttft_p99_s", figure(p99_band(k.ttft_p99_s, k), "s")},
                               {"tpot_p99_s", figure(p99_band(k.tpot_p99_s, k), "s")},
                               {"requests_per_replica", k.requests_per_replica},
                               {"converged", k.converged},
                               {"p99_change", k.p99_change},
                               {"output_tokens_per_s", figure(k.output_tokens_per_s, "tokens/s")},
                               {"cost_per_hour", k.cost_per_hour},
                               {"pareto", k.pareto},
                               {"why", k.why}});
  return j;
}

}  // namespace llmsim::report
