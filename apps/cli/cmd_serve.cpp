// `llmsim serve`: discrete-event simulation of an inference engine serving a request stream: latency
// percentiles (TTFT, TPOT, end-to-end, queueing), throughput, batch size, KV-cache use, preemptions and
// goodput under SLOs.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_context.h"
#include "commands.h"
#include "llmsim/core/error.h"
#include "llmsim/core/suggest.h"
#include "llmsim/core/units.h"
#include "llmsim/hardware/system_toml.h"
#include "llmsim/memory/memory_model.h"
#include "llmsim/model/presets.h"
#include "llmsim/serve/request_stream.h"
#include "llmsim/serve/serving_sim.h"

namespace llmsim::cli {

namespace {

struct ServeCommand {
  CommonOptions common;
  RunFlags flags;
  std::string engine;
  std::int64_t requests = 0;
  double rate = 0;
  std::string arrival = "poisson";
  std::int64_t concurrency = 0;
  std::int64_t burst = 0;
  std::string trace_file;
  std::string input_dist, output_dist;
  std::uint64_t seed = 1;
  std::int64_t max_num_seqs = 0;
  std::int64_t max_batched_tokens = 0;
  bool chunked = false, no_chunked = false;
  double gpu_mem_util = 0;
  double slo_ttft_ms = 0, slo_tpot_ms = 0;
  std::string trace;
  std::string per_request;
};

const std::vector<std::string> kEngines = {"static", "vllm", "tgi", "lightllm", "trt-llm"};

sim::Framework engine_framework(const std::string& name) {
  if (name == "static") return sim::Framework::Hf;
  sim::Framework f{};
  sim::parse_name(name, f);
  return f;
}

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
  s += fmt::format(", KV block {}", e.kv_block_tokens);
  if (e.cuda_graphs) s += fmt::format(", CUDA graphs <= {}", e.cuda_graph_max_batch);
  s += fmt::format(", overhead {:.2f} ms/iteration", e.iteration_overhead_s * 1e3);
  return s;
}

struct Context {
  std::string model, system, stream;
  sim::RunSpec run;
  bool calibrated = false;
  double gpu_memory = 0;
  double wall_s = 0;
};

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
  if (r.slo_given) {
    row("goodput", "slo_fraction", r.slo_fraction, r.slo_fraction, r.slo_fraction, "fraction");
    row("goodput", "goodput_rps", r.goodput_rps, r.goodput_rps, r.goodput_rps, "requests/s");
  }
}

void print_table(const Context& c, const ServeCommand& cmd, const sim::ServingResult& r) {
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
  std::cout << fmt::format("\n{:<18} {:>9} {:>9} {:>9} {:>9} {:>9}\n", "latency (ms)", "mean", "p50", "p90", "p99",
                           "max");
  const auto line = [](const char* name, const sim::LatencyStats& s) {
    std::cout << fmt::format("  {:<16} {:>9} {:>9} {:>9} {:>9} {:>9}\n", name, ms(s.mean), ms(s.p50), ms(s.p90),
                             ms(s.p99), ms(s.max));
  };
  line("TTFT", r.ttft);
  line("TPOT", r.tpot);
  line("end-to-end", r.e2e);
  line("queueing", r.queue);
  std::cout << fmt::format("  band: latencies x [{:.2f} .. {:.2f}] (iteration-time band; rates divide by it)\n\n",
                           r.time_ratio_low, r.time_ratio_high);
  std::cout << fmt::format("{:<18} {:.1f} sequences, {:.0f} tokens per iteration (time-weighted); {} iterations\n",
                           "batch", r.mean_batch, r.mean_batch_tokens, r.iterations);
  std::cout << fmt::format("{:<18} {:.1f}% mean, {:.1f}% peak of {} tokens\n", "KV cache use", 100 * r.kv_utilization,
                           100 * r.kv_peak_utilization, r.kv_capacity_tokens);
  std::cout << fmt::format("{:<18} {}\n", "preemptions", r.preemptions);
  std::cout << fmt::format("{:<18} {:.1f}% of replica time in iterations\n", "busy", 100 * r.busy_fraction);
  if (r.slo_given) {
    std::string slo;
    if (cmd.slo_ttft_ms > 0) slo += fmt::format("TTFT <= {:g} ms", cmd.slo_ttft_ms);
    if (cmd.slo_tpot_ms > 0) slo += fmt::format("{}TPOT <= {:g} ms", slo.empty() ? "" : " and ", cmd.slo_tpot_ms);
    std::cout << fmt::format("{:<18} {:.1f}% of requests meet {}: {:.3g} requests/s\n", "goodput", 100 * r.slo_fraction,
                             slo, r.goodput_rps);
  }
}

