// `llmsim plan serve`: the fewest GPUs (then the lowest cost) that serve a request rate within p99 TTFT
// and TPOT bounds, over systems x engines x tensor-parallel sizes x weight formats (sim/search/plan_serve.h).
#include <algorithm>
#include <charconv>
#include <chrono>
#include <iostream>
#include <memory>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_context.h"
#include "commands.h"
#include "llmsim/core/error.h"
#include "llmsim/core/strings.h"
#include "llmsim/core/suggest.h"
#include "llmsim/hardware/system_toml.h"
#include "llmsim/memory/memory_model.h"
#include "llmsim/model/block_format.h"
#include "llmsim/model/presets.h"
#include "llmsim/report/plan_serve_document.h"
#include "llmsim/report/report.h"
#include "llmsim/run/engine_profile.h"
#include "llmsim/search/axis.h"
#include "llmsim/search/plan_serve.h"
#include "llmsim/serve/request_stream.h"

namespace llmsim::cli {

namespace {

struct PlanServeCommand {
  std::string model;
  std::vector<std::string> systems;
  double rate = 0;
  double slo_ttft_ms = 0;
  double slo_tpot_ms = 0;
  std::string engines = "vllm,tgi,lightllm,trt-llm";
  std::string tps = "1,2,4,8";
  std::string weight_quants = "none";
  std::string pps = "1";
  std::string kv_dtypes = "bf16";
  std::string max_num_seqs = "default";
  std::string chunked = "default";
  std::string pd_ratios;  // --disaggregated P:D,... (empty: aggregated serving only)
  std::string precision = "bf16";
  std::string input = "512";
  std::string output = "128";
  std::int64_t shared_prefix = 0;
  std::int64_t prefix_groups = 1;
  AdapterFlags lora;  // multi-LoRA serving
  std::int64_t max_gpus = 64;
  std::int64_t requests = 400;
  std::string price;     // --price-per-gpu-hour as written (X, or sys=X,sys2=Y)
  CommonOptions common;  // --json, --csv, --data-dir
};

// A candidate's tensor parallelism: a replica's, or the prefill and decode pools' ("4/2").
std::string tp_text(const sim::ServePlanCandidate& k) {
  return k.prefill_replicas > 0 && k.decode_tp != k.tp ? fmt::format("{}/{}", k.tp, k.decode_tp) : std::to_string(k.tp);
}

// The non-empty items of a comma-separated flag value.
std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  for (const std::string_view x : split_fields(s, ','))
    if (!x.empty()) out.emplace_back(x);
  return out;
}

// A --tp or --pp of plan serve in the grammar of search and plan train (sim/search/axis.h: 4, 1,2,4, 1-8,
// pow2:1-16, any), `any` standing for the powers of two up to `any_up_to`. Values stay at most 2^20 (a size
// beyond any system, and far from overflowing the products of a candidate's GPU counts).
std::vector<std::int64_t> parallel_sizes(const char* flag, const std::string& text, std::int64_t any_up_to) {
  const sim::Axis a = sim::parse_int_axis(flag, text);
  std::vector<std::int64_t> v = a.values;
  if (a.mode == sim::AxisMode::Free)
    for (std::int64_t x = 1; x <= std::max<std::int64_t>(1, any_up_to); x *= 2) v.push_back(x);
  for (const std::int64_t x : v)
    if (x > (std::int64_t{1} << 20)) sim::axis_error(flag, text, fmt::format("{} is above 1048576", x));
  return v;
}

// The plan's candidate axes and constraints from the flags (usage errors name the flag).
sim::ServePlanSpec plan_spec(const PlanServeCommand& c, const std::vector<std::string>& systems,
                             const std::vector<hardware::SystemSpec>& specs, const std::string& data_dir,
                             const model::ModelSpec& m) {
  sim::ServePlanSpec spec;
  spec.rate = c.rate;
  spec.slo_ttft_p99_s = c.slo_ttft_ms / 1e3;
  spec.slo_tpot_p99_s = c.slo_tpot_ms / 1e3;
  spec.input = sim::parse_length_dist(c.input, "--input-len", data_dir);
  spec.output = sim::parse_length_dist(c.output, "--output-len", data_dir, true);
  for (const auto& note : sim::lengths_in_model_tokens(spec.input, spec.output, m))
    std::cerr << "llmsim plan serve: note: " << note << "\n";
  if (c.prefix_groups > 1 && c.shared_prefix == 0)
    throw_usage("--prefix-groups", "--prefix-groups needs --shared-prefix N (the tokens each group shares)");
  spec.shared_prefix_tokens = c.shared_prefix;
  spec.prefix_groups = c.prefix_groups;
  spec.adapters = c.lora.adapters;
  spec.adapter_zipf = c.lora.adapters > 0 ? c.lora.zipf() : 0.0;
  spec.adapter_rank = c.lora.rank;
  spec.adapter_targets = c.lora.targets;
  spec.max_loras = c.lora.max_loras;
  spec.max_gpus = c.max_gpus;
  spec.requests_per_replica = c.requests;
  spec.price_per_gpu_hour = parse_prices(c.price, systems);
  // The compute precisions serve takes, refused in serve's words.
  const std::vector<std::string> precisions = compute_precision_names();
  if (std::find(precisions.begin(), precisions.end(), c.precision) == precisions.end() ||
      !parse_dtype(c.precision, spec.precision))
    throw_usage("--precision", "precision = '" + c.precision + "': " + one_of(c.precision, precisions));
  // The choice lists take `any` as search's choice axes do (sim/search/axis.h is_free_axis_text): every choice.
  const auto choices = [](const std::string& text, const std::vector<std::string>& all) {
    return sim::is_free_axis_text(text) ? all : split(text);
  };
  spec.engines.clear();
  const std::vector<std::string> engine_names = sim::serving_engine_names();
  for (const auto& e : choices(c.engines, engine_names)) {
    sim::Framework f{};
    if (!sim::parse_serving_engine(e, f))
      throw_usage("--engine", fmt::format("--engine = '{}': must be any or a comma-separated list of {}{}", c.engines,
                                          join(engine_names), did_you_mean(e, engine_names)));
    spec.engines.push_back(f);
  }
  spec.weight_quants.clear();
  for (const auto& q : choices(c.weight_quants, model::weight_quant_names())) {  // any: every format, once
    model::WeightQuant w{};
    // The spellings serve's --weight-quant takes (the run setting's), but the block formats: a plan prices a
    // candidate's weights by format (a method such as awq by the format it stores), not a llama.cpp file type.
    if (model::is_block_format_text(q))
      throw_usage("--weight-quant", fmt::format("--weight-quant = '{}': {} is a block format, which serve and infer "
                                                "run; plan serve considers the formats {}",
                                                c.weight_quants, q, join(model::weight_quant_spellings())));
    if (!model::parse_weight_quant(q, w)) {
      const auto names = model::weight_quant_spellings();
      throw_usage("--weight-quant", fmt::format("--weight-quant = '{}': must be any or a comma-separated list of {}{}",
                                                c.weight_quants, join(names), did_you_mean(q, names)));
    }
    spec.weight_quants.push_back(w);
  }

  // --max-num-seqs: engine limits, or default (0: the engine's own).
  spec.max_num_seqs.clear();
  for (const auto& t : split(c.max_num_seqs)) {
    if (t == "default") {
      spec.max_num_seqs.push_back(0);
      continue;
    }
    // The whole token is the number: "2.5", "8x" and "1e30" are refused, not read as 2, 8 and 1.
    std::int64_t x = 0;
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), x);
    if (ec != std::errc() || end != t.data() + t.size() || x <= 0 || x > (std::int64_t{1} << 20))
      throw_usage("--max-num-seqs",
                  fmt::format("--max-num-seqs = '{}': must be a comma-separated list of integers from 1 to 1048576 "
                              "or default",
                              c.max_num_seqs));
    spec.max_num_seqs.push_back(x);
  }
  // tp any: up to the largest fast (NVLink) domain of the systems considered; pp any: up to --max-gpus.
  int domain = 1;
  for (const auto& sys : specs) domain = std::max(domain, hardware::fast_domain_gpus(sys));
  spec.tps = parallel_sizes("--tp", c.tps, domain);
  spec.pps = parallel_sizes("--pp", c.pps, c.max_gpus);
  spec.kv_dtypes.clear();
  const std::vector<std::string> kv_names{"bf16", "fp16", "fp8", "fp4"};  // the KV-cache types a plan considers
  for (const auto& k : choices(c.kv_dtypes, kv_names)) {
    DType d{};
    if (!parse_dtype(k, d) || std::find(kv_names.begin(), kv_names.end(), dtype_name(d)) == kv_names.end())
      throw_usage("--kv-dtype",
                  fmt::format("--kv-dtype = '{}': must be any or a list of {}", c.kv_dtypes, join(kv_names)));
    spec.kv_dtypes.push_back(d);
  }
  for (const auto& r : split(c.pd_ratios)) {
    const auto colon = r.find(':');
    std::int64_t p = 0, d = 0;
    const auto num = [](std::string_view t, std::int64_t& out) {
      const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), out);
      return ec == std::errc() && end == t.data() + t.size() && out >= 1 && out <= 64;
    };
    if (colon == std::string::npos || !num(std::string_view(r).substr(0, colon), p) ||
        !num(std::string_view(r).substr(colon + 1), d))
      throw_usage("--disaggregated", fmt::format("--disaggregated = '{}': must be a comma-separated list of P:D "
                                                 "replica ratios, each from 1 to 64 (e.g. 1:1,2:1)",
                                                 c.pd_ratios));
    spec.pd_ratios.emplace_back(p, d);
  }
  spec.chunked_prefill.clear();
  for (const auto& k : choices(c.chunked, {"default", "on", "off"})) {
    if (k == "default")
      spec.chunked_prefill.push_back(-1);
    else if (k == "on")
      spec.chunked_prefill.push_back(1);
    else if (k == "off")
      spec.chunked_prefill.push_back(0);
    else
      throw_usage("--chunked-prefill",
                  fmt::format("--chunked-prefill = '{}': must be any or a list of on, off, default", c.chunked));
  }
  return spec;
}

