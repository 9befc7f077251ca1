// One rule, one place: the memory model and the time model read the same definitions (issue "One rule,
// one place"). Each case failed before the rule had a single home: tf32 activations were 2 bytes in
// memory and 4 in time; LoRA on MoE experts was 240 M trainable parameters in memory and ~14 M in time.
#include <doctest/doctest.h>

#include <string>

#include "llmsim/core/dtype.h"
#include "llmsim/cost/comm_cost.h"
#include "llmsim/cost/compute_cost.h"
#include "llmsim/memory/activation_memory.h"
#include "llmsim/memory/memory_model.h"
#include "llmsim/run/expert_layout.h"
#include "llmsim/run/feasibility.h"
#include "llmsim/run/framework_profile.h"
#include "llmsim/run/lora_adapters.h"
#include "llmsim/run/stage_layout.h"
#include "llmsim/run/train_state_bytes.h"
#include "llmsim/train/fast_train.h"
#include "llmsim/train/step_terms.h"
#include "llmsim/train/train_layer_cost.h"
#include "llmsim/train/train_sim.h"
#include "memory/memory_test_util.h"
#include "train/train_test_util.h"

using namespace llmsim;
using llmsim::test::preset_model;
using llmsim::test::preset_system;

namespace {

double item(const sim::MemoryResult& r, const std::string& name) {
  for (const auto& i : r.gpu)
    if (i.name == name) return i.bytes;
  return 0;
}

sim::RunSpec llama7b_zero3(DType precision) {
  sim::RunSpec r;
  r.workload = sim::Workload::Pretrain;
  r.par.gpus = 8;
  r.train.zero_stage = 3;
  r.train.seq_len = 2048;
  r.train.precision = precision;
  return sim::with_defaults(r);
}

// Trainable parameters one GPU's layer cost counts (the time model: optimizer, gradient reduction).
double layer_trainable(const model::ModelSpec& m, const hardware::SystemSpec& sys, const sim::RunSpec& run,
                       std::int64_t layer) {
  const sim::ComputeCost compute(sys, run.train.attn_kernel);
  const sim::CommCost comm(sys);
  const sim::LayerCostInputs in{m, run, sim::framework_profile(run.train.framework), compute, comm, {}};
  return sim::layer_cost(in, m.is_moe_layer(layer) ? sim::LayerKind::Moe : sim::LayerKind::Dense, layer)
      .trainable_params;
}

}  // namespace

TEST_CASE("activation dtype: one definition; tf32 activations are stored as fp32 in memory and in time") {
  CHECK(activation_dtype(DType::TF32) == DType::FP32);
  CHECK(activation_dtype(DType::FP32) == DType::FP32);
  CHECK(activation_dtype(DType::FP16) == DType::FP16);
  CHECK(activation_dtype(DType::BF16) == DType::BF16);
  CHECK(activation_dtype(DType::FP8) == DType::BF16);  // fp8 recipes keep activations in 16 bits
  const auto m = preset_model("llama2-7b");
  const auto sys = preset_system("a800-nvlink");
  const double tf32 = item(sim::evaluate_memory(m, sys, llama7b_zero3(DType::TF32)), "activations");
  const double fp32 = item(sim::evaluate_memory(m, sys, llama7b_zero3(DType::FP32)), "activations");
  const double bf16 = item(sim::evaluate_memory(m, sys, llama7b_zero3(DType::BF16)), "activations");
  REQUIRE(bf16 > 0);
  CHECK(tf32 == doctest::Approx(fp32));
  CHECK(tf32 > 1.5 * bf16);  // was equal to bf16 before the fix
}

