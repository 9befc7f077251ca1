// Bytes per parameter of the training state under each framework and precision option, derived by
// hand from the cited recipes, and what they do to the memory model.
#include <doctest/doctest.h>

#include "llmsim/memory/memory_model.h"
#include "llmsim/model/param_count.h"
#include "llmsim/run/feasibility.h"
#include "llmsim/run/framework_profile.h"
#include "llmsim/run/train_state_bytes.h"
#include "memory/memory_test_util.h"

namespace lt = llmsim::test;
namespace sim = llmsim::sim;
using llmsim::DType;

namespace {
sim::TrainStateBytes bytes_of(sim::Framework f, const sim::TrainSpec& t) {
  return sim::train_state_bytes(sim::framework_profile(f), t);
}
}  // namespace

TEST_CASE("mixed precision: each framework's convention, and the update traffic of one fused step") {
  const sim::TrainSpec t;
  // Megatron: bf16 weight 2 + fp32 main grad 4 + fp32 master 4 + m, v 8 = 18 B/param.
  auto b = bytes_of(sim::Framework::Megatron, t);
  CHECK(b.weight + b.grad + b.optimizer() == 18);
  // Update: read grad 4, read+write master 2x4 and states 2x8, write the bf16 copy 2 = 30 B.
  CHECK(b.update_traffic() == 30);
  // DeepSpeed: 2 + 2 + 12 = 16 B/param (Rajbhandari et al. 2020 K = 12); update 2 + 24 + 2 = 28.
  b = bytes_of(sim::Framework::DeepSpeed, t);
  CHECK(b.weight + b.grad + b.optimizer() == 16);
  CHECK(b.update_traffic() == 28);
  // HF AMP: fp32 weights are the master: 4 + 4 + 8; update reads/writes the weights: 4 + 2x(4 + 8) = 28.
  b = bytes_of(sim::Framework::Hf, t);
  CHECK(b.master == 0);
  CHECK(b.weight + b.grad + b.optimizer() == 16);
  CHECK(b.update_traffic() == 28);
  CHECK(b.state_dtype == DType::FP32);
}

TEST_CASE("pure 16-bit training: no master copy, gradients and Adam states in the weights' type") {
  sim::TrainSpec t;
  t.master_weights = false;
  for (auto f : {sim::Framework::Megatron, sim::Framework::DeepSpeed, sim::Framework::Fsdp, sim::Framework::Hf}) {
    CAPTURE(sim::name_of(f));
    const auto b = bytes_of(f, t);
    // bf16 weight 2 + grad 2 + m, v 2 x 2 = 8 B/param (torch.optim.AdamW states follow the parameters).
    CHECK(b.weight == 2);
    CHECK(b.grad == 2);
    CHECK(b.master == 0);
    CHECK(b.states == 4);
    CHECK(b.state_dtype == DType::BF16);
    // Update: grad 2 + read/write weights 2x2 + states 2x4 = 14 B.
    CHECK(b.update_traffic() == 14);
    CHECK(b.recipe == "pure bf16");
  }
  // Explicit fp32 states under pure bf16 weights: 2 + 2 + 8.
  t.optimizer_state_dtype = DType::FP32;
  CHECK(bytes_of(sim::Framework::Fsdp, t).states == 8);
  // An fp32 run has fp32 weights whatever the master setting.
  t = {};
  t.master_weights = false;
  t.precision = DType::FP32;
  CHECK(bytes_of(sim::Framework::Fsdp, t).weight == 4);
  CHECK(bytes_of(sim::Framework::Fsdp, t).states == 8);
}

TEST_CASE("bf16 optimizer states beside fp32 master weights (Megatron's precision-aware optimizer)") {
  sim::TrainSpec t;
  t.optimizer_state_dtype = DType::BF16;
  const auto b = bytes_of(sim::Framework::Megatron, t);
  // 2 + 4 + master 4 + m, v 2 x 2 = 14 B/param instead of 18.
  CHECK(b.master == 4);
  CHECK(b.states == 4);
  CHECK(b.weight + b.grad + b.optimizer() == 14);
  // 8-bit Adam and SGD keep their own formats.
  t = {};
  t.optimizer = sim::Optimizer::Adam8bit;
  CHECK(bytes_of(sim::Framework::DeepSpeed, t).states == 2);
  t.optimizer = sim::Optimizer::Sgd;
  CHECK(bytes_of(sim::Framework::DeepSpeed, t).states == 0);
}

TEST_CASE("QLoRA's recipe: bf16 adapters and gradients, no master copy, 32-bit paged AdamW states") {
  sim::TrainSpec t;
  t.finetune = sim::FinetuneKind::Qlora;
  t.lora_rank = 64;
  const auto b = bytes_of(sim::Framework::Hf, t);
  CHECK(b.weight == 2);
  CHECK(b.grad == 2);
  CHECK(b.master == 0);
  CHECK(b.states == 8);
  CHECK(b.update_traffic() == 2 + 2 * (2 + 8));
  // NF4 with double quantization: 4 + 8/64 + 32/(64 x 256) bits per weight.
  CHECK(sim::frozen_linear_bytes(t) == doctest::Approx((4 + 0.125 + 32.0 / 16384) / 8));
}

