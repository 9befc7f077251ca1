// Validation against measured runs (sim/validate/validation.h): statuses, the error formula, feature derivation
// and the summary statistics.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "llmsim/hardware/system_toml.h"
#include "llmsim/memory/memory_model.h"
#include "llmsim/search/recipe_fill.h"
#include "llmsim/train/train_sim.h"
#include "llmsim/validate/honest_loso.h"
#include "llmsim/validate/measured_runs.h"
#include "llmsim/validate/regime_bands.h"
#include "llmsim/validate/validation.h"
#include "test_util.h"

namespace llmsim {
namespace {

const std::string kSmall = LLMSIM_TEST_DATA_DIR "/runs/validate_small.csv";

std::vector<sim::ValidationRow> predict_small() {
  return sim::predict_rows(sim::load_measured_runs(kSmall, LLMSIM_DATA_DIR), LLMSIM_DATA_DIR);
}

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

sim::ValidationRow made(const std::string& id, const std::string& workload, const std::string& metric, double err,
                        std::vector<std::string> features = {}, const std::string& status = sim::kValidationOk) {
  sim::ValidationRow r;
  r.run_id = id;
  r.workload = workload;
  r.metric = metric;
  r.system = "a800-nvlink";
  r.error_pct = err;
  r.status = status;
  r.features = std::move(features);
  return r;
}

const sim::GroupStats& group(const sim::ValidationSummary& s, const std::string& by, const std::string& key) {
  for (const auto& g : s.groupings)
    if (g.by == by)
      for (const auto& x : g.groups)
        if (x.key == key) return x;
  throw std::runtime_error("no group " + by + "=" + key);
}

}  // namespace

TEST_SUITE("validation") {
  TEST_CASE("small file: statuses, predictions and the error formula") {
    const auto rows = predict_small();
    REQUIRE(rows.size() == 6);

    const auto& tput = rows[0];
    CHECK(tput.run_id == "train-7b-tp2");
    CHECK(tput.line == 2);
    CHECK(tput.workload == "pretrain");
    CHECK(tput.system == "a800-nvlink");
    CHECK(tput.framework == "megatron-lm");
    REQUIRE(tput.ok());
    CHECK(tput.predicted > 0);
    CHECK(tput.low <= tput.predicted);
    CHECK(tput.predicted <= tput.high);
    CHECK(tput.error_pct == doctest::Approx((tput.predicted - 3000.0) / 3000.0 * 100.0));
    CHECK(tput.note.empty());  // llama2-7b at tp 2, ZeRO-1, micro-batch 1 fits an 80 GiB A800

    const auto& fits = rows[1];
    REQUIRE(fits.ok());
    CHECK(fits.metric == "fits");
    CHECK(fits.predicted == 1.0);
    CHECK(fits.low == 1.0);
    CHECK(fits.high == 1.0);
    CHECK(fits.error_pct == 0.0);

    // The notes say the source counts recomputation: hardware TFLOP/s, above the model TFLOP/s under
    // full recomputation.
    const auto& tflops = rows[2];
    REQUIRE(tflops.ok());
    CHECK(tflops.predicted > 0);
    CHECK(tflops.note.find("counts recomputation") != std::string::npos);
    CHECK(tflops.error_pct == doctest::Approx((tflops.predicted - 150.0) / 150.0 * 100.0));

    // A fixed-batch inference row goes through the static-batch simulator: one 128-token prefill.
    const auto& ttft = rows[3];
    REQUIRE(ttft.ok());
    CHECK(ttft.predicted > 1.0);  // ms: at least the ~13 GB of weights read once
    CHECK(ttft.predicted < 100.0);
    CHECK(ttft.error_pct == doctest::Approx((ttft.predicted - 20.0) / 20.0 * 100.0));

    // A serving row: a closed loop of 8 clients through the vllm engine profile.
    const auto& serving = rows[5];
    REQUIRE(serving.ok());
    CHECK(serving.predicted > 1.0);
    CHECK(serving.predicted < 1000.0);

    const auto& tp3 = rows[4];
    CHECK_FALSE(tp3.ok());
    CHECK(tp3.status.starts_with("unsupported: "));
    CHECK(tp3.status.find("tp 3 does not divide the 32 attention heads") != std::string::npos);
  }

  TEST_CASE("recomputation FLOPs rule reads the notes case-insensitively") {
    CHECK(sim::notes_count_recompute_flops("FLOPs counted with paper Eq.3 = INCLUDES the activation-recomputation"));
    CHECK(sim::notes_count_recompute_flops("FLOP counting as in the paper (Eq.3 style)"));
    CHECK(sim::notes_count_recompute_flops("reported as hardware FLOPs"));
    CHECK_FALSE(sim::notes_count_recompute_flops("MFU 41.5% as published; HFU 43.7%"));
    CHECK_FALSE(sim::notes_count_recompute_flops(""));
    // The development files' other phrasings (InternLM, xtuner, ColossalAI), and their negations.
    CHECK(sim::notes_count_recompute_flops("with activation checkpointing ... i.e. recompute FLOPs ARE counted"));
    CHECK(sim::notes_count_recompute_flops("megatron-style formula including the recompute forward (factor 4)"));
    CHECK(sim::notes_count_recompute_flops("2*params*tokens*(3+1 with grad ckpt) -> includes recompute"));
    CHECK(sim::notes_count_recompute_flops("FLOPs counted with paper Eq.3 = includes recomputation"));
    CHECK_FALSE(
        sim::notes_count_recompute_flops("TFLOP/s per GPU = Megatron formula x 3/4 (model flops, no recompute)"));
    CHECK_FALSE(sim::notes_count_recompute_flops("model-flops counting, so recompute would not be credited"));
    CHECK_FALSE(sim::notes_count_recompute_flops("a model-FLOPs count, not including recompute"));
    CHECK_FALSE(sim::notes_count_recompute_flops("recomputation FLOPs are not counted"));
  }

  TEST_CASE("a source's formula that halves causal attention is read from the notes") {
    CHECK(sim::notes_halve_causal_attention(
        "formula including the recompute forward (factor 4), causal attention halved"));
    CHECK_FALSE(sim::notes_halve_causal_attention("model flops, causal attention not halved"));
    CHECK_FALSE(sim::notes_halve_causal_attention("attention not halved for causal"));
  }

  TEST_CASE("features come from the run spec") {
    sim::RunSpec run;
    run.workload = sim::Workload::Pretrain;
    run.par.gpus = 16;
    run.par.tp = 2;
    run.par.pp = 2;
    run.par.vp = 2;
    run.par.sequence_parallel = true;
    run.train.zero_stage = 1;
    run.train.recompute = sim::Recompute::Full;
    run.train.flash_attn = true;
    const auto f = sim::run_features(run);
    CHECK(f == std::vector<std::string>{"tp", "pp", "vp", "dp", "sp", "zero1", "recompute-full", "flash"});

    sim::RunSpec single;
    single.train.flash_attn = false;
    CHECK(sim::run_features(single).empty());

    sim::RunSpec lora;
    lora.workload = sim::Workload::Finetune;
    lora.train.finetune = sim::FinetuneKind::Qlora;
    lora.train.offload = sim::Offload::OptimizerParams;
    lora.train.zero_stage = 3;
    lora.train.flash_attn = false;
    CHECK(sim::run_features(lora) == std::vector<std::string>{"zero3", "offload", "offload-params", "qlora"});

    sim::RunSpec inf;
    inf.workload = sim::Workload::Inference;
    inf.par.gpus = 4;
    inf.par.tp = 4;
    inf.infer.weight_quant = model::WeightQuant::Int4;
    inf.infer.kv_dtype = DType::FP8;
    CHECK(sim::run_features(inf) == std::vector<std::string>{"tp", "quant-int4", "kv-fp8"});

    const auto rows = predict_small();
    CHECK(has(rows[0].features, "tp"));
    CHECK(has(rows[0].features, "sp"));
    CHECK(has(rows[0].features, "zero1"));
    CHECK(has(rows[0].features, "recompute-selective"));
    CHECK(has(rows[0].features, "flash"));
    CHECK_FALSE(has(rows[0].features, "pp"));
  }

  TEST_CASE("median") {
    CHECK(sim::median({}) == 0.0);
    CHECK(sim::median({3.0}) == 3.0);
    CHECK(sim::median({5.0, 1.0, 3.0}) == 3.0);
    CHECK(sim::median({4.0, 1.0, 3.0, 2.0}) == 2.5);
  }

  TEST_CASE("summary: the share of rows whose measurement lies in the printed interval") {
    const auto banded = [](const std::string& id, double measured, double low, double high) {
      sim::ValidationRow r = made(id, "pretrain", "step_time_s", 10.0);
      r.measured = measured;
      r.predicted = (low + high) / 2;
      r.low = low;
      r.high = high;
      return r;
    };
    std::vector<sim::ValidationRow> rows = {banded("in", 1.0, 0.9, 1.2), banded("edge", 1.2, 0.9, 1.2),
                                            banded("out", 2.0, 0.9, 1.2), banded("exact", 5.0, 5.0, 5.0)};
    rows.push_back(made("fits", "pretrain", "fits", 0.0));  // fits rows have no interval: not counted
    const auto s = sim::summarize(rows);
    CHECK(s.overall.count == 4);
    CHECK(s.overall.in_band == 3);  // in, edge, exact; not out
    CHECK(s.overall.in_band_fraction() == doctest::Approx(0.75));
    CHECK(sim::GroupStats{}.in_band_fraction() == 0);
  }

  TEST_CASE("leave-one-source-out bands come from the other sources' rows of the regime") {
    // Source A's rows are predicted exactly (ratio 1), source B's 20 % high (measured / predicted = 1/1.2),
    // source C's one row 2x low. min_rows 2 so that the (workload, profile, metric) regime can hold.
    const auto row = [](const std::string& id, const std::string& source, double measured, double predicted) {
      sim::ValidationRow r = made(id, "pretrain", "step_time_s", 0.0);
      r.source = source;
      r.framework = "megatron";
      r.measured = measured;
      r.predicted = predicted;
      r.low = r.high = predicted;
      return r;
    };
    std::vector<sim::ValidationRow> rows = {row("a1", "A", 1.0, 1.0), row("a2", "A", 2.0, 2.0),
                                            row("b1", "B", 1.0, 1.2), row("b2", "B", 2.0, 2.4),
                                            row("c1", "C", 2.0, 1.0)};
    rows.push_back(made("f", "pretrain", "fits", 0.0));  // no band for fits rows
    sim::apply_loso_intervals(
        rows, sim::LosoOptions{.low_quantile = 0.0, .high_quantile = 1.0, .min_rows = 2, .min_sources = 1});
    // a1's band comes from B and C only: ratios 1/1.2, 1/1.2, 2 -> [0.833, 2] x predicted 1.0.
    CHECK(rows[0].low == doctest::Approx(1.0 / 1.2));
    CHECK(rows[0].high == doctest::Approx(2.0));
    CHECK(rows[0].note.find("4 rows") == std::string::npos);
    CHECK(rows[0].note.find("3 rows of 2 other sources (pretrain / megatron / step_time_s)") != std::string::npos);
    // c1's band from A and B: ratios 1, 1, 1/1.2, 1/1.2 -> [0.833, 1] x 1.0; its measurement 2 lies outside.
    CHECK(rows[4].low == doctest::Approx(1.0 / 1.2));
    CHECK(rows[4].high == doctest::Approx(1.0));
    CHECK(rows[4].predicted == 1.0);  // the prediction stays
    CHECK(rows[5].note.empty());
    const auto s = sim::summarize(rows);
    // B's rows: from A and C, ratios 1, 1, 2 -> [1, 2] x 1.2 = [1.2, 2.4] for b1, whose measurement 1.0 lies
    // below; likewise b2. Only A's rows are covered.
    CHECK(s.overall.in_band == 2);
    // With more rows required than any regime holds, the widest level (every time-like row) is used.
    std::vector<sim::ValidationRow> few = {row("a1", "A", 1.0, 1.0), row("b1", "B", 1.0, 1.2)};
    sim::apply_loso_intervals(few, sim::LosoOptions{.min_rows = 5});
    CHECK(few[0].note.find("1 rows of 1 other sources (time)") != std::string::npos);
    // Enough rows but too few sources in the narrow regime: the wider one (the metric across profiles), which
    // holds a third source.
    std::vector<sim::ValidationRow> wide = {row("a1", "A", 1.0, 1.0), row("b1", "B", 1.0, 1.2),
                                            row("c1", "C", 2.0, 1.0), row("d1", "D", 1.0, 1.0)};
    wide[3].framework = "fsdp";  // same workload and metric, another profile
    sim::apply_loso_intervals(wide, sim::LosoOptions{.min_rows = 2, .min_sources = 3});
    CHECK(wide[0].note.find("3 rows of 3 other sources (pretrain / step_time_s)") != std::string::npos);
    sim::apply_loso_intervals(wide, sim::LosoOptions{.min_rows = 2, .min_sources = 2});
    CHECK(wide[0].note.find("(pretrain / megatron / step_time_s)") != std::string::npos);
  }

  TEST_CASE("a weighted quantile by hand; honest bands weigh each source alike and widen for few sources") {
    // Values at the middle of their weights: 1 at 0.125, 2 at 0.5, 3 at 0.875 (weights 1, 2, 1 of 4).
    CHECK(sim::weighted_quantile({{2, 2}, {1, 1}, {3, 1}}, 0.5) == doctest::Approx(2));
    CHECK(sim::weighted_quantile({{2, 2}, {1, 1}, {3, 1}}, 0.125) == doctest::Approx(1));
    CHECK(sim::weighted_quantile({{2, 2}, {1, 1}, {3, 1}}, 0.3125) == doctest::Approx(1.5));
    CHECK(sim::weighted_quantile({{2, 2}, {1, 1}, {3, 1}}, 0.05) == doctest::Approx(1));  // clamped
    CHECK(sim::weighted_quantile({{2, 2}, {1, 1}, {3, 1}}, 0.95) == doctest::Approx(3));
    // Source A has nine rows at ratio 1, B one at e (log 1): unweighted, B is a tenth of the sample and pulls
    // the 90th percentile only part of the way (below 1.2); weighted, A and B weigh half each.
    std::string a = "A", b = "B";
    std::vector<sim::BandSample> samples(9, sim::BandSample{1.0, &a});
    samples.push_back(sim::BandSample{std::exp(1.0), &b});
    sim::LosoOptions plain{.low_quantile = 0.1, .high_quantile = 0.9};
    CHECK(sim::band_quantiles(samples, plain).second < 1.2);
    sim::LosoOptions weighed = plain;
    weighed.weigh_sources = true;
    // Log values: A's nine 0s weigh 1/9 each (positions (k/9 + 1/18) / 2, the last 17/36), B's 1 weighs 1
    // (position 3/4). Median: 0 + (1/2 - 17/36) / (3/4 - 17/36) = 0.1; 10th percentile 0; 90th 1 (beyond
    // B's position). Widened by sqrt(1 + 1/2) about the median.
    const auto [lo, hi] = sim::band_quantiles(samples, weighed);
    CHECK(std::log(lo) == doctest::Approx(0.1 - 0.1 * std::sqrt(1.5)));
    CHECK(std::log(hi) == doctest::Approx(0.1 + 0.9 * std::sqrt(1.5)));
  }

  TEST_CASE("honest LOSO of a lone source: nothing else to refit on, so the profile's constants stay") {
    // validate_small.csv cites one document: leaving it out leaves no rows for any fit, and a fit over no rows
    // (the grid's first value, 0 us) must not stand in for the profile's values.
    const auto runs = sim::load_measured_runs(kSmall, LLMSIM_DATA_DIR, false);
    sim::HonestLosoOptions o;
    o.scratch_dir = (std::filesystem::temp_directory_path() / "llmsim-test-honest-loso").string();
    const sim::HonestLosoResult h = sim::honest_loso(runs, LLMSIM_DATA_DIR, o);
    std::filesystem::remove_all(o.scratch_dir);
    REQUIRE(h.refits.size() == sim::refitted_constants().size());
    for (const auto& r : h.refits) {
      CAPTURE(r.key);
      CHECK(r.sources_moved == 0);
      CHECK(r.sources_kept == 1);
    }
    const auto plain = sim::predict_rows(runs, LLMSIM_DATA_DIR);
    REQUIRE(plain.size() == h.rows.size());
    for (std::size_t i = 0; i < plain.size(); ++i) {
      CAPTURE(plain[i].run_id);
      CHECK(h.rows[i].status == plain[i].status);
      CHECK(h.rows[i].predicted == plain[i].predicted);
    }
  }

  TEST_CASE("rows group by the document they cite") {
    const auto rows = predict_small();
    const auto s = sim::summarize(rows);
    CHECK(group(s, "source", "hand-made").rows == static_cast<std::size_t>(rows.size()));
  }

  TEST_CASE("summary: median, MAPE, worst rows, fits agreement and unsupported counts") {
    const std::vector<sim::ValidationRow> rows = {
        made("a", "pretrain", "tokens_per_s_per_gpu", 10.0, {"tp"}),
        made("b", "pretrain", "tokens_per_s_per_gpu", -20.0, {"tp", "pp"}),
        made("c", "pretrain", "step_time_s", 30.0),
        made("d", "finetune", "tokens_per_s_per_gpu", -40.0, {"lora"}),
        made("e", "pretrain", "fits", 0.0),
        made("f", "pretrain", "fits", 100.0),
        made("g", "inference", "ttft_ms", 0.0, {"tp"}, "unsupported: not yet"),
    };
    const auto s = sim::summarize(rows);

    // Overall: |e| = 10, 20, 30, 40 -> median 25, MAPE 25, mean signed (10-20+30-40)/4 = -5.
    CHECK(s.overall.key == "all");
    CHECK(s.overall.rows == 7);
    CHECK(s.overall.count == 4);
    CHECK(s.overall.median_abs_pct == doctest::Approx(25.0));
    CHECK(s.overall.mape == doctest::Approx(25.0));
    CHECK(s.overall.mean_pct == doctest::Approx(-5.0));
    CHECK(s.overall.fits_agree == 1);
    CHECK(s.overall.fits_total == 2);
    CHECK(s.overall.unsupported == 1);
    REQUIRE(s.overall.worst.size() == 4);
    CHECK(s.overall.worst[0].run_id == "d");
    CHECK(s.overall.worst[0].error_pct == -40.0);
    CHECK(s.overall.worst[1].run_id == "c");
    CHECK(s.overall.worst[3].run_id == "a");

    REQUIRE(s.groupings.size() == 6);
    CHECK(s.groupings[0].by == "workload");
    CHECK(s.groupings[1].by == "metric");
    CHECK(s.groupings[2].by == "system");
    CHECK(s.groupings[3].by == "source");
    CHECK(s.groupings[4].by == "framework");
    CHECK(s.groupings[5].by == "feature");
    CHECK(group(s, "source", "-").rows == 7);     // made() rows cite no source
    CHECK(group(s, "framework", "-").rows == 7);  // nor a framework

    // pretrain: 10, 20, 30 -> median 20, MAPE 20; two fits rows.
    const auto& pre = group(s, "workload", "pretrain");
    CHECK(pre.rows == 5);
    CHECK(pre.count == 3);
    CHECK(pre.median_abs_pct == doctest::Approx(20.0));
    CHECK(pre.mape == doctest::Approx(20.0));
    CHECK(pre.fits_total == 2);
    const auto& inf = group(s, "workload", "inference");
    CHECK(inf.count == 0);
    CHECK(inf.unsupported == 1);
    CHECK(inf.mape == 0.0);

    // tokens_per_s_per_gpu: 10, 20, 40 -> median 20, MAPE 70/3.
    const auto& tok = group(s, "metric", "tokens_per_s_per_gpu");
    CHECK(tok.count == 3);
    CHECK(tok.median_abs_pct == doctest::Approx(20.0));
    CHECK(tok.mape == doctest::Approx(70.0 / 3.0));
    CHECK(group(s, "metric", "fits").count == 0);
    CHECK(group(s, "metric", "fits").fits_agree == 1);

    // A row counts in each of its features; rows without any are "none".
    const auto& tp = group(s, "feature", "tp");
    CHECK(tp.rows == 3);  // a, b, g
    CHECK(tp.count == 2);
    CHECK(tp.median_abs_pct == doctest::Approx(15.0));
    CHECK(group(s, "feature", "pp").count == 1);
    CHECK(group(s, "feature", "none").rows == 3);  // c, e, f
    CHECK(group(s, "system", "a800-nvlink").rows == 7);
  }

  TEST_CASE("worst rows keep the top five") {
    std::vector<sim::ValidationRow> rows;
    for (int i = 1; i <= 8; ++i) rows.push_back(made("r" + std::to_string(i), "pretrain", "mfu", 1.0 * i));
    const auto s = sim::summarize(rows);
    REQUIRE(s.overall.worst.size() == 5);
    CHECK(s.overall.worst.front().run_id == "r8");
    CHECK(s.overall.worst.back().run_id == "r4");
  }

  TEST_CASE("an error while predicting a row is a status, not an exception") {
    auto runs = sim::load_measured_runs(kSmall, LLMSIM_DATA_DIR);
    sim::MeasuredRun r = runs.front();
    r.system = "/nonexistent/system.toml";
    const auto row = sim::predict_row(r, LLMSIM_DATA_DIR);
    CHECK_FALSE(row.ok());
    CHECK(row.status.starts_with("unsupported: "));
    CHECK(row.status.find("/nonexistent/system.toml") != std::string::npos);
  }

  TEST_CASE("an allocated-only peak (source fact) is compared without the CUDA context and allocator reserve") {
    const std::string csv = LLMSIM_TEST_DATA_DIR "/runs/facts/facts_peak_mem.csv";
    const auto with = sim::predict_rows(sim::load_measured_runs(csv, LLMSIM_DATA_DIR), LLMSIM_DATA_DIR);
    const auto without = sim::predict_rows(sim::load_measured_runs(csv, LLMSIM_DATA_DIR, false), LLMSIM_DATA_DIR);
    REQUIRE(with.size() == 2);
    REQUIRE(without.size() == 2);
    REQUIRE(with[0].status == sim::kValidationOk);
    // dgx-a100-80gb: 1 GiB of context plus an allocator reserve of 5 % of the tensors (its runtime section):
    // the allocated peak is the tensors, so device = allocated x 1.05 + 1 GiB.
    CHECK(without[0].predicted == doctest::Approx(with[0].predicted * 1.05 + 1.0).epsilon(1e-6));
    CHECK(has(with[0].defaults, "memory_measure=allocated (source fact, facts_peak_mem.facts.toml:3)"));
    // fits compares against device memory either way, and its row does not mention the fact.
    CHECK(with[1].error_pct == without[1].error_pct);
    CHECK_FALSE(has(with[1].defaults, "memory_measure=allocated (source fact, facts_peak_mem.facts.toml:3)"));
  }

  TEST_CASE("memory_measure: device counts everything, reserved drops the CUDA context, allocated the reserve too") {
    const auto rows = sim::predict_rows(
        sim::load_measured_runs(LLMSIM_TEST_DATA_DIR "/runs/memory_measure.csv", LLMSIM_DATA_DIR), LLMSIM_DATA_DIR);
    REQUIRE(rows.size() == 4);
    for (const auto& r : rows) REQUIRE_MESSAGE(r.ok(), r.status);
    // dgx-a100-80gb's runtime section: a 1 GiB CUDA context and an allocator reserve of 5 % of the tensors
    // (reserved = allocated x 1.05).
    CHECK(rows[0].predicted - rows[1].predicted == doctest::Approx(1.0).epsilon(1e-9));
    CHECK(rows[1].predicted == doctest::Approx(rows[2].predicted * 1.05).epsilon(1e-9));
    CHECK(rows[3].predicted == rows[0].predicted);  // not stated = device
    CHECK(has(rows[3].defaults, "memory_measure=device (not stated)"));
  }

  TEST_CASE("a measured run ran: unstated axes take the fastest feasible setting when the recipe's does not fit") {
    const auto runs = sim::load_measured_runs(LLMSIM_TEST_DATA_DIR "/runs/recipe_fill.csv", LLMSIM_DATA_DIR);
    REQUIRE(runs.size() == 4);
    const auto rows = sim::predict_rows(runs, LLMSIM_DATA_DIR);
    for (const auto& r : rows) REQUIRE_MESSAGE(r.ok(), r.run_id << ": " << r.status);
    const auto sys = hardware::resolve_system("dgx-a100-80gb", LLMSIM_DATA_DIR);
    // llama2-13b, 8 x A100-80GB, ZeRO-0 without recomputation: ~354 GiB per GPU; the recipe cannot run.
    CHECK_FALSE(sim::evaluate_memory(runs[0].model, sys, runs[0].run).fits());
    const auto filled = std::find_if(rows[0].defaults.begin(), rows[0].defaults.end(),
                                     [](const std::string& d) { return d.starts_with("best feasible: "); });
    REQUIRE(filled != rows[0].defaults.end());
    CHECK(filled->find("zero_stage=") != std::string::npos);
    CHECK(rows[0].note.find("predicted OOM") == std::string::npos);
    const auto fill = sim::best_feasible_fill(runs[0].model, sys, runs[0].run, runs[0].free_axes);
    REQUIRE(fill.has_value());
    CHECK(sim::evaluate_memory(runs[0].model, sys, fill->run).fits());
    // The fastest: at least as fast as a setting that surely fits (ZeRO-3, full recomputation, micro-batch 1).
    sim::RunSpec safe = runs[0].run;
    safe.train.zero_stage = 3;
    safe.train.recompute = sim::Recompute::Full;
    safe.train.micro_batch = 1;
    REQUIRE(sim::evaluate_memory(runs[0].model, sys, safe).fits());
    CHECK(rows[0].predicted >= sim::simulate_training(runs[0].model, sys, safe).tokens_per_s_per_gpu.value * 0.999);
    // fits = 0 recorded an out-of-memory run: its recipe stands (and agrees); fits = 1 ran, so it is filled.
    CHECK(rows[1].predicted == 0);
    CHECK(rows[1].error_pct == 0);
    CHECK(rows[2].predicted == 1);
    // Every axis stated: nothing to choose, the prediction says it does not fit.
    CHECK(runs[3].free_axes.empty());
    CHECK(rows[3].note.find("predicted OOM") != std::string::npos);
  }

  TEST_CASE("every published row gets a prediction or a reason, and the summary counts them all") {
    const auto runs = sim::load_measured_runs(LLMSIM_DATA_DIR "/validation/published.csv", LLMSIM_DATA_DIR);
    const auto rows = sim::predict_rows(runs, LLMSIM_DATA_DIR);
    REQUIRE(rows.size() == runs.size());
    std::size_t ok = 0;
    for (const auto& r : rows) {
      CHECK_MESSAGE((r.ok() || r.status.starts_with("unsupported: ")), r.run_id << " " << r.status);
      if (r.ok() && r.metric != "fits") CHECK_MESSAGE(std::isfinite(r.error_pct), r.run_id);
      ok += r.ok() ? 1 : 0;
    }
    const auto s = sim::summarize(rows);
    CHECK(s.overall.rows == rows.size());
    CHECK(s.overall.count + s.overall.fits_total == ok);
    CHECK(s.overall.unsupported == rows.size() - ok);
  }

}  // TEST_SUITE

}  // namespace llmsim

