// `llmsim serve`: discrete-event simulation of an inference engine serving a request stream: latency
// percentiles (TTFT, TPOT, end-to-end, queueing), throughput, batch size, KV-cache use, preemptions and
// goodput under SLOs.
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <tuple>

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
#include "llmsim/report/serve_parts.h"
#include "llmsim/run/engine_profile.h"
#include "llmsim/serve/request_stream.h"
#include "llmsim/serve/serving_disagg.h"
#include "llmsim/serve/serving_sim.h"
#include "measured_bands.h"
#include "serve_output.h"

namespace llmsim::cli {

namespace {

struct ServeCommand {
  CommonOptions common;
  RunFlags flags;
  std::int64_t requests = 0;
  double rate = 0;
  std::string arrival = "poisson";
  std::int64_t concurrency = 0;
  std::int64_t burst = 0;
  std::string trace_file;
  std::string input_dist, output_dist;
  // The flag that gave each distribution (--input-len in a length form, or --input-dist), for messages.
  std::string input_dist_flag = "--input-dist", output_dist_flag = "--output-dist";
  std::uint64_t seed = 1;
  // Disaggregated serving: prefill and decode pools (0 replicas: aggregated).
  std::int64_t prefill_replicas = 0, decode_replicas = 0, prefill_tp = 0, decode_tp = 0;
  std::int64_t max_num_seqs = 0;
  std::int64_t max_batched_tokens = 0;
  bool chunked = false, chunked_given = false;  // --chunked-prefill (true) / --no-chunked-prefill (false)
  std::int64_t shared_prefix = 0;
  std::int64_t prefix_groups = 1;
  AdapterFlags lora;                                          // multi-LoRA serving
  bool prefix_caching = false, prefix_caching_given = false;  // --prefix-caching / --no-prefix-caching
  double gpu_mem_util = 0;
  std::int64_t kv_cache_blocks = 0;
  std::int64_t scheduler_steps = 0;
  double slo_ttft_ms = 0, slo_tpot_ms = 0;
  std::string trace;
  std::string per_request;
  bool timeline = false;  // --timeline: latency quantiles and the engine's course in the document (on with --html)
  std::string bands;
};

const std::vector<std::string> kEngines = sim::serving_engine_names();

sim::Framework engine_framework(const std::string& name) {
  sim::Framework f{};
  sim::parse_serving_engine(name, f);  // the flag's IsMember check admitted only engine names
  return f;
}

// --input-len and --output-len in a length form other than a plain N (uniform:, lognormal:, a sample) are
// the stream's distributions, as in plan serve; a plain N stays the run's setting.
void lengths_as_distributions(ServeCommand& c) {
  for (auto [name, dist, dist_flag] : {std::tuple{"input-len", &c.input_dist, &c.input_dist_flag},
                                       std::tuple{"output-len", &c.output_dist, &c.output_dist_flag}}) {
    const auto it = c.flags.values.find(name);
    if (it == c.flags.values.end() || it->second.empty() || is_token_count(it->second)) continue;  // empty: not given
    if (!dist->empty()) throw_usage(*dist_flag, fmt::format("give --{} or {}, not both", name, *dist_flag));
    *dist = it->second;
    *dist_flag = std::string("--") + name;
    c.flags.taken.insert(name);
  }
}

// Registers the flags of `llmsim serve` on `sub`.
void add_serve_flags(CLI::App* sub, ServeCommand& c) {
  const auto cmd = &c;
  add_common_options(*sub, cmd->common);
  add_overlay_option(*sub, cmd->common);
  add_bands_option(*sub, cmd->bands);
  add_run_flags(*sub, cmd->flags, RunKinds::Inference);
  // serve's lengths take the forms plan serve's take: a stream's lengths are a distribution.
  sub->get_option("--input-len")->description(std::string("prompt tokens: ") + sim::kLengthForms)->type_name("LENGTHS");
  sub->get_option("--output-len")
      ->description(std::string("output tokens: ") + sim::kLengthForms)
      ->type_name("LENGTHS");
  sub->add_option("--requests", cmd->requests,
                  "requests to simulate (default 1000, at most 100,000,000: each one is simulated; with --trace-file: "
                  "the first N)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{100000000}));
  CLI::Option* rate =
      sub->add_option("--rate", cmd->rate,
                      "open loop: requests per second (Poisson unless --arrival constant); inf = offline, all "
                      "--requests at t = 0 (vLLM benchmark_throughput, trtllm-bench)")
          ->check(rate_or_inf());
  sub->add_option("--arrival", cmd->arrival, "open-loop arrivals with --rate")
      ->check(CLI::IsMember({"poisson", "constant"}))
      ->needs(rate);
  CLI::Option* concurrency = sub->add_option("--concurrency", cmd->concurrency,
                                             "closed loop: N clients, each sending its next request on completion")
                                 ->check(finite_positive());
  CLI::Option* burst =
      sub->add_option("--burst", cmd->burst, "N requests all at t = 0 (the default arrival, with --requests)")
          ->check(finite_positive());
  CLI::Option* trace_file =
      sub->add_option("--trace-file", cmd->trace_file, "CSV of requests: arrival_s,input_tokens,output_tokens");
  CLI::Option* prefill_pool =
      sub->add_option("--prefill-replicas", cmd->prefill_replicas,
                      "disaggregated serving: replicas that only prefill (with --decode-replicas; docs/serving.md)")
          ->check(CLI::Range(std::int64_t{1}, std::int64_t{4096}));
  CLI::Option* decode_pool =
      sub->add_option("--decode-replicas", cmd->decode_replicas,
                      "disaggregated serving: replicas that only decode, receiving each prompt's KV")
          ->check(CLI::Range(std::int64_t{1}, std::int64_t{4096}));
  prefill_pool->needs(decode_pool);
  decode_pool->needs(prefill_pool);
  sub->add_option("--prefill-tp", cmd->prefill_tp, "tensor-parallel size of a prefill replica (default --tp)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1024}))
      ->needs(prefill_pool);
  sub->add_option("--decode-tp", cmd->decode_tp, "tensor-parallel size of a decode replica (default --tp)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1024}))
      ->needs(decode_pool);
  // One arrival mode at most (default: a burst of --requests).
  const std::vector<CLI::Option*> modes = {rate, concurrency, burst, trace_file};
  for (std::size_t i = 0; i < modes.size(); ++i)
    for (std::size_t j = i + 1; j < modes.size(); ++j) modes[i]->excludes(modes[j]);
  sub->add_option("--input-dist", cmd->input_dist, "the same as --input-len (kept for earlier scripts)");
  sub->add_option("--output-dist", cmd->output_dist, "the same as --output-len (kept for earlier scripts)");
  // CLI11 reads "-1" into an unsigned seed as 2^64 - 1: a negative seed is refused instead.
  sub->add_option("--seed", cmd->seed,
                  "seed of the arrival, length and speculative acceptance draws (default 1, 0 to 2^64 - 1)")
      ->check(CLI::Validator(
          [](std::string& v) {
            return !v.empty() && v[0] == '-' ? "must be zero or a positive integer, got " + v : std::string();
          },
          ""));
  sub->add_option("--max-num-seqs", cmd->max_num_seqs, "engine: sequences per iteration at most")
      ->check(finite_positive());
  sub->add_option("--max-batched-tokens", cmd->max_batched_tokens, "engine: tokens per iteration at most")
      ->check(finite_positive());
  // --x turns an engine feature on, --no-x off (the last given wins); neither keeps the engine's default.
  sub->add_flag("--chunked-prefill,!--no-chunked-prefill", cmd->chunked,
                "engine: split long prompts across iterations (--no-chunked-prefill: prompts prefill whole)");
  add_shared_prefix_options(*sub, cmd->shared_prefix, cmd->prefix_groups);
  add_adapter_options(*sub, cmd->lora);
  sub->add_flag("--prefix-caching,!--no-prefix-caching", cmd->prefix_caching,
                "engine: reuse the cached KV of shared prompt prefixes (default: the engine's; vllm and trt-llm on; "
                "--no-prefix-caching: compute every prompt whole)");
  sub->add_option("--gpu-memory-utilization", cmd->gpu_mem_util,
                  "engine: fraction of GPU memory it may use (SGLang: --mem-fraction-static, weights and KV together)")
      ->check(finite_positive())  // refuses nan and inf, which a range alone lets through
      ->check(CLI::Range(0.01, 1.0));
  sub->add_option("--kv-cache-blocks", cmd->kv_cache_blocks,
                  "engine: a KV cache of this many blocks whatever the memory (vLLM --num-gpu-blocks-override, "
                  "LMDeploy cache_max_entry_count >= 1)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1'000'000'000}));
  sub->add_option(
         "--num-scheduler-steps", cmd->scheduler_steps,
         "engine: decode steps per scheduler call (vLLM V0 multi-step scheduling, --engine-version below 0.8.0; "
         "default 1)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1024}));
  sub->add_option("--slo-ttft", cmd->slo_ttft_ms, "goodput: time-to-first-token bound in ms")->check(finite_positive());
  sub->add_option("--slo-tpot", cmd->slo_tpot_ms, "goodput: time-per-output-token bound in ms")
      ->check(finite_positive());
  sub->add_option("--trace", cmd->trace, "write iterations and request lifetimes as a Chrome trace (Perfetto)");
  sub->add_option("--per-request", cmd->per_request, "write every request's metrics as CSV to this file");
  sub->add_flag("--timeline", cmd->timeline,
                "add each latency's quantiles 0-100 % and the batch, KV-cache use and queue over time (200 slices) to "
                "the result (--html draws them, and implies this)");
}

// The engine: --engine (one serve simulates: not DeepSpeed-Inference, which only `infer` models), else vLLM.
std::string resolve_engine(const sim::RunRequest& req) {
  if (!req.was_given("engine")) return "vllm";
  const std::string engine = sim::serving_engine_name(req.run.infer.framework);
  if (std::find(kEngines.begin(), kEngines.end(), engine) == kEngines.end())
    throw_usage("--engine", fmt::format("--engine {}: serve simulates {} (DeepSpeed-Inference runs in `llmsim infer`)",
                                        sim::name_of(req.run.infer.framework), join(kEngines)));
  return engine;
}

// The rules between the arrival, length and engine flags (usage errors naming the flag).
void check_serve_flags(const CLI::App* sub, const ServeCommand& c, const sim::RunRequest& req) {
  const auto cmd = &c;
  const std::vector<std::string> inputs = {cmd->trace_file, req.model, req.system, cmd->flags.config};
  refuse_overwrite("--per-request", cmd->per_request, inputs);
  refuse_overwrite("--trace", cmd->trace, inputs);
  if (sub->count("--rate") > 0 && !(cmd->rate > 0))
    throw_usage("--rate", fmt::format("--rate {}: must be > 0 requests per second", cmd->rate));
  if (!cmd->trace_file.empty() && (sub->count("--shared-prefix") > 0 || sub->count("--prefix-groups") > 0))
    throw_usage("--shared-prefix",
                "--trace-file gives the prefixes (columns prefix_key,prefix_tokens); drop "
                "--shared-prefix/--prefix-groups");
  if (sub->count("--prefix-groups") > 0 && cmd->shared_prefix == 0)
    throw_usage("--prefix-groups", "--prefix-groups needs --shared-prefix N (the tokens each group shares)");
  if (!cmd->trace_file.empty() && (!cmd->input_dist.empty() || !cmd->output_dist.empty() ||
                                   req.was_given("input-len") || req.was_given("output-len")))
    throw_usage("--trace-file",
                "--trace-file gives the lengths; drop --input-len/--output-len/--input-dist/--output-dist");
  if (!cmd->input_dist.empty() && req.was_given("input-len"))
    throw_usage("--input-dist", "give --input-len or --input-dist, not both");
  if (!cmd->output_dist.empty() && req.was_given("output-len"))
    throw_usage("--output-dist", "give --output-len or --output-dist, not both");
}

// The engine's profile on this system, with the flags' overrides.
sim::EngineProfile engine_with_overrides(const ServeCommand& c, const std::string& engine, sim::Framework fw,
                                         const hardware::SystemSpec& sys, const sim::RunRequest& req,
                                         const sim::RunSpec& run, std::int64_t max_model_len) {
  const auto cmd = &c;
  sim::EngineProfile profile = sim::serving_profile(fw, sys, run.infer.engine_version, max_model_len, run.par.tp);
  if (cmd->max_num_seqs > 0)
    profile.max_num_seqs = cmd->max_num_seqs;
  else if (fw == sim::Framework::Hf && req.was_given("batch"))
    profile.max_num_seqs = run.infer.batch;
  if (cmd->max_batched_tokens > 0) {
    profile.max_batched_tokens = cmd->max_batched_tokens;
    profile.batched_tokens_kv_fraction = 0;
  }
  if (cmd->chunked_given) profile.chunked_prefill = cmd->chunked;
  if (cmd->gpu_mem_util > 0) {
    profile.gpu_memory_utilization = cmd->gpu_mem_util;
    if (profile.static_reserve_bytes > 0) profile.static_fraction = cmd->gpu_mem_util;  // SGLang --mem-fraction-static
  }
  if (cmd->kv_cache_blocks > 0) profile.kv_cache_blocks = cmd->kv_cache_blocks;
  if (cmd->prefix_caching_given) profile.prefix_caching = cmd->prefix_caching;
  if (cmd->lora.max_loras > 0) profile.max_loras = cmd->lora.max_loras;
  if (cmd->prefix_caching_given && cmd->prefix_caching &&
      (profile.batching == sim::Batching::Static || profile.separate_prefill))
    throw_usage(
        "--prefix-caching",
        fmt::format("the {} profile {}; prefix caching is modelled for engines that mix prefill and decode "
                    "(vllm from 0.8.0, trt-llm, lmdeploy)",
                    engine,
                    profile.batching == sim::Batching::Static ? "batches statically"
                                                              : "prefills new batches in their own iterations"));
  if (const auto why = sim::chunked_prefill_problem(profile)) throw_usage("--chunked-prefill", *why);
  if (cmd->scheduler_steps > 0) profile.scheduler_steps = cmd->scheduler_steps;
  if (const auto why = sim::scheduler_steps_problem(profile)) throw_usage("--num-scheduler-steps", *why);

  return profile;
}

// The requests to serve (a trace file or a generated stream), how to describe them, and notes.
struct Stream {
  std::vector<sim::Request> requests;
  std::string description;
  std::vector<std::string> notes;
  sim::StreamSpec spec;
};

Stream request_stream(const CLI::App* sub, const ServeCommand& c, const sim::RunRequest& req, const sim::RunSpec& run,
                      const model::ModelSpec& m) {
  const auto cmd = &c;
  Stream out;
  auto& requests = out.requests;
  auto& stream = out.description;
  auto& notes = out.notes;
  auto& spec = out.spec;
  spec.seed = cmd->seed;
  spec.requests = cmd->requests > 0 ? cmd->requests : 1000;
  const auto max_ctx = sim::served_context(m.max_positions, run.infer);
  const std::string ctx_owner = sim::context_is_engines(m.max_positions, run.infer)
                                    ? std::string("the engine's (--max-model-len)")
                                    : m.name + "'s";
  spec.adapters = cmd->lora.adapters;
  spec.adapter_zipf = cmd->lora.zipf();
  if (!cmd->trace_file.empty()) {
    sim::TraceFile tf = sim::read_trace_csv(cmd->trace_file);
    sim::assign_adapters(tf.requests, spec.adapters, spec.adapter_zipf, spec.seed);
    if (!tf.note.empty()) {
      notes.push_back(tf.note);
      std::cerr << "llmsim: " << tf.note << "\n";
    }
    if (cmd->requests > 0 && static_cast<std::int64_t>(tf.requests.size()) > cmd->requests) {
      tf.requests.resize(static_cast<std::size_t>(cmd->requests));
      tf.lines.resize(static_cast<std::size_t>(cmd->requests));
    }
    // A request longer than the model's context is rejected by the engine and the others are served
    // (simulate_serving counts them); the first such line is named here.
    for (std::size_t i = 0; i < tf.requests.size(); ++i) {
      const auto& q = tf.requests[i];
      if (max_ctx <= 0 || q.input_tokens + q.output_tokens <= max_ctx) continue;
      std::cerr << fmt::format(
          "llmsim: {}:{}: input_tokens {} + output_tokens {} = {} exceed {} maximum context of {}: the engine "
          "rejects this request (and any other as long) and serves the rest\n",
          cmd->trace_file, tf.lines[i], q.input_tokens, q.output_tokens, q.input_tokens + q.output_tokens, ctx_owner,
          max_ctx);
      break;
    }
    requests = std::move(tf.requests);
    stream = fmt::format("trace {} ({} requests)", cmd->trace_file, requests.size());
    if (spec.adapters > 0) stream += cmd->lora.describe();
  } else {
    spec.input = cmd->input_dist.empty()
                     ? sim::LengthDist{sim::LengthKind::Fixed, static_cast<double>(run.infer.input_len), 0}
                     : sim::parse_length_dist(cmd->input_dist, cmd->input_dist_flag, cmd->common.resolved_data_dir());
    spec.shared_prefix_tokens = cmd->shared_prefix;
    spec.prefix_groups = cmd->prefix_groups;
    spec.output =
        cmd->output_dist.empty()
            ? sim::LengthDist{sim::LengthKind::Fixed, static_cast<double>(run.infer.output_len), 0}
            : sim::parse_length_dist(cmd->output_dist, cmd->output_dist_flag, cmd->common.resolved_data_dir(), true);
    // A length sample counted in another tokenizer holds more (or fewer) of this model's tokens.
    for (auto& n : sim::lengths_in_model_tokens(spec.input, spec.output, m)) notes.push_back(std::move(n));
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
    // Fixed lengths beyond the context would have every request rejected: a usage error. Drawn lengths
    // beyond it (a long tail) are rejected one by one, as the engines do, and the rest served.
    const bool drawn = spec.input.kind != sim::LengthKind::Fixed || spec.output.kind != sim::LengthKind::Fixed;
    for (const auto& q : requests)
      if (!drawn && max_ctx > 0 && q.input_tokens + q.output_tokens > max_ctx)
        throw_usage(req.was_given("input-len") ? "--input-len" : "--output-len",
                    fmt::format("{} + --output-len {} = {} tokens exceed {} maximum context of {}",
                                spec.shared_prefix_tokens > 0
                                    ? fmt::format("--shared-prefix {} + --input-len {}", spec.shared_prefix_tokens,
                                                  q.input_tokens - spec.shared_prefix_tokens)
                                    : fmt::format("--input-len {}", q.input_tokens),
                                q.output_tokens, q.input_tokens + q.output_tokens, ctx_owner, max_ctx));
    const std::string prefix =
        spec.shared_prefix_tokens > 0
            ? fmt::format(" after a shared prefix of {} tokens ({} group{})", spec.shared_prefix_tokens,
                          spec.prefix_groups, spec.prefix_groups == 1 ? "" : "s")
            : std::string();
    stream = fmt::format("{} requests, {}, input {}{}, output {}{}, seed {}", spec.requests, arrivals,
                         spec.input.describe(), prefix, spec.output.describe(),
                         spec.adapters > 0 ? cmd->lora.describe() : std::string(), spec.seed);
  }

  return out;
}

}  // namespace

Runner add_serve_command(CLI::App& app) {
  auto cmd = std::make_shared<ServeCommand>();
  CLI::App* sub = app.add_subcommand(
      "serve",
      "simulate an inference engine serving a request stream: TTFT/TPOT/latency percentiles, throughput, goodput");
  sub->allow_extras();
  add_serve_flags(sub, *cmd);
  return [cmd, sub]() -> int {
    reject_extras(*sub);
    check_outputs(*sub, cmd->common, {cmd->trace_file});
    lengths_as_distributions(*cmd);
    cmd->chunked_given = sub->count("--chunked-prefill") > 0;  // either name of the flag
    cmd->prefix_caching_given = sub->count("--prefix-caching") > 0;
    std::string engine;
    ResolvedRun rr = resolve_run(*sub, cmd->flags, cmd->common, [&](sim::RunRequest& r) {
      engine = resolve_engine(r);
      check_serve_flags(sub, *cmd, r);
      r.run.workload = sim::Workload::Inference;
      r.run.infer.framework = engine_framework(engine);
      if (cmd->lora.adapters > 0) {  // the adapters' rank and projections, for the iteration cost and the report
        r.run.infer.adapter_rank = cmd->lora.rank;
        r.run.infer.adapter_targets = cmd->lora.targets;
      }
    });
    const sim::RunRequest& req = rr.req;
    const model::ModelSpec& m = rr.model;
    const hardware::SystemSpec& sys = rr.system;
    const sim::RunSpec& run = rr.run;
    const sim::Framework fw = run.infer.framework;

    const sim::EngineProfile profile =
        engine_with_overrides(*cmd, engine, fw, sys, req, run, sim::served_context(m.max_positions, run.infer));
    Stream s = request_stream(sub, *cmd, req, run, m);
    const auto& requests = s.requests;
    const auto& spec = s.spec;
    sim::ServingConfig cfg;
    cfg.engine = profile;
    cfg.closed_loop = spec.kind == sim::ArrivalKind::Closed && cmd->trace_file.empty();
    cfg.concurrency = cmd->concurrency;
    cfg.slo_ttft_s = cmd->slo_ttft_ms * 1e-3;
    cfg.slo_tpot_s = cmd->slo_tpot_ms * 1e-3;
    const bool timeline = cmd->timeline || cmd->common.html.wanted;
    cfg.keep_trace = !cmd->trace.empty() || timeline;
    cfg.seed = cmd->seed;
    const auto t0 = std::chrono::steady_clock::now();
    auto last = t0;
    cfg.progress = [&](double done) {
      const auto now = std::chrono::steady_clock::now();
      if (std::chrono::duration<double>(now - t0).count() < 2 || std::chrono::duration<double>(now - last).count() < 1)
        return;
      last = now;
      std::cerr << fmt::format("llmsim: serve: {:.0f}% of {} requests done\n", 100 * done, requests.size());
    };
    std::optional<sim::DisaggregatedResult> pd;
    if (cmd->prefill_replicas > 0) {
      const sim::DisaggregatedPools pools{.prefill_replicas = cmd->prefill_replicas,
                                          .prefill_tp = cmd->prefill_tp > 0 ? cmd->prefill_tp : run.par.tp,
                                          .decode_replicas = cmd->decode_replicas,
                                          .decode_tp = cmd->decode_tp > 0 ? cmd->decode_tp : run.par.tp};
      pd = sim::simulate_disaggregated(m, sys, run, cfg, pools, requests);
    }
    sim::ServingResult r = pd ? pd->whole : sim::simulate_serving(m, sys, run, cfg, requests);
    for (auto& n : s.notes) r.notes.push_back(std::move(n));
    sim::RunRequest shown = req;          // its run is the run as simulated (resolve_run)
    if (pd) shown.run.par.gpus = r.gpus;  // both pools
    serve_output::Context c{m.name,
                            sys.name,
                            s.description,
                            shown.run,
                            shown,
                            describe_serving_run(shown.run, s.description),
                            sys.efficiency.calibrated,
                            sys.gpu.memory_bytes,
                            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                            cmd->slo_ttft_ms,
                            cmd->slo_tpot_ms};
    if (!cmd->trace_file.empty() || !cmd->input_dist.empty()) c.stream_replaces.emplace_back("input-len");
    if (!cmd->trace_file.empty() || !cmd->output_dist.empty()) c.stream_replaces.emplace_back("output-len");
    if (r.profile.batching != sim::Batching::Static) c.stream_replaces.emplace_back("batch");
    if (c.wall_s > 2) std::cerr << fmt::format("llmsim: serve: simulated in {:.1f} s\n", c.wall_s);
    if (r.valid() && !cmd->trace.empty()) serve_output::write_trace(cmd->trace, r);
    if (r.valid() && !cmd->per_request.empty()) serve_output::write_per_request(cmd->per_request, r);
    const auto bands = load_measured_bands(cmd->bands, cmd->common);
    const std::string band_profile(sim::name_of(run.infer.framework));
    const std::vector<BandedFigure> figures = {{"output_tokens_per_s", r.output_tokens_per_s.value},
                                               {"ttft_ms", r.ttft.mean * 1e3},
                                               {"tpot_ms", r.tpot.mean * 1e3},
                                               {"e2e_latency_ms", r.e2e.mean * 1e3}};
    nlohmann::json doc = report::serve_document(c, r);
    if (r.valid()) doc["measured_bands"] = measured_bands_json(bands, "serving", band_profile, figures);
    if (pd) doc["disaggregated"] = report::disaggregated_json(*pd, cmd->prefill_replicas, cmd->decode_replicas);
    if (r.valid() && timeline) {
      doc["latency_quantiles"] = report::latency_quantiles(r.requests);
      // Disaggregated: the decode pool's course, where the replies are generated.
      doc["timeline"] = report::serve_timeline(pd ? pd->decode : r, 200);
    }
    emit(cmd->common, doc, [&] {
      serve_output::print_table(c, r);
      if (r.valid()) {
        std::cout << "\n";
        print_measured_bands(bands, "serving", band_profile, figures);
      }
    });
    return r.valid() ? 0 : 1;
  };
}

}  // namespace llmsim::cli