TEST_CASE("LoRA on MoE experts: the time model trains the adapters the memory model stores") {
  const auto m = preset_model("mixtral-8x7b");
  const auto sys = preset_system("dgx-h100");
  sim::RunSpec run;
  run.workload = sim::Workload::Finetune;
  run.par.gpus = 8;
  run.train.finetune = sim::FinetuneKind::Lora;
  run.train.lora_rank = 16;
  run.train.seq_len = 1024;
  run.train.zero_stage = 3;
  run.train.framework = sim::Framework::Fsdp;
  run = sim::with_defaults(run);
  // Hand count for one mixtral layer at r = 16 (hidden 4096, 32 q heads and 8 kv heads of 128, 8 experts
  // of ffn 14336, gated): q 16*(4096+4096) + k, v 16*(4096+1024) each + o 16*(4096+4096) = 425,984;
  // per expert gate, up 16*(4096+14336) each + down 16*(14336+4096) = 884,736, times 8 = 7,077,888.
  const sim::LoraParams lp = sim::lora_layer_params(m, true, 16, {});
  CHECK(lp.unrouted == 425984.0);
  CHECK(lp.routed == 7077888.0);
  // Memory: the whole model's trainable parameters are those 32 layers' adapters (~240 M).
  const sim::MemoryResult mem = sim::evaluate_memory(m, sys, run);
  CHECK(mem.params_trainable == 32 * (425984 + 7077888));
  double time_side = 0;
  for (std::int64_t l = 0; l < m.num_layers; ++l) time_side += layer_trainable(m, sys, run, l);
  CHECK(time_side == doctest::Approx(static_cast<double>(mem.params_trainable)));

  // Sharded over TP 2 and EP 2 (dp 4): both sides hold (unrouted + routed / 2) / 2 per layer.
  sim::RunSpec sharded = run;
  sharded.par.tp = 2;
  sharded.par.ep = 2;
  sharded.par.dp = 0;
  sharded = sim::with_defaults(sharded);
  CHECK(layer_trainable(m, sys, sharded, 0) == doctest::Approx(lp.per_gpu(2, 2)));
  CHECK(lp.per_gpu(2, 2) == doctest::Approx((425984.0 + 7077888.0 / 2) / 2));
}

TEST_CASE("LoRA on a dense model: adapters of the targeted projections only") {
  const auto m = preset_model("llama2-7b");
  // q and v at r = 8 (lit-gpt's default targets): 8*(4096+4096) * 2 = 131,072 per layer.
  const sim::LoraParams lp = sim::lora_layer_params(m, false, 8, {"q", "v"});
  CHECK(lp.unrouted == 131072.0);
  CHECK(lp.routed == 0.0);
  CHECK(sim::lora_adapters(m, false, {"q", "v"}).size() == 2);
  CHECK(sim::lora_adapters(m, false, {}).size() == 7);
}

TEST_CASE("pipeline stage layout: even split, the remainder on the last stages; interleaved chunks") {
  // 30 layers over 4 stages: 7, 7, 8, 8 (the last 30 % 4 = 2 stages take one more).
  const sim::StageLayers s0 = sim::stage_layers(0, 4, 30), s1 = sim::stage_layers(1, 4, 30);
  const sim::StageLayers s2 = sim::stage_layers(2, 4, 30), s3 = sim::stage_layers(3, 4, 30);
  CHECK(s0.first == 0);
  CHECK(s0.count == 7);
  CHECK(s1.first == 7);
  CHECK(s1.count == 7);
  CHECK(s2.first == 14);
  CHECK(s2.count == 8);
  CHECK(s3.first == 22);
  CHECK(s3.count == 8);
  // 32 layers, pp 4, vp 2: chunks of 4; stage 1 runs layers 4-7 and 20-23.
  CHECK(sim::stage_chunk(1, 0, 4, 2, 32).first == 4);
  CHECK(sim::stage_chunk(1, 1, 4, 2, 32).first == 20);
  CHECK(sim::stage_chunk(1, 1, 4, 2, 32).count == 4);
  CHECK(sim::stage_chunk(3, 0, 4, 1, 30).first == 22);  // vp 1: the whole stage
}