namespace llmsim {

TEST_CASE("a rate's error is a time's inverse: one band of time ratios serves both") {
  CHECK(sim::metric_kind("tokens_per_s") == sim::MetricKind::Rate);
  CHECK(sim::metric_kind("mfu") == sim::MetricKind::Rate);
  CHECK(sim::metric_kind("step_time_s") == sim::MetricKind::Time);
  CHECK(sim::metric_kind("tpot_ms") == sim::MetricKind::Time);
  CHECK(sim::metric_kind("peak_mem_gib") == sim::MetricKind::Memory);
  sim::ValidationRow t = made("t", "pretrain", "step_time_s", 0.0), r = made("r", "pretrain", "tokens_per_s", 0.0);
  t.measured = 2.0;  // took twice the predicted time
  t.predicted = 1.0;
  r.measured = 50.0;  // half the predicted throughput: the same error
  r.predicted = 100.0;
  CHECK(sim::time_ratio(t) == doctest::Approx(2.0));
  CHECK(sim::time_ratio(r) == doctest::Approx(2.0));
  // A band of time ratios [0.5, 2] around a predicted 100 tokens/s: 50 .. 200; around 1 s: 0.5 .. 2 s.
  const auto rate = sim::band_interval("tokens_per_s", 100.0, 0.5, 2.0);
  CHECK(rate.first == doctest::Approx(50.0));
  CHECK(rate.second == doctest::Approx(200.0));
  const auto time = sim::band_interval("step_time_s", 1.0, 0.8, 1.5);
  CHECK(time.first == doctest::Approx(0.8));
  CHECK(time.second == doctest::Approx(1.5));
  CHECK(sim::regime_keys("pretrain", "megatron", "tokens_per_s") ==
        std::vector<std::string>{"pretrain / megatron / tokens_per_s", "pretrain / megatron / time",
                                 "pretrain / tokens_per_s", "pretrain / time", "time"});
  CHECK(sim::regime_keys("inference", "hf", "peak_mem_gib").back() == "memory");
}

TEST_CASE("regime bands drawn from rows, written, read back and looked up narrowest first") {
  // Ten step-time rows of two sources with time ratios 0.5, 0.6, ..., 1.4 and one rate row.
  std::vector<sim::ValidationRow> rows;
  for (int i = 0; i < 10; ++i) {
    sim::ValidationRow r = made("s" + std::to_string(i), "pretrain", "step_time_s", 0.0);
    r.framework = "megatron";
    r.source = i % 2 ? "A" : "B";
    r.predicted = 1.0;
    r.measured = 0.5 + 0.1 * i;
    rows.push_back(r);
  }
  const sim::RegimeBands b = sim::draw_regime_bands(
      rows, sim::LosoOptions{.low_quantile = 0.0, .high_quantile = 1.0, .min_rows = 8, .min_sources = 2}, "test");
  const auto narrow = sim::band_for(b, "pretrain", "megatron", "step_time_s");
  REQUIRE(narrow);
  CHECK(narrow->regime == "pretrain / megatron / step_time_s");
  CHECK(narrow->low == doctest::Approx(0.5));
  CHECK(narrow->high == doctest::Approx(1.4));
  CHECK(narrow->rows == 10);
  CHECK(narrow->sources == 2);
  // A throughput figure of the same regime falls back to the regime's time band.
  const auto rate = sim::band_for(b, "pretrain", "megatron", "tokens_per_s");
  REQUIRE(rate);
  CHECK(rate->regime == "pretrain / megatron / time");
  // Another framework: the metric's band across frameworks, then the workload's; memory: none (no memory rows).
  CHECK(sim::band_for(b, "pretrain", "fsdp", "step_time_s")->regime == "pretrain / step_time_s");
  CHECK(sim::band_for(b, "pretrain", "fsdp", "tokens_per_s")->regime == "pretrain / time");
  CHECK_FALSE(sim::band_for(b, "pretrain", "megatron", "peak_mem_gib"));
  // Round trip through the TOML file.
  const std::string path = (llmsim::test::process_temp_dir() / "bands.toml").string();
  sim::write_regime_bands(path, b);
  const sim::RegimeBands back = sim::load_regime_bands(path);
  REQUIRE(back.bands.size() == b.bands.size());
  CHECK(back.source == "test");
  CHECK(back.residuals == sim::BandResiduals::InSample);
  CHECK(sim::band_for(back, "pretrain", "megatron", "step_time_s")->high == doctest::Approx(1.4));
  // Bands drawn from honest leave-one-source-out residuals say so, and the file keeps it.
  sim::RegimeBands honest = b;
  honest.residuals = sim::BandResiduals::HonestLoso;
  sim::write_regime_bands(path, honest);
  CHECK(sim::load_regime_bands(path).residuals == sim::BandResiduals::HonestLoso);
  // An unknown residuals value is an input error naming the key and the known values.
  const std::string odd = llmsim::test::write_temp("odd-bands.toml", "schema_version = 1\nresiduals = \"loso\"\n");
  const Error r = llmsim::test::error_of([&] { sim::load_regime_bands(odd); });
  CHECK(r.kind() == ErrorKind::Input);
  CHECK(std::string(r.what()).find("odd-bands.toml:2: residuals") != std::string::npos);
  CHECK(std::string(r.what()).find("honest-loso, in-sample") != std::string::npos);
  // A band whose high is below its low is an input error naming the file and the key.
  const std::string bad = llmsim::test::write_temp(
      "bad-bands.toml", "schema_version = 1\n[[band]]\nregime = \"time\"\nlow = 2\nhigh = 1\nrows = 9\nsources = 1\n");
  const Error e = llmsim::test::error_of([&] { sim::load_regime_bands(bad); });
  CHECK(e.kind() == ErrorKind::Input);
  CHECK(std::string(e.what()).find("bad-bands.toml:5: band[0].high") != std::string::npos);
}

}  // namespace llmsim
