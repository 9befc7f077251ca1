// Golden memory figures from the literature, derived by hand in the comments.
#include <doctest/doctest.h>

#include <cmath>

#include "llmsim/core/units.h"
#include "llmsim/model/hf_config.h"
#include "llmsim/run/feasibility.h"
#include "memory/memory_test_util.h"

namespace lt = llmsim::test;
using llmsim::units::GiB;
namespace sim = llmsim::sim;

namespace {

// Korthikanti et al. 2022 Fig. 1 setups: TP8, s=2048, 22B PP1 micro-batch 4; 175B PP8, 530B PP35,
// 1T PP64 micro-batch 1; global batch large enough that every stage has pp micro-batches in flight;
// Megatron framework, no FlashAttention (2022), dropout as Megatron GPT; interleaving per Table 5.
struct Fig1Case {
  const char* name;
  std::int64_t layers, hidden, heads, pp, vp, micro_batch;
  double states_gib, act_tp_gib, act_sp_sel_gib;  // published (read off the plot by the Calculon authors)
};
constexpr Fig1Case kFig1[] = {
    {"22B", 48, 6144, 64, 1, 1, 4, 45.56, 59.25, 9.56},
    {"175B", 96, 12288, 96, 8, 3, 1, 45.56, 66.84, 12.35},
    {"530B", 105, 20480, 128, 35, 3, 1, 31.64, 114.02, 23.08},
    {"1T", 128, 25600, 160, 64, 1, 1, 32.96, 131.25, 26.56},
};

// |actual - published| / published <= tolerance.
bool within(double actual, double published, double tolerance) {
  return std::abs(actual - published) <= tolerance * std::abs(published);
}

sim::RunSpec fig1_run(const Fig1Case& c, bool sp_selective) {
  sim::RunSpec r;
  r.workload = sim::Workload::Pretrain;
  r.par = {.gpus = 8 * c.pp, .tp = 8, .pp = c.pp, .dp = 1, .vp = c.vp, .sequence_parallel = sp_selective};
  r.train.micro_batch = c.micro_batch;
  r.train.global_batch = 64 * c.micro_batch * c.pp;
  r.train.seq_len = 2048;
  r.train.flash_attn = false;
  r.train.recompute = sp_selective ? sim::Recompute::Selective : sim::Recompute::None;
  r.train.framework = sim::Framework::Megatron;
  return r;
}

}  // namespace

TEST_CASE("Korthikanti 2022 Fig. 1: weights + gradients + optimizer within 10%") {
  const auto sys = lt::preset_system("dgx-a100-80gb");
  for (const auto& c : kFig1) {
    CAPTURE(c.name);
    const auto m = lt::gpt(c.layers, c.hidden, c.heads);
    // Fig. 1 plots the transformer layers of a stage: 18 bytes/param (bf16 weight 2 + fp32 grad 4 +
    // fp32 master/m/v 12) over 12*h^2*L/(pp*tp) params. A middle stage has exactly that; the first stage
    // also holds the embedding (for 1T: +216 M params, +3.6 GiB), which llmsim counts there.
    const std::int64_t stage = c.pp > 1 ? 1 : 0;
    const auto r = sim::evaluate_stage_memory(m, sys, fig1_run(c, false), stage);
    REQUIRE(r.valid());
    const double states = lt::item(r, "weights") + lt::item(r, "gradients") + lt::item(r, "optimizer_states");
    CAPTURE(states / GiB);
    CHECK(within(states / GiB, c.states_gib, 0.10));
  }
}

TEST_CASE("Korthikanti 2022 Fig. 1: activations with TP only, and with SP + selective recompute, within 10%") {
  const auto sys = lt::preset_system("dgx-a100-80gb");
  for (const auto& c : kFig1) {
    CAPTURE(c.name);
    const auto m = lt::gpt(c.layers, c.hidden, c.heads);
    // 22B: sbh(10 + 24/8 + 5as/(8h)) = 2048*4*6144*(13 + 13.33) B/layer x 48 layers = 59.24 GiB.
    const auto tp_only = sim::evaluate_memory(m, sys, fig1_run(c, false));
    CHECK(tp_only.peak_stage == 0);
    CHECK(within(lt::item(tp_only, "activations") / GiB, c.act_tp_gib, 0.02));
    // 22B: sbh * 34/8 B/layer x 48 = 9.56 GiB; 175B adds the interleave factor 1 + 7/24.
    const auto sp_sel = sim::evaluate_memory(m, sys, fig1_run(c, true));
    CHECK(within(lt::item(sp_sel, "activations") / GiB, c.act_sp_sel_gib, 0.02));
  }
}

TEST_CASE("Korthikanti Table 2 per layer: exact formulas for the gpt arch") {
  const auto m = lt::gpt(1, 12288, 96);
  const double s = 2048, b = 1, h = 12288, a = 96, t = 8;
  sim::ActivationParams p{.micro_batch = 1, .seq_len = 2048, .tp = 8, .flash_attn = false};
  // No parallelism: sbh(34 + 5as/h).
  sim::ActivationParams p1 = p;
  p1.tp = 1;
  CHECK(sim::stored_layer_bytes(m, p1, 0, sim::Recompute::None) == doctest::Approx(s * b * h * (34 + 5 * a * s / h)));
  // Tensor parallel: sbh(10 + 24/t + 5as/(ht)).
  CHECK(sim::stored_layer_bytes(m, p, 0, sim::Recompute::None) ==
        doctest::Approx(s * b * h * (10 + 24 / t + 5 * a * s / (h * t))));
  // Tensor + sequence parallel: sbh(34/t + 5as/(ht)).
  p.sequence_parallel = true;
  CHECK(sim::stored_layer_bytes(m, p, 0, sim::Recompute::None) ==
        doctest::Approx(s * b * h * (34 / t + 5 * a * s / (h * t))));
  // + selective recomputation: sbh * 34/t.
  CHECK(sim::stored_layer_bytes(m, p, 0, sim::Recompute::Selective) == doctest::Approx(s * b * h * 34 / t));
  // Full recomputation keeps the layer input, 2sbh (split by t with SP).
  CHECK(sim::stored_layer_bytes(m, p, 0, sim::Recompute::Full) == doctest::Approx(2 * s * b * h / t));
}