// The plan as a table: the answer, then every candidate with its p99 latencies or why it fails.
void print_table(const PlanServeCommand& c, const model::ModelSpec& m, const sim::ServePlanSpec& spec,
                 const sim::ServePlan& plan) {
  const std::string prefix =
      spec.shared_prefix_tokens > 0
          ? fmt::format(" after a shared prefix of {} tokens ({} group{})", spec.shared_prefix_tokens,
                        spec.prefix_groups, spec.prefix_groups == 1 ? "" : "s")
          : std::string();
  std::cout << fmt::format(
      "llmsim plan serve: {} at {} requests/s, p99 TTFT <= {} ms{}, input {}{}, output {}{}\n", m.name, c.rate,
      c.slo_ttft_ms, c.slo_tpot_ms > 0 ? fmt::format(", p99 TPOT <= {} ms", c.slo_tpot_ms) : "", spec.input.describe(),
      prefix, spec.output.describe(), spec.adapters > 0 ? c.lora.describe() : std::string());
  std::cout << "\n" << report::serve_plan_verdict(plan, spec.max_gpus).text << "\n";
  if (plan.found()) {
    const auto& b = plan.candidates.front();
    const sim::Interval ttft = report::p99_band(b.ttft_p99_s, b) * 1e3, tpot = report::p99_band(b.tpot_p99_s, b) * 1e3;
    std::cout << fmt::format("margin: p99 TTFT {:.0f} ms [{:.0f} .. {:.0f}] is {:.0f} % of its SLO", ttft.value,
                             ttft.low, ttft.high, 100 * b.ttft_p99_s / spec.slo_ttft_p99_s);
    if (spec.slo_tpot_p99_s > 0)
      std::cout << fmt::format(", p99 TPOT {:.1f} ms [{:.1f} .. {:.1f}] {:.0f} %", tpot.value, tpot.low, tpot.high,
                               100 * b.tpot_p99_s / spec.slo_tpot_p99_s);
    std::cout << " (the iteration model's band)\n";
    std::cout << (b.converged
                      ? fmt::format("settled: the p99s moved {:.1f} % when the stream doubled to {} requests per "
                                    "replica (at most {:.0f} %)\n",
                                    100 * b.p99_change, b.requests_per_replica, 100 * sim::kSettledChange)
                      : fmt::format("NOT SETTLED: the p99s still moved {:.1f} % when the stream doubled to {} "
                                    "requests per replica; a longer --requests may need more GPUs\n",
                                    100 * b.p99_change, b.requests_per_replica));
  }
  std::cout << fmt::format(
      "\n{:<16} {:<9} {:>5} {:>3} {:>5} {:>5} {:>5} {:>5} {:>10} {:>5} {:>11} {:>11} {:>11} {:>8}  {}\n", "system",
      "engine", "tp", "pp", "quant", "kv", "seqs", "chunk", "replicas", "GPUs", "p99 TTFT", "p99 TPOT", "out tok/s",
      "requests", "result (* = GPUs vs p99 TTFT Pareto front; ~ = p99s not settled)");
  for (const auto& k : plan.candidates) {
    const std::string head =
        fmt::format("{:<16} {:<9} {:>5} {:>3} {:>5} {:>5} {:>5} {:>5}", k.system, sim::serving_engine_name(k.engine),
                    tp_text(k), k.pp, model::weight_quant_name(k.weight_quant), dtype_name(k.kv_dtype), k.max_num_seqs,
                    k.chunked_prefill ? "on" : "off");
    const std::string replicas = k.prefill_replicas > 0 ? report::serve_layout(k) : std::to_string(k.replicas);
    if (k.feasible)
      std::cout << fmt::format("{} {:>10} {:>5} {:>8.0f} ms {:>8.1f} ms {:>11.0f} {:>8}  meets{}{}\n", head, replicas,
                               k.gpus, k.ttft_p99_s * 1e3, k.tpot_p99_s * 1e3, k.output_tokens_per_s,
                               k.requests_per_replica, k.pareto ? " *" : "", k.converged ? "" : " ~");
    else
      std::cout << fmt::format("{} {:>10} {:>5} {:>11} {:>11} {:>11} {:>8}  {}\n", head,
                               k.prefill_replicas > 0 ? report::serve_layout(k) : "-", "-", "-", "-", "-", "-", k.why);
  }
}