void write_trace(const std::string& path, const sim::ServingResult& r) {
  std::ofstream f(path);
  if (!f) throw_input(Location{.file = path}, "cannot open the trace file for writing");
  nlohmann::json events = nlohmann::json::array();
  const auto us = [](double s) { return s * 1e6; };
  for (std::int64_t i = 0; i < r.replicas; ++i) {
    events.push_back(
        {{"ph", "M"}, {"name", "process_name"}, {"pid", i}, {"args", {{"name", fmt::format("replica {}", i)}}}});
    events.push_back(
        {{"ph", "M"}, {"name", "thread_name"}, {"pid", i}, {"tid", 0}, {"args", {{"name", "iterations"}}}});
  }
  for (const auto& it : r.trace) {
    const char* kind = it.prefill_tokens > 0 ? (it.decode_tokens > 0 ? "mixed" : "prefill") : "decode";
    events.push_back({{"ph", "X"},
                      {"name", kind},
                      {"cat", "iteration"},
                      {"pid", it.replica},
                      {"tid", 0},
                      {"ts", us(it.start_s)},
                      {"dur", us(it.end_s - it.start_s)},
                      {"args",
                       {{"sequences", it.sequences},
                        {"prefill_tokens", it.prefill_tokens},
                        {"decode_tokens", it.decode_tokens},
                        {"kv_tokens", it.kv_tokens}}}});
    events.push_back({{"ph", "C"},
                      {"name", "engine"},
                      {"pid", it.replica},
                      {"ts", us(it.start_s)},
                      {"args", {{"batch", it.sequences}, {"kv_tokens", it.kv_tokens}}}});
  }
  // Request lifetimes as async slices: queued -> prefill (to the first token) -> decode.
  for (const auto& q : r.requests) {
    const auto span = [&](const char* name, double a, double b) {
      const nlohmann::json common = {{"cat", "request"}, {"name", name}, {"id", q.id}, {"pid", q.replica}, {"tid", 1}};
      nlohmann::json begin = common, end = common;
      begin["ph"] = "b";
      begin["ts"] = us(a);
      end["ph"] = "e";
      end["ts"] = us(b);
      events.push_back(begin);
      events.push_back(end);
    };
    span(fmt::format("request {}", q.id).c_str(), q.arrival_s, q.finish_s);
    span("queued", q.arrival_s, q.scheduled_s);
    span("prefill", q.scheduled_s, q.first_token_s);
    if (q.finish_s > q.first_token_s) span("decode", q.first_token_s, q.finish_s);
  }
  f << nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump() << "\n";
  std::cerr << fmt::format("llmsim: wrote {} trace events to {}\n", events.size(), path);
}

void write_per_request(const std::string& path, const sim::ServingResult& r) {
  std::ofstream f(path);
  if (!f) throw_input(Location{.file = path}, "cannot open the per-request file for writing");
  f << "id,replica,arrival_s,input_tokens,output_tokens,queue_s,ttft_s,tpot_s,e2e_s,preemptions,meets_slo\n";
  for (const auto& q : r.requests)
    f << fmt::format("{},{},{:.9g},{},{},{:.9g},{:.9g},{:.9g},{:.9g},{},{}\n", q.id, q.replica, q.arrival_s,
                     q.input_tokens, q.output_tokens, q.queue_s, q.ttft_s, q.tpot_s, q.e2e_s, q.preemptions,
                     q.meets_slo ? 1 : 0);
}

}  // namespace