TEST_CASE("interleaving over layers pp x vp does not divide: the embedding and the loss count as layers (Megatron)") {
  // Llama-3.1-405B, 126 layers at pp 8 x vp 8: (126 + 2) / 64 = 2 slots per chunk; the first chunk of stage 0 and the
  // last chunk of stage 7 give one to the embedding and the loss (transformer_block.py get_num_layers_to_build).
  CHECK(sim::embedding_loss_split(8, 8, 126));
  CHECK_FALSE(sim::embedding_loss_split(8, 8, 128));  // divides: the plain split
  CHECK_FALSE(sim::embedding_loss_split(8, 8, 125));  // 127 does not divide either: refused (feasibility)
  CHECK_FALSE(sim::embedding_loss_split(8, 1, 126));  // no interleaving: the plain uneven split
  const auto first = sim::stage_chunk(0, 0, 8, 8, 126), second = sim::stage_chunk(1, 0, 8, 8, 126);
  CHECK(first.first == 0);
  CHECK(first.count == 1);
  CHECK(second.first == 1);
  CHECK(second.count == 2);
  CHECK(sim::stage_chunk(0, 1, 8, 8, 126).first == 15);  // virtual stage 8: slots 16-17, layers 15-16
  const auto last = sim::stage_chunk(7, 7, 8, 8, 126);
  CHECK(last.first == 125);
  CHECK(last.count == 1);
  // Every layer once, in model order over the virtual stages.
  std::int64_t next = 0;
  for (std::int64_t c = 0; c < 8; ++c)
    for (std::int64_t s = 0; s < 8; ++s) {
      const auto ch = sim::stage_chunk(s, c, 8, 8, 126);
      CHECK(ch.first == next);
      next += ch.count;
    }
  CHECK(next == 126);
  // A stage's count is its chunks' (15 on the two ends, 16 between), the memory model's and the fast estimator's.
  CHECK(sim::stage_layers(0, 8, 126, 8).count == 15);
  CHECK(sim::stage_layers(3, 8, 126, 8).count == 16);
  CHECK(sim::stage_layers(7, 8, 126, 8).count == 15);
  CHECK(sim::stage_layers(7, 8, 126).count == 16);  // without interleaving the remainder goes to the last stages
  // The run is feasible, and the fast estimator's memory agrees with the memory model's on it.
  const auto m = preset_model("llama3.1-405b");
  const auto sys = preset_system("dgx-h100");
  sim::RunSpec r;
  r.workload = sim::Workload::Pretrain;
  r.par.gpus = 1024;
  r.par.tp = 8;
  r.par.pp = 8;
  r.par.vp = 8;
  r.par.cp = 2;
  r.train.micro_batch = 1;
  r.train.global_batch = 512;
  r.train.seq_len = 8192;
  r.train.framework = sim::Framework::Megatron;
  r = sim::with_defaults(r);
  CHECK(sim::training_problems(m, sys, r).empty());
  sim::FastTrainEvaluator fe(m, sys);
  CHECK(fe.memory(r).gpu_bytes == doctest::Approx(sim::evaluate_memory(m, sys, r).gpu_bytes).epsilon(1e-6));
  // The closed-form step over the same chunks agrees with the step graph (the search's 2 % for most runs).
  const auto full = sim::simulate_training(m, sys, r);
  REQUIRE(full.valid());
  CHECK(fe.estimate(r).step_time_s == doctest::Approx(full.step_time_s.value).epsilon(0.03));
  r.par.vp = 4;  // 126 over 32 chunks: 128 / 32 = 4, the same rule
  CHECK(sim::training_problems(m, sys, r).empty());
  r.par.vp = 3;  // 128 / 24 is not whole: refused with both counts
  const auto why = sim::training_problems(m, sys, r);
  REQUIRE_FALSE(why.empty());
  CHECK(why.front().find("pp 8 x vp 3 = 24 to divide the 126 layers, or the 128 with the embedding") !=
        std::string::npos);
}

TEST_CASE("training keeps expert parallelism across data-parallel ranks in the fast estimator too") {
  // tp 2 x ep 2 on 8 GPUs (dp 4): EP lies across DP ranks; the fast estimator's stage parameters must not take
  // the inference layout (EP inside the TP group) for lack of a dp.
  const auto m = preset_model("mixtral-8x7b");
  const auto sys = preset_system("dgx-h100");
  sim::RunSpec r;
  r.workload = sim::Workload::Pretrain;
  r.par.gpus = 8;
  r.par.tp = 2;
  r.par.ep = 2;
  r.train.micro_batch = 1;
  r.train.global_batch = 4;
  r.train.seq_len = 2048;
  r.train.zero_stage = 1;
  r.train.framework = sim::Framework::Megatron;
  r = sim::with_defaults(r);
  REQUIRE(r.par.dp == 4);
  CHECK_FALSE(sim::experts_within_tp(r.par));
  sim::FastTrainEvaluator fe(m, sys);
  CHECK(fe.memory(r).gpu_bytes == doctest::Approx(sim::evaluate_memory(m, sys, r).gpu_bytes).epsilon(1e-9));
}

