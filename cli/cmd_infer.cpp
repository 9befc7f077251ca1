// `llmsim infer`: fixed-batch inference (HF generate, FasterTransformer, TensorRT-LLM session style):
// prefill latency, per-token decode latency, throughput, memory and the largest batch that fits.
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_context.h"
#include "commands.h"
#include "llmsim/core/error.h"
#include "llmsim/hardware/system_toml.h"
#include "llmsim/infer/infer_sim.h"
#include "llmsim/model/presets.h"
#include "llmsim/report/chrome_trace.h"
#include "llmsim/report/report.h"
#include "llmsim/report/run_documents.h"
#include "measured_bands.h"

namespace llmsim::cli {

namespace {

struct InferCommand {
  CommonOptions common;
  RunFlags flags;
  std::string trace;
  std::string bands;
};

// The fixed-batch run as a Chrome trace: the prefill iteration, then every decode iteration, on one
// track (replicas run the same schedule).
std::vector<sim::TraceEvent> iteration_events(const sim::RunSpec& run, const sim::InferResult& r) {
  const auto& in = run.infer;
  std::vector<sim::TraceEvent> ev;
  double t = r.prefill.time_s.value;
  ev.push_back({fmt::format("prefill {} x {}", in.batch, in.input_len), "replica0.compute", 0, 0, t, "prefill"});
  for (std::size_t i = 0; i < r.decode_steps_s.size(); ++i) {
    const std::int64_t context = in.input_len + static_cast<std::int64_t>(i);
    ev.push_back({fmt::format("decode {} (context {})", i + 1, context), "replica0.compute", 0, t, r.decode_steps_s[i],
                  "decode"});
    t += r.decode_steps_s[i];
  }
  return ev;
}

std::string ms(double s) { return fmt::format("{:.2f} ms", s * 1e3); }

void print_table(const model::ModelSpec& m, const hardware::SystemSpec& sys, const sim::RunSpec& run,
                 const sim::InferResult& r) {
  if (!print_run_header("infer", m.name, sys.name, run, r.problems)) return;
  const auto& mem = r.memory;
  std::cout << infer_verdict(run, r).text << "\n";
  if (mem.host_bytes > 0)
    std::cout << fmt::format(
        "host memory: {} GiB ({}){}\n", gib(mem.host_bytes), mem.host.empty() ? std::string() : mem.host.front().note,
        mem.host_fits() ? "" : fmt::format(", more than the node's {} GiB", gib(mem.host_capacity_bytes)));
  std::cout << fmt::format("engine: {}{} ({} replica{} of tp {} x pp {})\n\n", r.engine,
                           run.infer.engine_version ? " " + to_string(*run.infer.engine_version) : "", r.replicas,
                           r.replicas == 1 ? "" : "s", run.par.tp, run.par.pp);
  std::cout << fmt::format("{:<26} {}  [{} .. {}]\n", "prefill (TTFT)", ms(r.ttft_s.value), ms(r.ttft_s.low),
                           ms(r.ttft_s.high));
  std::cout << fmt::format("{:<26} {}  [{} .. {}]\n", "decode per token (TPOT)", ms(r.tpot_s.value), ms(r.tpot_s.low),
                           ms(r.tpot_s.high));
  if (const auto& sp = run.infer.speculative; sp.on())
    std::cout << fmt::format("{:<26} {} drafts {} tokens a step, alpha {:.2f}: {:.2f} tokens per verify step\n",
                             "speculative decoding", sim::name_of(sp.method), sp.tokens, sp.acceptance,
                             r.tokens_per_step);
  std::cout << fmt::format("{:<26} {}\n", "end to end", ms(r.e2e_s.value));
  std::cout << fmt::format("{:<26} {:.1f} tokens/s ({:.1f} per GPU)  [{:.1f} .. {:.1f}]\n", "output throughput",
                           r.output_tokens_per_s.value, r.output_tokens_per_s.value / static_cast<double>(run.par.gpus),
                           r.output_tokens_per_s.low, r.output_tokens_per_s.high);
  std::cout << fmt::format("{:<26} {:.1f} tokens/s (prompt + output)\n", "total throughput",
                           r.total_tokens_per_s.value);
  std::cout << fmt::format(
      "{:<26} {:.1f} tokens/s prompt, {:.1f} tokens/s generation  (per replica, as llama-bench's "
      "pp and tg)\n",
      "rates", r.prompt_tokens_per_s.value, r.generation_tokens_per_s.value);
  auto split = [](const char* what, const sim::IterationCost& c) {
    const double t = c.time_s.value;
    std::cout << fmt::format(
        "  {:<10} {:>10}: GEMMs {:4.1f}%, attention {:4.1f}%, communication {:4.1f}%, other {:4.1f}%, "
        "waiting for the host {:4.1f}%{} ({:.0f} kernel launches)\n",
        what, ms(t), 100 * c.linear_s.value / t, 100 * c.attention_s.value / t, 100 * c.comm_s.value / t,
        100 * c.other_s.value / t, 100 * c.host_wait_s.value / t,
        c.cpu_s.value > 0 ? fmt::format(", layers on the CPU {:4.1f}%", 100 * c.cpu_s.value / t) : "", c.launches);
  };
  std::cout << "\nwhere an iteration's time goes\n";
  split("prefill", r.prefill);
  split("decode", r.decode_mid);
}

}  // namespace

Runner add_infer_command(CLI::App& app) {
  auto cmd = std::make_shared<InferCommand>();
  CLI::App* sub = app.add_subcommand("infer", "fixed-batch inference: prefill and decode latency, throughput, memory");
  sub->allow_extras();
  add_common_options(*sub, cmd->common);
  add_overlay_option(*sub, cmd->common);
  add_run_flags(*sub, cmd->flags, RunKinds::Inference);
  sub->add_option("--trace", cmd->trace, "write the iterations as a Chrome trace (Perfetto / chrome://tracing)");
  add_bands_option(*sub, cmd->bands);
  return [cmd, sub]() -> int {
    reject_extras(*sub);
    check_outputs(*sub, cmd->common);
    refuse_length_distributions(cmd->flags, "infer");
    ResolvedRun rr = resolve_run(*sub, cmd->flags, cmd->common, [](sim::RunRequest& req) {
      req.run.workload = sim::Workload::Inference;
      if (!req.was_given("engine")) req.run.infer.framework = sim::Framework::Hf;  // HF generate
    });
    const sim::RunRequest& req = rr.req;  // its run is the run as simulated, for the report
    const model::ModelSpec& m = rr.model;
    const hardware::SystemSpec& sys = rr.system;
    const sim::RunSpec& run = rr.run;
    const sim::InferResult r = sim::simulate_inference(m, sys, run);
    if (!cmd->trace.empty() && r.valid()) {
      std::ofstream f(cmd->trace);
      if (!f) throw_input(Location{.file = cmd->trace}, "cannot open the trace file for writing");
      const auto events = iteration_events(run, r);
      sim::write_chrome_trace(f, events);
      std::cerr << fmt::format("llmsim: wrote {} trace events to {}\n", events.size(), cmd->trace);
    }
    const auto bands = load_measured_bands(cmd->bands, cmd->common);
    const std::string profile(sim::name_of(run.infer.framework));
    const std::vector<BandedFigure> figures = {{"ttft_ms", r.ttft_s.value * 1e3},
                                               {"tpot_ms", r.tpot_s.value * 1e3},
                                               {"e2e_latency_ms", r.e2e_s.value * 1e3},
                                               {"output_tokens_per_s", r.output_tokens_per_s.value}};
    nlohmann::json doc = report::infer_document(m, sys, req, run, r);
    if (r.valid()) doc["measured_bands"] = measured_bands_json(bands, "inference", profile, figures);
    emit(cmd->common, doc, [&] {
      print_table(m, sys, run, r);
      if (r.valid()) {
        std::cout << "\n";
        print_measured_bands(bands, "inference", profile, figures);
      }
    });
    return r.valid() && r.memory.fits() ? 0 : 1;
  };
}

}  // namespace llmsim::cli
