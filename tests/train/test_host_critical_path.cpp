// The host critical path in a training step (sim/cost/host_dispatch.h): each pass of a layer
// lasts at least its launches times the host's seconds per eager launch. Launch counts derived by hand.
#include <doctest/doctest.h>

#include "llmsim/cost/comm_cost.h"
#include "llmsim/cost/compute_cost.h"
#include "llmsim/cost/host_dispatch.h"
#include "llmsim/model/operators.h"
#include "llmsim/run/framework_profile.h"
#include "llmsim/train/train_layer_cost.h"
#include "memory/memory_test_util.h"

using namespace llmsim;
using llmsim::test::preset_model;
using llmsim::test::preset_system;

namespace {

sim::RunSpec llama_pretrain(sim::Framework fw) {
  sim::RunSpec r;
  r.workload = sim::Workload::Pretrain;
  r.par.gpus = 1;
  r.train.framework = fw;
  r.train.seq_len = 512;
  r.train.micro_batch = 1;
  r.train.global_batch = 1;
  r.train.precision = DType::BF16;
  r.train.flash_attn = true;
  return sim::with_defaults(r);
}

sim::LayerCost dense_layer(const hardware::SystemSpec& sys, const sim::RunSpec& run) {
  const auto m = preset_model("llama2-7b");
  const sim::ComputeCost compute(sys, run.train.attn_kernel);
  const sim::CommCost comm(sys);
  const sim::LayerCostInputs in{m, run, sim::framework_profile(run.train.framework), compute, comm, {}};
  return sim::layer_cost(in, sim::LayerKind::Dense, 0);
}

}  // namespace

TEST_CASE("a Llama layer of fused kernels launches 11 kernels forward and 19 backward") {
  // Forward: attn norm, QKV, RoPE, flash attention, out proj, residual add, MLP norm, gate+up, SwiGLU,
  // down proj, residual add = 11. Backward: the same 11 with a weight-gradient GEMM more for each of the
  // four projections and a weight-gradient reduction for each of the two norms = 17 (no biases), and
  // Megatron's post-hook adds the two norm weights' gradients into main_grad (the projections' wgrad GEMMs
  // accumulate into it themselves) = 19.
  auto sys = preset_system("a800-nvlink");
  sys.efficiency.host_dispatch_s = 0;
  sys.efficiency.host_dispatch_low_s = sys.efficiency.host_dispatch_high_s = 0;  // exact
  const auto c = dense_layer(sys, llama_pretrain(sim::Framework::Megatron));
  CHECK(c.fwd_launches == 11);
  CHECK(c.bwd_launches == 19);
  CHECK(c.recompute_launches == 0);
  CHECK(c.by_module.count("host_wait") == 0);
}

TEST_CASE("transformers' eager Llama layer launches 35 kernels forward, 47 under autocast") {
  // LlamaRMSNorm 6, q/k/v 3, RoPE 5 on q and 5 on k, flash attention 1, transpose copy 1, o_proj 1,
  // residual 1; RMSNorm 6, gate and up 2, act_fn(gate) and the product 2, down 1, residual 1 = 35.
  const auto m = preset_model("llama2-7b");
  model::InventoryParams p;
  p.q_len = 512;
  p.glue = sim::hf_model_code_glue(false);
  double launches = 0;
  for (const auto& op : model::layer_ops(m, p, 0).ops)
    launches += sim::forward_launches(op, op.kind == model::OpKind::Norm ? p.glue.norm_kernels(m.norm) : 1.0);
  CHECK(launches == 35);
  // The HF profile trains fp32 weights under torch.autocast: the normed input is cast once per
  // projection reading it (3 + 2) and each of the 7 weights every forward: 35 + 5 + 7 = 47.
  auto sys = preset_system("a800-nvlink");
  sys.efficiency.host_dispatch_s = 0;
  sys.efficiency.host_dispatch_low_s = sys.efficiency.host_dispatch_high_s = 0;  // exact
  CHECK(dense_layer(sys, llama_pretrain(sim::Framework::Hf)).fwd_launches == 47);
}

