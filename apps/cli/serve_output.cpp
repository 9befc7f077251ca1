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
#include "llmsim/report/serving_trace.h"

namespace llmsim::cli::serve_output {

namespace {

std::string ms(double s) { return fmt::format("{:.1f}", s * 1e3); }

nlohmann::json stats_json(const sim::LatencyStats& s) {
  return {{"mean", s.mean}, {"p50", s.p50}, {"p90", s.p90}, {"p99", s.p99}, {"max", s.max}};
}
nlohmann::json interval_json(const sim::Interval& i) { return {{"value", i.value}, {"low", i.low}, {"high", i.high}}; }

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

}  // namespace

nlohmann::json to_json(const Context& c, const sim::ServingResult& r) {
  nlohmann::json j;
  j["schema_version"] = sim::kResultSchemaVersion;
  j["command"] = "serve";
  j["model"] = c.model;
  j["system"] = c.system;
  j["stream"] = c.stream;
  j["gpus"] = c.run.par.gpus;
  j["tp"] = c.run.par.tp;
  j["pp"] = c.run.par.pp;
  j["replicas"] = r.replicas;
  j["valid"] = r.valid();
  j["problems"] = r.problems;
  j["notes"] = r.notes;
  j["calibrated"] = c.calibrated;
  j["engine"] = engine_json(r.profile);
  j["kv_cache"] = {{"tokens_per_replica", r.kv_capacity_tokens},   {"bytes_per_token", r.kv_bytes_per_token},
                   {"budget_bytes_per_gpu", r.kv_budget_bytes},    {"weight_bytes_per_gpu", r.weight_bytes},
                   {"workspace_bytes_per_gpu", r.workspace_bytes}, {"runtime_bytes_per_gpu", r.runtime_bytes}};
  if (!r.valid()) return j;
  j["requests"] = r.completed;
  j["rejected"] = r.rejected;
  j["duration_s"] = r.duration_s;
  j["input_tokens"] = r.input_tokens;
  j["output_tokens"] = r.output_tokens;
  j["requests_per_s"] = interval_json(r.requests_per_s);
  j["requests_per_s_per_gpu"] = interval_json(r.requests_per_s_per_gpu);
  j["input_tokens_per_s"] = interval_json(r.input_tokens_per_s);
  j["output_tokens_per_s"] = interval_json(r.output_tokens_per_s);
  j["output_tokens_per_s_per_gpu"] = interval_json(r.output_tokens_per_s_per_gpu);
  j["latency_s"] = {{"ttft", stats_json(r.ttft)},
                    {"tpot", stats_json(r.tpot)},
                    {"itl", stats_json(r.itl)},
                    {"e2e", stats_json(r.e2e)},
                    {"queue", stats_json(r.queue)}};
  j["latency_band"] = {{"low_factor", r.time_ratio_low}, {"high_factor", r.time_ratio_high}};
  j["mean_batch"] = r.mean_batch;
  j["mean_batch_tokens"] = r.mean_batch_tokens;
  j["kv_utilization"] = r.kv_utilization;
  j["kv_peak_utilization"] = r.kv_peak_utilization;
  j["busy_fraction"] = r.busy_fraction;
  j["iterations"] = r.iterations;
  j["preemptions"] = r.preemptions;
  j["prefix_cache"] = {{"enabled", r.prefix_caching},
                       {"query_tokens", r.prefix_query_tokens},
                       {"hit_tokens", r.prefix_hit_tokens},
                       {"hit_rate", r.prefix_hit_rate}};
  if (r.slo_given) j["goodput"] = {{"fraction", r.slo_fraction}, {"requests_per_s", r.goodput_rps}};
  return j;
}

void print_csv(const sim::ServingResult& r) {
  std::cout << "schema_version,section,name,value,low,high,unit\n";
  auto row = [](const std::string& section, const std::string& name, double v, double lo, double hi, const char* unit) {
    std::cout << fmt::format("{},{},{},{:.6g},{:.6g},{:.6g},{}\n", sim::kResultSchemaVersion, section, csv_field(name),
                             v, lo, hi, unit);
  };
  const double ok = r.valid() ? 1 : 0;
  row("summary", "valid", ok, ok, ok, "bool");
  row("summary", "kv_capacity_tokens", static_cast<double>(r.kv_capacity_tokens),
      static_cast<double>(r.kv_capacity_tokens), static_cast<double>(r.kv_capacity_tokens), "tokens");
  if (!r.valid()) return;
  auto iv = [&](const std::string& name, const sim::Interval& i, const char* unit) {
    row("summary", name, i.value, i.low, i.high, unit);
  };
  iv("requests_per_s", r.requests_per_s, "requests/s");
  iv("input_tokens_per_s", r.input_tokens_per_s, "tokens/s");
  iv("output_tokens_per_s", r.output_tokens_per_s, "tokens/s");
  iv("output_tokens_per_s_per_gpu", r.output_tokens_per_s_per_gpu, "tokens/s");
  row("summary", "duration_s", r.duration_s, r.duration_s * r.time_ratio_low, r.duration_s * r.time_ratio_high, "s");
  const auto lat = [&](const char* name, const sim::LatencyStats& s) {
    for (const auto& [k, v] : {std::pair{"mean", s.mean}, std::pair{"p50", s.p50}, std::pair{"p90", s.p90},
                               std::pair{"p99", s.p99}, std::pair{"max", s.max}})
      row("latency", fmt::format("{}_{}", name, k), v, v * r.time_ratio_low, v * r.time_ratio_high, "s");
  };
  lat("ttft", r.ttft);
  lat("tpot", r.tpot);
  lat("itl", r.itl);
  lat("e2e", r.e2e);
  lat("queue", r.queue);
  row("engine", "mean_batch", r.mean_batch, r.mean_batch, r.mean_batch, "sequences");
  row("engine", "mean_batch_tokens", r.mean_batch_tokens, r.mean_batch_tokens, r.mean_batch_tokens, "tokens");
  row("engine", "kv_utilization", r.kv_utilization, r.kv_utilization, r.kv_utilization, "fraction");
  row("engine", "kv_peak_utilization", r.kv_peak_utilization, r.kv_peak_utilization, r.kv_peak_utilization, "fraction");
  row("engine", "busy_fraction", r.busy_fraction, r.busy_fraction, r.busy_fraction, "fraction");
  const auto it = static_cast<double>(r.iterations), pre = static_cast<double>(r.preemptions);
  row("engine", "iterations", it, it, it, "count");
  row("engine", "preemptions", pre, pre, pre, "count");
  if (r.prefix_caching)
    row("engine", "prefix_cache_hit_rate", r.prefix_hit_rate, r.prefix_hit_rate, r.prefix_hit_rate, "fraction");
  if (r.slo_given) {
    row("goodput", "slo_fraction", r.slo_fraction, r.slo_fraction, r.slo_fraction, "fraction");
    row("goodput", "goodput_rps", r.goodput_rps, r.goodput_rps, r.goodput_rps, "requests/s");
  }
}

void print_table(const Context& c, const sim::ServingResult& r) {
  const auto& p = c.run.par;
  std::cout << fmt::format("llmsim serve: {} on {}\n", c.model, c.system);
  std::cout << fmt::format("run: {} GPU{} (tp {}, pp {}) = {} replica{}, {} weights {}, kv {}\n", p.gpus,
                           p.gpus == 1 ? "" : "s", p.tp, p.pp, r.replicas,
                           r.replicas == 1 ? "" : "s (requests round-robin)", dtype_name(c.run.infer.precision),
                           model::weight_quant_name(c.run.infer.weight_quant), dtype_name(c.run.infer.kv_dtype));
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
  if (r.prefix_caching)
    std::cout << fmt::format("{:<18} {:.1f}% of prompt tokens found cached ({} of {})\n", "prefix cache",
                             100 * r.prefix_hit_rate, r.prefix_hit_tokens, r.prefix_query_tokens);
  std::cout << fmt::format("{:<18} {:.1f}% of replica time in iterations\n", "busy", 100 * r.busy_fraction);
  if (r.slo_given) {
    std::string slo;
    if (c.slo_ttft_ms > 0) slo += fmt::format("TTFT <= {:g} ms", c.slo_ttft_ms);
    if (c.slo_tpot_ms > 0) slo += fmt::format("{}TPOT <= {:g} ms", slo.empty() ? "" : " and ", c.slo_tpot_ms);
    std::cout << fmt::format("{:<18} {:.1f}% of requests meet {}: {:.3g} requests/s\n", "goodput", 100 * r.slo_fraction,
                             slo, r.goodput_rps);
  }
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