TEST_CASE("micro-batches per step: global batch / (micro-batch x dp)") {
  sim::RunSpec r;
  r.par.gpus = 64;
  r.par.tp = 8;
  r.train.micro_batch = 2;
  r.train.global_batch = 512;
  CHECK(sim::micro_batches_per_step(sim::with_defaults(r)) == 32);  // dp 8: 512 / 16
  r.train.global_batch = 0;
  CHECK(sim::micro_batches_per_step(sim::with_defaults(r)) == 1);  // the default global batch is one micro-batch x dp
}

TEST_CASE("GPipe holds every micro-batch's activations; 1F1B at most pp of them (memory model and fast estimator)") {
  CHECK(sim::in_flight_factor(0, 4, 1, 16, sim::PipelineSchedule::OneFOneB) == 4.0);
  CHECK(sim::in_flight_factor(3, 4, 1, 16, sim::PipelineSchedule::OneFOneB) == 1.0);
  CHECK(sim::in_flight_factor(0, 4, 1, 16, sim::PipelineSchedule::GPipe) == 16.0);
  CHECK(sim::in_flight_factor(3, 4, 1, 16, sim::PipelineSchedule::GPipe) == 16.0);
  CHECK(sim::in_flight_factor(0, 1, 1, 16, sim::PipelineSchedule::GPipe) == 1.0);  // no pipeline
  const auto m = preset_model("llama2-7b");
  const auto sys = preset_system("dgx-a100-80gb");
  sim::RunSpec r;
  r.workload = sim::Workload::Pretrain;
  r.par.gpus = 4;
  r.par.pp = 4;
  r.train.micro_batch = 1;
  r.train.global_batch = 16;
  r.train.seq_len = 2048;
  r.train.recompute = sim::Recompute::Full;
  r.train.framework = sim::Framework::Megatron;
  r = sim::with_defaults(r);
  sim::RunSpec g = r;
  g.train.schedule = sim::PipelineSchedule::GPipe;
  const double a1 = item(sim::evaluate_memory(m, sys, r), "activations");
  const double ag = item(sim::evaluate_memory(m, sys, g), "activations");
  REQUIRE(a1 > 0);
  // The peak stage of 1F1B (stage 0) holds 4 micro-batches of its 8 layers; under GPipe every stage holds 16.
  CHECK(ag / a1 == doctest::Approx(16.0 / 4.0).epsilon(0.15));
  sim::FastTrainEvaluator fe(m, sys);
  CHECK(fe.memory(g).gpu_bytes == doctest::Approx(sim::evaluate_memory(m, sys, g).gpu_bytes).epsilon(1e-6));
}

TEST_CASE("step-tail terms the step graph and the fast estimator share, derived by hand") {
  const auto m = preset_model("llama2-7b");  // hidden 4096
  auto sys = preset_system("a800-nvlink");   // 8 GPUs per node
  sim::TrainSpec t;
  t.micro_batch = 2;
  t.seq_len = 4096;
  t.precision = DType::BF16;
  sim::ParallelSpec p;
  p.tp = 2;
  p.cp = 2;
  p.dp = 4;
  p.gpus = 16;
  // One micro-batch's activations to the next stage: 2 x (4096 / cp 2) tokens x 4096 x 2 B / tp 2.
  CHECK(sim::pipeline_send_bytes(m, t, p) == 2.0 * 2048 * 4096 * 2 / 2);
  t.precision = DType::TF32;  // stored as fp32
  CHECK(sim::pipeline_send_bytes(m, t, p) == 2.0 * 2048 * 4096 * 4 / 2);
  // A stage spans tp x cp x dp = 16 ranks: its neighbour is on another 8-GPU node.
  CHECK(sim::pipeline_crosses_nodes(p, 8));
  p.dp = 1;
  CHECK_FALSE(sim::pipeline_crosses_nodes(p, 8));
  p.dp = 4;
  // DP ranks are tp x cp = 4 apart: two per node, over two nodes.
  const sim::CommGroup g = sim::dp_group(p, 8);
  CHECK(g.size == 4);
  CHECK(g.per_node == 2);
  CHECK(sim::grad_reduce_collective(0) == model::Collective::AllReduce);
  CHECK(sim::grad_reduce_collective(2) == model::Collective::ReduceScatter);
  // The optimizer partition: divided over DP from ZeRO-1 on; the all-gather after the step only at ZeRO-1/2.
  t.zero_stage = 0;
  CHECK(sim::optimizer_shard(8e9, t, 4) == 8e9);
  CHECK_FALSE(sim::gathers_params_after_step(t, 4));
  t.zero_stage = 1;
  CHECK(sim::optimizer_shard(8e9, t, 4) == 2e9);
  CHECK(sim::gathers_params_after_step(t, 4));
  CHECK_FALSE(sim::gathers_params_after_step(t, 1));
  t.zero_stage = 3;
  CHECK_FALSE(sim::gathers_params_after_step(t, 4));
  // CPU Adam runs the partitions of the node's 8 GPUs (only 4 when the run has 4) at the profile's rate.
  sys.efficiency.cpu_adam_params_per_s = 1e9;
  CHECK(sim::cpu_adam_seconds(2e9, sys, 16) == doctest::Approx(2e9 * 8 / 1e9));
  CHECK(sim::cpu_adam_seconds(2e9, sys, 4) == doctest::Approx(2e9 * 4 / 1e9));
  // The rate is defined on fp32 parameters, gradients and moments (4 + 2 x (4 + 8) = 28 B): pure bf16
  // (torchtune's dtype=bf16: 2 + 2 x (2 + 4) = 14 B) streams half as much, twice as fast.
  sim::TrainStateBytes mixed;  // 16-bit weights, fp32 master and states
  CHECK(sim::host_update_bytes(mixed) == 28);
  sim::TrainStateBytes pure_bf16;
  pure_bf16.master = 0;
  pure_bf16.states = 4;
  CHECK(sim::host_update_bytes(pure_bf16) == 14);
  CHECK(sim::cpu_adam_seconds(2e9, sys, 4, 14) == doctest::Approx(2e9 * 4 / 2e9));
  sys.efficiency.cpu_adam_params_per_s = 0;
  CHECK(sim::cpu_adam_seconds(2e9, sys, 16) == 0);
  CHECK(sim::param_bytes_16bit(1e9) == 2e9);
  CHECK(sim::offload_shard_bytes(1e9, 4) == 5e8);
}

