// The documents built in the library from the search's and the validation's records (search_document.h,
// validate_document.h) and the run summary every document carries (run_summary.h), on records small enough
// to follow by hand.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "llmsim/hardware/system_toml.h"
#include "llmsim/model/presets.h"
#include "llmsim/report/plan_serve_document.h"
#include "llmsim/report/preset_documents.h"
#include "llmsim/report/run_summary.h"
#include "llmsim/report/search_document.h"
#include "llmsim/report/serve_document.h"
#include "llmsim/report/validate_document.h"
#include "llmsim/report/verdict.h"

namespace report = llmsim::report;
namespace sim = llmsim::sim;

TEST_CASE("run summary: the layout, then the training settings that differ from the defaults") {
  sim::RunSpec r;
  r.workload = sim::Workload::Pretrain;
  r.par.gpus = 8;
  r.par.tp = 2;
  r.par.dp = 4;
  r.train.micro_batch = 4;
  r.train.global_batch = 64;
  r.train.seq_len = 2048;
  r.train.precision = llmsim::DType::BF16;
  r.train.flash_attn = true;
  const std::string s = report::describe_run(r);
  CHECK(s.starts_with("8 GPUs (tp 2, pp 1, dp 4), pretrain, "));
  CHECK(s.find("micro-batch 4, global batch 64, seq 2048, bf16, ZeRO-0") != std::string::npos);
  CHECK(s.find("flash-attn") != std::string::npos);
  CHECK(s.find("sequence parallel") == std::string::npos);
  r.par.sequence_parallel = true;
  r.par.ep = 2;
  const std::string t = report::describe_run(r);
  CHECK(t.starts_with("8 GPUs (tp 2, pp 1, dp 4, ep 2), "));
  CHECK(t.ends_with(", sequence parallel"));
}

TEST_CASE("run summary: inference says batch and lengths, serving the stream in their place") {
  sim::RunSpec r;
  r.workload = sim::Workload::Inference;
  r.par.dp = 1;
  r.infer.batch = 8;
  r.infer.input_len = 512;
  r.infer.output_len = 128;
  const std::string s = report::describe_run(r);
  CHECK(s.starts_with("1 GPU (tp 1, pp 1, dp 1), inference, batch 8, 512 + 128 tokens, "));
  const std::string v = report::describe_serving_run(r, "200 requests");
  CHECK(v.starts_with("1 GPU (tp 1, pp 1, dp 1), serving, "));
  CHECK(v.ends_with("; 200 requests"));
  CHECK(v.find("batch 8") == std::string::npos);
}

