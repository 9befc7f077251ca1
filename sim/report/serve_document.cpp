#include "llmsim/report/serve_document.h"

#include <algorithm>

#include <fmt/format.h>

#include "llmsim/report/report.h"
#include "llmsim/report/verdict.h"
#include "llmsim/run/run_spec.h"

namespace llmsim::report {

namespace {

// A latency statistic with the run's band: the schedule with all-fast and all-slow iterations scales every
// time by the result's time ratios.
nlohmann::json stats_json(const sim::LatencyStats& s, const sim::ServingResult& r) {
  const auto f = [&](double v) {
    return report::figure(sim::Interval{v, v * r.time_ratio_low, v * r.time_ratio_high}, "s");
  };
  return {{"mean", f(s.mean)}, {"p50", f(s.p50)}, {"p90", f(s.p90)}, {"p99", f(s.p99)}, {"max", f(s.max)}};
}

nlohmann::json engine_json(const sim::EngineProfile& e) {
  return {{"name", e.name},
          {"batching", e.batching == sim::Batching::Static ? "static" : "continuous"},
          {"max_num_seqs", e.max_num_seqs},
          {"max_batched_tokens", e.max_batched_tokens},
          {"chunked_prefill", e.chunked_prefill},
          {"kv_block_tokens", e.kv_block_tokens},
          {"gpu_memory_utilization", e.gpu_memory_utilization},
          {"iteration_overhead_s", e.iteration_overhead_s},
          {"iteration_overhead_per_seq_s", e.iteration_overhead_per_seq_s},
          {"kv_share_of_device", e.kv_share_of_device},
          {"prefill_first", e.prefill_first},
          {"kv_cache_blocks", e.kv_cache_blocks},
          {"scheduler_steps", e.scheduler_steps},
          {"prefix_caching", e.prefix_caching},
          {"cuda_graphs", e.cuda_graphs},
          {"cuda_graph_max_batch", e.cuda_graph_max_batch},
          {"waiting_served_ratio", e.waiting_served_ratio},
          {"max_waiting_tokens", e.max_waiting_tokens},
          {"source", e.source}};
}

}  // namespace

// The SLOs given, as the table writes them ("TTFT <= 200 ms and TPOT <= 50 ms").
std::string slo_text(const ServeDescription& c) {
  std::string slo;
  if (c.slo_ttft_ms > 0) slo += fmt::format("TTFT <= {:g} ms", c.slo_ttft_ms);
  if (c.slo_tpot_ms > 0) slo += fmt::format("{}TPOT <= {:g} ms", slo.empty() ? "" : " and ", c.slo_tpot_ms);
  return slo;
}

// The answer in one sentence: every request served or not, and with SLOs whether their p99 holds them (the
// bound plan serve compares), with the share of requests that meet them.
Verdict serve_verdict(const ServeDescription& c, const sim::ServingResult& r) {
  if (!r.valid()) return infeasible_verdict(r.problems);
  std::string text = fmt::format("served {} of {} requests", r.completed, r.completed + r.rejected);
  bool ok = r.rejected == 0;
  if (r.rejected > 0) text += fmt::format(" ({} longer than the context served)", r.rejected);
  if (!r.slo_given) {
    text += fmt::format("; p99 TTFT {} ms, p99 TPOT {} ms", ms_text(r.ttft.p99), ms_text(r.tpot.p99));
    return {.ok = ok, .text = text};
  }
  const bool ttft_ok = c.slo_ttft_ms <= 0 || r.ttft.p99 * 1e3 <= c.slo_ttft_ms;
  const bool tpot_ok = c.slo_tpot_ms <= 0 || r.tpot.p99 * 1e3 <= c.slo_tpot_ms;
  ok = ok && ttft_ok && tpot_ok;
  std::string p99;
  if (c.slo_ttft_ms > 0) p99 += fmt::format("p99 TTFT {} ms", ms_text(r.ttft.p99));
  if (c.slo_tpot_ms > 0) p99 += fmt::format("{}p99 TPOT {} ms", p99.empty() ? "" : ", ", ms_text(r.tpot.p99));
  text += fmt::format("; {}: {} {} ({:.1f}% of requests meet them)", p99, ttft_ok && tpot_ok ? "within" : "OUTSIDE",
                      slo_text(c), 100 * r.slo_fraction);
  return {.ok = ok, .text = text};
}

// The serve report (docs/output-schema.md, "serve").
nlohmann::json serve_document(const ServeDescription& c, const sim::ServingResult& r) {
  using report::figure;
  nlohmann::json j = report::header("serve");
  report::add_run(j, c.request, c.model, c.system, c.summary, r.problems);
  const Verdict verdict = serve_verdict(c, r);
  report::add_verdict(j, verdict.ok, verdict.text);
  for (const auto& name : c.stream_replaces) {
    j["run"].erase(name);
    auto& d = j["defaulted"];
    d.erase(std::remove(d.begin(), d.end(), name), d.end());
  }
  j["stream"] = c.stream;
  j["replicas"] = r.replicas;
  j["notes"] = r.notes;
  j["calibrated"] = c.calibrated;
  j["engine"] = engine_json(r.profile);
  j["kv_cache"] = {{"tokens_per_replica", r.kv_capacity_tokens},
                   {"bytes_per_token", figure(r.kv_bytes_per_token, "B")},
                   {"budget_bytes_per_gpu", figure(r.kv_budget_bytes, "B")},
                   {"weight_bytes_per_gpu", figure(r.weight_bytes, "B")},
                   {"workspace_bytes_per_gpu", figure(r.workspace_bytes, "B")},
                   {"runtime_bytes_per_gpu", figure(r.runtime_bytes, "B")}};
  if (!r.valid()) return j;
  j["requests"] = r.completed;
  j["rejected"] = r.rejected;
  j["duration_s"] =
      figure(sim::Interval{r.duration_s, r.duration_s * r.time_ratio_low, r.duration_s * r.time_ratio_high}, "s");
  j["input_tokens"] = r.input_tokens;
  j["output_tokens"] = r.output_tokens;
  j["requests_per_s"] = figure(r.requests_per_s, "requests/s");
  j["requests_per_s_per_gpu"] = figure(r.requests_per_s_per_gpu, "requests/s");
  j["input_tokens_per_s"] = figure(r.input_tokens_per_s, "tokens/s");
  j["output_tokens_per_s"] = figure(r.output_tokens_per_s, "tokens/s");
  j["output_tokens_per_s_per_gpu"] = figure(r.output_tokens_per_s_per_gpu, "tokens/s");
  j["latency_s"] = {{"ttft", stats_json(r.ttft, r)},
                    {"tpot", stats_json(r.tpot, r)},
                    {"itl", stats_json(r.itl, r)},
                    {"e2e", stats_json(r.e2e, r)},
                    {"queue", stats_json(r.queue, r)}};
  j["mean_batch"] = r.mean_batch;
  j["mean_batch_tokens"] = r.mean_batch_tokens;
  j["kv_utilization"] = figure(r.kv_utilization, "fraction");
  j["kv_peak_utilization"] = figure(r.kv_peak_utilization, "fraction");
  j["busy_fraction"] = figure(r.busy_fraction, "fraction");
  j["iterations"] = r.iterations;
  j["preemptions"] = r.preemptions;
  j["prefix_cache"] = {{"enabled", r.prefix_caching},
                       {"query_tokens", r.prefix_query_tokens},
                       {"hit_tokens", r.prefix_hit_tokens},
                       {"hit_rate", figure(r.prefix_hit_rate, "fraction")}};
  if (const auto& sp = c.run.infer.speculative; sp.on())
    j["speculative"] = {
        {"method", sim::name_of(sp.method)},
        {"draft_tokens", sp.tokens},
        {"acceptance", sp.acceptance},
        {"expected_tokens_per_step", sim::expected_tokens_per_step(sp.tokens, sp.acceptance)},
        {"verify_steps", r.spec_steps},
        {"tokens_per_step",
         r.spec_steps > 0 ? static_cast<double>(r.spec_tokens_emitted) / static_cast<double>(r.spec_steps) : 0.0}};
  if (r.adapter_bytes > 0)
    j["lora"] = {
        {"rank", c.run.infer.adapter_rank},
        {"targets", c.run.infer.adapter_targets.empty() ? sim::lora_target_names() : c.run.infer.adapter_targets},
        {"max_loras", r.profile.max_loras},
        {"adapter_bytes_per_gpu", figure(r.adapter_bytes, "B")},
        {"copy_s", figure(r.adapter_copy_s, "s")},
        {"loads", r.adapter_loads},
        {"load_wait_s", figure(r.adapter_load_s, "s")}};
  if (r.slo_given)
    j["goodput"] = {{"fraction", figure(r.slo_fraction, "fraction")},
                    {"requests_per_s", figure(r.goodput_rps, "requests/s")}};
  return j;
}

nlohmann::json disaggregated_json(const sim::DisaggregatedResult& pd, std::int64_t prefill_replicas,
                                  std::int64_t decode_replicas) {
  using report::figure;
  const auto pool = [](const sim::ServingResult& p, std::int64_t replicas) {
    return nlohmann::json{{"replicas", replicas},
                          {"gpus", p.gpus},
                          {"iterations", p.iterations},
                          {"mean_batch", p.mean_batch},
                          {"busy_fraction", figure(p.busy_fraction, "fraction")},
                          {"kv_utilization", figure(p.kv_utilization, "fraction")},
                          {"kv_capacity_tokens_per_replica", p.kv_capacity_tokens}};
  };
  return {{"link", pd.link},
          {"link_bandwidth", figure(pd.link_Bps, "B/s")},
          {"kv_bytes_per_request", figure(pd.kv_bytes_mean, "B")},
          {"kv_transfer_s", figure(pd.transfer_s_mean, "s")},
          {"prefill", pool(pd.prefill, prefill_replicas)},
          {"decode", pool(pd.decode, decode_replicas)}};
}

}  // namespace llmsim::report