TEST_CASE("QLoRA with context parallelism: both sides train the same adapters; CP shards tokens, not them") {
  const auto m = preset_model("llama2-7b");
  const auto sys = preset_system("a800-nvlink");
  sim::RunSpec run;
  run.workload = sim::Workload::Finetune;
  run.par.gpus = 4;
  run.par.cp = 2;
  run.train.finetune = sim::FinetuneKind::Qlora;
  run.train.lora_rank = sim::kQloraDefaultRank;
  run.train.base_quant = model::WeightQuant::Nf4;
  run.train.seq_len = 4096;
  run.train.framework = sim::Framework::Fsdp;
  run = sim::with_defaults(run);
  const sim::MemoryResult mem = sim::evaluate_memory(m, sys, run);
  REQUIRE(mem.valid());
  const sim::LoraParams lp = sim::lora_layer_params(m, false, sim::kQloraDefaultRank, {});
  CHECK(mem.params_trainable == static_cast<std::int64_t>(32 * lp.unrouted));
  double time_side = 0;
  for (std::int64_t l = 0; l < m.num_layers; ++l) time_side += layer_trainable(m, sys, run, l);
  CHECK(time_side == doctest::Approx(static_cast<double>(mem.params_trainable)));
  // The frozen base is stored in NF4 (4.127 bits per weight on the linear layers) on both sides.
  CHECK(model::stored_dtype(run.train.base_quant, DType::BF16) == DType::NF4);
  CHECK(sim::frozen_linear_bytes(run.train) ==
        doctest::Approx(model::quantized_weight_bytes(model::WeightQuant::Nf4, DType::BF16)));
  // CP 2 halves the activations each GPU stores (its half of the sequence), not the adapters.
  sim::RunSpec no_cp = run;
  no_cp.par.cp = 1;
  no_cp.par.dp = 0;
  no_cp.train.global_batch = 0;
  no_cp = sim::with_defaults(no_cp);
  const sim::MemoryResult full = sim::evaluate_memory(m, sys, no_cp);
  REQUIRE(full.valid());
  CHECK(item(mem, "activations") == doctest::Approx(item(full, "activations") / 2).epsilon(0.02));
  CHECK(layer_trainable(m, sys, no_cp, 0) == doctest::Approx(layer_trainable(m, sys, run, 0)));
}