int run(const PlanServeCommand& c) {
  if (c.model.empty()) throw_usage("--model", "--model is required");
  // --system as search and plan train take it: repeatable, comma-separated, or any (every preset).
  std::vector<std::string> names;
  for (const auto& s : c.systems)
    for (const auto& x : split(expand_any_system(s, c.common.resolved_data_dir()))) names.push_back(x);
  if (names.empty())
    throw_usage("--system", "--system is required (one or more presets or TOML paths, comma-separated, or any)");
  if (!(c.rate > 0)) throw_usage("--rate", fmt::format("--rate = {}: must be > 0 requests/s", c.rate));
  if (!(c.slo_ttft_ms > 0)) throw_usage("--slo-ttft", "--slo-ttft (p99, ms) is required and must be > 0");
  const std::string data = c.common.resolved_data_dir();
  const model::ModelSpec m = model::resolve_model(c.model, data);
  std::vector<hardware::SystemSpec> systems;
  for (const auto& s : names) systems.push_back(hardware::resolve_system(s, data));
  sim::ServePlanSpec spec = plan_spec(c, names, systems, data, m);
  std::cerr << "llmsim plan serve: simulating candidates…\n";
  // Progress of a long plan on stderr: at most one line every 2 s.
  const auto started = std::chrono::steady_clock::now();
  auto last = started;
  spec.progress = [&](std::size_t done, std::size_t total) {
    const auto now = std::chrono::steady_clock::now();
    if (done < total && now - last < std::chrono::seconds(2)) return;
    if (done == total && now - started < std::chrono::seconds(2)) return;
    last = now;
    std::cerr << fmt::format("llmsim plan serve: {} of {} candidates simulated ({:.0f} s)\n", done, total,
                             std::chrono::duration<double>(now - started).count());
  };
  const sim::ServePlan plan = sim::plan_serving(m, systems, spec);
  emit(c.common, report::plan_serve_document(m, systems, spec, plan), [&] { print_table(c, m, spec, plan); });
  return plan.found() ? 0 : 1;
}

}  // namespace

