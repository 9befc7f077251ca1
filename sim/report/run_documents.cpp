#include "llmsim/report/run_documents.h"

#include <cmath>

#include "llmsim/report/report.h"
#include "llmsim/report/run_summary.h"
#include "llmsim/report/train_parts.h"
#include "llmsim/report/verdict.h"

namespace llmsim::report {

namespace {
// [{"name", "seconds": figure s, "fraction"}], one row per share of the step.
nlohmann::json time_shares_json(const std::vector<sim::TimeShare>& v) {
  auto a = nlohmann::json::array();
  for (const auto& x : v)
    a.push_back({{"name", x.name}, {"seconds", report::figure(x.seconds, "s")}, {"fraction", x.fraction}});
  return a;
}
}  // namespace

// The train report (docs/output-schema.md, "train").
nlohmann::json train_document(const model::ModelSpec& m, const hardware::SystemSpec& sys, const sim::RunRequest& req,
                              const sim::RunSpec& run, const sim::TrainResult& r) {
  using report::figure;
  nlohmann::json j = report::header("train");
  report::add_run(j, req, m.name, sys.name, describe_run(run), r.problems);
  const Verdict v = r.valid() ? memory_verdict(r.memory) : infeasible_verdict(r.problems);
  report::add_verdict(j, v.ok, v.text);
  j["fits"] = r.memory.fits();
  j["calibrated"] = sys.efficiency.calibrated;
  j["memory"] = {{"gpu_bytes", figure(r.memory.gpu_bytes, "B")},
                 {"gpu_capacity_bytes", figure(r.memory.gpu_capacity_bytes, "B")},
                 {"host_bytes", figure(r.memory.host_bytes, "B")},
                 {"timeline_peak_bytes", figure(r.memory_timeline_peak_bytes, "B")},
                 {"peak_in_flight_micro_batches", r.peak_in_flight},
                 {"items", report::memory_items(r.memory.gpu)}};
  if (!r.valid()) return j;
  j["step_time_s"] = figure(r.step_time_s, "s");
  j["micro_batches"] = r.micro_batches;
  j["tokens_per_step"] = r.tokens_per_step;
  j["tokens_per_s"] = figure(r.tokens_per_s, "tokens/s");
  j["tokens_per_s_per_gpu"] = figure(r.tokens_per_s_per_gpu, "tokens/s");
  j["samples_per_s"] = figure(r.samples_per_s, "samples/s");
  j["samples_per_s_per_gpu"] = figure(r.samples_per_s_per_gpu, "samples/s");
  j["model_flops_per_step"] = figure(r.model_flops_per_step, "FLOP");
  j["hardware_flops_per_step"] = figure(r.hardware_flops_per_step, "FLOP");
  j["model_tflops_per_gpu"] = figure(r.model_tflops_per_gpu, "TFLOP/s");
  j["mfu"] = figure(r.mfu, "fraction");
  j["hfu"] = figure(r.hfu, "fraction");
  j["critical_stage"] = r.critical_stage;
  nlohmann::json stages = nlohmann::json::array();
  for (std::size_t s = 0; s < r.stages.size(); ++s)
    stages.push_back(
        {{"stage", s}, {"layers", r.stages[s].layers}, {"compute_busy_s", figure(r.stages[s].compute_s, "s")}});
  j["stages"] = stages;
  j["by_phase"] = time_shares_json(r.by_phase);
  j["by_module"] = time_shares_json(r.by_module);
  j["by_op_class"] = time_shares_json(r.by_op_class);
  j["graph_nodes"] = r.graph_nodes;
  if (r.total_steps > 0) j["total"] = train_totals(r);
  return j;
}

// The memory report (docs/output-schema.md, "memory").
nlohmann::json memory_document(const model::ModelSpec& m, const hardware::SystemSpec& sys, const sim::RunRequest& req,
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

// The infer report (docs/output-schema.md, "infer"), without the measured-run bands the caller adds.
nlohmann::json infer_document(const model::ModelSpec& m, const hardware::SystemSpec& sys, const sim::RunRequest& req,
                              const sim::RunSpec& run, const sim::InferResult& r) {
  using report::figure;
  nlohmann::json doc = report::header("infer");
  report::add_run(doc, req, m.name, sys.name, describe_run(run), r.problems);
  const Verdict verdict = infer_verdict(run, r);
  report::add_verdict(doc, verdict.ok, verdict.text);
  doc["fits"] = r.memory.fits();
  doc["max_batch"] = r.memory.max_batch;
  if (r.valid()) {
    doc["engine"] = r.engine;
    doc["replicas"] = r.replicas;
    doc["ttft_s"] = figure(r.ttft_s, "s");
    doc["tpot_s"] = figure(r.tpot_s, "s");
    doc["e2e_s"] = figure(r.e2e_s, "s");
    doc["output_tokens_per_s"] = figure(r.output_tokens_per_s, "tokens/s");
    doc["total_tokens_per_s"] = figure(r.total_tokens_per_s, "tokens/s");
    doc["prompt_tokens_per_s"] = figure(r.prompt_tokens_per_s, "tokens/s");
    doc["generation_tokens_per_s"] = figure(r.generation_tokens_per_s, "tokens/s");
    // Where an iteration's time goes: the batch's prefill and a decode step half-way through the output.
    const auto split = [&](const sim::IterationCost& c) {
      return nlohmann::json{{"time_s", figure(c.time_s, "s")},
                            {"gemm_s", figure(c.linear_s, "s")},
                            {"attention_s", figure(c.attention_s, "s")},
                            {"communication_s", figure(c.comm_s, "s")},
                            {"other_s", figure(c.other_s, "s")},
                            {"host_wait_s", figure(c.host_wait_s, "s")},
                            {"cpu_s", figure(c.cpu_s, "s")},
                            {"launches", static_cast<std::int64_t>(std::llround(c.launches))}};
    };
    doc["iteration"] = {{"prefill", split(r.prefill)}, {"decode", split(r.decode_mid)}};
    if (const auto& sp = run.infer.speculative; sp.on())
      doc["speculative"] = {{"method", sim::name_of(sp.method)},
                            {"draft_tokens", sp.tokens},
                            {"acceptance", sp.acceptance},
                            {"tokens_per_step", r.tokens_per_step}};
  }
  return doc;
}

}  // namespace llmsim::report