TEST_CASE("expert imbalance: one rule for the training step, the fast estimator and the inference iteration") {
  // The rule by hand: a routed-expert GEMM of 100 rows, 1,000 FLOPs and 500 bytes of which 300 are weights, at 2x.
  model::Operator g;
  g.kind = model::OpKind::Gemm;
  g.routed_expert = true;
  g.m = 100;
  g.fwd_flops = 1000;
  g.fwd_bytes = 500;
  const auto busy = model::on_busiest_expert_rank(g, 2.0, 300);
  CHECK(busy.m == 200);
  CHECK(busy.fwd_flops == 2000);
  CHECK(busy.fwd_bytes == 300 + 200 * 2);
  model::Operator a2a;
  a2a.kind = model::OpKind::MoeComm;
  a2a.comm_bytes = 1e6;
  CHECK(model::on_busiest_expert_rank(a2a, 2.0, 0).comm_bytes == 2e6);
  g.routed_expert = false;  // attention, dense MLPs, the router: every rank the same
  CHECK(model::on_busiest_expert_rank(g, 2.0, 300).fwd_flops == 1000);
  CHECK(model::on_busiest_expert_rank(a2a, 0.5, 0).comm_bytes == 1e6);  // below 1: balanced

  // A training step with expert parallelism waits for the busiest rank; the fast estimator prices the same.
  const auto m = preset_model("mixtral-8x7b");
  const auto sys = preset_system("dgx-h100");
  sim::RunSpec r;
  r.workload = sim::Workload::Pretrain;
  r.par.gpus = 64;
  r.par.pp = 4;
  r.par.ep = 8;
  r.train.micro_batch = 1;
  r.train.global_batch = 256;
  r.train.seq_len = 4096;
  r.train.recompute = sim::Recompute::Full;
  r.train.zero_stage = 1;
  r.train.framework = sim::Framework::Megatron;
  r = sim::with_defaults(r);
  sim::RunSpec skewed = r;
  skewed.par.expert_imbalance = 2.0;
  const auto even = sim::simulate_training(m, sys, r), busy_step = sim::simulate_training(m, sys, skewed);
  REQUIRE(even.valid());
  REQUIRE(busy_step.valid());
  // Mixtral's experts hold most of its FLOPs: twice their rows on the busiest rank lengthen the step by well
  // over a third, and the model FLOPs per step (and so the tokens) stay the same.
  CHECK(busy_step.step_time_s.value > 1.35 * even.step_time_s.value);
  CHECK(busy_step.step_time_s.value < 2.0 * even.step_time_s.value);
  sim::FastTrainEvaluator fe(m, sys);
  const double fe_even = fe.estimate(r).step_time_s, fe_busy = fe.estimate(skewed).step_time_s;
  CHECK(fe_busy / fe_even == doctest::Approx(busy_step.step_time_s.value / even.step_time_s.value).epsilon(0.05));
  // Without expert parallelism every rank holds every expert: nothing waits.
  sim::RunSpec dense = r, dense_skewed = r;
  dense.par.ep = dense_skewed.par.ep = 1;
  dense_skewed.par.expert_imbalance = 2.0;
  CHECK(sim::simulate_training(m, sys, dense_skewed).step_time_s.value ==
        doctest::Approx(sim::simulate_training(m, sys, dense).step_time_s.value));
}

