// `llmsim memory`: per-GPU memory breakdown of one configuration, whether it fits, and what would.
#include <algorithm>
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_context.h"
#include "commands.h"
#include "llmsim/core/units.h"
#include "llmsim/hardware/system_toml.h"
#include "llmsim/memory/memory_advice.h"
#include "llmsim/model/presets.h"
#include "llmsim/report/report.h"
#include "llmsim/report/run_documents.h"
#include "llmsim/report/train_parts.h"
#include "llmsim/run/feasibility.h"

namespace llmsim::cli {

namespace {

struct MemoryCommand {
  CommonOptions common;
  RunFlags flags;
};

void print_table(const model::ModelSpec& m, const hardware::SystemSpec& sys, const sim::RunSpec& run,
                 const sim::MemoryResult& r, const std::vector<sim::FitSuggestion>& fixes) {
  std::cout << fmt::format("llmsim memory: {} on {}\n", m.name, sys.name);
  std::cout << fmt::format("run: {}\n", describe_run(run));
  if (!r.valid()) {
    std::cout << "result: infeasible\n";
    for (const auto& p : r.problems) std::cout << "  - " << p << "\n";
    return;
  }
  std::cout << fmt::format("parameters: {:.3f} B total, {:.4g} B trainable; {:.3f} B on the peak GPU (stage {})\n\n",
                           static_cast<double>(r.params_total) / 1e9, static_cast<double>(r.params_trainable) / 1e9,
                           r.params_per_gpu / 1e9, r.peak_stage);
  std::cout << fmt::format("{:<24} {:>10}  {}\n", "per GPU", "GiB", "how it is counted");
  for (const auto& i : r.gpu) std::cout << fmt::format("{:<24} {:>10}  {}\n", i.name, gib(i.bytes), i.note);
  std::cout << fmt::format("{:<24} {:>10}  of {} GiB on {}\n", "total", gib(r.gpu_bytes), gib(r.gpu_capacity_bytes),
                           sys.gpu.name);
  if (!r.host.empty()) {
    std::cout << fmt::format("\n{:<24} {:>10}  {}\n", "host, per node", "GiB", "");
    for (const auto& i : r.host) std::cout << fmt::format("{:<24} {:>10}  {}\n", i.name, gib(i.bytes), i.note);
    std::cout << fmt::format("{:<24} {:>10}  of {} GiB\n", "total", gib(r.host_bytes), gib(r.host_capacity_bytes));
  }
  if (run.workload == sim::Workload::Inference)
    std::cout << fmt::format(
        "\nKV cache: {:.1f} KiB per token per GPU; max batch at {} tokens/seq: {}; "
        "max KV tokens at this batch: {}\n",
        r.kv_bytes_per_token / units::KiB, run.infer.input_len + run.infer.output_len, r.max_batch, r.max_tokens);
  std::cout << "\n";
  std::cout << memory_result_verdict(r).text << "\n";
  if (r.fits()) return;
  if (fixes.empty()) {
    std::cout
        << "no single change of recomputation, ZeRO stage, offload, micro-batch, TP/PP or quantization makes it fit\n";
    return;
  }
  std::cout << "would fit with:\n";
  for (const auto& f : fixes) std::cout << fmt::format("  {:<40} {} GiB per GPU\n", f.change, gib(f.gpu_bytes));
}

}  // namespace

Runner add_memory_command(CLI::App& app) {
  auto cmd = std::make_shared<MemoryCommand>();
  CLI::App* sub = app.add_subcommand("memory", "per-GPU memory breakdown: does a configuration fit, and with what?");
  sub->allow_extras();
  add_common_options(*sub, cmd->common);
  add_run_flags(*sub, cmd->flags, RunKinds::Any);
  return [cmd, sub]() -> int {
    reject_extras(*sub);
    check_outputs(*sub, cmd->common);
    refuse_length_distributions(cmd->flags, "memory");
    ResolvedRun rr = resolve_run(*sub, cmd->flags, cmd->common);
    const sim::RunRequest& req = rr.req;  // its run is the run as evaluated, for the report
    const model::ModelSpec& m = rr.model;
    const hardware::SystemSpec& sys = rr.system;
    const sim::RunSpec& run = rr.run;
    sim::MemoryResult r = sim::evaluate_memory(m, sys, run);
    // What the framework, engine or GPU cannot run is infeasible here too, as in `train` and `infer`.
    if (r.valid()) r.problems = sim::run_problems(m, sys, run);
    const auto fixes = r.valid() && !r.fits() ? sim::suggest_fits(m, sys, run) : std::vector<sim::FitSuggestion>{};
    emit(cmd->common, report::memory_document(m, sys, req, run, r, fixes), [&] { print_table(m, sys, run, r, fixes); });
    return r.fits() ? 0 : 1;
  };
}

}  // namespace llmsim::cli