TEST_CASE("optimizer in backward: one tensor's gradient at a time, and what it cannot combine with") {
  const auto m = lt::preset_model("llama3-8b");
  const auto sys = lt::preset_system("dgx-a100-80gb");
  sim::RunSpec r;
  r.workload = sim::Workload::Finetune;
  r.par.gpus = 1;
  r.train.framework = sim::Framework::Fsdp;
  r.train.seq_len = 2048;
  r.train.recompute = sim::Recompute::Full;
  r.train.master_weights = false;
  const auto held = sim::evaluate_memory(m, sys, r);
  r.train.optimizer_in_backward = true;
  const auto freed = sim::evaluate_memory(m, sys, r);
  REQUIRE(freed.valid());
  // All 8,030,261,248 bf16 gradients vs the largest tensor's: the 128,256 x 4,096 embedding (or LM head).
  CHECK(lt::item(held, "gradients") == doctest::Approx(8030261248.0 * 2));
  CHECK(lt::item(freed, "gradients") == doctest::Approx(128256.0 * 4096 * 2));
  // The allocator's reserve is a fraction (5 %) of the tensors, so it shrinks with them.
  CHECK(held.gpu_bytes - freed.gpu_bytes == doctest::Approx((8030261248.0 - 128256.0 * 4096) * 2 * 1.05));
  CHECK(lt::item(held, "allocator_reserve") == doctest::Approx(0.05 * (held.gpu_bytes - lt::item(held, "cuda_context") -
                                                                       lt::item(held, "allocator_reserve"))));
  // The structural rules: one micro-batch per step, no offload; Megatron and DeepSpeed lack the feature.
  r.train.global_batch = 4;
  auto why = sim::structural_problems(sim::with_defaults(r), m);
  REQUIRE_FALSE(why.empty());
  CHECK(why.front().find("cannot accumulate 4 micro-batches") != std::string::npos);
  r.train.global_batch = 0;
  r.train.framework = sim::Framework::Megatron;
  why = sim::training_problems(m, sys, sim::with_defaults(r));
  REQUIRE_FALSE(why.empty());
  CHECK(why.front().find("megatron has no optimizer-in-backward") != std::string::npos);
  r.train.framework = sim::Framework::DeepSpeed;
  r.train.zero_stage = 2;
  r.train.offload = sim::Offload::Optimizer;
  r.par.gpus = 2;
  why = sim::structural_problems(sim::with_defaults(r), m);
  REQUIRE_FALSE(why.empty());
  CHECK(why.front().find("cannot be offloaded") != std::string::npos);
}

TEST_CASE("optimizer state dtype applies to Adam only") {
  const auto m = lt::preset_model("llama2-7b");
  sim::RunSpec r;
  r.par.gpus = 8;
  r.train.optimizer = sim::Optimizer::Sgd;
  r.train.optimizer_state_dtype = DType::BF16;
  const auto why = sim::structural_problems(sim::with_defaults(r), m);
  REQUIRE(why.size() == 1);
  CHECK(why.front() == "--optimizer-state-dtype applies to adam; sgd keeps its own state format");
}

TEST_CASE("LoRA (Hu et al. 2021): GPT-3 175B full fine-tuning under each optimizer precision") {
  // GPT-3 175B (96 layers, d_model 12288, 96 heads) on 8 pipeline stages of one GPU each: the model
  // states summed over the stages. Mixed-precision Adam is 16 B/param (FSDP: fp32 weights 4 + grads 4
  // + m, v 8); pure bf16 with bf16 Adam states is 8 B/param; stepping in backward drops all but one
  // tensor's gradient per stage: 6 B/param. The paper's ~1.2 TB lies between the last two. The last
  // stage also holds a copy of the tied embedding (51,200 x 12,288 = 0.36 % of the parameters).
  const auto m = lt::gpt(96, 12288, 96);
  const double params = static_cast<double>(llmsim::model::count_params(m).total);
  const double with_copy = params + 51200.0 * 12288;
  const auto sys = lt::preset_system("dgx-a100-80gb");
  sim::RunSpec r;
  r.workload = sim::Workload::Finetune;
  r.par = {.gpus = 8, .tp = 1, .pp = 8};
  r.train.framework = sim::Framework::Fsdp;
  r.train.recompute = sim::Recompute::Full;
  const auto states_total = [&](const sim::RunSpec& run) {
    double total = 0;
    for (std::int64_t s = 0; s < 8; ++s) {
      const auto res = sim::evaluate_stage_memory(m, sys, run, s);
      total += lt::item(res, "weights") + lt::item(res, "gradients") + lt::item(res, "optimizer_states");
    }
    return total;
  };
  CHECK(states_total(r) == doctest::Approx(with_copy * 16).epsilon(1e-9));
  r.train.master_weights = false;
  CHECK(states_total(r) == doctest::Approx(with_copy * 8).epsilon(1e-9));
  r.train.optimizer_in_backward = true;
  // 6 B/param plus, per stage, the largest tensor's bf16 gradient: the 51,200 x 12,288 embedding on the
  // first and last stages, a 12,288 x 49,152 MLP matrix on the six others.
  const double largest = 2 * 51200.0 * 12288 + 6 * 12288.0 * 49152;
  CHECK(states_total(r) == doctest::Approx(with_copy * 6 + largest * 2).epsilon(1e-9));
}