TEST_CASE("validate document: a predicted row carries its prediction and band, an error row its column") {
  sim::ValidationRow ok;
  ok.file = "runs.csv";
  ok.line = 2;
  ok.run_id = "a";
  ok.metric = "step_time_s";
  ok.status = sim::kValidationOk;
  ok.measured = 2.0;
  ok.predicted = 2.5;
  ok.low = 2.0;
  ok.high = 3.0;
  ok.error_pct = 25;
  sim::ValidationRow bad;
  bad.file = "runs.csv";
  bad.line = 3;
  bad.run_id = "b";
  bad.status = "error: runs.csv:3: tp: 3: must divide the heads";
  bad.error_column = "tp";
  const std::vector<sim::ValidationRow> rows{ok, bad};
  const sim::ValidationSummary s = sim::summarize(rows);
  const nlohmann::json j =
      report::validate_document({"runs.csv", "gone.csv"}, {{"gone.csv", 4, "gone.csv: no such file"}}, rows, s);
  CHECK(j["command"] == "validate");
  CHECK(j["files"].size() == 2);
  REQUIRE(j["file_errors"].size() == 1);
  CHECK(j["file_errors"][0]["exit_code"] == 4);
  REQUIRE(j["rows"].size() == 2);
  CHECK(j["rows"][0]["predicted"].get<double>() == doctest::Approx(2.5));
  CHECK(j["rows"][0]["error_pct"].get<double>() == doctest::Approx(25));
  CHECK_FALSE(j["rows"][0].contains("error_column"));
  CHECK_FALSE(j["rows"][1].contains("predicted"));
  CHECK(j["rows"][1]["error_column"] == "tp");
  // One predicted row of two: its error is the summary's, and it lies in its band [2, 3].
  CHECK(j["summary"]["overall"]["rows"] == 2);
  CHECK(j["summary"]["overall"]["count"] == 1);
  CHECK(j["summary"]["overall"]["errors"] == 1);
  CHECK(j["summary"]["overall"]["median_abs_pct"].get<double>() == doctest::Approx(25));
  CHECK(j["summary"]["overall"]["in_band_fraction"].get<double>() == doctest::Approx(1.0));
  CHECK(j["summary"].contains("by_workload"));
  CHECK_FALSE(j.contains("honest_loso"));
  // Under --loso the refits go with the document: a constant fitted on 120 rows, 24 us on every source, 22-26 us
  // without one.
  sim::ConstantRefit refit;
  refit.key = "host_dispatch_us";
  refit.rows = 120;
  refit.all_sources = 24;
  refit.low = 22;
  refit.high = 26;
  refit.sources_moved = 2;
  refit.sources_kept = 1;
  const std::vector<sim::ConstantRefit> refits{refit};
  const nlohmann::json l = report::validate_document({"runs.csv"}, {}, rows, s, &refits);
  REQUIRE(l["honest_loso"]["refits"].size() == 1);
  CHECK(l["honest_loso"]["refits"][0]["key"] == "host_dispatch_us");
  CHECK(l["honest_loso"]["refits"][0]["rows"] == 120);
  CHECK(l["honest_loso"]["refits"][0]["low"].get<double>() == doctest::Approx(22));
}

TEST_CASE("search document: ranks, the fast estimate, no full figures where the simulator did not run") {
  sim::SearchProblem p;
  p.systems.resize(2);
  p.systems[0].name = "a100";
  p.systems[1].name = "h100";
  sim::SearchEntry e;
  e.index = 17;
  e.system = 1;
  e.run.par.gpus = 8;
  e.run.par.tp = 8;
  e.run.par.dp = 1;
  e.fast.step_time_s = 0.5;
  e.fast.tokens_per_s = 1000;
  e.gpu_bytes = 3e9;
  e.score = 1000;
  const nlohmann::json ranked = report::search_entry_json(p, e, 2);
  CHECK(ranked["rank"] == 2);
  CHECK(ranked["index"] == 17);
  CHECK(ranked["system"] == "h100");
  CHECK(ranked["config"]["tp"] == 8);
  CHECK(ranked["fast"]["step_time_s"]["value"].get<double>() == doctest::Approx(0.5));
  CHECK(ranked["fast"]["step_time_s"]["unit"] == "s");
  CHECK_FALSE(ranked.contains("full"));
  CHECK(ranked["run_summary"].get<std::string>().starts_with("8 GPUs (tp 8, pp 1, dp 1)"));
  // A Pareto point has no rank.
  CHECK_FALSE(report::search_entry_json(p, e, 0).contains("rank"));
  CHECK(report::system_names(p) == std::vector<std::string>{"a100", "h100"});
  CHECK(report::status_name(sim::SearchStatus::EmptySpace) == "empty");
  CHECK(report::status_name(sim::SearchStatus::Interrupted) == "interrupted");
}

TEST_CASE("search document: pruning reasons most frequent first, each with its count and an example") {
  sim::PruneTally t;
  t.add("tp does not divide the attention heads", 1, "tp 3 does not divide the 32 attention heads", 2);
  t.add("does not fit", 2, "needs 90 GiB of 80", 5);
  const nlohmann::json a = report::pruned_json(t);
  REQUIRE(a.size() == 2);
  CHECK(a[0]["reason"] == "does not fit");
  CHECK(a[0]["count"] == 5);
  CHECK(a[0]["example"] == "needs 90 GiB of 80");
  CHECK(a[1]["count"] == 2);
}

