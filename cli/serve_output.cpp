#include "serve_output.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include "cli_context.h"
#include "llmsim/core/error.h"
#include "llmsim/core/suggest.h"
#include "llmsim/core/units.h"
#include "llmsim/memory/memory_model.h"
#include "llmsim/report/report.h"
#include "llmsim/report/serving_trace.h"

namespace llmsim::cli::serve_output {

namespace {

std::string ms(double s) { return fmt::format("{:.1f}", s * 1e3); }

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
          {"prefix_caching", e.prefix_caching},
          {"cuda_graphs", e.cuda_graphs},
          {"cuda_graph_max_batch", e.cuda_graph_max_batch},
          {"waiting_served_ratio", e.waiting_served_ratio},
          {"max_waiting_tokens", e.max_waiting_tokens},
          {"source", e.source}};
}

std::string describe_engine(const sim::EngineProfile& e) {
  std::string s = e.batching == sim::Batching::Static ? "static batching" : "continuous batching";
  s += fmt::format(", max {} seqs", e.max_num_seqs);
  if (e.max_batched_tokens > 0) s += fmt::format(", {} tokens/iteration", e.max_batched_tokens);
  if (e.batched_tokens_kv_fraction > 0) s += fmt::format(" (or {:.3g} of the KV cache)", e.batched_tokens_kv_fraction);
  if (e.chunked_prefill) s += ", chunked prefill";
  if (e.separate_prefill) s += ", prefill in its own iterations";
  if (e.prefill_first) s += ", prefill batches first (decode waits), new-token-ratio admission";
  if (e.reserve_full_output) s += ", KV reserved to completion";
  if (e.lightllm_admission) s += ", peak-KV admission";
  if (e.prefix_caching) s += ", prefix caching";
  s += fmt::format(", KV block {}", e.kv_block_tokens);
  if (e.cuda_graphs) s += fmt::format(", CUDA graphs <= {}", e.cuda_graph_max_batch);
  s += fmt::format(", overhead {:.2f} ms/iteration", e.iteration_overhead_s * 1e3);
  if (e.iteration_overhead_per_seq_s > 0)
    s += fmt::format(" + {:.0f} us/sequence", e.iteration_overhead_per_seq_s * 1e6);
  return s;
}

// The SLOs given, as the table writes them ("TTFT <= 200 ms and TPOT <= 50 ms").
std::string slo_text(const Context& c) {
  std::string slo;
  if (c.slo_ttft_ms > 0) slo += fmt::format("TTFT <= {:g} ms", c.slo_ttft_ms);
  if (c.slo_tpot_ms > 0) slo += fmt::format("{}TPOT <= {:g} ms", slo.empty() ? "" : " and ", c.slo_tpot_ms);
  return slo;
}

// The answer in one sentence: every request served or not, and with SLOs whether their p99 holds them (the
// bound plan serve compares), with the share of requests that meet them.
Verdict serve_verdict(const Context& c, const sim::ServingResult& r) {
  if (!r.valid()) return infeasible_verdict(r.problems);
  std::string text = fmt::format("served {} of {} requests", r.completed, r.completed + r.rejected);
  bool ok = r.rejected == 0;
  if (r.rejected > 0) text += fmt::format(" ({} longer than the context served)", r.rejected);
  if (!r.slo_given) {
    text += fmt::format("; p99 TTFT {} ms, p99 TPOT {} ms", ms(r.ttft.p99), ms(r.tpot.p99));
    return {.ok = ok, .text = text};
  }
  const bool ttft_ok = c.slo_ttft_ms <= 0 || r.ttft.p99 * 1e3 <= c.slo_ttft_ms;
  const bool tpot_ok = c.slo_tpot_ms <= 0 || r.tpot.p99 * 1e3 <= c.slo_tpot_ms;
  ok = ok && ttft_ok && tpot_ok;
  std::string p99;
  if (c.slo_ttft_ms > 0) p99 += fmt::format("p99 TTFT {} ms", ms(r.ttft.p99));
  if (c.slo_tpot_ms > 0) p99 += fmt::format("{}p99 TPOT {} ms", p99.empty() ? "" : ", ", ms(r.tpot.p99));
  text += fmt::format("; {}: {} {} ({:.1f}% of requests meet them)", p99, ttft_ok && tpot_ok ? "within" : "OUTSIDE",
                      slo_text(c), 100 * r.slo_fraction);
  return {.ok = ok, .text = text};
}

}  // namespace