TEST_CASE("expert parallelism: a rank reads and casts only its own experts' weights (training and inference)") {
  // By hand: a routed-expert GEMM whose forward moves 500 bytes, 300 of them every expert's weights, at ep 4:
  // it reads a quarter of them (225 bytes fewer); backward reads them again and writes their gradient.
  model::Operator g;
  g.kind = model::OpKind::Gemm;
  g.routed_expert = true;
  g.fwd_flops = 1000;
  g.fwd_bytes = 500;
  g.bwd_bytes = 1000;
  g.bwd_weight_bytes = 500;
  g.bwd_weight_flops = 1000;
  const auto own = model::on_own_experts(g, 4, 300);
  CHECK(own.fwd_bytes == doctest::Approx(275));
  CHECK(own.bwd_bytes == doctest::Approx(550));
  CHECK(own.bwd_weight_bytes == doctest::Approx(275));
  CHECK(own.fwd_flops == 1000);  // the same routed rows on average
  model::Operator cast = g;      // unpacking or casting the weights themselves
  cast.kind = model::OpKind::Elementwise;
  cast.role = model::OpRole::Dequant;
  cast.fwd_bytes = 400;
  CHECK(model::on_own_experts(cast, 4, 0).fwd_bytes == doctest::Approx(100));
  g.routed_expert = false;
  CHECK(model::on_own_experts(g, 4, 300).fwd_bytes == 500);
  CHECK(model::on_own_experts(own, 1, 300).fwd_bytes == own.fwd_bytes);

  // FP8 training of Mixtral-8x7B: the per-micro-batch weight kernels (OpRole::Dequant) cover the attention
  // projections, 4096 x (4096 + 1024 + 1024 + 4096) = 41.9 M per layer, and the experts, 8 x 3 x 4096 x 14336
  // = 1,409.3 M. At ep 8 a rank touches 41.9 + 1,409.3 / 8 = 218.1 M of the 1,451.2 M: 0.150 of the time at
  // ep 1 (memory-bound kernels; launch floors add a little). Before the rule every rank cast all 8 experts.
  const auto m = preset_model("mixtral-8x7b");
  const auto sys = preset_system("dgx-h100");
  sim::RunSpec r = test::pretrain(8, 1, 8, 4096);
  r.train.precision = DType::FP8;
  r.train.framework = sim::Framework::Megatron;
  sim::RunSpec ep8 = r;
  ep8.par.ep = 8;
  const auto one = sim::simulate_training(m, sys, sim::with_defaults(r));
  const auto eight = sim::simulate_training(m, sys, sim::with_defaults(ep8));
  REQUIRE(one.valid());
  REQUIRE(eight.valid());
  const double cast_one = test::share(one.by_module, "dequantization");
  REQUIRE(cast_one > 0);
  CHECK(test::share(eight.by_module, "dequantization") / cast_one == doctest::Approx(0.150).epsilon(0.1));
  CHECK(eight.step_time_s.value < one.step_time_s.value);
}