TEST_CASE("HF Trainer's gradient accumulation: autograd adds every trained tensor from the second micro-batch") {
  auto sys = preset_system("a800-nvlink");
  sys.efficiency.host_dispatch_s = 0;
  sys.efficiency.host_dispatch_low_s = sys.efficiency.host_dispatch_high_s = 0;  // exact
  auto one = llama_pretrain(sim::Framework::Hf);
  auto four = one;
  four.train.global_batch = 4;  // four micro-batches per step
  // Llama-2's layer trains 7 projection weights and 2 norm weights: 9 AccumulateGrad adds on 3 of the 4
  // micro-batches, 6.75 per micro-batch on average; none with one micro-batch per step.
  CHECK(dense_layer(sys, four).bwd_launches - dense_layer(sys, one).bwd_launches == doctest::Approx(9 * 3.0 / 4));
  // Megatron's post-hook adds the norms into main_grad every micro-batch, whatever their number.
  auto meg_one = llama_pretrain(sim::Framework::Megatron), meg_four = meg_one;
  meg_four.train.global_batch = 4;
  CHECK(dense_layer(sys, meg_four).bwd_launches == dense_layer(sys, meg_one).bwd_launches);
}

TEST_CASE("a slow host bounds every pass: the GPU waits for the launches") {
  auto sys = preset_system("a800-nvlink");
  const auto run = llama_pretrain(sim::Framework::Megatron);
  sys.efficiency.host_dispatch_s = 0;
  sys.efficiency.host_dispatch_low_s = sys.efficiency.host_dispatch_high_s = 0;  // exact
  const auto gpu = dense_layer(sys, run);
  // 1 ms per launch: far slower than any kernel of a 512-token micro-batch on an A800.
  sys.efficiency.host_dispatch_s = 1e-3;
  sys.efficiency.host_dispatch_low_s = sys.efficiency.host_dispatch_high_s = 0;  // exact
  const auto host = dense_layer(sys, run);
  CHECK(host.fwd.value == doctest::Approx(11e-3));
  CHECK(host.fwd.low == doctest::Approx(11e-3));
  CHECK(host.bwd.value == doctest::Approx(19e-3));
  CHECK(host.by_module.at("host_wait") == doctest::Approx(30e-3 - gpu.fwd.value - gpu.bwd.value));
  // A fast host changes nothing: the kernels are longer than their issue time.
  sys.efficiency.host_dispatch_s = 1e-9;
  sys.efficiency.host_dispatch_low_s = sys.efficiency.host_dispatch_high_s = 0;  // exact
  CHECK(dense_layer(sys, run).fwd.value == doctest::Approx(gpu.fwd.value));
}

TEST_CASE("the host rate's band bounds the span's band, the fast edge with the fast edge") {
  auto sys = preset_system("a800-nvlink");
  sys.efficiency.host_dispatch_s = 1e-3;
  sys.efficiency.host_dispatch_low_s = 0.8e-3;
  sys.efficiency.host_dispatch_high_s = 1.5e-3;
  const auto c = dense_layer(sys, llama_pretrain(sim::Framework::Megatron));
  CHECK(c.fwd.value == doctest::Approx(11 * 1e-3));
  CHECK(c.fwd.low == doctest::Approx(11 * 0.8e-3));
  CHECK(c.fwd.high == doctest::Approx(11 * 1.5e-3));
}

