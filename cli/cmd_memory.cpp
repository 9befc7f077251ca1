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
#include "llmsim/report/train_parts.h"
#include "llmsim/run/feasibility.h"

namespace llmsim::cli {

namespace {

struct MemoryCommand {
  CommonOptions common;
  RunFlags flags;
};

// The answer in one sentence (the table's result line; report::add_verdict).
Verdict memory_result_verdict(const sim::MemoryResult& r) {
  if (!r.valid()) return infeasible_verdict(r.problems);
  if (r.fits())
    return {.ok = true,
            .text = fmt::format("result: fits ({} GiB headroom per GPU)", gib(r.gpu_capacity_bytes - r.gpu_bytes))};
  std::string text;
  if (!r.gpu_fits())
    text = fmt::format("result: does not fit by {} GiB per GPU", gib(r.gpu_bytes - r.gpu_capacity_bytes));
  if (!r.host_fits())
    text += fmt::format("{}host memory short by {} GiB per node", text.empty() ? "result: " : "; ",
                        gib(r.host_bytes - r.host_capacity_bytes));
  return {.ok = false, .text = text};
}

// The memory report (docs/output-schema.md, "memory").
nlohmann::json to_json(const model::ModelSpec& m, const hardware::SystemSpec& sys, const sim::RunRequest& req,
                       const sim::RunSpec& run, const sim::MemoryResult& r,
                       const std::vector<sim::FitSuggestion>& fixes) {
  using report::figure;
  nlohmann::json j = report::header("memory");
  report::add_run(j, req, m.name, sys.name, describe_run(run), r.problems);
  const Verdict verdict = memory_result_verdict(r);
  report::add_verdict(j, verdict.ok, verdict.text);
  j["fits"] = r.fits();
  j["params"] = {{"total", r.params_total}, {"trainable", r.params_trainable}, {"per_gpu", r.params_per_gpu}};
  j["gpu"] = {{"capacity_bytes", figure(r.gpu_capacity_bytes, "B")},
              {"total_bytes", figure(r.gpu_bytes, "B")},
              {"peak_stage", r.peak_stage},
              {"items", report::memory_items(r.gpu)}};
  j["host"] = {{"capacity_bytes", figure(r.host_capacity_bytes, "B")},
               {"total_bytes", figure(r.host_bytes, "B")},
               {"items", report::memory_items(r.host)}};
  if (run.workload == sim::Workload::Inference)
    j["inference"] = {{"kv_bytes_per_token", figure(r.kv_bytes_per_token, "B")},
                      {"max_batch", r.max_batch},
                      {"max_kv_tokens", r.max_tokens}};
  auto s = nlohmann::json::array();
  for (const auto& f : fixes)
    s.push_back(
        {{"change", f.change}, {"gpu_bytes", figure(f.gpu_bytes, "B")}, {"host_bytes", figure(f.host_bytes, "B")}});
  j["suggestions"] = s;
  return j;
}

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
    emit(cmd->common, to_json(m, sys, req, run, r, fixes), [&] { print_table(m, sys, run, r, fixes); });
    return r.fits() ? 0 : 1;
  };
}

}  // namespace llmsim::cli