TEST_CASE("verdicts: the sentence each command leads with, from the memory and the problems") {
  constexpr double GiB = 1024.0 * 1024.0 * 1024.0;
  CHECK(report::gib(1.5 * GiB) == "1.50");
  CHECK(report::infeasible_verdict({}).text == "infeasible");
  const report::Verdict three = report::infeasible_verdict({"tp 3 does not divide 32 heads", "b", "c"});
  CHECK_FALSE(three.ok);
  CHECK(three.text == "infeasible: tp 3 does not divide 32 heads (and 2 more)");
  sim::MemoryResult m;
  m.gpu_bytes = 60 * GiB;
  m.gpu_capacity_bytes = 80 * GiB;
  m.host_capacity_bytes = 100 * GiB;
  m.peak_stage = 1;
  CHECK(report::memory_verdict(m).text == "memory: fits, 60.00 of 80.00 GiB per GPU (stage 1)");
  CHECK(report::memory_result_verdict(m).text == "result: fits (20.00 GiB headroom per GPU)");
  // 20 GiB over on the GPU and 28 GiB short in host memory: both said, GPU first.
  m.gpu_bytes = 100 * GiB;
  m.host_bytes = 128 * GiB;
  const report::Verdict v = report::memory_result_verdict(m);
  CHECK_FALSE(v.ok);
  CHECK(v.text == "result: does not fit by 20.00 GiB per GPU; host memory short by 28.00 GiB per node");
  CHECK(report::memory_verdict(m).text.starts_with("memory: DOES NOT FIT, 100.00 of 80.00 GiB per GPU"));
}

TEST_CASE("serve verdict: served and rejected requests, then the p99s against the SLOs given") {
  sim::ServingResult r;
  r.completed = 98;
  r.rejected = 2;
  r.ttft.p99 = 0.25;
  r.tpot.p99 = 0.02;
  report::ServeDescription d;
  CHECK(report::serve_verdict(d, r).text ==
        "served 98 of 100 requests (2 longer than the context served); p99 TTFT 250.0 ms, p99 TPOT 20.0 ms");
  CHECK_FALSE(report::serve_verdict(d, r).ok);
  // With SLOs: p99 TTFT 250 ms breaks the 200 ms bound; the TPOT bound holds; 90 % meet both.
  r.rejected = 0;
  r.slo_given = true;
  r.slo_fraction = 0.9;
  d.slo_ttft_ms = 200;
  d.slo_tpot_ms = 30;
  CHECK(report::slo_text(d) == "TTFT <= 200 ms and TPOT <= 30 ms");
  const report::Verdict v = report::serve_verdict(d, r);
  CHECK_FALSE(v.ok);
  CHECK(v.text ==
        "served 98 of 98 requests; p99 TTFT 250.0 ms, p99 TPOT 20.0 ms: OUTSIDE TTFT <= 200 ms and TPOT <= 30 ms "
        "(90.0% of requests meet them)");
  d.slo_ttft_ms = 300;
  CHECK(report::serve_verdict(d, r).ok);
}

