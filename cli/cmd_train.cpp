// `llmsim train`: predicted step time, throughput, MFU, memory and where the time goes for one
// pre-training or fine-tuning configuration.
#include <fstream>
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_context.h"
#include "commands.h"
#include "llmsim/core/error.h"
#include "llmsim/core/units.h"
#include "llmsim/hardware/system_toml.h"
#include "llmsim/model/presets.h"
#include "llmsim/report/chrome_trace.h"
#include "llmsim/report/report.h"
#include "llmsim/report/run_documents.h"
#include "llmsim/report/train_parts.h"
#include "llmsim/run/stage_layout.h"
#include "llmsim/train/train_sim.h"
#include "measured_bands.h"

namespace llmsim::cli {

namespace {

struct TrainCommand {
  CommonOptions common;
  RunFlags flags;
  std::int64_t steps = 0;
  std::string tokens;  // --tokens as written (1e12, 300B, 2T)
  std::string price;   // --price-per-gpu-hour as written (X, or sys=X)
  std::string trace;
  std::string bands;
  bool schedule = false;  // --schedule: the scheduled step and its memory timeline in the document (on with --html)
};

std::string seconds(double s) {
  if (s >= 86400 * 2) return fmt::format("{:.1f} days", s / 86400);
  if (s >= 7200) return fmt::format("{:.1f} h", s / 3600);
  if (s >= 1) return fmt::format("{:.3f} s", s);
  return fmt::format("{:.2f} ms", s * 1e3);
}

void print_shares(const char* title, const std::vector<sim::TimeShare>& v) {
  std::cout << "\n" << title << "\n";
  for (const auto& x : v)
    std::cout << fmt::format("  {:<26} {:>12}  {:5.1f}%\n", x.name, seconds(x.seconds), 100 * x.fraction);
}

// With a pipeline: the busiest and the least busy stage's compute stream, so that a critical stage made to wait
// by a busier one (its "pipeline bubble") says which.
void print_stages(const sim::TrainResult& r) {
  if (r.stages.size() < 2 || !(r.step_time_s.value > 0)) return;
  const auto by_busy = [](const auto& a, const auto& b) { return a.compute_s < b.compute_s; };
  const auto most = std::max_element(r.stages.begin(), r.stages.end(), by_busy);
  const auto least = std::min_element(r.stages.begin(), r.stages.end(), by_busy);
  const auto line = [&](const char* what, auto it) {
    std::cout << fmt::format("  {:<26} {:>12}  {:5.1f}%  stage {}, {} layers\n", what, seconds(it->compute_s),
                             100 * it->compute_s / r.step_time_s.value, it - r.stages.begin(), it->layers);
  };
  std::cout << "\npipeline stages (compute stream busy in the step)\n";
  line("busiest", most);
  line("least busy", least);
}

void print_table(const model::ModelSpec& m, const hardware::SystemSpec& sys, const sim::RunSpec& run,
                 const sim::TrainResult& r) {
  if (!print_run_header("train", m.name, sys.name, run, r.problems)) return;
  std::cout << memory_verdict(r.memory).text << "\n";
  std::cout << fmt::format("profile: {}\n\n",
                           sys.efficiency.calibrated ? "calibrated" : "uncalibrated defaults (wide intervals)");
  const auto& st = r.step_time_s;
  std::cout << fmt::format("{:<22} {}  [{} .. {}]\n", "step time", seconds(st.value), seconds(st.low),
                           seconds(st.high));
  std::cout << fmt::format("{:<22} {:.0f} tokens/s ({:.0f} per GPU)  [{:.0f} .. {:.0f}]\n", "throughput",
                           r.tokens_per_s.value, r.tokens_per_s_per_gpu.value, r.tokens_per_s.low, r.tokens_per_s.high);
  std::cout << fmt::format("{:<22} {:.3g} samples/s ({:.3g} per GPU)\n", "", r.samples_per_s.value,
                           r.samples_per_s_per_gpu.value);
  std::cout << fmt::format("{:<22} {:.1f} per GPU  [{:.1f} .. {:.1f}]\n", "model TFLOP/s", r.model_tflops_per_gpu.value,
                           r.model_tflops_per_gpu.low, r.model_tflops_per_gpu.high);
  std::cout << fmt::format("{:<22} {:.1f}%  [{:.1f} .. {:.1f}]   HFU {:.1f}%  (of {:.0f} TFLOP/s {} peak)\n", "MFU",
                           100 * r.mfu.value, 100 * r.mfu.low, 100 * r.mfu.high, 100 * r.hfu.value,
                           r.peak_flops_per_gpu / 1e12, dtype_name(run.train.precision));
  std::cout << fmt::format("{:<22} {} per step per data-parallel rank, {} tokens per step\n", "micro-batches",
                           r.micro_batches, r.tokens_per_step);
  std::cout << fmt::format("{:<22} {} micro-batches in flight at most; memory timeline peak {} GiB\n", "schedule",
                           r.peak_in_flight, gib(r.memory_timeline_peak_bytes));
  if (sim::embedding_loss_split(run.par.pp, run.par.vp, m.num_layers))
    std::cout << fmt::format(
        "{:<22} {} layers + embedding + loss over {} x {} chunks of {} (Megatron "
        "account_for_embedding/loss_in_pipeline_split)\n",
        "pipeline split", m.num_layers, run.par.pp, run.par.vp, (m.num_layers + 2) / (run.par.pp * run.par.vp));
  print_shares(fmt::format("time by phase (stage {}, sums to the step time)", r.critical_stage).c_str(), r.by_phase);
  print_stages(r);
  print_shares(fmt::format("GPU busy time by module (stage {})", r.critical_stage).c_str(), r.by_module);
  print_shares(fmt::format("busy time by operator class (stage {}, all its streams)", r.critical_stage).c_str(),
               r.by_op_class);
  if (r.total_steps > 0) {
    std::cout << fmt::format("\ntotal: {:.0f} steps, {}  [{} .. {}]", r.total_steps, seconds(r.total_time_s.value),
                             seconds(r.total_time_s.low), seconds(r.total_time_s.high));
    if (r.total_cost > 0) std::cout << fmt::format(", cost {:.0f}", r.total_cost);
    std::cout << fmt::format(", GPU energy at TDP {:.3g} MWh\n", r.total_energy_J / 3.6e9);
  }
}

}  // namespace

Runner add_train_command(CLI::App& app) {
  auto cmd = std::make_shared<TrainCommand>();
  CLI::App* sub =
      app.add_subcommand("train", "step time, throughput, MFU and time breakdown of training or fine-tuning");
  sub->allow_extras();
  add_common_options(*sub, cmd->common);
  add_overlay_option(*sub, cmd->common);
  add_run_flags(*sub, cmd->flags, RunKinds::Training);
  sub->add_option("--steps", cmd->steps, "report the time (and cost) of this many optimizer steps")
      ->check(finite_positive());
  sub->add_option("--tokens", cmd->tokens,
                  "report the time (and cost) to train this many tokens, e.g. 1e12, 300B or 2T");
  sub->add_option("--price-per-gpu-hour", cmd->price, "price of a GPU-hour, for the cost line: X, or sys=X");
  sub->add_option("--trace", cmd->trace, "write the scheduled step as a Chrome trace (Perfetto / chrome://tracing)");
  sub->add_flag("--schedule", cmd->schedule,
                "add the scheduled step to the result (busy spans per stage and stream, and the peak stage's memory "
                "over the step; --html draws them, and implies this)");
  add_bands_option(*sub, cmd->bands);
  return [cmd, sub]() -> int {
    reject_extras(*sub);
    check_outputs(*sub, cmd->common);
    // The flags of train's own are checked before anything loads.
    double tokens = 0;
    std::vector<double> price;
    ResolvedRun rr = resolve_run(*sub, cmd->flags, cmd->common, [&](sim::RunRequest& r) {
      if (r.run.workload == sim::Workload::Inference)
        throw_usage("--workload",
                    "llmsim train simulates pre-training and fine-tuning; use `llmsim memory` for inference");
      tokens = cmd->tokens.empty() ? 0.0 : parse_tokens(cmd->tokens);
      if (cmd->steps > 0 && tokens > 0) throw_usage("--steps", "give --steps or --tokens, not both");
      price = parse_prices(cmd->price, {r.system});
    });
    const sim::RunRequest& req = rr.req;  // its run is the run as simulated, for the report
    const model::ModelSpec& m = rr.model;
    const hardware::SystemSpec& sys = rr.system;
    const sim::RunSpec& run = rr.run;
    sim::TrainOptions opt;
    const bool schedule = cmd->schedule || cmd->common.html.wanted;
    opt.keep_trace = !cmd->trace.empty() || schedule;
    opt.train_steps = cmd->steps;
    opt.train_tokens = tokens;
    opt.price_per_gpu_hour = price.empty() ? 0.0 : price.front();
    const sim::TrainResult r = sim::simulate_training(m, sys, run, opt);
    if (!cmd->trace.empty() && r.valid()) {
      std::ofstream f(cmd->trace);
      if (!f) throw_input(Location{.file = cmd->trace}, "cannot open the trace file for writing");
      sim::write_chrome_trace(f, r.trace);
      std::cerr << fmt::format("llmsim: wrote {} trace events to {}\n", r.trace.size(), cmd->trace);
    }
    const auto bands = load_measured_bands(cmd->bands, cmd->common);
    const std::string workload(sim::name_of(run.workload)), profile(sim::name_of(run.train.framework));
    const std::vector<BandedFigure> figures = {{"step_time_s", r.step_time_s.value},
                                               {"tokens_per_s", r.tokens_per_s.value},
                                               {"samples_per_s", r.samples_per_s.value}};
    nlohmann::json doc = report::train_document(m, sys, req, run, r);
    if (r.valid()) doc["measured_bands"] = measured_bands_json(bands, workload, profile, figures);
    // Spans closer than 1/2000 of the step are one: a chart 1000 px wide could not show the gap.
    if (r.valid() && schedule) {
      doc["schedule"] = report::schedule_spans(r.trace, r.step_time_s.value / 2000);
      doc["memory_timeline"] = report::memory_timeline(r.memory_timeline, r.memory.peak_stage);
    }
    emit(cmd->common, doc, [&] {
      print_table(m, sys, run, r);
      if (r.valid()) {
        std::cout << "\n";
        print_measured_bands(bands, workload, profile, figures);
      }
    });
    return r.valid() && r.memory.fits() ? 0 : 1;
  };
}

}  // namespace llmsim::cli
