#include "llmsim/search/plan_serve.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "llmsim/core/error.h"
#include "llmsim/serve/serving_disagg.h"
#include "llmsim/serve/serving_sim.h"

namespace llmsim::sim {

namespace {

struct Outcome {
  bool ran = false;    // the configuration can serve at all (fits, KV for a request)
  bool meets = false;  // p99 TTFT and TPOT within the SLOs
  std::string why;
  double ttft_p99 = 0, tpot_p99 = 0, out_tps = 0;
  double band_low = 1, band_high = 1;  // the run's latency band (ServingResult::time_ratio_low/high)
};

// One replica at rate / replicas (round-robin dispatch of a Poisson stream is approximated by a Poisson
// stream at the replica's share).
// The settings one candidate fixes.
struct Choice {
  Framework engine;
  std::int64_t tp, pp;
  model::WeightQuant quant;
  DType kv;
  EngineProfile profile;  // with the candidate's overrides applied
};

// One replica of the candidate (its GPUs, formats and engine).
RunSpec candidate_run(const ServePlanSpec& spec, const Choice& ch) {
  RunSpec run;
  run.workload = Workload::Inference;
  run.par.gpus = ch.tp * ch.pp;
  run.par.tp = ch.tp;
  run.par.pp = ch.pp;
  run.infer.precision = spec.precision;
  run.infer.weight_quant = ch.quant;
  run.infer.kv_dtype = ch.kv;
  run.infer.framework = ch.engine;
  run.infer.input_len = static_cast<std::int64_t>(spec.input.mean()) + spec.shared_prefix_tokens;
  run.infer.output_len = static_cast<std::int64_t>(spec.output.mean());
  if (spec.adapters > 0) {
    run.infer.adapter_rank = spec.adapter_rank;
    run.infer.adapter_targets = spec.adapter_targets;
  }
  return run;
}

// The planned stream's requests: Poisson at `rate`, `requests` of them, the plan's lengths and prefixes.
std::vector<Request> candidate_stream(const ServePlanSpec& spec, double rate, std::int64_t requests) {
  StreamSpec s;
  s.kind = ArrivalKind::Poisson;
  s.rate = rate;
  s.requests = requests;
  s.input = spec.input;
  s.output = spec.output;
  s.shared_prefix_tokens = spec.shared_prefix_tokens;
  s.prefix_groups = spec.prefix_groups;
  s.adapters = spec.adapters;
  s.adapter_zipf = spec.adapter_zipf;
  s.seed = spec.seed;
  return generate_requests(s);
}

// What a simulated run says of the SLOs; `out_tps_scale` turns its output rate into all replicas'.
Outcome outcome_of(const ServePlanSpec& spec, const ServingResult& r, double out_tps_scale) {
  Outcome o;
  if (!r.valid()) {
    o.why = r.problems.front();
    return o;
  }
  o.ran = true;
  o.ttft_p99 = r.ttft.p99;
  o.tpot_p99 = r.tpot.p99;
  o.out_tps = r.output_tokens_per_s.value * out_tps_scale;
  o.band_low = r.time_ratio_low;
  o.band_high = r.time_ratio_high;
  o.meets = o.ttft_p99 <= spec.slo_ttft_p99_s && (spec.slo_tpot_p99_s <= 0 || o.tpot_p99 <= spec.slo_tpot_p99_s);
  return o;
}

Outcome evaluate(const model::ModelSpec& m, const hardware::SystemSpec& sys, const ServePlanSpec& spec,
                 const Choice& ch, std::int64_t replicas, std::int64_t per_replica) {
  ServingConfig cfg;
  cfg.engine = ch.profile;
  try {
    const auto requests = candidate_stream(spec, spec.rate / static_cast<double>(replicas), per_replica);
    return outcome_of(spec, simulate_serving(m, sys, candidate_run(spec, ch), cfg, requests),
                      static_cast<double>(replicas));
  } catch (const Error& e) {
    Outcome o;
    o.why = e.what();
    return o;
  }
}

// The whole stream on P prefill replicas of the candidate's TP and D decode replicas of `decode_tp` (pools of an
// engine that mixes prefill and decode), requests_per_replica per replica.
Outcome evaluate_pd(const model::ModelSpec& m, const hardware::SystemSpec& sys, const ServePlanSpec& spec,
                    const Choice& ch, std::int64_t prefill, std::int64_t decode, std::int64_t decode_tp,
                    std::int64_t per_replica) {
  ServingConfig cfg;
  cfg.engine = ch.profile;
  try {
    const auto requests = candidate_stream(spec, spec.rate, per_replica * (prefill + decode));
    const DisaggregatedResult r = simulate_disaggregated(
        m, sys, candidate_run(spec, ch), cfg,
        {.prefill_replicas = prefill, .prefill_tp = ch.tp, .decode_replicas = decode, .decode_tp = decode_tp},
        requests);
    return outcome_of(spec, r.whole, 1.0);
  } catch (const Error& e) {
    Outcome o;
    o.why = e.what();
    return o;
  }
}

// A candidate that meets the SLOs with `replicas` replicas on `gpus` GPUs, as the run `o` measured it.
void meets(ServePlanCandidate& c, const Outcome& o, std::int64_t replicas, std::int64_t gpus, double price) {
  c.feasible = true;
  c.replicas = replicas;
  c.gpus = gpus;
  c.ttft_p99_s = o.ttft_p99;
  c.tpot_p99_s = o.tpot_p99;
  c.output_tokens_per_s = o.out_tps;
  c.latency_band_low = o.band_low;
  c.latency_band_high = o.band_high;
  c.cost_per_hour = price * static_cast<double>(gpus);
}

// Whether a replica of `tp` GPUs can hold the model's attention heads and stay inside one fast domain.
bool tp_fits(const model::ModelSpec& m, const hardware::SystemSpec& sys, std::int64_t tp) {
  return m.num_heads % tp == 0 && model::kv_heads_per_rank(m, tp) > 0 && tp <= hardware::fast_domain_gpus(sys);
}

// The smallest n in lo+1..max_n for which `at(n)` meets the SLOs (lo: a count known to miss, 0 for none):
// doubling, then bisection (more replicas never raise a replica's load). Returns 0 and the last outcome when
// none does or a run fails.
std::pair<std::int64_t, Outcome> fewest(std::int64_t max_n, const std::function<Outcome(std::int64_t)>& at,
                                        std::int64_t lo = 0) {
  std::int64_t hi = lo + 1;
  Outcome at_hi = at(hi);
  if (!at_hi.ran) return {0, at_hi};
  while (!at_hi.meets && hi < max_n) {
    lo = hi;
    hi = std::min(max_n, hi * 2);
    at_hi = at(hi);
  }
  if (!at_hi.meets) return {0, at_hi};
  while (hi - lo > 1) {
    const std::int64_t mid = (lo + hi) / 2;
    const Outcome o = at(mid);
    if (o.meets) {
      hi = mid;
      at_hi = o;
    } else {
      lo = mid;
    }
  }
  return {hi, at_hi};
}

// How far the p99s the SLOs compare moved from `a` to `b` (relative, the larger of the two).
double p99_change(const ServePlanSpec& spec, const Outcome& a, const Outcome& b) {
  const auto rel = [](double x, double y) { return x > 0 ? std::abs(y / x - 1) : (y > 0 ? 1.0 : 0.0); };
  double c = rel(a.ttft_p99, b.ttft_p99);
  if (spec.slo_tpot_p99_s > 0) c = std::max(c, rel(a.tpot_p99, b.tpot_p99));
  return c;
}

// The answer of `fewest` on the first stream, then on streams twice as long until the compared p99s move by at
// most kSettledChange: a longer stream that misses the SLOs searches more replicas on it. `at(n, requests per
// replica)` simulates n replicas (or units).
struct Settled {
  std::int64_t n = 0;
  Outcome o;
  std::int64_t requests = 0;
  bool converged = false;
  double change = 0;
};
Settled settle(const ServePlanSpec& spec, std::int64_t max_n,
               const std::function<Outcome(std::int64_t, std::int64_t)>& at) {
  Settled s;
  s.requests = spec.requests_per_replica;
  std::tie(s.n, s.o) = fewest(max_n, [&](std::int64_t k) { return at(k, s.requests); });
  for (int d = 0; s.n > 0 && d < kMaxStreamDoublings && s.requests * 2 <= kMaxSettleRequests; ++d) {
    const std::int64_t longer = s.requests * 2;
    const Outcome o = at(s.n, longer);
    s.requests = longer;
    if (!o.ran) return Settled{0, o, longer, false, 0};
    if (!o.meets) {
      // The first answer was a warm-up's: more replicas on the longer stream, whose p99s the next doubling checks.
      if (s.n >= max_n) return Settled{0, o, longer, false, 0};
      std::tie(s.n, s.o) = fewest(
          max_n, [&](std::int64_t k) { return at(k, longer); }, s.n);
      s.converged = false;
      continue;
    }
    s.change = p99_change(spec, s.o, o);
    s.o = o;
    s.converged = s.change <= kSettledChange;
    if (s.converged) break;
  }
  return s;
}

}  // namespace

ServePlan plan_serving(const model::ModelSpec& m, const std::vector<hardware::SystemSpec>& systems,
                       const ServePlanSpec& spec) {
  if (!(spec.rate > 0)) throw_usage("--rate", fmt::format("--rate = {}: must be > 0 requests/s", spec.rate));
  if (!(spec.slo_ttft_p99_s > 0)) throw_usage("--slo-ttft", "--slo-ttft must be > 0 ms");
  ServePlan plan;
  std::vector<Choice> choices;
  std::vector<const hardware::SystemSpec*> choice_sys;
  std::vector<double> choice_price;  // the system's price of a GPU-hour (0 = none given)
  for (std::size_t si = 0; si < systems.size(); ++si) {
    const auto& sys = systems[si];
    const double price = si < spec.price_per_gpu_hour.size() ? spec.price_per_gpu_hour[si] : 0.0;
    for (Framework e : spec.engines)
      for (std::int64_t tp : spec.tps)
        for (std::int64_t pp : spec.pps)
          for (model::WeightQuant q : spec.weight_quants)
            for (DType kv : spec.kv_dtypes)
              for (std::int64_t seqs : spec.max_num_seqs)
                for (int chunk : spec.chunked_prefill) {
                  if (tp * pp > spec.max_gpus || pp > m.num_layers || !tp_fits(m, sys, tp)) continue;
                  Choice ch{e, tp, pp, q, kv, serving_profile(e, sys, {}, 0, tp)};
                  if (seqs > 0) ch.profile.max_num_seqs = seqs;
                  // An engine without multi-LoRA keeps 0 slots: its candidates come back infeasible with the reason.
                  if (spec.max_loras > 0 && ch.profile.max_loras > 0) ch.profile.max_loras = spec.max_loras;
                  if (chunk >= 0) ch.profile.chunked_prefill = chunk == 1;
                  choices.push_back(ch);
                  choice_sys.push_back(&sys);
                  choice_price.push_back(price);
                }
  }
  for (std::size_t i = 0; i < choices.size(); ++i) {
    if (spec.progress) spec.progress(i, choices.size());
    const Choice& ch = choices[i];
    const hardware::SystemSpec& sys = *choice_sys[i];
    const double price = choice_price[i];
    const ServePlanCandidate base{
        sys.name, ch.engine, ch.tp, ch.quant, ch.pp, ch.kv, ch.profile.max_num_seqs, ch.profile.chunked_prefill};
    const std::int64_t per_replica = ch.tp * ch.pp;  // GPUs per replica
    // An override the engine cannot run is refused as serve refuses it (engine_profile.h), by name.
    if (const auto why = chunked_prefill_problem(ch.profile)) {
      ServePlanCandidate c = base;
      c.why = *why;
      plan.candidates.push_back(c);
      continue;
    }
    // Aggregated: replicas of the candidate, each at its share of the rate.
    {
      ServePlanCandidate c = base;
      const Settled st = settle(spec, spec.max_gpus / per_replica, [&](std::int64_t replicas, std::int64_t requests) {
        return evaluate(m, sys, spec, ch, replicas, requests);
      });
      const auto& [n, o, requests, converged, change] = st;
      c.requests_per_replica = requests;
      c.converged = converged;
      c.p99_change = change;
      if (n == 0) {
        c.why = o.ran ? fmt::format(
                            "misses the SLOs even with {} replicas ({} GPUs): p99 TTFT {:.0f} ms, p99 TPOT "
                            "{:.1f} ms",
                            spec.max_gpus / per_replica, spec.max_gpus / per_replica * per_replica, o.ttft_p99 * 1e3,
                            o.tpot_p99 * 1e3)
                      : o.why;
      } else {
        meets(c, o, n, n * per_replica, price);
      }
      plan.candidates.push_back(c);
    }
    // Disaggregated: P x n prefill and D x n decode replicas (engines that mix prefill and decode, pp 1).
    if (ch.pp != 1 || ch.profile.batching != Batching::Continuous || ch.profile.separate_prefill) continue;
    for (const auto& [p, d] : spec.pd_ratios)
      for (const std::int64_t dtp : spec.tps) {
        if (!tp_fits(m, sys, dtp)) continue;
        ServePlanCandidate c = base;
        c.decode_tp = dtp;
        const std::int64_t per_unit = p * ch.tp + d * dtp;
        const Settled st = settle(spec, spec.max_gpus / per_unit, [&](std::int64_t k, std::int64_t requests) {
          return evaluate_pd(m, sys, spec, ch, p * k, d * k, dtp, requests);
        });
        const auto& [n, o, requests, converged, change] = st;
        c.requests_per_replica = requests;
        c.converged = converged;
        c.p99_change = change;
        c.prefill_replicas = p * std::max<std::int64_t>(1, n);
        c.decode_replicas = d * std::max<std::int64_t>(1, n);
        if (spec.max_gpus < per_unit) {
          c.why = fmt::format("{}P of TP{} + {}D of TP{} needs {} GPUs, more than {}", p, ch.tp, d, dtp, per_unit,
                              spec.max_gpus);
        } else if (n == 0) {
          c.why = o.ran ? fmt::format("misses the SLOs even with {}P+{}D: p99 TTFT {:.0f} ms, p99 TPOT {:.1f} ms",
                                      p * (spec.max_gpus / per_unit), d * (spec.max_gpus / per_unit), o.ttft_p99 * 1e3,
                                      o.tpot_p99 * 1e3)
                        : o.why;
        } else {
          meets(c, o, (p + d) * n, per_unit * n, price);
        }
        plan.candidates.push_back(c);
      }
  }
  if (spec.progress) spec.progress(choices.size(), choices.size());
  // The GPUs vs p99-TTFT Pareto front of the feasible candidates.
  for (auto& a : plan.candidates) {
    if (!a.feasible) continue;
    a.pareto = true;
    for (const auto& b : plan.candidates)
      if (b.feasible && b.gpus <= a.gpus && b.ttft_p99_s <= a.ttft_p99_s &&
          (b.gpus < a.gpus || b.ttft_p99_s < a.ttft_p99_s)) {
        a.pareto = false;
        break;
      }
  }
  std::stable_sort(plan.candidates.begin(), plan.candidates.end(),
                   [](const ServePlanCandidate& a, const ServePlanCandidate& b) {
                     if (a.feasible != b.feasible) return a.feasible;
                     if (!a.feasible) return false;
                     if (a.gpus != b.gpus) return a.gpus < b.gpus;
                     if (a.cost_per_hour != b.cost_per_hour) return a.cost_per_hour < b.cost_per_hour;
                     return a.ttft_p99_s < b.ttft_p99_s;
                   });
  return plan;
}

}  // namespace llmsim::sim