TEST_CASE("plan verdict: GPUs and nodes when met, the fastest configuration's time when not") {
  sim::SearchProblem p;
  p.systems.resize(1);
  p.systems[0].name = "h100";
  p.systems[0].node.gpus_per_node = 8;
  p.train_tokens = 1e9;
  p.space.max_gpus = 16;
  sim::SearchEntry e;
  e.run.par.gpus = 16;
  e.fast.step_time_s = 2;
  e.fast.tokens_per_step = 1e6;
  e.fast.tokens_per_s = 5e5;
  // 1e9 tokens at 1e6 per step: 1000 steps of 2 s.
  CHECK(report::search_row(p, e).time == doctest::Approx(2000));
  CHECK(report::search_row(p, e).per_gpu == doctest::Approx(5e5 / 16));
  CHECK(report::duration_text(2000) == "2000.00 s");
  CHECK(report::duration_text(3 * 86400) == "3.0 days");
  sim::PlanOutcome o;
  CHECK(report::plan_verdict(p, o, nullptr).text == "answer: no configuration fits and runs (see what was pruned)");
  CHECK(report::plan_verdict(p, o, &e).text ==
        "answer: the deadline cannot be met with at most 16 GPUs; the fastest configuration found needs 2000.00 s");
  o.met = true;
  o.gpus = 12;
  const report::Verdict v = report::plan_verdict(p, o, &e);
  CHECK(v.ok);
  CHECK(v.text == "answer: 12 GPUs of h100 (2 nodes of 8)");
}

TEST_CASE("plan serve verdict: the cheapest candidate in words, or that none meets the SLOs") {
  sim::ServePlan plan;
  CHECK(report::serve_plan_verdict(plan, 16).text == "no candidate meets the SLOs within 16 GPUs");
  sim::ServePlanCandidate k;
  k.system = "h100";
  k.engine = llmsim::sim::Framework::Vllm;
  k.feasible = true;
  k.tp = 2;
  k.decode_tp = 1;
  k.prefill_replicas = 1;
  k.decode_replicas = 2;
  k.gpus = 4;
  k.ttft_p99_s = 0.1234;
  k.tpot_p99_s = 0.0157;
  k.output_tokens_per_s = 1500;
  k.latency_band_low = 0.9;
  k.latency_band_high = 1.2;
  plan.candidates.push_back(k);
  CHECK(report::serve_layout(k) == "1P+2D");
  CHECK(report::p99_band(0.1, k).high == doctest::Approx(0.12));
  const report::Verdict v = report::serve_plan_verdict(plan, 16);
  CHECK(v.ok);
  CHECK(v.text ==
        "answer: 4 GPUs of h100: 1 prefill replica of TP2 + 2 decode replicas of TP1 on vllm; p99 TTFT 123 ms, p99 "
        "TPOT 15.7 ms, 1500 output tokens/s");
}

TEST_CASE("preset documents: a shipped model and system as resolved, the preset lists and the framework names") {
  const std::string data = LLMSIM_DATA_DIR;
  const auto m = llmsim::model::resolve_model("llama2-7b", data);
  const nlohmann::json md = report::model_document(m);
  CHECK(md["command"] == "show model");
  CHECK(md["norm"] == "rmsnorm");
  CHECK(md["mlp"] == "gated (3 matrices)");
  CHECK(md["positions"] == "rope");
  // K and V of 32 layers x 4096 at 2 bytes: 2 x 32 x 4096 x 2 = 524,288 B per token.
  CHECK(md["kv_bytes_per_token_16bit"].get<double>() == doctest::Approx(524288));
  CHECK(report::model_kv_bytes_per_token(m, 1.0) == doctest::Approx(262144));
  const auto s = llmsim::hardware::resolve_system("a800-nvlink", data);
  const nlohmann::json sd = report::system_document(s);
  CHECK(sd["command"] == "show system");
  CHECK(sd["gpu"]["sm_count"] == 108);
  CHECK(sd["efficiency"].contains("gemm"));
  const nlohmann::json systems = report::preset_list_document("systems", data);
  CHECK(systems["command"] == "list systems");
  bool listed = false;
  for (const auto& r : systems["systems"]) listed = listed || r["name"] == "a800-nvlink";
  CHECK(listed);
  const nlohmann::json fw = report::frameworks_document();
  CHECK(fw["frameworks"].size() > 10);
  CHECK(report::framework_profile_text(std::nullopt) == "-");
}
