// Training simulator: golden numbers derived by hand (GEMM time, FLOPs per token, 1F1B bubble, ZeRO-3
// communication volume) and behaviour per technique.
#include <doctest/doctest.h>

#include <cmath>
#include <numeric>
#include <string>

#include "llmsim/cost/compute_cost.h"
#include "llmsim/hardware/attention_support.h"
#include "llmsim/model/hf_config.h"
#include "llmsim/model/operators.h"
#include "llmsim/run/feasibility.h"
#include "llmsim/run/framework_profile.h"
#include "llmsim/train/fast_train.h"
#include "llmsim/train/pipeline_order.h"
#include "llmsim/train/train_sim.h"
#include "memory/memory_test_util.h"
#include "train/train_test_util.h"

using namespace llmsim;
using llmsim::test::preset_model;
using llmsim::test::preset_system;
using llmsim::test::pretrain;
using llmsim::test::share;

namespace {

double total(const std::vector<sim::TimeShare>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0, [](double a, const sim::TimeShare& x) { return a + x.seconds; });
}

bool mentions(const std::vector<std::string>& problems, const std::string& word) {
  for (const auto& p : problems)
    if (p.find(word) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("a single large GEMM takes its FLOPs at the wave-quantised fraction of the bf16 peak") {
  const auto sys = preset_system("a800-nvlink");
  const sim::ComputeCost cc(sys);
  const std::int64_t n = 8192;
  const double flops = 2.0 * n * n * n;
  // 128x128 tiles: 64 x 64 = 4096 tiles over 108 SMs = 38 waves, the last one partly idle.
  const double wave = 4096.0 / (38.0 * 108.0);
  const double kfac = 8192.0 / (8192.0 + 261.0);  // the H200-measured half-efficiency contraction
  const double expected = flops / (312e12 * 0.75 * wave * kfac);
  const auto t = cc.gemm(n, n, n, 1, flops, 3.0 * n * n * 2, DType::BF16);
  CHECK(t.value == doctest::Approx(expected).epsilon(1e-9));
  CHECK(t.low == doctest::Approx(flops / (312e12 * 0.85 * wave * kfac)).epsilon(1e-9));
  CHECK(t.high == doctest::Approx(flops / (312e12 * 0.60 * wave * kfac)).epsilon(1e-9));
  // A skinny decode-like GEMM is bandwidth bound: 1 x 8192 x 8192 reads the 128 MiB of weights after
  // its launch latency (5 us default).
  const double bytes = 8192.0 * 8192.0 * 2 + 2 * 8192.0 * 2;
  const auto skinny = cc.gemm(1, n, n, 1, 2.0 * n * n, bytes, DType::BF16);
  CHECK(skinny.value * 1e6 == doctest::Approx((5e-6 + bytes / (2039e9 * 0.88)) * 1e6).epsilon(1e-9));
}

TEST_CASE("a compute-bound fused attention kernel runs at its generation's fraction of the 16-bit peak") {
  const auto sys = preset_system("a800-nvlink");
  const sim::ComputeCost fa2(sys);
  const sim::ComputeCost fa1(sys, AttentionKernel::Fa1);
  // Causal FlashAttention forward of b=1, 32 heads x 128, s=4096: 4 * 32 * 128 * 4096^2 / 2 FLOPs over
  // q, k, v and o in bf16 (4 * 4096 * 4096 * 2 bytes): compute bound by far.
  const double flops = 4.0 * 32 * 128 * 4096.0 * 4096.0 / 2;
  const double bytes = 4.0 * 4096 * 4096 * 2;
  CHECK(fa2.attention(flops, bytes, DType::BF16).value == doctest::Approx(flops / (312e12 * 0.55)).epsilon(1e-9));
  const auto t1 = fa1.attention(flops, bytes, DType::BF16);
  CHECK(t1.value == doctest::Approx(flops / (312e12 * 0.33)).epsilon(1e-9));
  CHECK(t1.low == doctest::Approx(flops / (312e12 * 0.40)).epsilon(1e-9));
  CHECK(t1.high == doctest::Approx(flops / (312e12 * 0.25)).epsilon(1e-9));
  // GEMMs do not depend on the attention kernel.
  CHECK(fa1.gemm(4096, 4096, 4096, 1, 2.0 * 4096 * 4096 * 4096, 0, DType::BF16).value ==
        fa2.gemm(4096, 4096, 4096, 1, 2.0 * 4096 * 4096 * 4096, 0, DType::BF16).value);
}

TEST_CASE("on Hopper FlashAttention-2 reaches 35 % of the peak and FlashAttention-3 60 %; fa3 needs Hopper") {
  const auto h100 = preset_system("dgx-h100");
  REQUIRE(h100.gpu.compute_capability == 90);
  const double flops = 4.0 * 32 * 128 * 8192.0 * 8192.0 / 2;  // compute-bound causal forward, s = 8192
  const double bytes = 4.0 * 8192 * 4096 * 2;
  const double peak = h100.gpu.peak(DType::BF16);
  CHECK(sim::ComputeCost(h100).attention(flops, bytes, DType::BF16).value ==
        doctest::Approx(flops / (peak * 0.35)).epsilon(1e-9));
  CHECK(sim::ComputeCost(h100, AttentionKernel::Fa3).attention(flops, bytes, DType::BF16).value ==
        doctest::Approx(flops / (peak * 0.60)).epsilon(1e-9));
  CHECK(hardware::attention_kernel_problem(h100, AttentionKernel::Fa3).empty());
  const auto a100 = preset_system("a800-nvlink");
  CHECK(a100.gpu.compute_capability == 80);
  CHECK(a100.efficiency.attention.value == 0.55);  // Ampere keeps the FlashAttention-2 paper's figure
  CHECK(hardware::attention_kernel_problem(a100, AttentionKernel::Fa3).find("Hopper") != std::string::npos);
  CHECK(hardware::attention_kernel_problem(a100, AttentionKernel::Fa2).empty());
  auto run = pretrain(8, 1, 8, 2048);
  run.train.attn_kernel = AttentionKernel::Fa3;
  CHECK(mentions(sim::simulate_training(preset_model("llama2-7b"), a100, run).problems, "FlashAttention-3"));
}

TEST_CASE(
    "cuDNN fused attention: 45 % of the peak on Hopper (measured on an H200), at most FlashAttention-2's before it, "
    "sm80+") {
  const auto h100 = preset_system("dgx-h100");
  const double flops = 4.0 * 32 * 128 * 8192.0 * 8192.0 / 2;
  const double bytes = 4.0 * 8192 * 4096 * 2;
  CHECK(sim::ComputeCost(h100, AttentionKernel::Cudnn).attention(flops, bytes, DType::BF16).value ==
        doctest::Approx(flops / (h100.gpu.peak(DType::BF16) * 0.45)).epsilon(1e-9));
  CHECK(h100.efficiency.attention_cudnn.low == 0.40);
  CHECK(h100.efficiency.attention_cudnn.high == 0.62);
  CHECK(hardware::attention_kernel_problem(h100, AttentionKernel::Cudnn).empty());
  const auto a100 = preset_system("a800-nvlink");
  // Before Hopper, Hugging Face's cuDNN-vs-FlashAttention SDPA ratios scale the FlashAttention-2 figure.
  CHECK(a100.efficiency.attention_cudnn.value == doctest::Approx(0.82 * a100.efficiency.attention.value));
  const auto l40s = preset_system("l40s-pcie");
  REQUIRE(l40s.gpu.compute_capability == 89);
  CHECK(l40s.efficiency.attention_cudnn.value == doctest::Approx(l40s.efficiency.attention.value));
  CHECK(hardware::attention_kernel_problem(a100, AttentionKernel::Cudnn).empty());
  const auto v100 = preset_system("dgx2-v100");
  REQUIRE(v100.gpu.compute_capability == 70);
  CHECK(hardware::attention_kernel_problem(v100, AttentionKernel::Cudnn) ==
        "--attn-kernel cudnn (cuDNN fused attention) needs compute capability 8.0 or newer; " + v100.gpu.name +
            " is 7.0");
}

TEST_CASE("a slower attention kernel lengthens a long-sequence training step by its attention time") {
  const auto m = preset_model("llama2-7b");
  const auto sys = preset_system("a800-nvlink");
  auto run = pretrain(8, 1, 8, 16384);
  run.train.zero_stage = 3;
  run.train.framework = sim::Framework::Fsdp;
  const auto r2 = sim::simulate_training(m, sys, run);
  run.train.attn_kernel = AttentionKernel::Fa1;
  const auto r1 = sim::simulate_training(m, sys, run);
  REQUIRE(r1.problems.empty());
  const double attn2 = share(r2.by_module, "attention.core");
  const double attn1 = share(r1.by_module, "attention.core");
  // Compute-bound attention at s = 16384: the kernel time scales with 1 / fraction.
  CHECK(attn1 / attn2 == doctest::Approx(0.55 / 0.33).epsilon(0.01));
  CHECK(attn2 > 0);
  CHECK(r1.step_time_s.value > r2.step_time_s.value);
}

TEST_CASE("FLOPs per token follow 6N + 12 L s h (Narayanan et al. 2021 Eq. 3 without recompute)") {
  const auto m = preset_model("llama2-7b");
  const auto sys = preset_system("a800-nvlink");
  auto run = pretrain(8, 1, 8, 2048);
  run.train.zero_stage = 1;
  const auto r = sim::simulate_training(m, sys, run);
  REQUIRE(r.valid());
  // Linear weights a token multiplies: all parameters minus the embedding table (32000 x 4096) and
  // the 65 RMSNorm weight vectors (2 per layer + the final one) of 4096.
  const double linear = 6738415616.0 - 32000.0 * 4096 - 65.0 * 4096;
  const double per_token = 6.0 * linear + 12.0 * 32 * 2048 * 4096;
  CHECK(r.model_flops_per_step / r.tokens_per_step == doctest::Approx(per_token).epsilon(1e-12));
  CHECK(r.hardware_flops_per_step == doctest::Approx(r.model_flops_per_step));
  // Full recomputation runs every transformer layer's forward again: + 2 N_layers + 4 L s h per token. The
  // LM head (32000 x 4096) runs once, as Eq. 3 counts it (its V / 16lh term is 3 passes, not 4).
  run.train.recompute = sim::Recompute::Full;
  const auto full = sim::simulate_training(m, sys, run);
  const double head = 32000.0 * 4096;
  CHECK(full.hardware_flops_per_step / full.tokens_per_step ==
        doctest::Approx(per_token + 2.0 * (linear - head) + 4.0 * 32 * 2048 * 4096).epsilon(1e-12));
  CHECK(full.step_time_s.value > r.step_time_s.value);
  CHECK(full.hfu.value > full.mfu.value);
}

TEST_CASE("full recomputation re-runs the transformer blocks, not the embedding, LM head or loss") {
  // Every framework's checkpoint wrapper is around the layers (transformers' GradientCheckpointingLayer,
  // Megatron's TransformerBlock, torchtitan's apply_ac): the head's busy time is that of one forward and
  // one backward with or without recomputation, and the recompute phase is shorter than the forward.
  const auto m = preset_model("llama2-7b");
  const auto sys = preset_system("a800-nvlink");
  auto run = pretrain(1, 1, 1, 2048);
  const auto none = sim::simulate_training(m, sys, run);
  run.train.recompute = sim::Recompute::Full;
  const auto full = sim::simulate_training(m, sys, run);
  REQUIRE(none.valid());
  REQUIRE(full.valid());
  const double head = share(none.by_module, "lm_head_loss");
  REQUIRE(head > 0);
  CHECK(share(full.by_module, "lm_head_loss") == doctest::Approx(head).epsilon(1e-12));
  CHECK(share(full.by_module, "embedding") == doctest::Approx(share(none.by_module, "embedding")).epsilon(1e-12));
  const double fwd = share(full.by_phase, "forward"), again = share(full.by_phase, "recompute");
  CHECK(again > 0);
  CHECK(again < fwd);
  // The mlp re-runs whole: its busy time grows by its forward share (a third of forward + backward).
  CHECK(share(full.by_module, "mlp") > 1.3 * share(none.by_module, "mlp"));
}

TEST_CASE("pipeline orders: every stage runs each micro-batch forward and backward once per chunk") {
  for (int vp : {1, 2}) {
    const auto order = sim::pipeline_order(4, vp, 8, sim::PipelineSchedule::OneFOneB);
    REQUIRE(order.size() == 4);
    for (std::size_t s = 0; s < order.size(); ++s) {
      CHECK(order[s].size() == static_cast<std::size_t>(2 * 8 * vp));
      int fwd = 0;
      for (const auto& t : order[s]) fwd += t.forward ? 1 : 0;
      CHECK(fwd == 8 * vp);
    }
    // 1F1B warm-up on stage 0: pp - 1 forwards before the first backward (interleaved: 2(pp-1) + (vp-1)pp).
    const auto& s0 = order[0];
    std::size_t first_bwd = 0;
    while (s0[first_bwd].forward) ++first_bwd;
    CHECK(first_bwd == static_cast<std::size_t>(vp == 1 ? 4 : 2 * 3 + 4 + 1));
  }
  CHECK(!sim::pipeline_problems(4, 2, 6, sim::PipelineSchedule::OneFOneB).empty());
  CHECK(sim::pipeline_problems(4, 2, 8, sim::PipelineSchedule::OneFOneB).empty());
}

TEST_CASE("1F1B pipeline bubble is (p-1)/(m+p-1) of the step for balanced stages") {
  // 8 identical layers on 4 stages; a tiny vocabulary keeps the embedding and head negligible.
  const auto m = model::make_custom_model({.arch = "llama", .layers = 8, .hidden = 4096, .heads = 32, .vocab = 128},
                                          Location{.key = "test"});
  const auto sys = preset_system("dgx-a100-80gb");
  for (int mb : {4, 8, 16}) {
    auto run = pretrain(4, 1, mb, 2048);
    run.par.pp = 4;
    run.train.framework = sim::Framework::Megatron;
    const auto r = sim::simulate_training(m, sys, run);
    REQUIRE(r.valid());
    const double p = 4, expected = (p - 1) / (mb + p - 1);
    CHECK(r.bubble_s / r.step_time_s.value == doctest::Approx(expected).epsilon(0.03));
    CHECK(r.peak_in_flight == std::min(mb, 4));
    // GPipe has the same bubble but keeps every micro-batch in flight.
    run.train.schedule = sim::PipelineSchedule::GPipe;
    const auto g = sim::simulate_training(m, sys, run);
    CHECK(g.bubble_s / g.step_time_s.value == doctest::Approx(expected).epsilon(0.03));
    CHECK(g.peak_in_flight == mb);
  }
}

TEST_CASE("the memory timeline: the stage's memory without activations plus one share per micro-batch in flight") {
  const auto m = model::make_custom_model({.arch = "llama", .layers = 8, .hidden = 4096, .heads = 32, .vocab = 128},
                                          Location{.key = "test"});
  const auto sys = preset_system("dgx-a100-80gb");
  auto run = pretrain(4, 1, 8, 2048);
  run.par.pp = 4;
  run.train.framework = sim::Framework::Megatron;
  for (const auto schedule : {sim::PipelineSchedule::OneFOneB, sim::PipelineSchedule::GPipe}) {
    run.train.schedule = schedule;
    const auto r = sim::simulate_training(m, sys, run, {.keep_trace = true});
    REQUIRE(r.valid());
    // Every micro-batch's activations come once and go once: 1 + 2 x 8 points, back to the start at the end.
    REQUIRE(r.memory_timeline.size() == 17);
    double act = 0;
    for (const auto& item : r.memory.gpu)
      if (item.kind == sim::MemoryKind::Activations) act = item.bytes;
    CHECK(r.memory_timeline.front().bytes == doctest::Approx(r.memory.gpu_bytes - act));
    CHECK(r.memory_timeline.back().bytes == doctest::Approx(r.memory.gpu_bytes - act));
    double peak = 0, last_time = 0;
    for (const auto& p : r.memory_timeline) {
      peak = std::max(peak, p.bytes);
      CHECK(p.time_s >= last_time);
      last_time = p.time_s;
    }
    CHECK(peak == doctest::Approx(r.memory_timeline_peak_bytes));
    // Each step of the function is one micro-batch's share: the peak is the in-flight count's.
    const double per_micro_batch = (r.memory_timeline[1].bytes - r.memory_timeline[0].bytes);
    CHECK(peak == doctest::Approx(r.memory.gpu_bytes - act + per_micro_batch * static_cast<double>(r.peak_in_flight)));
  }
  // Without the trace there is no timeline.
  CHECK(sim::simulate_training(m, sys, run).memory_timeline.empty());
}

TEST_CASE("ZeRO-3 moves 1.5x the bytes of data-parallel all-reduce (Rajbhandari et al. 2020 Sec. 7)") {
  const auto m = preset_model("llama2-7b");
  const auto sys = preset_system("a800-nvlink");
  auto run = pretrain(8, 1, 8, 512);
  run.train.framework = sim::Framework::DeepSpeed;
  run.train.zero_stage = 0;
  const auto z0 = sim::simulate_training(m, sys, run);
  run.train.zero_stage = 3;
  const auto z3 = sim::simulate_training(m, sys, run);
  REQUIRE(z0.valid());
  REQUIRE(z3.valid());
  const double ar = share(z0.by_op_class, "all_reduce");
  const double z3_bytes_time = share(z3.by_op_class, "all_gather") + share(z3.by_op_class, "reduce_scatter");
  REQUIRE(ar > 0);
  // Same ring bandwidth; only the per-call latency terms differ (ZeRO-3 issues ~3 calls per layer).
  CHECK(z3_bytes_time / ar == doctest::Approx(1.5).epsilon(0.02));
}

TEST_CASE("the phase breakdown sums to the step time") {
  const auto m = preset_model("llama2-13b");
  const auto sys = preset_system("a800-nvlink");
  auto run = pretrain(8, 1, 32, 2048);
  run.par.tp = 2;
  run.par.pp = 2;
  run.train.framework = sim::Framework::Megatron;
  run.train.recompute = sim::Recompute::Full;
  const auto r = sim::simulate_training(m, sys, run);
  REQUIRE(r.valid());
  CHECK(total(r.by_phase) == doctest::Approx(r.step_time_s.value).epsilon(1e-9));
  CHECK(share(r.by_phase, "recompute") > 0);
  CHECK(share(r.by_phase, "pipeline bubble") > 0);
  CHECK(share(r.by_phase, "exposed communication") > 0);  // TP all-reduces block the compute stream
  CHECK(r.step_time_s.low <= r.step_time_s.value);
  CHECK(r.step_time_s.value <= r.step_time_s.high);
}

TEST_CASE("selective recomputation reruns what the framework's policy does not save") {
  const auto m = preset_model("llama3-8b");
  const auto sys = preset_system("hgx-h200");
  auto run = pretrain(8, 1, 8, 4096);
  run.train.zero_stage = 3;
  const auto sim_with = [&](sim::Framework f, sim::Recompute rc) {
    run.train.framework = f;
    run.train.recompute = rc;
    const auto r = sim::simulate_training(m, sys, run);
    REQUIRE(r.valid());
    return r;
  };
  // Megatron's selective with FlashAttention: nothing to rerun.
  CHECK(share(sim_with(sim::Framework::Megatron, sim::Recompute::Selective).by_phase, "recompute") == 0);
  // torchtitan's op-level SAC (fsdp): wk, wo and w3 of every block (79.7 M of its 218.1 M mm weights)
  // and the pointwise ops run again; the hardware FLOPs count the GEMMs.
  const auto none = sim_with(sim::Framework::Fsdp, sim::Recompute::None);
  const auto sac = sim_with(sim::Framework::Fsdp, sim::Recompute::Selective);
  const auto full = sim_with(sim::Framework::Fsdp, sim::Recompute::Full);
  const double rerun = share(sac.by_phase, "recompute");
  CHECK(rerun > 0);
  CHECK(rerun < share(full.by_phase, "recompute") / 2);
  CHECK(none.step_time_s.value < sac.step_time_s.value);
  CHECK(sac.step_time_s.value < full.step_time_s.value);
  const double tokens = 8.0 * 4096;
  const double rerun_flops = 2.0 * tokens * 32 * (4096.0 * 1024 + 4096.0 * 4096 + 4096.0 * 14336);
  CHECK(sac.hardware_flops_per_step - sac.model_flops_per_step == doctest::Approx(rerun_flops).epsilon(1e-6));
}

TEST_CASE("techniques change time in the expected direction") {
  const auto m = preset_model("llama2-7b");
  const auto sys = preset_system("rtx4090-pcie");
  auto base = pretrain(8, 1, 8, 512);
  base.workload = sim::Workload::Finetune;
  base.train.framework = sim::Framework::DeepSpeed;
  base.train.zero_stage = 2;
  const auto full = sim::simulate_training(m, sys, base);
  REQUIRE(full.valid());

  SUBCASE("ZeRO-Offload adds PCIe transfers and CPU Adam") {
    auto run = base;
    run.train.offload = sim::Offload::Optimizer;
    const auto r = sim::simulate_training(m, sys, run);
    REQUIRE(r.valid());
    CHECK(share(r.by_op_class, "cpu_optimizer") > 0);
    CHECK(share(r.by_op_class, "memcpy") > 0);
    CHECK(share(r.by_phase, "optimizer") == 0);
  }
  SUBCASE("DeepSpeed's ZeRO-Offload copies block the compute stream; pinned buffers and overlap_comm shorten them") {
    auto run = base;
    run.train.offload = sim::Offload::Optimizer;
    run.train.global_batch = 32;  // 4 micro-batches: the host sum round-trips every later micro-batch
    const auto pageable = sim::simulate_training(m, sys, run);
    run.train.offload_pin_memory = true;
    const auto pinned = sim::simulate_training(m, sys, run);
    run.train.overlap_grad_reduce = true;
    const auto pinned_overlapped = sim::simulate_training(m, sys, run);
    run.train.offload_pin_memory.reset();
    const auto pageable_overlapped = sim::simulate_training(m, sys, run);
    REQUIRE(pageable.valid());
    REQUIRE(pinned.valid());
    REQUIRE(pinned_overlapped.valid());
    REQUIRE(pageable_overlapped.valid());
    CHECK(share(pageable.by_phase, "offload") > share(pinned.by_phase, "offload"));
    CHECK(pinned.step_time_s.value < pageable.step_time_s.value);
    // overlap_comm moves pinned copies off the compute stream; pageable ones still hold the host.
    CHECK(pinned_overlapped.step_time_s.value < pinned.step_time_s.value);
    CHECK(pageable_overlapped.step_time_s.value > pinned_overlapped.step_time_s.value);
    // The closed-form estimate prices the same copies.
    sim::FastTrainEvaluator fe(m, sys);
    run.train.overlap_grad_reduce.reset();
    CHECK(fe.estimate(sim::with_defaults(run)).step_time_s ==
          doctest::Approx(pageable.step_time_s.value).epsilon(0.05));
  }
  SUBCASE("DeepSpeed's ZeRO-3 offload round-trips the gradient partition every micro-batch") {
    auto run = base;
    run.train.zero_stage = 3;
    run.train.offload = sim::Offload::Optimizer;
    run.train.global_batch = 32;
    const auto pageable = sim::simulate_training(m, sys, run);
    run.train.offload_pin_memory = true;
    const auto pinned = sim::simulate_training(m, sys, run);
    run.train.framework = sim::Framework::Fsdp;  // one 16-bit copy out per micro-batch, pinned
    run.train.offload_pin_memory.reset();
    const auto fsdp = sim::simulate_training(m, sys, run);
    REQUIRE(pageable.valid());
    REQUIRE(pinned.valid());
    REQUIRE(fsdp.valid());
    CHECK(pinned.step_time_s.value < pageable.step_time_s.value);
    CHECK(share(pageable.by_phase, "offload") > share(fsdp.by_phase, "offload"));
    sim::FastTrainEvaluator fe(m, sys);
    run.train.framework = sim::Framework::DeepSpeed;
    CHECK(fe.estimate(sim::with_defaults(run)).step_time_s ==
          doctest::Approx(pageable.step_time_s.value).epsilon(0.05));
    run.train.offload_pin_memory = true;
    CHECK(fe.estimate(sim::with_defaults(run)).step_time_s == doctest::Approx(pinned.step_time_s.value).epsilon(0.05));
    // FSDP stated pageable: its one copy per micro-batch at the staging rate, holding the host.
    run.train.framework = sim::Framework::Fsdp;
    run.train.offload_pin_memory = false;
    const auto fsdp_pageable = sim::simulate_training(m, sys, run);
    REQUIRE(fsdp_pageable.valid());
    CHECK(fsdp_pageable.step_time_s.value > fsdp.step_time_s.value);
    CHECK(fe.estimate(sim::with_defaults(run)).step_time_s ==
          doctest::Approx(fsdp_pageable.step_time_s.value).epsilon(0.05));
  }
  SUBCASE("ZeRO-Offload on one GPU still copies the gradients to the host") {
    auto one = pretrain(1, 1, 1, 512);
    one.workload = sim::Workload::Finetune;
    one.train.framework = sim::Framework::DeepSpeed;
    one.train.zero_stage = 2;
    one.train.offload = sim::Offload::Optimizer;
    const auto a800 = preset_system("a800-nvlink");
    const auto r = sim::simulate_training(m, a800, one);
    REQUIRE(r.valid());
    // 6.74e9 parameters: 4 bytes each to the (pageable) host and 4 back pinned, beyond CPU Adam.
    const double d2h = 6.7e9 * 4 / a800.efficiency.pageable_d2h_Bps;
    CHECK(share(r.by_module, "offload.pcie") > d2h);
    sim::FastTrainEvaluator fe(m, a800);
    CHECK(fe.estimate(sim::with_defaults(one)).step_time_s == doctest::Approx(r.step_time_s.value).epsilon(0.05));
  }
  SUBCASE("LoRA freezes the base: no weight-gradient GEMMs, adapters appear") {
    auto run = base;
    run.train.finetune = sim::FinetuneKind::Lora;
    run.train.lora_rank = 16;
    const auto r = sim::simulate_training(m, sys, run);
    REQUIRE(r.valid());
    CHECK(share(r.by_module, "lora") > 0);
    CHECK(r.step_time_s.value < full.step_time_s.value);
    // Model FLOPs: 4 per frozen weight instead of 6.
    CHECK(r.model_flops_per_step < full.model_flops_per_step * 0.75);
  }
  SUBCASE("QLoRA dequantizes NF4 weights before every base GEMM") {
    auto run = base;
    run.train.finetune = sim::FinetuneKind::Qlora;
    run.train.lora_rank = 64;
    const auto r = sim::simulate_training(m, sys, run);
    REQUIRE(r.valid());
    CHECK(share(r.by_module, "dequantization") > 0);
  }
  SUBCASE("LoRA on a GPTQ int4 base unpacks through AutoGPTQ's eager kernels: 16.5 B per weight, in forward only") {
    auto nf4 = base;
    nf4.train.finetune = sim::FinetuneKind::Qlora;
    nf4.train.lora_rank = 64;
    nf4.train.recompute = sim::Recompute::None;
    auto gptq = nf4;
    gptq.train.base_quant = model::WeightQuant::Int4;
    const auto a = sim::simulate_training(m, sys, nf4), b = sim::simulate_training(m, sys, gptq);
    REQUIRE(a.valid());
    REQUIRE(b.valid());
    // Bandwidth-bound: 0.5 + 14 + 2 B once (the backward reuses the fp16 weight autograd saved) against
    // NF4's ~2.5 B in the forward and again in the backward: about 3.3x the time.
    const double ratio = share(b.by_module, "dequantization") / share(a.by_module, "dequantization");
    CHECK(ratio > 2.8);
    CHECK(ratio < 3.8);
    CHECK(b.step_time_s.value > a.step_time_s.value);
  }
  SUBCASE("HF AMP (fp32 weights, autocast) pays casts and fp32 glue that DeepSpeed's bf16 run does not") {
    auto amp = pretrain(1, 1, 1, 512);
    amp.train.framework = sim::Framework::Hf;
    auto ds = amp;
    ds.train.framework = sim::Framework::DeepSpeed;
    const auto h200 = preset_system("hgx-h200");
    const auto r = sim::simulate_training(m, h200, amp), d = sim::simulate_training(m, h200, ds);
    REQUIRE(r.valid());
    REQUIRE(d.valid());
    CHECK(share(r.by_module, "amp_casts") > 0);
    CHECK(share(d.by_module, "amp_casts") == 0);
    // Same GEMMs and FLOPs; more memory-bound time.
    CHECK(r.model_flops_per_step == doctest::Approx(d.model_flops_per_step));
    CHECK(share(r.by_op_class, "elementwise") > share(d.by_op_class, "elementwise"));
    // Weight casts alone: 6.74e9 params x (4 + 2) bytes each way over at most the HBM bandwidth.
    CHECK(share(r.by_module, "amp_casts") > 2 * 6.7e9 * 6 / h200.gpu.memory_bandwidth_Bps);
  }
  SUBCASE("the unfused attention chain is slower than FlashAttention") {
    auto run = base;
    run.train.flash_attn = false;
    const auto r = sim::simulate_training(m, sys, run);
    CHECK(share(r.by_module, "attention.core") > share(full.by_module, "attention.core"));
  }
}

TEST_CASE("staged PCIe collectives make the RTX 4090 box communication bound") {
  const auto m = preset_model("llama2-7b");
  auto run = pretrain(8, 1, 8, 512);
  run.train.framework = sim::Framework::DeepSpeed;
  run.train.zero_stage = 3;
  const auto pcie = sim::simulate_training(m, preset_system("rtx4090-pcie"), run);
  const auto nvl = sim::simulate_training(m, preset_system("a800-nvlink"), run);
  REQUIRE(pcie.valid());
  CHECK(share(pcie.by_phase, "exposed communication") / pcie.step_time_s.value >
        share(nvl.by_phase, "exposed communication") / nvl.step_time_s.value);
}

TEST_CASE("gradient reduction: Megatron's DDP and distributed optimizer block, Megatron-FSDP and ZeRO-3 overlap") {
  const auto& megatron = sim::framework_profile(sim::Framework::Megatron);
  const auto& deepspeed = sim::framework_profile(sim::Framework::DeepSpeed);
  const auto& fsdp = sim::framework_profile(sim::Framework::Fsdp);
  CHECK(sim::grad_reduce_on_compute_stream(megatron, 0));  // --overlap-grad-reduce is off by default
  CHECK(sim::grad_reduce_on_compute_stream(megatron, 1));
  CHECK_FALSE(sim::grad_reduce_on_compute_stream(megatron, 2));  // Megatron-FSDP optim_grads overlaps
  CHECK_FALSE(sim::grad_reduce_on_compute_stream(megatron, 3));
  CHECK(sim::grad_reduce_on_compute_stream(deepspeed, 2));  // overlap_comm false for stage 2
  CHECK_FALSE(sim::grad_reduce_on_compute_stream(deepspeed, 3));
  CHECK_FALSE(sim::grad_reduce_on_compute_stream(fsdp, 0));
  // Megatron at ZeRO-3 (Megatron-FSDP) is a feasible run.
  auto run = pretrain(8, 1, 8, 2048);
  run.train.framework = sim::Framework::Megatron;
  run.train.zero_stage = 3;
  const auto r = sim::simulate_training(preset_model("llama2-7b"), preset_system("a800-nvlink"), run);
  CHECK(r.problems.empty());
}

TEST_CASE("--overlap-grad-reduce and --overlap-param-gather take the blocking collectives off the critical path") {
  CHECK_FALSE(sim::grad_reduce_on_compute_stream(sim::framework_profile(sim::Framework::DeepSpeed), 2, true));
  CHECK(sim::grad_reduce_on_compute_stream(sim::framework_profile(sim::Framework::Fsdp), 0, false));
  CHECK_FALSE(sim::grad_reduce_on_compute_stream(sim::framework_profile(sim::Framework::Fsdp), 3, false));
  // DeepSpeed ZeRO-2 over 8 A100 nodes: its default (overlap_comm false) reduces on the compute stream.
  const auto m = preset_model("llama2-7b");
  const auto sys = preset_system("dgx-a100-80gb");
  auto run = pretrain(64, 2, 128, 2048);
  run.train.zero_stage = 2;
  const auto blocking = sim::simulate_training(m, sys, run);
  run.train.overlap_grad_reduce = true;
  const auto overlapped = sim::simulate_training(m, sys, run);
  REQUIRE(overlapped.problems.empty());
  CHECK(overlapped.step_time_s.value < 0.95 * blocking.step_time_s.value);
  CHECK(share(overlapped.by_phase, "exposed communication") < share(blocking.by_phase, "exposed communication"));
  // The ZeRO-2 parameter all-gather hides behind the next forward: never slower, here shorter.
  run.train.overlap_param_gather = true;
  const auto both = sim::simulate_training(m, sys, run);
  CHECK(both.step_time_s.value < overlapped.step_time_s.value);
  // The closed-form estimate follows the same rules.
  sim::FastTrainEvaluator fe(m, sys);
  CHECK(fe.estimate(sim::with_defaults(run)).step_time_s == doctest::Approx(both.step_time_s.value).epsilon(0.10));
  // Without ZeRO-1/2 there is no gather after the step to overlap.
  run.train.zero_stage = 0;
  CHECK(mentions(sim::simulate_training(m, sys, run).problems, "--overlap-param-gather"));
}

TEST_CASE("impossible configurations are results with reasons") {
  const auto m = preset_model("llama2-7b");
  const auto sys = preset_system("a800-nvlink");
  auto run = pretrain(8, 1, 8, 512);
  SUBCASE("Megatron has no CPU offload") {
    run.train.framework = sim::Framework::Megatron;
    run.train.zero_stage = 2;
    run.train.offload = sim::Offload::Optimizer;
    CHECK(mentions(sim::simulate_training(m, sys, run).problems, "not megatron"));
  }
  SUBCASE("micro-batch not dividing the global batch per DP rank") {
    run.train.micro_batch = 3;
    CHECK(mentions(sim::simulate_training(m, sys, run).problems, "not a multiple"));
  }
  SUBCASE("pp larger than the layers") {
    run.par.pp = 8;
    run.par.gpus = 8;
    run.train.framework = sim::Framework::Megatron;
    const auto big = preset_model("llama2-7b");
    auto r = run;
    r.par.pp = 64;
    r.par.gpus = 64;
    CHECK(mentions(sim::simulate_training(big, preset_system("dgx-a100-80gb"), r).problems, "exceeds"));
  }
  SUBCASE("LoRA with rank 0") {
    run.workload = sim::Workload::Finetune;
    run.train.finetune = sim::FinetuneKind::Lora;
    CHECK(mentions(sim::simulate_training(m, sys, run).problems, "lora-rank"));
  }
  SUBCASE("fp8 on a GPU without fp8") {
    run.train.precision = DType::FP8;
    CHECK(mentions(sim::simulate_training(m, sys, run).problems, "fp8"));
  }
  SUBCASE("DeepSpeed ZeRO-3 with pipeline parallelism") {
    run.par.pp = 2;
    run.train.zero_stage = 3;
    CHECK(mentions(sim::simulate_training(m, sys, run).problems, "pipeline"));
  }
  SUBCASE("interleaving with a micro-batch count that pp does not divide") {
    run.train.framework = sim::Framework::Megatron;
    run.par.pp = 4;
    run.par.vp = 2;
    run.train.global_batch = 6;
    run.par.gpus = 4;
    CHECK(mentions(sim::simulate_training(m, sys, run).problems, "multiple of pp"));
  }
}

TEST_CASE("every system preset simulates a small run") {
  const auto m = preset_model("llama2-7b");
  for (const auto& name : hardware::list_system_presets(LLMSIM_DATA_DIR)) {
    CAPTURE(name);
    const auto sys = preset_system(name);
    auto run = pretrain(8, 1, 8, 1024);
    run.train.zero_stage = 3;
    run.train.precision = sys.gpu.peak(DType::BF16) > 0 ? DType::BF16 : DType::FP16;
    const auto r = sim::simulate_training(m, sys, run);
    REQUIRE(r.valid());
    CHECK(r.step_time_s.value > 0);
    CHECK(r.mfu.value > 0.05);
    CHECK(r.mfu.value < 1.0);
  }
}

TEST_CASE("fp8 GEMMs on a GPU that has them; attention stays at the 16-bit rate") {
  const auto m = preset_model("llama3-8b");
  const auto sys = preset_system("dgx-h100");
  auto run = pretrain(8, 1, 8, 4096);
  run.train.framework = sim::Framework::Megatron;
  run.par.tp = 8;
  run.par.sequence_parallel = true;
  const auto bf16 = sim::simulate_training(m, sys, run);
  run.train.precision = DType::FP8;
  const auto fp8 = sim::simulate_training(m, sys, run);
  REQUIRE(fp8.valid());
  CHECK(share(fp8.by_op_class, "gemm") < 0.75 * share(bf16.by_op_class, "gemm"));
  CHECK(share(fp8.by_op_class, "attention") == doctest::Approx(share(bf16.by_op_class, "attention")));
  CHECK(fp8.peak_flops_per_gpu == doctest::Approx(2.0 * bf16.peak_flops_per_gpu).epsilon(0.01));
}

TEST_CASE("Megatron without --overlap-grad-reduce reduces after the schedule, on every stage at once") {
  // megatron/core/distributed: the backward hook only accumulates into main_grad unless
  // overlap_grad_reduce; finalize_model_grads reduces after forward_backward_func. So the blocking
  // reduction adds about one stage's reduction to the step, not one per stage along the pipeline drain.
  // The rule is about where the reduction sits; the interference of an overlapped one (which compounds along
  // the drain) is left out here and tested on its own.
  const auto m = preset_model("llama2-7b");
  auto sys = preset_system("dgx-a100-80gb");
  sys.efficiency.comm_interference = {};
  auto run = pretrain(64, 1, 64, 2048);
  run.par.pp = 8;
  run.train.framework = sim::Framework::Megatron;
  run.train.zero_stage = 1;
  run.train.overlap_grad_reduce = false;
  const auto blocking = sim::simulate_training(m, sys, run);
  run.train.overlap_grad_reduce = true;
  const auto overlapped = sim::simulate_training(m, sys, run);
  REQUIRE(blocking.valid());
  REQUIRE(overlapped.valid());
  const double reduce = share(blocking.by_op_class, "reduce_scatter");
  REQUIRE(reduce > 0);
  const double extra = blocking.step_time_s.value - overlapped.step_time_s.value;
  CHECK(extra >= 0);
  CHECK(extra <= 1.2 * reduce);  // serialized along the drain it was about pp x reduce
  // The fast estimator follows the same rule.
  run.train.overlap_grad_reduce = false;
  sim::FastTrainEvaluator fe(m, sys);
  CHECK(fe.estimate(sim::with_defaults(run)).step_time_s == doctest::Approx(blocking.step_time_s.value).epsilon(0.05));
  // The rule is for the once-per-step reduction of ZeRO-0/1: a ZeRO-2 run that reduces every micro-batch
  // without overlap reduces in backward, in the step graph as in the fast estimator.
  CHECK_FALSE(sim::grad_reduce_after_schedule(sim::framework_profile(sim::Framework::Megatron), 2, false));
  run.train.zero_stage = 2;
  const auto zero2 = sim::simulate_training(m, sys, run);
  REQUIRE(zero2.valid());
  CHECK(fe.estimate(sim::with_defaults(run)).step_time_s == doctest::Approx(zero2.step_time_s.value).epsilon(0.05));
}

TEST_CASE("overlapped FSDP gathers and reduce-scatters slow the compute beside them (comm interference)") {
  // llama2-7b, FSDP over 8 A100s, micro-batch 1 x 2048: every layer's next gather (and in backward the last
  // reduce-scatter) runs beside its compute. Without interference the collectives cost nothing while
  // hidden; with it the step grows by what the phase table calls "communication interference", at most the
  // rate times the hidden communication, and the fast estimate follows.
  const auto m = preset_model("llama2-7b");
  auto sys = preset_system("dgx-a100-80gb");
  auto run = pretrain(8, 1, 8, 2048);
  run.train.framework = sim::Framework::Fsdp;
  run.train.zero_stage = 3;
  run = sim::with_defaults(run);
  const auto with = sim::simulate_training(m, sys, run);
  sys.efficiency.comm_interference = {};
  const auto without = sim::simulate_training(m, sys, run);
  REQUIRE(with.valid());
  REQUIRE(without.valid());
  const double slowed = share(with.by_phase, "communication interference");
  const double comm = share(with.by_op_class, "all_gather") + share(with.by_op_class, "reduce_scatter");
  CHECK(share(without.by_phase, "communication interference") == 0);
  CHECK(slowed > 0);
  CHECK(slowed <= 0.19 * comm / (1 - 0.19) + 1e-9);  // at most the rate times the communication (with its fixed point)
  CHECK(with.step_time_s.value - without.step_time_s.value == doctest::Approx(slowed).epsilon(0.05));
  CHECK(share(with.by_module, "communication.interference") == doctest::Approx(slowed).epsilon(1e-9));
  CHECK(total(with.by_phase) == doctest::Approx(with.step_time_s.value).epsilon(1e-9));
  const auto fast_sys = preset_system("dgx-a100-80gb");  // the evaluator keeps a reference
  sim::FastTrainEvaluator fe(m, fast_sys);
  CHECK(fe.estimate(run).step_time_s == doctest::Approx(with.step_time_s.value).epsilon(0.02));
}

TEST_CASE("a ZeRO-3 gather of a QLoRA layer moves the NF4-packed base, not 16-bit weights") {
  // FSDP shards what the model stores: QLoRA's base is NF4 with double-quantized scales (4.127 bits per
  // weight, model::quantized_weight_bytes), the norms and the adapters 16-bit. So the all-gather busy time
  // of QLoRA is about a quarter of LoRA's on the same 16-bit base.
  const auto m = preset_model("llama2-7b");
  const auto sys = preset_system("dgx-a100-80gb");
  auto run = pretrain(8, 1, 8, 2048);
  run.workload = sim::Workload::Finetune;
  run.train.framework = sim::Framework::Fsdp;
  run.train.zero_stage = 3;
  run.train.finetune = sim::FinetuneKind::Lora;
  run.train.lora_rank = 16;
  const auto lora = sim::simulate_training(m, sys, sim::with_defaults(run));
  run.train.finetune = sim::FinetuneKind::Qlora;
  const auto qlora = sim::simulate_training(m, sys, sim::with_defaults(run));
  REQUIRE(lora.valid());
  REQUIRE(qlora.valid());
  const double ratio = share(qlora.by_op_class, "all_gather") / share(lora.by_op_class, "all_gather");
  CHECK(ratio > 0.2);
  CHECK(ratio < 0.4);  // 16-bit gathers: 1.0
}

// Variable-length samples (sim/run/sample_lengths.h): a step runs the lengths it holds, not seq_len.
TEST_CASE("variable-length samples: batch padding at micro-batch 1 runs the mean length; packing and max don't") {
  const auto m = preset_model("llama2-7b");
  const auto sys = preset_system("a800-nvlink");
  sim::RunSpec base = pretrain(8, 1, 16, 2048);
  base.workload = sim::Workload::Finetune;
  base.train.zero_stage = 3;
  sim::RunSpec at_mean = base;
  at_mean.train.seq_len = 512;
  const auto whole = sim::simulate_training(m, sys, base);
  const auto short_seqs = sim::simulate_training(m, sys, at_mean);
  REQUIRE(whole.valid());
  REQUIRE(short_seqs.valid());

  // Padded to each micro-batch's longest at micro-batch 1: every sequence is one sample of its own length,
  // priced at the mean (512 tokens), while the memory peak is the longest's (seq_len 2048).
  sim::RunSpec batch = base;
  batch.train.tokens_per_sample = 512;
  batch.train.padding = sim::SamplePadding::Batch;
  const auto b = sim::simulate_training(m, sys, batch);
  REQUIRE(b.valid());
  CHECK(b.step_time_s.value == doctest::Approx(short_seqs.step_time_s.value).epsilon(1e-9));
  CHECK(b.tokens_per_s.value == doctest::Approx(short_seqs.tokens_per_s.value).epsilon(1e-9));
  CHECK(b.samples_per_s.value == doctest::Approx(short_seqs.samples_per_s.value).epsilon(1e-9));
  CHECK(b.memory.gpu_bytes == doctest::Approx(whole.memory.gpu_bytes));
  CHECK(b.step_time_s.value < 0.75 * whole.step_time_s.value);  // ZeRO-3's gathers do not shrink with the tokens

  // Packed: sequences of seq_len, each holding 2048 / 512 = 4 samples.
  sim::RunSpec packed = batch;
  packed.train.padding = sim::SamplePadding::None;
  const auto p = sim::simulate_training(m, sys, packed);
  REQUIRE(p.valid());
  CHECK(p.step_time_s.value == doctest::Approx(whole.step_time_s.value).epsilon(1e-9));
  CHECK(p.samples_per_s.value == doctest::Approx(4 * whole.samples_per_s.value).epsilon(1e-9));
  CHECK(p.tokens_per_s.value == doctest::Approx(whole.tokens_per_s.value).epsilon(1e-9));

  // Padded to seq_len: the time of seq_len, a quarter of the tokens real.
  sim::RunSpec padded = batch;
  padded.train.padding = sim::SamplePadding::Max;
  const auto x = sim::simulate_training(m, sys, padded);
  REQUIRE(x.valid());
  CHECK(x.step_time_s.value == doctest::Approx(whole.step_time_s.value).epsilon(1e-9));
  CHECK(x.tokens_per_s.value == doctest::Approx(whole.tokens_per_s.value / 4).epsilon(1e-9));

  // Batch padding over several samples needs their distribution: a problem naming it, not a guess.
  sim::RunSpec mb2 = batch;
  mb2.train.micro_batch = 2;
  const auto y = sim::simulate_training(m, sys, mb2);
  CHECK_FALSE(y.valid());
  CHECK(mentions(y.problems, "length distribution"));

  // The search's closed-form estimate prices the same lengths and counts the same tokens, and the same
  // rule refuses what cannot be priced (training_problems, which the search prunes by).
  sim::FastTrainEvaluator fe(m, sys);
  for (const auto* r : {&batch, &packed, &padded}) {
    const auto full = sim::simulate_training(m, sys, *r);
    const auto fast = fe.estimate(sim::with_defaults(*r));
    CHECK(fast.step_time_s == doctest::Approx(full.step_time_s.value).epsilon(0.10));
    CHECK(fast.tokens_per_step == doctest::Approx(full.tokens_per_step));
  }
  CHECK(fe.estimate(sim::with_defaults(batch)).step_time_s <
        0.75 * fe.estimate(sim::with_defaults(padded)).step_time_s);
  CHECK(mentions(sim::training_problems(m, sys, sim::with_defaults(mb2)), "length distribution"));
}

TEST_CASE("recompute_layers: all of a stage's layers is full recomputation; fewer is not modelled") {
  const auto m = preset_model("llama2-7b");  // 32 layers
  const auto sys = preset_system("a800-nvlink");
  sim::RunSpec r = pretrain(8, 1, 16, 2048);
  r.par.pp = 2;
  r.train.recompute = sim::Recompute::Full;
  r.train.recompute_layers = 16;
  const auto all = sim::simulate_training(m, sys, r);
  r.train.recompute_layers = 0;
  const auto full = sim::simulate_training(m, sys, r);
  REQUIRE(all.valid());
  CHECK(all.step_time_s.value == doctest::Approx(full.step_time_s.value));
  r.train.recompute_layers = 8;
  const auto some = sim::simulate_training(m, sys, r);
  CHECK(mentions(some.problems, "recomputing 8 of the 16 layers of each pipeline stage"));
  r.train.recompute = sim::Recompute::Selective;
  CHECK(mentions(sim::simulate_training(m, sys, r).problems, "needs recompute full"));
}

TEST_CASE("a Gated DeltaNet hybrid trains layer by layer; the fast estimator and its memory follow its layer kinds") {
  const auto m = model::load_hf_config(std::string(LLMSIM_TEST_DATA_DIR) + "/models/qwen3-coder-next");
  const auto sys = preset_system("hgx-h200");
  auto run = [&](std::int64_t pp) {
    sim::RunSpec r = pretrain(64, 1, 512, 4096);
    r.train.framework = sim::Framework::Megatron;
    r.par.tp = 2;
    r.par.pp = pp;
    r.par.dp = 64 / (2 * pp);
    r.par.ep = std::min<std::int64_t>(8, r.par.dp);  // experts across data-parallel ranks
    r.train.recompute = sim::Recompute::Full;
    return sim::with_defaults(r);
  };
  const auto base = run(1);
  REQUIRE(sim::structural_problems(base, m).empty());
  const auto full = sim::simulate_training(m, sys, base);
  REQUIRE(full.valid());
  // The model FLOPs count attention in the 12 attending layers and the gated delta rule in the other 36.
  const double attn = 6.0 * 4096 * (4096 + 4096) * 12 + 3.0 * model::recurrence_work(m, 1).chunk_flops_per_token * 36;
  CHECK(full.attention_flops_per_step == doctest::Approx(attn * full.tokens_per_step));
  sim::FastTrainEvaluator fe(m, sys);
  // Stages of 48, 24 and 12 layers hold whole periods of the 3:1 pattern; 8 stages of 6 do not. The fast memory
  // model counts each stage's layers by kind, so it equals the memory model either way.
  for (const std::int64_t pp : {1, 2, 4, 8}) {
    const auto r = run(pp);
    REQUIRE(sim::structural_problems(r, m).empty());
    CHECK(fe.memory(r).gpu_bytes == doctest::Approx(sim::evaluate_memory(m, sys, r).gpu_bytes).epsilon(1e-12));
  }
  CHECK(fe.estimate(base).step_time_s == doctest::Approx(full.step_time_s.value).epsilon(0.05));
  // Context parallelism across the recurrence is refused with its reason.
  auto cp = base;
  cp.par.cp = 2;
  cp.par.dp /= 2;
  bool named = false;
  for (const auto& why : sim::structural_problems(cp, m)) named |= why.find("Gated DeltaNet") != std::string::npos;
  CHECK(named);
}

TEST_CASE("per-stage busy time: layers as the stage layout splits them, the last stage with the head busiest") {
  // Llama-2-7B's 32 layers over pp 3: 10, 11, 11 (stage_layout.h: the remainder at the end). Every stage runs
  // the same 8 micro-batches, so its compute stream is busy in proportion to its layers' work, and the last
  // stage adds the LM head and loss: stage 0 (10 layers and the embedding lookup) is the least busy, stage 2
  // the busiest. Under 1F1B stage 0 finishes last (the critical stage) and waits for the others.
  const auto m = preset_model("llama2-7b");
  const auto sys = preset_system("a800-nvlink");
  auto run = pretrain(3, 1, 8, 2048);
  run.par.pp = 3;
  run.par.dp = 1;
  const auto r = sim::simulate_training(m, sys, run);
  REQUIRE(r.problems.empty());
  REQUIRE(r.stages.size() == 3);
  CHECK(r.stages[0].layers == 10);
  CHECK(r.stages[1].layers == 11);
  CHECK(r.stages[2].layers == 11);
  for (const auto& s : r.stages) {
    CHECK(s.compute_s > 0);
    CHECK(s.compute_s <= r.step_time_s.value * (1 + 1e-9));
  }
  CHECK(r.stages[0].compute_s < r.stages[1].compute_s);
  CHECK(r.stages[1].compute_s < r.stages[2].compute_s);
  // Ten of eleven layers' work, give or take the embedding and the head: within a few per cent of 10/11.
  CHECK(r.stages[0].compute_s / r.stages[1].compute_s == doctest::Approx(10.0 / 11.0).epsilon(0.05));
  // Without a pipeline there is one stage, busy for most of the step.
  const auto flat = sim::simulate_training(m, sys, pretrain(8, 1, 8, 2048));
  REQUIRE(flat.stages.size() == 1);
  CHECK(flat.stages[0].layers == 32);
}
