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

std::string describe_engine(const sim::EngineProfile& e) {
  std::string s = e.batching == sim::Batching::Static ? "static batching" : "continuous batching";
  s += fmt::format(", max {} seqs", e.max_num_seqs);
  if (e.max_batched_tokens > 0) s += fmt::format(", {} tokens/iteration", e.max_batched_tokens);
  if (e.batched_tokens_kv_fraction > 0) s += fmt::format(" (or {:.3g} of the KV cache)", e.batched_tokens_kv_fraction);
  if (e.chunked_prefill) s += ", chunked prefill";
  if (e.separate_prefill) s += ", prefill in its own iterations";
  if (e.scheduler_steps > 1) s += fmt::format(", {} decode steps per scheduler call", e.scheduler_steps);
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

}  // namespace

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
  std::cout << "result: " << report::serve_verdict(c, r).text << "\n";
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
    std::cout << fmt::format("  {:<16} {:>9} {:>9} {:>9} {:>9} {:>9}\n", name, ms_text(s.mean), ms_text(s.p50),
                             ms_text(s.p90), ms_text(s.p99), ms_text(s.max));
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
                             report::slo_text(c), r.goodput_rps);
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