TEST_CASE(
    "DeepSpeed's ZeRO hooks: stage 3 fetches and releases each module every pass, stages 1-3 copy each gradient") {
  // transformers' Llama layer holds 9 modules with parameters: q, k, v, o, gate, up, down and two RMSNorms.
  auto sys = preset_system("a800-nvlink");
  sys.efficiency.host_dispatch_s = 0;
  sys.efficiency.host_dispatch_low_s = sys.efficiency.host_dispatch_high_s = 0;
  sys.efficiency.deepspeed_hook_s = 1e-3;  // 1 ms per hook call: far above the GPU's time for one layer
  auto run = llama_pretrain(sim::Framework::DeepSpeed);
  run.train.zero_stage = 3;
  const auto z3 = dense_layer(sys, run);
  CHECK(z3.param_modules == 9);
  CHECK(z3.fwd_hooks == 18);  // fetch + release of each module
  CHECK(z3.bwd_hooks == 18);
  CHECK(z3.fwd.value == doctest::Approx(18e-3));
  CHECK(z3.bwd.value == doctest::Approx(18e-3));
  // Stage 2 fetches nothing: the coordinator's rate does not apply, the layer takes the GPU's own time.
  run.train.zero_stage = 2;
  const auto z2 = dense_layer(sys, run);
  CHECK(z2.fwd_hooks == 0);
  CHECK(z2.bwd_hooks == 0);
  auto no_hooks = sys;
  no_hooks.efficiency.deepspeed_hook_s = 0;
  CHECK(z2.fwd.value == doctest::Approx(dense_layer(no_hooks, run).fwd.value));
  CHECK(z2.bwd.value == doctest::Approx(dense_layer(no_hooks, run).bwd.value));
  // Its gradient hooks each copy one gradient into the reduction bucket: 9 more backward launches than
  // without ZeRO, priced at the eager launch rate (1 ms here: the layer is host bound).
  auto launch_bound = no_hooks;
  launch_bound.efficiency.host_dispatch_s = 1e-3;
  launch_bound.efficiency.host_dispatch_low_s = launch_bound.efficiency.host_dispatch_high_s = 1e-3;
  const auto z2l = dense_layer(launch_bound, run);
  run.train.zero_stage = 0;
  const auto z0l = dense_layer(launch_bound, run);
  CHECK(z2l.bwd_launches == z0l.bwd_launches + 9);
  CHECK(z2l.bwd.value == doctest::Approx(z2l.bwd_launches * 1e-3));
  CHECK(z2l.fwd_launches == z0l.fwd_launches);
  // Megatron has no such hooks, whatever the rate.
  auto meg = llama_pretrain(sim::Framework::Megatron);
  meg.train.zero_stage = 1;
  CHECK(dense_layer(sys, meg).bwd.value == doctest::Approx(dense_layer(no_hooks, meg).bwd.value));
  CHECK(dense_layer(launch_bound, meg).bwd_launches ==
        dense_layer(launch_bound, llama_pretrain(sim::Framework::Megatron)).bwd_launches);
}

TEST_CASE("a Megatron TP2 layer makes 2 collective calls forward and 2 backward; eager code pays each") {
  // Without sequence parallelism: the attention output and MLP output all-reduce in forward, the
  // column-parallel inputs' gradients all-reduce in backward. With 28 us per launch and 500 us of host
  // work per call beyond it, the forward pass of this small layer (seq 64) is host bound: its span is
  // 13 launches x 28 us + 2 calls x 500 us (the launches: the 11 kernels and the 2 all-reduces).
  auto sys = preset_system("a800-nvlink");
  sys.efficiency.host_dispatch_s = 28e-6;
  sys.efficiency.host_dispatch_low_s = sys.efficiency.host_dispatch_high_s = 0;
  sys.efficiency.collective_host_s = 500e-6;
  auto run = llama_pretrain(sim::Framework::Megatron);
  run.par.gpus = 2;
  run.par.tp = 2;
  run.par.dp = 1;
  run.train.seq_len = 64;
  run.par.sequence_parallel = false;
  const auto c = dense_layer(sys, run);
  CHECK(c.fwd_calls == 2);
  CHECK(c.bwd_calls == 2);
  CHECK(c.fwd_launches == 13);
  CHECK(c.fwd.value == doctest::Approx(13 * 28e-6 + 2 * 500e-6));
  sys.efficiency.collective_host_s = 0;
  CHECK(dense_layer(sys, run).fwd.value < c.fwd.value - 0.9e-3);
}