TEST_CASE("ZeRO (Rajbhandari et al. 2020 Fig. 1): 7.5B params, N_d = 64 -> 120 / 31.4 / 16.6 / 1.9 GB") {
  // Bytes of model states per parameter per GPU under DeepSpeed: (2 + 2 + 12), 4 + 12/64,
  // 2 + 14/64, 16/64; times psi = 7.5e9. Evaluated on a dense model, scaled per parameter.
  const auto sys = lt::preset_system("dgx-a100-80gb");
  const auto m = lt::preset_model("llama2-7b");
  const double expected_GB[] = {120.0, 31.4, 16.6, 1.9};
  for (int stage = 0; stage <= 3; ++stage) {
    CAPTURE(stage);
    sim::RunSpec r;
    r.par = {.gpus = 64, .dp = 64};
    r.train.framework = sim::Framework::DeepSpeed;
    r.train.zero_stage = stage;
    const auto res = sim::evaluate_memory(m, sys, r);
    const double per_param =
        (lt::item(res, "weights") + lt::item(res, "gradients") + lt::item(res, "optimizer_states")) /
        res.params_per_gpu;
    CHECK(within(per_param * 7.5e9 / 1e9, expected_GB[stage], 0.02));
  }
}

TEST_CASE("KV cache per token: llama2-7b 0.5 MiB in fp16, llama2-70b (GQA, 8 KV heads) 0.3125 MiB") {
  const auto sys = lt::preset_system("a800-nvlink");
  sim::RunSpec r;
  r.workload = sim::Workload::Inference;
  r.infer.kv_dtype = llmsim::DType::FP16;
  // 2 (K, V) x 32 layers x 4096 x 2 bytes = 524288 B.
  auto res = sim::evaluate_memory(lt::preset_model("llama2-7b"), sys, r);
  CHECK(res.kv_bytes_per_token == 524288.0);
  // 2 x 80 layers x (8 x 128) x 2 bytes = 327680 B; with TP 8 each GPU keeps one KV head: / 8.
  r.par = {.gpus = 8, .tp = 8};
  res = sim::evaluate_memory(lt::preset_model("llama2-70b"), sys, r);
  CHECK(res.kv_bytes_per_token == 327680.0 / 8);
  r.infer.kv_dtype = llmsim::DType::FP8;
  res = sim::evaluate_memory(lt::preset_model("llama2-70b"), sys, r);
  CHECK(res.kv_bytes_per_token == 327680.0 / 16);
}

TEST_CASE("inference with more TP ranks than KV heads replicates them, in the weights and the KV cache") {
  // Qwen3-30B-A3B: 48 layers, 4 KV heads of 128, hidden 2048. At TP 8 each rank holds one KV head (two
  // ranks per head): KV cache 2 x 1 x 128 x 48 x 2 B = 24,576 B per token, as at TP 4; the K and V
  // projections add half a head beyond the even share per layer: 2 x 128 x 2048 x 0.5 x 48 parameters.
  const auto m = llmsim::model::load_hf_config(std::string(LLMSIM_TEST_DATA_DIR) + "/models/qwen3-30b-a3b/config.json");
  const auto sys = lt::preset_system("a800-nvlink");
  auto run_at = [&](std::int64_t tp) {
    sim::RunSpec r;
    r.workload = sim::Workload::Inference;
    r.infer.framework = sim::Framework::Vllm;
    r.par.gpus = tp;
    r.par.tp = tp;
    return sim::evaluate_memory(m, sys, sim::with_defaults(r));
  };
  const auto r8 = run_at(8), r4 = run_at(4);
  CHECK(r8.problems.empty());
  CHECK(r8.kv_bytes_per_token == doctest::Approx(24576.0));
  CHECK(r4.kv_bytes_per_token == doctest::Approx(24576.0));
  const double even8 = lt::item(r4, "weights") / 2;  // TP 4 splits every head evenly
  // Beyond half of TP 4's: half a K and V head per layer, and half of the router, which every rank holds
  // whole (2048 x 128 experts per layer, 16-bit; model::moe_replicated_params).
  CHECK(lt::item(r8, "weights") - even8 ==
        doctest::Approx(2.0 * 128 * 2048 * 0.5 * 48 * 2 + 2048.0 * 128 * 48 * 2 * 0.5).epsilon(0.02));
  // Training does not replicate (Megatron-LM asserts num_query_groups % tp == 0).
  sim::RunSpec t;
  t.workload = sim::Workload::Pretrain;
  t.par.gpus = 8;
  t.par.tp = 8;
  const auto problems = sim::structural_problems(sim::with_defaults(t), m);
  REQUIRE_FALSE(problems.empty());
  CHECK(problems.front().find("does not divide the 4 KV heads") != std::string::npos);
}