// The serve report (docs/output-schema.md, "serve").
nlohmann::json to_json(const Context& c, const sim::ServingResult& r) {
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

void print_table(const Context& c, const sim::ServingResult& r) {
  const auto& p = c.run.par;
  std::cout << fmt::format("llmsim serve: {} on {}\n", c.model, c.system);
  std::cout << fmt::format("run: {} GPU{} (tp {}, pp {}{}) = {} replica{}, {} weights {}, kv {}\n", p.gpus,
                           p.gpus == 1 ? "" : "s", p.tp, p.pp, p.ep > 1 ? fmt::format(", ep {}", p.ep) : "", r.replicas,
                           r.replicas == 1 ? "" : "s (requests round-robin)", dtype_name(c.run.infer.precision),
                           sim::weight_format_name(c.run.infer), dtype_name(c.run.infer.kv_dtype));
  std::cout << fmt::format("engine: {}: {}\n", r.profile.name, describe_engine(r.profile));
  std::cout << fmt::format("stream: {}\n", c.stream);
  for (const auto& n : r.notes) std::cout << "note: " << n << "\n";
  if (r.kv_capacity_tokens > 0 || r.kv_budget_bytes != 0) {
    const double util = r.profile.gpu_memory_utilization;
    const bool is_static = r.profile.batching == sim::Batching::Static;
    if (r.profile.kv_cache_blocks > 0)  // a configured count of blocks, whatever the memory
      std::cout << fmt::format(
          "KV cache: {} tokens per replica ({} GiB per GPU: {} blocks of {} tokens as configured)\n",
          r.kv_capacity_tokens, gib(r.kv_budget_bytes), r.profile.kv_cache_blocks, r.profile.kv_block_tokens);
    else if (const double f = r.static_memory_fraction; f > 0)
      std::cout << fmt::format(
          "KV cache: {} tokens per replica ({} GiB per GPU: {} GiB x {:.3f} static share (the rest reserved for "
          "activations and CUDA graphs) - weights {} - runtime {})\n",
          r.kv_capacity_tokens, gib(r.kv_budget_bytes), gib(c.gpu_memory), f, gib(r.weight_bytes),
          gib(r.runtime_bytes));
    else if (r.profile.kv_share_of_device)  // a share of the device, whatever the weights take
      std::cout << fmt::format("KV cache: {} tokens per replica ({} GiB per GPU: {} GiB x {:.2f} of the device)\n",
                               r.kv_capacity_tokens, gib(r.kv_budget_bytes), gib(c.gpu_memory), util);
    else
      std::cout << fmt::format(
          "KV cache: {} tokens per replica ({} GiB per GPU{}: {} GiB{} - weights {} - {} - runtime {})\n",
          r.kv_capacity_tokens, gib(r.kv_budget_bytes),
          r.profile.utilization_of_free_memory ? ", of the free memory" : "", gib(c.gpu_memory),
          util != 1.0 ? fmt::format(" x {:.2f}", util) : "", gib(r.weight_bytes),
          is_static ? std::string("each batch's prefill workspace") : "workspace " + gib(r.workspace_bytes),
          gib(r.runtime_bytes));
  }
  if (!r.valid()) {
    std::cout << "result: infeasible\n";
    for (const auto& why : r.problems) std::cout << "  - " << why << "\n";
    return;
  }
  std::cout << "result: " << serve_verdict(c, r).text << "\n";
  std::cout << fmt::format("profile: {}\n\n", c.calibrated ? "calibrated" : "uncalibrated defaults (wide intervals)");
  const double g = static_cast<double>(std::max<std::int64_t>(1, r.gpus));
  std::cout << fmt::format("{:<18} {:.3g} requests/s  [{:.3g} .. {:.3g}]  ({:.3g} per GPU)\n", "throughput",
                           r.requests_per_s.value, r.requests_per_s.low, r.requests_per_s.high,
                           r.requests_per_s_per_gpu.value);
  std::cout << fmt::format(
      "{:<18} {:.0f} input + {:.0f} output tokens/s  ({:.0f} output per GPU)  [{:.0f} .. {:.0f}]\n", "",
      r.input_tokens_per_s.value, r.output_tokens_per_s.value, r.output_tokens_per_s.value / g,
      r.output_tokens_per_s.low, r.output_tokens_per_s.high);
  std::cout << fmt::format("{:<18} {:.3f} s for {} requests ({} input, {} output tokens)\n", "duration", r.duration_s,
                           r.completed, r.input_tokens, r.output_tokens);
  if (r.rejected > 0)
    std::cout << fmt::format("{:<18} {} requests longer than the model's context (not served; see the notes)\n",
                             "rejected", r.rejected);
  std::cout << fmt::format("\n{:<18} {:>9} {:>9} {:>9} {:>9} {:>9}\n", "latency (ms)", "mean", "p50", "p90", "p99",
                           "max");
  const auto line = [](const char* name, const sim::LatencyStats& s) {
    std::cout << fmt::format("  {:<16} {:>9} {:>9} {:>9} {:>9} {:>9}\n", name, ms(s.mean), ms(s.p50), ms(s.p90),
                             ms(s.p99), ms(s.max));
  };
  line("TTFT", r.ttft);
  line("TPOT", r.tpot);
  line("ITL", r.itl);
  line("end-to-end", r.e2e);
  line("queueing", r.queue);
  std::cout << fmt::format("  band: latencies x [{:.2f} .. {:.2f}] (iteration-time band; rates divide by it)\n\n",
                           r.time_ratio_low, r.time_ratio_high);
  std::cout << fmt::format("{:<18} {:.1f} sequences, {:.0f} tokens per iteration (time-weighted); {} iterations\n",
                           "batch", r.mean_batch, r.mean_batch_tokens, r.iterations);
  std::cout << fmt::format("{:<18} {:.1f}% mean, {:.1f}% peak of {} tokens\n", "KV cache use", 100 * r.kv_utilization,
                           100 * r.kv_peak_utilization, r.kv_capacity_tokens);
  std::cout << fmt::format("{:<18} {}\n", "preemptions", r.preemptions);
  if (const auto& sp = c.run.infer.speculative; sp.on() && r.spec_steps > 0)
    std::cout << fmt::format(
        "{:<18} {} drafts {} tokens a step, alpha {:.2f}: {:.2f} tokens per verify step "
        "({:.2f} expected)\n",
        "speculative", sim::name_of(sp.method), sp.tokens, sp.acceptance,
        static_cast<double>(r.spec_tokens_emitted) / static_cast<double>(r.spec_steps),
        sim::expected_tokens_per_step(sp.tokens, sp.acceptance));
  if (r.prefix_caching)
    std::cout << fmt::format("{:<18} {:.1f}% of prompt tokens found cached ({} of {})\n", "prefix cache",
                             100 * r.prefix_hit_rate, r.prefix_hit_tokens, r.prefix_query_tokens);
  std::cout << fmt::format("{:<18} {:.1f}% of replica time in iterations\n", "busy", 100 * r.busy_fraction);
  if (r.adapter_bytes > 0)
    std::cout << fmt::format(
        "{:<18} {} GPU slot(s) of {:.1f} MiB per GPU (rank {}, taken from the KV cache); {} copies into a slot, {:.2f} "
        "ms each, {:.3f} s waited\n",
        "LoRA adapters", r.profile.max_loras, r.adapter_bytes / units::MiB, c.run.infer.adapter_rank, r.adapter_loads,
        r.adapter_copy_s * 1e3, r.adapter_load_s);
  if (r.slo_given)
    std::cout << fmt::format("{:<18} {:.1f}% of requests meet {}: {:.3g} requests/s\n", "goodput", 100 * r.slo_fraction,
                             slo_text(c), r.goodput_rps);
}

void write_trace(const std::string& path, const sim::ServingResult& r) {
  std::ofstream f(path);
  if (!f) throw_input(Location{.file = path}, "cannot open the trace file for writing");
  const std::size_t n = sim::write_serving_trace(f, r);
  std::cerr << fmt::format("llmsim: wrote {} trace events to {}\n", n, path);
}

void write_per_request(const std::string& path, const sim::ServingResult& r) {
  std::ofstream f(path);
  if (!f) throw_input(Location{.file = path}, "cannot open the per-request file for writing");
  f << "id,replica,arrival_s,input_tokens,output_tokens,queue_s,ttft_s,tpot_s,e2e_s,preemptions,cached_tokens,"
       "meets_slo\n";
  for (const auto& q : r.requests)
    f << fmt::format("{},{},{:.9g},{},{},{:.9g},{:.9g},{:.9g},{:.9g},{},{},{}\n", q.id, q.replica, q.arrival_s,
                     q.input_tokens, q.output_tokens, q.queue_s, q.ttft_s, q.tpot_s, q.e2e_s, q.preemptions,
                     q.cached_tokens, q.meets_slo ? 1 : 0);
}

}  // namespace llmsim::cli::serve_output