TEST_CASE("ZeRO-Offload copies as DeepSpeed's stage_1_and_2.py and stage3.py move them, derived by hand") {
  auto sys = preset_system("a800-nvlink");  // PCIe gen4 x16: 31.5 GB/s x 0.85 pinned
  const sim::CommCost comm(sys);
  const auto& ds = sim::framework_profile(sim::Framework::DeepSpeed);
  sim::TrainSpec t;
  t.zero_stage = 2;
  t.offload = sim::Offload::Optimizer;
  const double elements = 8e9;  // over dp = 8: the rank copies its 1e9 elements
  const double pinned = sys.node.pcie_bandwidth_Bps * sys.efficiency.pcie_bandwidth.value;
  const double h2d = sys.efficiency.pageable_h2d_Bps, d2h = sys.efficiency.pageable_d2h_Bps;
  REQUIRE(h2d < pinned);
  REQUIRE(d2h < pinned);
  const double overhead = 10e-6;
  // Four micro-batches: the first copies its 16-bit gradients to the (pageable) host buffer; the middle
  // ones first bring the host sum back; the last brings it back and sends the fp32 gradient.
  const auto first = sim::offload_bucket_copies(comm, ds, t, elements, 8, 0, 4);
  CHECK(first.h2d.value == 0);
  CHECK(first.d2h.value == doctest::Approx(2e9 / d2h + overhead));
  const auto middle = sim::offload_bucket_copies(comm, ds, t, elements, 8, 1, 4);
  CHECK(middle.h2d.value == doctest::Approx(2e9 / h2d + overhead));
  CHECK(middle.d2h.value == doctest::Approx(2e9 / d2h + overhead));
  const auto last = sim::offload_bucket_copies(comm, ds, t, elements, 8, 3, 4);
  CHECK(last.h2d.value == doctest::Approx(2e9 / h2d + overhead));
  CHECK(last.d2h.value == doctest::Approx(4e9 / d2h + overhead));
  // One micro-batch per step: the fp32 gradient only.
  const auto once = sim::offload_bucket_copies(comm, ds, t, elements, 8, 0, 1);
  CHECK(once.h2d.value == 0);
  CHECK(once.d2h.value == doctest::Approx(4e9 / d2h + overhead));
  // ZeRO-1 copies only at the boundary, without the round trip.
  t.zero_stage = 1;
  CHECK(sim::offload_bucket_copies(comm, ds, t, elements, 8, 3, 4).h2d.value == 0);
  t.zero_stage = 2;
  // pin_memory: the pinned link's rate.
  t.offload_pin_memory = true;
  CHECK(sim::offload_bucket_copies(comm, ds, t, elements, 8, 3, 4).d2h.value ==
        doctest::Approx(4e9 / pinned + overhead));
  t.offload_pin_memory.reset();
  // After CPU Adam the fp32 partition (always pinned) comes back whole.
  CHECK(sim::offload_param_return(comm, ds, t, 1e9).value == doctest::Approx(4e9 / pinned + overhead));
  // DeepSpeed queues them on the blocking reduction's stream; with overlap_comm on their own, but a
  // pageable copy still holds the host thread that launches the compute.
  CHECK(sim::offload_copies_on_compute_stream(ds, t));
  t.overlap_grad_reduce = true;
  CHECK(sim::offload_copies_on_compute_stream(ds, t));
  t.offload_pin_memory = true;
  CHECK_FALSE(sim::offload_copies_on_compute_stream(ds, t));
  t.offload_pin_memory.reset();
  t.overlap_grad_reduce.reset();
  // The frameworks without these rules: the 16-bit partition, pinned, once, on its own stream.
  const auto& fsdp = sim::framework_profile(sim::Framework::Fsdp);
  const auto plain = sim::offload_bucket_copies(comm, fsdp, t, elements, 8, 3, 4);
  CHECK(plain.h2d.value == 0);
  CHECK(plain.d2h.value == doctest::Approx(2e9 / pinned + overhead));
  CHECK(sim::offload_param_return(comm, fsdp, t, 1e9).value == doctest::Approx(2e9 / pinned + overhead));
  t.zero_stage = 3;
  CHECK(sim::offload_bucket_copies(comm, fsdp, t, elements, 8, 3, 4).d2h.value ==
        doctest::Approx(2e9 / pinned + overhead));
  CHECK(sim::offload_param_return(comm, fsdp, t, 1e9).value == doctest::Approx(2e9 / pinned + overhead));
  CHECK_FALSE(sim::offload_copies_on_compute_stream(fsdp, t));
  // Stated pageable, its one copy runs at the host's staging rate (and holds the host).
  t.offload_pin_memory = false;
  CHECK(sim::offload_bucket_copies(comm, fsdp, t, elements, 8, 3, 4).d2h.value ==
        doctest::Approx(2e9 / d2h + overhead));
  CHECK(sim::offload_copies_on_compute_stream(fsdp, t));
  t.offload_pin_memory.reset();
  // DeepSpeed's stage3.py: out to the host buffer and back every micro-batch, 16-bit; at the boundary the
  // sum goes out once more through a host-side cast (a pageable temporary, pinned buffers or not), and the
  // updated partition returns the same way.
  const auto z3_first = sim::offload_bucket_copies(comm, ds, t, elements, 8, 0, 4);
  CHECK(z3_first.h2d.value == doctest::Approx(2e9 / h2d + overhead));
  CHECK(z3_first.d2h.value == doctest::Approx(2e9 / d2h + overhead));
  const auto z3_last = sim::offload_bucket_copies(comm, ds, t, elements, 8, 3, 4);
  CHECK(z3_last.h2d.value == doctest::Approx(2e9 / h2d + overhead));
  CHECK(z3_last.d2h.value == doctest::Approx(2 * (2e9 / d2h + overhead)));
  CHECK(sim::offload_param_return(comm, ds, t, 1e9).value == doctest::Approx(2e9 / h2d + overhead));
  t.offload_pin_memory = true;
  const auto z3_pinned = sim::offload_bucket_copies(comm, ds, t, elements, 8, 3, 4);
  CHECK(z3_pinned.h2d.value == doctest::Approx(2e9 / pinned + overhead));
  CHECK(z3_pinned.d2h.value == doctest::Approx(2e9 / pinned + 2e9 / d2h + 2 * overhead));
  CHECK(sim::offload_param_return(comm, ds, t, 1e9).value == doctest::Approx(2e9 / h2d + overhead));
  CHECK_FALSE(sim::offload_copies_on_compute_stream(ds, t));
  t.offload_pin_memory.reset();
  // A pageable copy never runs faster than the pinned link.
  sys.efficiency.pageable_d2h_Bps = 10 * pinned;
  CHECK(sim::CommCost(sys).host_copy(1e9, sim::HostMemory::Pageable, sim::CopyDirection::DeviceToHost).value ==
        doctest::Approx(1e9 / pinned + overhead));
}