Runner add_plan_serve_subcommand(CLI::App& plan_top) {
  auto cmd = std::make_shared<PlanServeCommand>();
  CLI::App* sub = plan_top.add_subcommand(
      "serve",
      "llmsim plan serve --model M --rate R --slo-ttft MS [--slo-tpot MS] [--system S…] [--engine …] [--tp …]");
  sub->allow_extras();
  sub->add_option("--model", cmd->model, "model preset or config.json");
  sub->add_option("--system", cmd->systems,
                  "systems to consider: presets or TOML paths, comma-separated or repeated, or any (every preset)");
  sub->add_option("--rate", cmd->rate, "requests per second to serve (Poisson arrivals; inf = offline)")
      ->check(rate_or_inf());
  sub->add_option("--slo-ttft", cmd->slo_ttft_ms, "p99 time to first token bound, ms")->check(finite_positive());
  sub->add_option("--slo-tpot", cmd->slo_tpot_ms, "p99 time per output token bound, ms (0 = none)")
      ->check(finite_non_negative());
  sub->add_option("--engine", cmd->engines,
                  "engines to consider, comma-separated, or any: " + llmsim::join(sim::serving_engine_names(), ","));
  sub->add_option("--tp", cmd->tps,
                  "tensor-parallel sizes per replica to consider, as search takes them: 1,2,4,8, 1-8, pow2:1-8 or "
                  "any (powers of two up to the largest NVLink domain)");
  sub->add_option("--weight-quant", cmd->weight_quants,
                  "weight formats to consider, comma-separated (serve's --weight-quant spellings but the block "
                  "formats), e.g. none,int4, or any");
  sub->add_option("--precision", cmd->precision, "compute precision, as serve takes it (default bf16)");
  sub->add_option("--pp", cmd->pps,
                  "pipeline stages per replica to consider, as search takes them: 1,2, 1-4, pow2:1-4 or any (powers "
                  "of two up to --max-gpus)");
  sub->add_option("--kv-dtype", cmd->kv_dtypes, "KV-cache types to consider, e.g. bf16,fp8, or any");
  sub->add_option("--max-num-seqs", cmd->max_num_seqs, "engine sequence limits to consider, e.g. default,64,256");
  sub->add_option("--chunked-prefill", cmd->chunked, "chunked prefill settings to consider: default,on,off or any");
  sub->add_option("--disaggregated", cmd->pd_ratios,
                  "also plan disaggregated serving: prefill:decode replica ratios, e.g. 1:1,2:1 (docs/serving.md)");
  sub->add_option("--input-len", cmd->input, std::string("prompt tokens: ") + sim::kLengthForms);
  sub->add_option("--output-len", cmd->output, std::string("output tokens: ") + sim::kLengthForms);
  add_shared_prefix_options(*sub, cmd->shared_prefix, cmd->prefix_groups);
  add_adapter_options(*sub, cmd->lora);
  sub->add_option("--max-gpus", cmd->max_gpus, "GPUs at most per candidate")->check(finite_positive());
  sub->add_option("--requests", cmd->requests, "simulated requests per replica (default 400, at most 1,000,000)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1000000}));
  sub->add_option("--price-per-gpu-hour", cmd->price,
                  "price of a GPU-hour, for the cost column: X, or per system sys=X,sys2=Y");
  add_common_options(*sub, cmd->common);
  return [cmd, sub]() -> int {
    reject_extras(*sub);
    check_outputs(*sub, cmd->common);
    return run(*cmd);
  };
}

}  // namespace llmsim::cli