Runner add_serve_command(CLI::App& app) {
  auto cmd = std::make_shared<ServeCommand>();
  CLI::App* sub = app.add_subcommand(
      "serve",
      "simulate an inference engine serving a request stream: TTFT/TPOT/latency percentiles, throughput, goodput");
  sub->allow_extras();
  add_common_options(*sub, cmd->common);
  add_run_flags(*sub, cmd->flags);
  sub->add_option("--engine", cmd->engine, "serving engine (default vllm; or give --framework)")
      ->check(CLI::IsMember(kEngines));
  sub->add_option("--requests", cmd->requests, "requests to simulate (default 1000; with --trace-file: the first N)")
      ->check(CLI::PositiveNumber);
  sub->add_option(
      "--rate", cmd->rate,
      "open loop: requests per second (Poisson unless --arrival constant); inf = offline, all --requests at "
      "t = 0 (vLLM benchmark_throughput, trtllm-bench)");
  sub->add_option("--arrival", cmd->arrival, "open-loop arrivals with --rate")
      ->check(CLI::IsMember({"poisson", "constant"}));
  sub->add_option("--concurrency", cmd->concurrency,
                  "closed loop: N clients, each sending its next request on completion")
      ->check(CLI::PositiveNumber);
  sub->add_option("--burst", cmd->burst, "N requests all at t = 0 (the default arrival, with --requests)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--trace-file", cmd->trace_file, "CSV of requests: arrival_s,input_tokens,output_tokens");
  sub->add_option("--input-dist", cmd->input_dist, "prompt lengths: N | uniform:MIN-MAX | lognormal:MEAN,STD");
  sub->add_option("--output-dist", cmd->output_dist, "output lengths: N | uniform:MIN-MAX | lognormal:MEAN,STD");
  sub->add_option("--seed", cmd->seed, "seed of the arrival and length draws (default 1)");
  sub->add_option("--max-num-seqs", cmd->max_num_seqs, "engine: sequences per iteration at most")
      ->check(CLI::PositiveNumber);
  sub->add_option("--max-batched-tokens", cmd->max_batched_tokens, "engine: tokens per iteration at most")
      ->check(CLI::PositiveNumber);
  sub->add_flag("--chunked-prefill", cmd->chunked, "engine: split long prompts across iterations");
  sub->add_flag("--no-chunked-prefill", cmd->no_chunked, "engine: prompts prefill whole");
  sub->add_option("--gpu-memory-utilization", cmd->gpu_mem_util, "engine: fraction of GPU memory it may use")
      ->check(CLI::Range(0.01, 1.0));
  sub->add_option("--slo-ttft", cmd->slo_ttft_ms, "goodput: time-to-first-token bound in ms")
      ->check(CLI::PositiveNumber);
  sub->add_option("--slo-tpot", cmd->slo_tpot_ms, "goodput: time-per-output-token bound in ms")
      ->check(CLI::PositiveNumber);
  sub->add_option("--trace", cmd->trace, "write iterations and request lifetimes as a Chrome trace (Perfetto)");
  sub->add_option("--per-request", cmd->per_request, "write every request's metrics as CSV to this file");
  return [cmd, sub]() -> int {
    reject_extras(*sub);
    sim::RunRequest req = build_request(*sub, cmd->flags);
    if (req.model.empty()) throw_usage("--model", "--model is required (a preset name or a config.json path)");
    if (req.system.empty()) throw_usage("--system", "--system is required (a preset name or a system TOML path)");
    // The engine: --engine, else --framework (an inference engine), else vLLM.
    std::string engine = cmd->engine;
    if (req.was_given("framework")) {
      const sim::Framework f = req.run.infer.framework;
      const std::string fw = f == sim::Framework::Hf ? "static" : std::string(sim::name_of(f));
      if (std::find(kEngines.begin(), kEngines.end(), fw) == kEngines.end())
        throw_usage("--framework",
                    fmt::format("--framework {}: serve simulates inference engines ({}, or hf for static)",
                                sim::name_of(f), join(kEngines)));
      if (!engine.empty() && engine != fw)
        throw_usage("--engine", fmt::format("--engine {} contradicts --framework {}", engine, sim::name_of(f)));
      engine = fw;
    }
    if (engine.empty()) engine = "vllm";
    // Arrivals: one of --rate, --concurrency, --burst, --trace-file (default: a burst of --requests).
    const int modes = (sub->count("--rate") > 0) + (cmd->concurrency > 0) + (cmd->burst > 0) + !cmd->trace_file.empty();
    if (modes > 1) throw_usage("--rate", "give one of --rate, --concurrency, --burst, --trace-file");
    if (sub->count("--rate") > 0 && !(cmd->rate > 0))
      throw_usage("--rate", fmt::format("--rate {}: must be > 0 requests per second", cmd->rate));
    if (sub->count("--arrival") > 0 && sub->count("--rate") == 0) throw_usage("--arrival", "--arrival needs --rate");
    if (cmd->chunked && cmd->no_chunked)
      throw_usage("--chunked-prefill", "give --chunked-prefill or --no-chunked-prefill");
    if (!cmd->trace_file.empty() && (!cmd->input_dist.empty() || !cmd->output_dist.empty() ||
                                     req.was_given("input-len") || req.was_given("output-len")))
      throw_usage("--trace-file",
                  "--trace-file gives the lengths; drop --input-len/--output-len/--input-dist/--output-dist");
    if (!cmd->input_dist.empty() && req.was_given("input-len"))
      throw_usage("--input-dist", "give --input-len or --input-dist, not both");
    if (!cmd->output_dist.empty() && req.was_given("output-len"))
      throw_usage("--output-dist", "give --output-len or --output-dist, not both");

    const std::string data = cmd->common.resolved_data_dir();
    const model::ModelSpec m = model::resolve_model(req.model, data);
    const hardware::SystemSpec sys = hardware::resolve_system(req.system, data);
    if (!req.was_given("gpus")) req.run.par.gpus = req.run.par.tp * req.run.par.pp;
    req.run.workload = sim::Workload::Inference;
    const sim::Framework fw = engine_framework(engine);
    req.run.infer.framework = fw;
    const sim::RunSpec run = sim::with_defaults(req.run);

    // The engine profile with the overrides.
    sim::EngineProfile profile = sim::serving_profile(fw, sys);
    if (cmd->max_num_seqs > 0)
      profile.max_num_seqs = cmd->max_num_seqs;
    else if (engine == "static" && req.was_given("batch"))
      profile.max_num_seqs = run.infer.batch;
    if (cmd->max_batched_tokens > 0) {
      profile.max_batched_tokens = cmd->max_batched_tokens;
      profile.batched_tokens_kv_fraction = 0;
    }
    if (cmd->chunked) profile.chunked_prefill = true;
    if (cmd->no_chunked) profile.chunked_prefill = false;
    if (cmd->gpu_mem_util > 0) profile.gpu_memory_utilization = cmd->gpu_mem_util;
    if (profile.chunked_prefill && profile.batching == sim::Batching::Static)
      throw_usage("--chunked-prefill",
                  "static batching prefills whole prompts; --chunked-prefill needs a continuous engine");
    if (profile.chunked_prefill && profile.separate_prefill)
      throw_usage("--chunked-prefill",
                  fmt::format("the {} profile prefills new batches in their own iterations; chunked "
                              "prefill is modelled for vllm and trt-llm",
                              engine));

    // The request stream.
    std::vector<sim::Request> requests;
    std::string stream;
    std::vector<std::string> notes;
    sim::StreamSpec spec;
    spec.seed = cmd->seed;
    spec.requests = cmd->requests > 0 ? cmd->requests : 1000;
    const auto max_ctx = m.max_positions;
    if (!cmd->trace_file.empty()) {
      sim::TraceFile tf = sim::read_trace_csv(cmd->trace_file);
      if (!tf.note.empty()) {
        notes.push_back(tf.note);
        std::cerr << "llmsim: " << tf.note << "\n";
      }
      for (std::size_t i = 0; i < tf.requests.size(); ++i) {
        const auto& q = tf.requests[i];
        if (max_ctx > 0 && q.input_tokens + q.output_tokens > max_ctx)
          throw_input(Location{.file = cmd->trace_file, .line = tf.lines[i]},
                      fmt::format("input_tokens {} + output_tokens {} = {} exceed {}'s maximum context of {}",
                                  q.input_tokens, q.output_tokens, q.input_tokens + q.output_tokens, m.name, max_ctx));
      }
      requests = std::move(tf.requests);
      if (cmd->requests > 0 && static_cast<std::int64_t>(requests.size()) > cmd->requests)
        requests.resize(static_cast<std::size_t>(cmd->requests));
      stream = fmt::format("trace {} ({} requests)", cmd->trace_file, requests.size());
    } else {
      spec.input = cmd->input_dist.empty()
                       ? sim::LengthDist{sim::LengthKind::Fixed, static_cast<double>(run.infer.input_len), 0}
                       : sim::parse_length_dist(cmd->input_dist, "--input-dist");
      spec.output = cmd->output_dist.empty()
                        ? sim::LengthDist{sim::LengthKind::Fixed, static_cast<double>(run.infer.output_len), 0}
                        : sim::parse_length_dist(cmd->output_dist, "--output-dist");
      std::string arrivals;
      if (sub->count("--rate") > 0 && std::isinf(cmd->rate)) {
        // Offline throughput: an infinite rate sends every request at once, as a burst does.
        spec.kind = sim::ArrivalKind::Burst;
        arrivals = "offline (--rate inf): all at t = 0";
      } else if (sub->count("--rate") > 0) {
        spec.kind = cmd->arrival == "constant" ? sim::ArrivalKind::Constant : sim::ArrivalKind::Poisson;
        spec.rate = cmd->rate;
        arrivals = fmt::format("{} at {:g} requests/s", cmd->arrival, cmd->rate);
      } else if (cmd->concurrency > 0) {
        spec.kind = sim::ArrivalKind::Closed;
        spec.concurrency = cmd->concurrency;
        arrivals = fmt::format("closed loop of {} clients", cmd->concurrency);
      } else {
        spec.kind = sim::ArrivalKind::Burst;
        if (cmd->burst > 0) {
          if (cmd->requests > 0 && cmd->requests != cmd->burst)
            throw_usage("--burst", "--burst N already sets the number of requests; drop --requests");
          spec.requests = cmd->burst;
        }
        arrivals = "all at t = 0";
      }
      requests = sim::generate_requests(spec);
      for (const auto& q : requests)
        if (max_ctx > 0 && q.input_tokens + q.output_tokens > max_ctx) {
          const bool drawn = spec.input.kind != sim::LengthKind::Fixed || spec.output.kind != sim::LengthKind::Fixed;
          if (!drawn)
            throw_usage(
                req.was_given("input-len") ? "--input-len" : "--output-len",
                fmt::format("--input-len {} + --output-len {} = {} tokens exceed {}'s maximum context of {}",
                            q.input_tokens, q.output_tokens, q.input_tokens + q.output_tokens, m.name, max_ctx));
          throw_usage(
              spec.input.kind != sim::LengthKind::Fixed ? "--input-dist" : "--output-dist",
              fmt::format("request {} drew {} + {} = {} tokens, beyond {}'s maximum context of {}; narrow "
                          "--input-dist/--output-dist",
                          q.id, q.input_tokens, q.output_tokens, q.input_tokens + q.output_tokens, m.name, max_ctx));
        }
      stream = fmt::format("{} requests, {}, input {}, output {}, seed {}", spec.requests, arrivals,
                           spec.input.describe(), spec.output.describe(), spec.seed);
    }

    sim::ServingConfig cfg;
    cfg.engine = profile;
    cfg.closed_loop = spec.kind == sim::ArrivalKind::Closed && cmd->trace_file.empty();
    cfg.concurrency = cmd->concurrency;
    cfg.slo_ttft_s = cmd->slo_ttft_ms * 1e-3;
    cfg.slo_tpot_s = cmd->slo_tpot_ms * 1e-3;
    cfg.keep_trace = !cmd->trace.empty();
    const auto t0 = std::chrono::steady_clock::now();
    auto last = t0;
    cfg.progress = [&](double done) {
      const auto now = std::chrono::steady_clock::now();
      if (std::chrono::duration<double>(now - t0).count() < 2 || std::chrono::duration<double>(now - last).count() < 1)
        return;
      last = now;
      std::cerr << fmt::format("llmsim: serve: {:.0f}% of {} requests done\n", 100 * done, requests.size());
    };
    sim::ServingResult r = sim::simulate_serving(m, sys, run, cfg, requests);
    for (auto& n : notes) r.notes.push_back(std::move(n));
    Context c{m.name,
              sys.name,
              stream,
              run,
              sys.efficiency.calibrated,
              sys.gpu.memory_bytes,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()};
    if (c.wall_s > 2) std::cerr << fmt::format("llmsim: serve: simulated in {:.1f} s\n", c.wall_s);
    if (r.valid() && !cmd->trace.empty()) write_trace(cmd->trace, r);
    if (r.valid() && !cmd->per_request.empty()) write_per_request(cmd->per_request, r);
    switch (cmd->common.format()) {
      case Format::Json: std::cout << to_json(c, r).dump(2) << "\n"; break;
      case Format::Csv: print_csv(r); break;
      case Format::Table: print_table(c, *cmd, r); break;
    }
    return r.valid() ? 0 : 1;
  };
}

}  // namespace llmsim::cli
