// Unit tests of the memory model: each technique moves the bytes it should, infeasible runs say why.
#include <doctest/doctest.h>

#include <cmath>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "llmsim/core/units.h"
#include "llmsim/memory/memory_advice.h"
#include "llmsim/model/hf_config.h"
#include "llmsim/model/param_count.h"
#include "llmsim/run/engine_profile.h"
#include "llmsim/run/framework_profile.h"
#include "memory/memory_test_util.h"

namespace lt = llmsim::test;
namespace sim = llmsim::sim;
using llmsim::units::GiB;

namespace {
// The bytes of one kind of GPU memory item the memory model gives a fixed inference batch under framework `f`
// (and engine release `release`).
double inference_item_bytes(const llmsim::model::ModelSpec& m, const llmsim::hardware::SystemSpec& sys,
                            sim::Framework f, std::int64_t batch, std::int64_t input_len, std::int64_t output_len,
                            sim::MemoryKind kind, std::optional<llmsim::Version> release = std::nullopt) {
  sim::RunSpec run;
  run.workload = sim::Workload::Inference;
  run.infer.framework = f;
  run.infer.batch = batch;
  run.infer.input_len = input_len;
  run.infer.output_len = output_len;
  run.infer.engine_version = release;
  double bytes = 0;
  for (const auto& i : sim::evaluate_memory(m, sys, run).gpu)
    if (i.kind == kind) bytes += i.bytes;
  return bytes;
}
// What backward has freed when the optimizer steps: the activations, logits, recompute working set and autocast
// copies, less what the gradients allocated in backward took over of them (the negative gradient_overlap item).
double freed_before_step(const sim::MemoryResult& res) {
  return lt::item(res, "activations") + lt::item(res, "logits_and_loss") + lt::item(res, "recompute_working_set") +
         lt::item(res, "amp_weight_copies") + lt::item(res, "gradient_overlap");
}
sim::RunSpec train_run(std::int64_t gpus) {
  sim::RunSpec r;
  r.par.gpus = gpus;
  r.train.seq_len = 2048;
  return r;
}
}  // namespace

TEST_CASE("structural problems are results, not exceptions") {
  const auto m = lt::preset_model("llama2-7b");
  const auto sys = lt::preset_system("a800-nvlink");
  auto r = train_run(8);
  r.par.tp = 3;
  r.par.dp = 1;
  auto res = sim::evaluate_memory(m, sys, r);
  REQUIRE_FALSE(res.valid());
  CHECK_FALSE(res.fits());
  CHECK(res.problems.front().find("tp 3 does not divide the 32 attention heads") != std::string::npos);
  r = train_run(8);
  r.par.pp = 40;
  r.par.dp = 1;
  r.par.gpus = 40;
  CHECK(sim::evaluate_memory(m, sys, r).problems.front().find("exceeds the 32 layers") != std::string::npos);
  r = train_run(10);
  r.par.tp = 4;  // 10 GPUs are not a multiple of 4
  CHECK_FALSE(sim::evaluate_memory(m, sys, r).valid());
  // GQA: llama2-70b has 8 KV heads; TP 16 divides the 64 query heads but not the KV heads.
  r = train_run(16);
  r.par.tp = 16;
  CHECK_FALSE(sim::evaluate_memory(lt::preset_model("llama2-70b"), sys, r).valid());
}

TEST_CASE("uneven pipeline stages are valid (llama3.1-405b: 126 layers on PP16)") {
  const auto m = lt::preset_model("llama3.1-405b");
  auto r = train_run(128);
  r.par.tp = 8;
  r.par.pp = 16;
  r.train.recompute = sim::Recompute::Full;
  r.train.framework = sim::Framework::Megatron;
  const auto res = sim::evaluate_memory(m, lt::preset_system("dgx-h100"), r);
  CHECK(res.valid());
  CHECK(res.params_per_gpu > 0);
}

TEST_CASE("ZeRO stages shard exactly what they should") {
  const auto m = lt::preset_model("llama2-7b");
  const auto sys = lt::preset_system("a800-nvlink");
  auto r = train_run(8);
  r.train.framework = sim::Framework::DeepSpeed;
  const auto z0 = sim::evaluate_memory(m, sys, r);
  r.train.zero_stage = 3;
  const auto z3 = sim::evaluate_memory(m, sys, r);
  CHECK(lt::item(z3, "weights") == doctest::Approx(lt::item(z0, "weights") / 8));
  CHECK(lt::item(z3, "gradients") == doctest::Approx(lt::item(z0, "gradients") / 8));
  CHECK(lt::item(z3, "optimizer_states") == doctest::Approx(lt::item(z0, "optimizer_states") / 8));
  CHECK(lt::item(z3, "zero3_gathered_params") > 0);
  CHECK(lt::item(z3, "activations") == doctest::Approx(lt::item(z0, "activations")));
}

TEST_CASE("optimizer offload moves optimizer states to host memory, per node") {
  const auto m = lt::preset_model("llama2-7b");
  const auto sys = lt::preset_system("rtx4090-pcie");
  auto r = train_run(8);
  r.train.zero_stage = 2;
  r.train.offload = sim::Offload::Optimizer;
  const auto res = sim::evaluate_memory(m, sys, r);
  CHECK(lt::item(res, "optimizer_states") == 0.0);
  // 8 GPUs each offload 12 B/param / 8 of optimizer states + 4 B/param / 8 of fp32 gradients = 16 B/param per node.
  CHECK(res.host_bytes == doctest::Approx(16.0 * static_cast<double>(res.params_total)).epsilon(0.001));
  r.train.zero_stage = 0;
  CHECK_FALSE(sim::evaluate_memory(m, sys, r).valid());  // offload needs ZeRO
}

TEST_CASE("parameter offload of a LoRA run puts the frozen base on the host too") {
  // Llama-2-70B, LoRA under ZeRO-3 with parameters and optimizer offloaded on one node of 8 GPUs: the node's
  // host holds the whole 16-bit base (8 shards of 2 B/param / 8), 128 GiB, besides the small adapters; before,
  // only the adapters were counted and a 64 GiB host "fit".
  const auto m = lt::preset_model("llama2-70b");
  const auto sys = lt::preset_system("a800-nvlink");
  auto r = train_run(8);
  r.workload = sim::Workload::Finetune;
  r.train.framework = sim::Framework::DeepSpeed;
  r.train.finetune = sim::FinetuneKind::Lora;
  r.train.lora_rank = 8;
  r.train.zero_stage = 3;
  r.train.offload = sim::Offload::OptimizerParams;
  const auto res = sim::evaluate_memory(m, sys, sim::with_defaults(r));
  REQUIRE(res.valid());
  double offloaded = 0;
  for (const auto& i : res.host)
    if (i.kind == sim::MemoryKind::OffloadedWeights) offloaded += i.bytes;
  const double base = 2.0 * static_cast<double>(res.params_total);
  // Host items are the node's: its 8 GPUs' shards hold the whole base (the adapters add < 1 %).
  CHECK(offloaded > 0.99 * base);
  CHECK(offloaded < 1.01 * base);
  CHECK(res.host_bytes > base);
}

TEST_CASE("DeepSpeed's step casts a (sub-)group's gradients to fp32 once backward has freed the activations") {
  // stage_1_and_2.py step() / stage3.py _prepare_fp32_grad_for_sub_group: flatten(grads).to(fp32), 2 + 4 B
  // per parameter of one group (stages 1-2) or one sub-group of <= sub_group_size = 1e9 (stage 3).
  const auto m = lt::preset_model("llama2-7b");
  const auto sys = lt::preset_system("a800-nvlink");
  auto r = train_run(1);
  r.train.framework = sim::Framework::DeepSpeed;
  r.train.seq_len = 256;
  r.train.recompute = sim::Recompute::Full;
  const auto freed = freed_before_step;  // no gradient overlap under ZeRO
  r.train.zero_stage = 3;
  const auto z3 = sim::evaluate_memory(m, sys, r);
  REQUIRE(static_cast<double>(z3.params_total) > 1e9);  // 6.74e9 parameters: the sub-group bounds the copy
  CHECK(lt::item(z3, "optimizer_step_copy") == doctest::Approx(6.0 * 1e9 - freed(z3)));
  CHECK(lt::item(z3, "optimizer_step_copy") > 5.5e9);  // 256 tokens free little
  r.par.gpus = r.par.dp = 8;
  r.train.zero_stage = 2;
  const auto z2 = sim::evaluate_memory(m, sys, r);
  CHECK(lt::item(z2, "optimizer_step_copy") ==
        doctest::Approx(6.0 * static_cast<double>(z2.params_total) / 8 - freed(z2)));
  // Stage 0 keeps no such copy; with the optimizer on the host the copy is made there.
  r.train.zero_stage = 0;
  CHECK(lt::item(sim::evaluate_memory(m, sys, r), "optimizer_step_copy") == 0.0);
  r.train.zero_stage = 2;
  r.train.offload = sim::Offload::Optimizer;
  CHECK(lt::item(sim::evaluate_memory(m, sys, r), "optimizer_step_copy") == 0.0);
  r.train.offload = sim::Offload::None;
  // Long sequences free more activations than the copy needs: the backward's peak stands.
  r.train.seq_len = 16384;
  r.train.recompute = sim::Recompute::None;
  const auto longer = sim::evaluate_memory(m, sys, r);
  REQUIRE(freed(longer) > 6.0 * static_cast<double>(longer.params_total) / 8);
  CHECK(lt::item(longer, "optimizer_step_copy") == 0.0);
  // Megatron's distributed optimizer keeps its fp32 gradients in the gradient buffer all along.
  r.train.framework = sim::Framework::Megatron;
  r.train.zero_stage = 1;
  r.train.seq_len = 256;
  CHECK(lt::item(sim::evaluate_memory(m, sys, r), "optimizer_step_copy") == 0.0);
}

TEST_CASE("torch's foreach AdamW step copies every v; the for-loop step one tensor's; the fused step none") {
  // torch/optim/adamw.py _multi_tensor_adamw: exp_avg_sq_sqrt = torch._foreach_sqrt(device_exp_avg_sqs) holds a
  // copy of the group's v while the update runs; the step comes after backward has freed the activations,
  // logits and autocast copies, and with gradients allocated in backward (one micro-batch) it finds all of
  // them live again, so it raises the peak by what the copy exceeds the freed bytes by.
  const auto m = lt::preset_model("llama2-7b");
  const auto sys = lt::preset_system("hgx-h200");
  auto r = train_run(1);
  r.workload = sim::Workload::Finetune;
  r.train.framework = sim::Framework::Hf;
  r.train.master_weights = false;  // pure bf16: v is bf16, 2 B per parameter
  r.train.seq_len = 512;
  r.train.recompute = sim::Recompute::Full;
  const auto fused = sim::evaluate_memory(m, sys, r);
  CHECK(lt::item(fused, "optimizer_step_copy") == 0.0);  // the hf profile's default: HF Trainer with torch >= 2.8
  const double params = static_cast<double>(fused.params_total);
  const double freed = freed_before_step(fused);
  r.train.optimizer_impl = sim::OptimizerImpl::Foreach;
  const auto foreach_step = sim::evaluate_memory(m, sys, r);
  CHECK(lt::item(foreach_step, "optimizer_step_copy") == doctest::Approx(2 * params - freed));
  // The peak is the step's: weights, gradients, m, v and the copy of v, 5 x 2 B per parameter.
  CHECK(sim::peak_gpu_bytes_as(foreach_step, sim::MemoryMeasure::Allocated) ==
        doctest::Approx(10 * params).epsilon(0.002));
  // The for-loop step takes one tensor at a time: Llama-2-7B's largest is the 32000 x 4096 embedding.
  r.train.optimizer_impl = sim::OptimizerImpl::ForLoop;
  const double loop = lt::item(sim::evaluate_memory(m, sys, r), "optimizer_step_copy");
  CHECK(loop == doctest::Approx(std::max(0.0, 2 * 32000.0 * 4096 - freed)));
  // Under AMP v is fp32; LoRA steps only the adapters; 8-bit Adam and offloaded steps make no copy here.
  r.train.optimizer_impl = sim::OptimizerImpl::Foreach;
  r.train.master_weights = true;
  const auto amp = sim::evaluate_memory(m, sys, r);
  CHECK(lt::item(amp, "optimizer_step_copy") == doctest::Approx(4 * params - freed_before_step(amp)));
  r.train.optimizer = sim::Optimizer::Adam8bit;
  CHECK(lt::item(sim::evaluate_memory(m, sys, r), "optimizer_step_copy") == 0.0);
  r.train.optimizer = sim::Optimizer::Adam;
  r.train.finetune = sim::FinetuneKind::Lora;
  r.train.lora_rank = 16;
  CHECK(lt::item(sim::evaluate_memory(m, sys, r), "optimizer_step_copy") == 0.0);  // the activations outweigh it
}

TEST_CASE("DeepSpeed ZeRO-1/2 allocate their whole reduce bucket at every backward, one GPU and LoRA alike") {
  // stage_1_and_2.py backward(): with contiguous_gradients (the default) buf_0 = torch.empty(reduce_bucket_size)
  // in the 16-bit dtype, and buf_1 as well when overlap_comm double-buffers; DeepSpeed's default bucket is
  // 5e8 elements, 1e9 bytes, whatever the trainable parameters (here LoRA's few million) and the dp degree.
  const auto m = lt::preset_model("llama2-7b");
  const auto sys = lt::preset_system("a800-nvlink");
  auto r = train_run(1);
  r.train.framework = sim::Framework::DeepSpeed;
  r.train.finetune = sim::FinetuneKind::Lora;
  r.train.lora_rank = 16;
  r.train.zero_stage = 2;
  CHECK(lt::item(sim::evaluate_memory(m, sys, r), "comm_buckets") == doctest::Approx(5e8 * 2));
  r.train.overlap_grad_reduce = true;
  CHECK(lt::item(sim::evaluate_memory(m, sys, r), "comm_buckets") == doctest::Approx(2 * 5e8 * 2));
  // Stage 3's bucket is not counted: transformers' DeepSpeed integration sets its reduce_bucket_size to
  // hidden^2 ("auto"), 34 MB for this model.
  r.train.zero_stage = 3;
  CHECK(lt::item(sim::evaluate_memory(m, sys, r), "comm_buckets") == 0.0);
}

TEST_CASE("recomputation and FlashAttention shrink activations in the expected order") {
  const auto m = lt::preset_model("llama2-13b");
  const auto sys = lt::preset_system("a800-nvlink");
  auto r = train_run(8);
  r.train.flash_attn = false;
  const double unfused = lt::item(sim::evaluate_memory(m, sys, r), "activations");
  r.train.flash_attn = true;
  const double flash = lt::item(sim::evaluate_memory(m, sys, r), "activations");
  r.train.recompute = sim::Recompute::Full;
  const auto full = sim::evaluate_memory(m, sys, r);
  CHECK(flash < unfused);
  CHECK(lt::item(full, "activations") < flash / 10);
  // Full recomputation keeps 2 B x s x h per layer: 2 * 2048 * 5120 * 40 layers.
  CHECK(lt::item(full, "activations") == doctest::Approx(2.0 * 2048 * 5120 * 40));
}

TEST_CASE("selective recomputation keeps what the framework's policy saves") {
  const auto m = lt::preset_model("llama3-8b");
  const auto sys = lt::preset_system("hgx-h200");
  auto r = train_run(8);
  r.train.seq_len = 4096;
  r.train.zero_stage = 3;
  const auto acts = [&](sim::Framework f, sim::Recompute rc) {
    r.train.framework = f;
    r.train.recompute = rc;
    const auto res = sim::evaluate_memory(m, sys, r);
    return std::pair{lt::item(res, "activations"), lt::item(res, "recompute_working_set")};
  };
  // Megatron's selective recomputes only the core attention: with FlashAttention nothing is left.
  CHECK(acts(sim::Framework::Megatron, sim::Recompute::Selective).first ==
        acts(sim::Framework::Megatron, sim::Recompute::None).first);
  CHECK(acts(sim::Framework::Megatron, sim::Recompute::Selective).second == 0);
  // torchtitan's op-level SAC (the fsdp profile) keeps per token and layer the block input (4096), wq
  // (4096), wv (1024), w1 (14336), w2 (4096) and SDPA's output (4096) in bf16 plus its fp32 log-sum-exp
  // (32 heads), and re-materialises the rest of one layer in backward.
  const auto [sac, working] = acts(sim::Framework::Fsdp, sim::Recompute::Selective);
  const double per_token = (4096.0 + 4096 + 1024 + 14336 + 4096 + 4096) * 2 + 32 * 4;
  CHECK(sac == doctest::Approx(per_token * 4096 * 32));
  CHECK(working > 0);
  CHECK(sac < acts(sim::Framework::Fsdp, sim::Recompute::None).first / 2);
  CHECK(sac > acts(sim::Framework::Fsdp, sim::Recompute::Full).first);
}

TEST_CASE("a fused cross-entropy keeps 2 + 2 bytes per logit instead of the framework's loss") {
  const auto m = lt::preset_model("llama2-7b");
  const auto sys = lt::preset_system("a800-nvlink");
  auto r = train_run(8);
  r.train.framework = sim::Framework::Fsdp;
  r.train.zero_stage = 3;
  r.train.micro_batch = 2;
  // HF model code: bf16 logits, their fp32 copy and its fp32 gradient = 10 B for 2 x 2048 x 32000 logits.
  const double logits = 2.0 * 2048 * 32000;
  CHECK(lt::item(sim::evaluate_memory(m, sys, r), "logits_and_loss") == doctest::Approx(logits * 10));
  r.train.fused_loss = true;
  CHECK(lt::item(sim::evaluate_memory(m, sys, r), "logits_and_loss") == doctest::Approx(logits * 4));
  // Megatron's vocab-parallel loss is already 4 B/logit: nothing to gain.
  r.train.framework = sim::Framework::Megatron;
  r.train.zero_stage = 1;
  const double megatron = lt::item(sim::evaluate_memory(m, sys, r), "logits_and_loss");
  r.train.fused_loss = false;
  CHECK(lt::item(sim::evaluate_memory(m, sys, r), "logits_and_loss") == doctest::Approx(megatron));
}

TEST_CASE("LoRA freezes the base: adapters only in gradients and optimizer states") {
  const auto m = lt::preset_model("llama2-7b");
  const auto sys = lt::preset_system("a800-nvlink");
  auto r = train_run(1);
  r.workload = sim::Workload::Finetune;
  r.train.finetune = sim::FinetuneKind::Lora;
  r.train.lora_rank = 8;
  r.train.lora_targets = {"q", "v"};
  const auto res = sim::evaluate_memory(m, sys, r);
  // r * (4096 + 4096) for q and for v, in 32 layers = 4,194,304 trainable parameters.
  CHECK(res.params_trainable == 4194304);
  CHECK(lt::item(res, "frozen_weights") == doctest::Approx(2.0 * static_cast<double>(res.params_total)));
  CHECK(lt::item(res, "gradients") == doctest::Approx(4194304.0 * 2));  // deepspeed: bf16 gradients
}

TEST_CASE("LoRA on a frozen 16-bit base keeps only its targeted projections' inputs for backward") {
  const auto m = lt::preset_model("llama2-7b");  // hidden 4096, ffn 11008, 32 layers
  const auto sys = lt::preset_system("a800-nvlink");
  auto r = train_run(1);
  r.workload = sim::Workload::Finetune;
  r.train.finetune = sim::FinetuneKind::Lora;
  r.train.lora_rank = 8;
  r.train.seq_len = 512;
  r.train.recompute = sim::Recompute::None;
  r.train.framework = sim::Framework::DeepSpeed;
  const double all = lt::item(sim::evaluate_memory(m, sys, r), "activations");
  r.train.lora_targets = {"q", "v"};
  const double qv = lt::item(sim::evaluate_memory(m, sys, r), "activations");
  // q and v read the attention norm's output, FlashAttention keeps its output: what goes is the MLP norm's
  // output (4096), the down projection's input (11008) and the contiguous copy of the attention output that
  // HF's o_proj keeps for its weight gradient (4096), 2 B each, per token, 512 tokens, 32 layers.
  CHECK(all - qv == doctest::Approx((4096.0 + 11008.0 + 4096.0) * 2 * 512 * 32));
  // Full fine-tuning keeps every input, as LoRA on all projections does.
  r.train.lora_targets = {};
  r.train.lora_rank = 0;
  r.train.finetune = sim::FinetuneKind::Full;
  CHECK(lt::item(sim::evaluate_memory(m, sys, r), "activations") == doctest::Approx(all));
  // A 4-bit base through bitsandbytes before 0.43.2 kept every input (QLoRA): no change for its targets.
  r.train.finetune = sim::FinetuneKind::Qlora;
  r.train.lora_rank = 8;
  const double q_all = lt::item(sim::evaluate_memory(m, sys, r), "activations");
  r.train.lora_targets = {"q", "v"};
  CHECK(lt::item(sim::evaluate_memory(m, sys, r), "activations") == doctest::Approx(q_all));
}

TEST_CASE("QLoRA (Dettmers et al. 2023): NF4 + double quantization at 4.127 bits; a 65B model trains in < 48 GB") {
  const auto sys = lt::preset_system("l40s-pcie");
  auto r = train_run(1);
  r.workload = sim::Workload::Finetune;
  r.train.finetune = sim::FinetuneKind::Qlora;
  r.train.lora_rank = 64;
  r.train.seq_len = 512;
  r.train.recompute = sim::Recompute::Full;
  r.train.framework = sim::Framework::Hf;
  // LLaMA-7B: 6,476,005,376 linear params x (4 + 8/64 + 32/16384)/8 B + 262,148,096 16-bit params.
  const auto m7 = lt::preset_model("llama2-7b");
  const auto r7 = sim::evaluate_memory(m7, sys, r);
  const double linear = 6476005376.0, other = 6738415616.0 - linear;
  CHECK(lt::item(r7, "frozen_weights") == doctest::Approx(linear * (4 + 0.125 + 32.0 / 16384) / 8 + other * 2));
  // LLaMA-65B (80 layers, 8192 hidden, 64 heads, ffn 22016): model states + activations < 48 GB, as the paper reports.
  const auto m65 = llmsim::model::make_custom_model(
      {.arch = "llama", .layers = 80, .hidden = 8192, .heads = 64, .ffn = 22016, .vocab = 32000}, {});
  const auto r65 = sim::evaluate_memory(m65, sys, r);
  const double states = lt::item(r65, "frozen_weights") + lt::item(r65, "adapter_weights") +
                        lt::item(r65, "gradients") + lt::item(r65, "optimizer_states") + lt::item(r65, "activations") +
                        lt::item(r65, "recompute_working_set");
  CHECK(states < 48e9);
  CHECK(states > 40e9);  // the 4-bit base alone is ~34 GB
}

TEST_CASE("LoRA (Hu et al. 2021): GPT-3 175B with r=4 on Wq, Wv needs ~350 GB in total") {
  // 96 layers, d_model 12288: the frozen fp16 base is 2 B x 175 G = 350 GB; adapters add 18.9 M params.
  const auto m = lt::gpt(96, 12288, 96);
  auto r = train_run(8);
  r.workload = sim::Workload::Finetune;
  r.par.pp = 8;
  r.train.finetune = sim::FinetuneKind::Lora;
  r.train.lora_rank = 4;
  r.train.lora_targets = {"q", "v"};
  r.train.micro_batch = 1;
  r.train.recompute = sim::Recompute::Full;
  const auto res = sim::evaluate_memory(m, lt::preset_system("dgx-a100-80gb"), r);
  CHECK(res.params_trainable == 96 * 2 * 4 * (12288 + 12288));
  double states = 0;
  for (const auto& i : res.gpu)
    if (i.name == "frozen_weights" || i.name == "adapter_weights" || i.name == "gradients" ||
        i.name == "optimizer_states")
      states += i.bytes;
  CHECK(std::abs(states * 8 / 1e9 - 350) <= 0.10 * 350);
}

TEST_CASE("inference: quantized weights, KV cache and the largest batch that fits") {
  const auto m = lt::preset_model("llama2-70b");
  const auto sys = lt::preset_system("a800-nvlink");
  sim::RunSpec r;
  r.workload = sim::Workload::Inference;
  r.par = {.gpus = 4, .tp = 4};
  r.infer.batch = 8;
  r.infer.input_len = 1024;
  r.infer.output_len = 1024;
  r.infer.framework = sim::Framework::Vllm;
  const auto bf16 = sim::evaluate_memory(m, sys, r);
  r.infer.weight_quant = llmsim::model::WeightQuant::Int4;
  const auto int4 = sim::evaluate_memory(m, sys, r);
  CHECK(lt::item(int4, "weights") < lt::item(bf16, "weights") / 3);
  // KV: 8 seqs x 2048 tokens x 2 x 80 layers x 2 KV heads x 128 x 2 B per GPU.
  CHECK(lt::item(bf16, "kv_cache") == doctest::Approx(8.0 * 2048 * 2 * 80 * 2 * 128 * 2));
  CHECK(bf16.fits());
  CHECK(bf16.max_batch > 8);
  CHECK(int4.max_batch > bf16.max_batch);
  // One more sequence than max_batch must not fit.
  r.infer.weight_quant = llmsim::model::WeightQuant::None;
  r.infer.batch = bf16.max_batch + 1;
  CHECK_FALSE(sim::evaluate_memory(m, sys, r).fits());
}

TEST_CASE("advice: a run that does not fit gets changes that do, each re-evaluated") {
  const auto m = lt::preset_model("llama2-13b");
  const auto sys = lt::preset_system("rtx4090-pcie");
  auto r = train_run(8);
  r.train.micro_batch = 1;
  r.train.seq_len = 1024;
  const auto res = sim::evaluate_memory(m, sys, r);
  REQUIRE_FALSE(res.fits());
  const auto fixes = sim::suggest_fits(m, sys, r);
  REQUIRE_FALSE(fixes.empty());
  for (const auto& f : fixes) CHECK(f.gpu_bytes <= sys.gpu.memory_bytes);
}

TEST_CASE("advice offers only changes the framework can run") {
  // Megatron has no CPU offload and no pure bf16 recipe: neither is offered to it, while its ZeRO
  // stages (distributed optimizer, Megatron-FSDP) are; DeepSpeed gets offload. llama2-7b on 8 A800s at
  // 4k tokens: 18 B/param of Megatron state alone (113 GiB) does not fit, ZeRO-1 does.
  const auto m = lt::preset_model("llama2-7b");
  const auto sys = lt::preset_system("a800-nvlink");
  auto r = train_run(8);
  r.train.micro_batch = 1;
  r.train.seq_len = 4096;
  const auto names = [&](sim::Framework f) {
    r.train.framework = f;
    REQUIRE_FALSE(sim::evaluate_memory(m, sys, r).fits());
    std::string all;
    for (const auto& fix : sim::suggest_fits(m, sys, r, 20)) all += fix.change + ";";
    return all;
  };
  const std::string megatron = names(sim::Framework::Megatron);
  CHECK(megatron.find("--offload") == std::string::npos);
  CHECK(megatron.find("--master-weights") == std::string::npos);
  CHECK(megatron.find("--zero-stage 1;") != std::string::npos);
  CHECK(megatron.find("--zero-stage 3;") != std::string::npos);
  CHECK(names(sim::Framework::DeepSpeed).find("--offload") != std::string::npos);
}

TEST_CASE("HF eager code under AMP saves 20 T h + 2 T ffn bytes more per Llama layer; gradients overlap") {
  // Per layer (hidden h, q_dim = h, T tokens) beyond the fused Korthikanti count: two norm inputs in fp32
  // (+2 each) with an eager RMSNorm's fp32 intermediate (+4 each), q, k and v each saving their own cast
  // input (+2 x 2), gate and up likewise (+2), the attention output's contiguous copy (+2), and act(gate),
  // which act_fn(gate) * up keeps for the product's backward where a fused SwiGLU recomputes it (+2 ffn).
  const auto m = lt::preset_model("llama2-7b");
  sim::ActivationParams fused{.micro_batch = 2, .seq_len = 1024};
  sim::ActivationParams eager = fused;
  eager.glue = sim::hf_model_code_glue(true);
  const double T = 2048, h = 4096, ffn = 11008;
  CHECK(sim::layer_activations(m, eager, 0).total() - sim::layer_activations(m, fused, 0).total() ==
        doctest::Approx(20 * T * h + 2 * T * ffn));
  // Full recomputation keeps the layer input, in the fp32 residual stream.
  CHECK(sim::stored_layer_bytes(m, eager, 0, sim::Recompute::Full) == doctest::Approx(4 * T * h));
  // DeepSpeed runs the same code in bf16: no casts, no fp32 stream; the eager norm and the copy remain.
  sim::ActivationParams bf16 = fused;
  bf16.glue = sim::hf_model_code_glue(false);
  CHECK(sim::layer_activations(m, bf16, 0).total() - sim::layer_activations(m, fused, 0).total() ==
        doctest::Approx((2 * 4 + 2) * T * h + 2 * T * ffn));

  // One micro-batch per step on one GPU: gradients (4 B/param) are allocated during backward as the
  // activations, logits and autocast's bf16 weight copies are freed.
  auto r = train_run(1);
  r.train.framework = sim::Framework::Hf;
  r.train.micro_batch = 1;
  r.train.global_batch = 1;
  const auto sys = lt::preset_system("hgx-h200");
  const auto res = sim::evaluate_memory(m, sys, r);
  const double params = static_cast<double>(res.params_total);
  CHECK(lt::item(res, "amp_weight_copies") == doctest::Approx(2 * params));
  const double freed = lt::item(res, "activations") + lt::item(res, "logits_and_loss") + 2 * params;
  CHECK(lt::item(res, "gradient_overlap") == doctest::Approx(-std::min(4 * params, freed)));
  double sum = 0;
  for (const auto& i : res.gpu) sum += i.bytes;
  CHECK(res.gpu_bytes == doctest::Approx(sum));
  // Gradient accumulation keeps gradients across micro-batches: no overlap.
  r.train.global_batch = 4;
  CHECK(lt::item(sim::evaluate_memory(m, sys, r), "gradient_overlap") == 0);
  // LoRA on a 16-bit base: no autocast copies of the frozen weights.
  r.workload = sim::Workload::Finetune;
  r.train.finetune = sim::FinetuneKind::Lora;
  r.train.lora_rank = 16;
  CHECK(lt::item(sim::evaluate_memory(m, sys, r), "amp_weight_copies") == 0);
  // A full fine-tune of a model loaded in bf16 without a master copy (ms-swift's recipe): its weights
  // are already in the compute dtype, so autocast copies nothing, and the stream stays 16-bit.
  r.train.finetune = sim::FinetuneKind::Full;
  r.train.global_batch = 1;
  r.train.master_weights = false;
  r.train.lora_rank = 0;
  const auto pure = sim::evaluate_memory(m, sys, r);
  CHECK(lt::item(pure, "amp_weight_copies") == 0);
  CHECK(lt::item(pure, "weights") == doctest::Approx(2 * params));
  CHECK(lt::item(pure, "activations") < lt::item(res, "activations"));
}

TEST_CASE("memory items carry their kind, and the kind's name is the item's stable id") {
  // Every kind has its own name.
  std::set<std::string> names;
  for (int k = 0; k <= static_cast<int>(sim::MemoryKind::AllocatorReserve); ++k)
    names.insert(std::string(sim::name_of(static_cast<sim::MemoryKind>(k))));
  CHECK(names.size() == static_cast<std::size_t>(sim::MemoryKind::AllocatorReserve) + 1);
  const auto m = lt::preset_model("llama2-7b");
  const auto sys = lt::preset_system("a800-nvlink");
  auto r = train_run(8);
  r.train.zero_stage = 3;
  r.train.offload = sim::Offload::Optimizer;
  const auto res = sim::evaluate_memory(m, sys, r);
  REQUIRE(res.valid());
  for (const auto& items : {res.gpu, res.host})
    for (const auto& i : items) CHECK(i.name == sim::name_of(i.kind));
  // The measured-peak conventions subtract items by kind: reserved leaves out the CUDA context,
  // allocated also the allocator reserve.
  double context = 0, reserve = 0;
  for (const auto& i : res.gpu) {
    if (i.kind == sim::MemoryKind::CudaContext) context += i.bytes;
    if (i.kind == sim::MemoryKind::AllocatorReserve) reserve += i.bytes;
  }
  REQUIRE(context > 0);
  REQUIRE(reserve > 0);
  const double device = sim::peak_gpu_bytes_as(res, sim::MemoryMeasure::Device);
  CHECK(sim::peak_gpu_bytes_as(res, sim::MemoryMeasure::Reserved) == doctest::Approx(device - context));
  CHECK(sim::peak_gpu_bytes_as(res, sim::MemoryMeasure::Allocated) == doctest::Approx(device - context - reserve));
}

TEST_CASE("inference KV under a sliding window: vLLM keeps the window's blocks, HF generate every token") {
  // Mistral-7B: every layer attends through 4,096 tokens; 32 layers x 8 KV heads x 128 x 2 (K, V) x 2 B
  // = 131,072 B per token. A batch of 4 at 12,000 + 100 tokens: vLLM holds 4 x 4,096 tokens (256 blocks of
  // 16), HF generate 4 x 12,100.
  const auto m = lt::preset_model("mistral-7b");
  const auto sys = lt::preset_system("a800-nvlink");
  const auto kv_of = [&](sim::Framework f) {
    return inference_item_bytes(m, sys, f, 4, 12000, 100, sim::MemoryKind::KvCache);
  };
  CHECK(kv_of(sim::Framework::Vllm) == doctest::Approx(4.0 * 4096 * 131072));
  CHECK(kv_of(sim::Framework::Hf) == doctest::Approx(4.0 * 12100 * 131072));
  CHECK(sim::kv_window(m, sim::engine_profile(sim::Framework::TrtLlm)).window == 4096);  // blocks of 64
  CHECK_FALSE(sim::kv_window(lt::preset_model("llama2-7b"), sim::engine_profile(sim::Framework::Vllm)).caps());
}

TEST_CASE("a hybrid model's windowed layers keep their window under vLLM V1, every token under V0 and TRT-LLM") {
  // Gemma-2-9B: 42 layers, every other one global (21 windowed at 4,096 tokens), KV 2 x 8 heads x 256 x 2 B
  // = 8,192 B per layer per token = 344,064 B per token over the model. Batch 2 at 6,000 + 100 tokens
  // under vLLM V1: 21 layers hold 6,100 tokens and 21 hold 4,096 (256 blocks of 16): the model holds
  // (6,100 + 4,096) / 2 = 5,098 token-equivalents per sequence: 2 x 5,098 x 344,064 B.
  const auto m = llmsim::model::load_hf_config(std::string(LLMSIM_TEST_DATA_DIR) + "/models/gemma-2-9b");
  REQUIRE(m.num_layers == 42);
  REQUIRE(m.windowed_layers() == 21);
  const auto sys = lt::preset_system("dgx-h100");
  const auto kv_of = [&](sim::Framework f) {
    return inference_item_bytes(m, sys, f, 2, 6000, 100, sim::MemoryKind::KvCache);
  };
  const double per_token = 42.0 * 2 * 8 * 256 * 2;
  CHECK(per_token == 344064.0);
  CHECK(kv_of(sim::Framework::Vllm) == doctest::Approx(2.0 * (6100 + 4096) / 2 * per_token));
  CHECK(kv_of(sim::Framework::TrtLlm) == doctest::Approx(2.0 * 6100 * per_token));
  // The block rule the serving DES uses: 6,100 tokens are 382 blocks of 16 in a global layer and 256 in a
  // windowed one: (21 x 382 + 21 x 256) / 42 = 319 whole-model blocks.
  const auto w = sim::kv_window(m, sim::engine_profile(sim::Framework::Vllm));
  CHECK(w.windowed == 21);
  CHECK(w.blocks(6100, 16) == 319);
  CHECK(w.blocks(6116, 16) == 320);  // 383 blocks: (383 + 256) / 2 = 319.5, rounded up
  CHECK(w.blocks(4000, 16) == 250);  // under the window: every layer holds the same 250 blocks
  // vLLM before 0.8.0 (V0) keeps every token in every layer.
  const auto v0 = sim::released_profile(sim::Framework::Vllm, llmsim::Version{0, 6, 3});
  CHECK_FALSE(sim::kv_window(m, v0).caps());
}

TEST_CASE("HF generate's prefill logits: every prompt position before transformers 4.45.0, the last one after") {
  // Qwen2-7B (vocab 152,064) at 1 x 30,720 prompt tokens: before 4.45.0 the logits of every position in bf16
  // and their fp32 upcast (2 + 4 B) live together; from 4.45.0 (num_logits_to_keep=1) one row does. The
  // Qwen2.5 speed benchmark (transformers 4.46.0) measured 19.97 GiB allocated for this run.
  const auto m = lt::preset_model("qwen2-7b");
  const auto sys = lt::preset_system("dgx-a100-80gb");
  const auto workspace = [&](std::optional<llmsim::Version> release) {
    return inference_item_bytes(m, sys, sim::Framework::Hf, 1, 30720, 2048, sim::MemoryKind::Workspace, release);
  };
  const double before = workspace(llmsim::Version{4, 44, 2}), after = workspace(llmsim::Version{4, 46, 0});
  CHECK(before - after == doctest::Approx((30720.0 - 1) * 152064 * (2 + 4)));
  CHECK(workspace(std::nullopt) == doctest::Approx(after));  // an unstated release runs as the current one
}

TEST_CASE("FP8 training under Transformer Engine keeps the GEMM inputs it saves in FP8") {
  // TE's LayerNormLinear / LayerNormMLP under fp8_autocast save ln_out and the activation's output as FP8
  // (layernorm_mlp.py save_for_backward); the fc1 output stays bf16. Llama-2-7B, T tokens per layer: the
  // QKV input, the MLP input (h each) and the down input (ffn) at 1 byte instead of 2.
  const auto m = lt::preset_model("llama2-7b");
  sim::RunSpec run = train_run(8);
  run.train.framework = sim::Framework::Megatron;
  run.train.micro_batch = 1;
  const auto bf16 = sim::training_activation_params(run);
  run.train.precision = llmsim::DType::FP8;
  const auto fp8 = sim::training_activation_params(run);
  CHECK(fp8.gemm_input_bytes == 1.0);
  const double T = 2048, h = 4096, ffn = 11008;
  CHECK(sim::layer_activations(m, bf16, 0).total() - sim::layer_activations(m, fp8, 0).total() ==
        doctest::Approx(T * (2 * h + ffn)));
  // Megatron's fused SwiGLU keeps gate and up and recomputes act(gate): 2 + 1 ffn tensors, not 3 + 1.
  CHECK_FALSE(sim::framework_profile(sim::Framework::Megatron).glue.split_gated_activation);
  // DeepSpeed and FSDP run eager model code under FP8 too: nothing saved in FP8.
  run.train.framework = sim::Framework::Fsdp;
  CHECK(sim::training_activation_params(run).gemm_input_bytes == 0.0);
}

TEST_CASE("Gated DeltaNet layers keep a state per sequence; only the full-attention layers keep K and V per token") {
  // Qwen3-Coder-Next: 12 of 48 layers attend (2 KV heads of 256: 2 x 2 x 256 x 2 B = 2,048 B per layer and
  // token); 36 keep, per sequence, 32 states of 128 x 128 in bf16 (1,048,576 B) and the convolution's last 3
  // inputs of 8,192 channels (49,152 B).
  const auto m = llmsim::model::load_hf_config(std::string(LLMSIM_TEST_DATA_DIR) + "/models/qwen3-coder-next");
  const auto sys = lt::preset_system("hgx-h200");
  CHECK(llmsim::model::linear_state_bytes_per_sequence(m, 48, 1, 2.0) == doctest::Approx(36.0 * (1048576 + 49152)));
  CHECK(llmsim::model::linear_state_bytes_per_sequence(m, 48, 2, 2.0) == doctest::Approx(36.0 * (1048576 + 49152) / 2));
  // Under vLLM V1 a state layer's 1,097,728 B take one page of the attention pool, so its blocks grow to
  // 16 x ceil(1,097,728 / (16 x 2,048)) = 544 tokens: 8,192 tokens hold 16 blocks (8,704 tokens), and the 36 state
  // layers, in groups of 12, three pages of 544 x 12 x 2,048 B each.
  const double kv = inference_item_bytes(m, sys, sim::Framework::Vllm, 4, 8000, 192, sim::MemoryKind::KvCache);
  CHECK(kv == doctest::Approx(4.0 * 8704 * 12 * 2048));
  const double state =
      inference_item_bytes(m, sys, sim::Framework::Vllm, 4, 8000, 192, sim::MemoryKind::RecurrentState);
  CHECK(state == doctest::Approx(4.0 * 3 * 544 * 12 * 2048));
  CHECK(state > 4.0 * 36 * (1048576 + 49152));  // the pages' padding: 1.5 %
  // A model without such layers holds no state.
  CHECK(inference_item_bytes(lt::preset_model("llama3-8b"), sys, sim::Framework::Vllm, 4, 8000, 192,
                             sim::MemoryKind::RecurrentState) == 0);
  // The serving DES charges the state as whole blocks of the pool on top of a sequence's KV blocks.
  sim::KvWindow w;
  w.state_blocks = 101;
  CHECK(w.blocks(100, 16) == 7 + 101);
  CHECK(w.blocks(0, 16) == 0);
}

TEST_CASE("Mamba-2 layers keep a state per sequence: heads x head dim x state size, and the convolution's inputs") {
  // Granite-4.0-H-350M (fp32 checkpoint): 28 Mamba-2 layers of 48 heads of 32 x 128 states (786,432 B in fp32)
  // and 3 inputs of 1,792 channels in bf16 (10,752 B); 4 attention layers of 4 KV heads of 64.
  const auto m = llmsim::model::load_hf_config(std::string(LLMSIM_TEST_DATA_DIR) + "/models/granite-4.0-h-350m");
  const auto sys = lt::preset_system("hgx-h200");
  CHECK(llmsim::model::linear_state_bytes_per_sequence(m, 32, 1, 2.0) == doctest::Approx(28.0 * (786432 + 10752)));
  // vLLM V1's pages: 16 x ceil(797,184 / (16 x 1,024 B)) = 784-token blocks; 1,024 tokens hold two, the 28 state
  // layers in groups of 4 seven pages of 784 x 4 x 1,024 B.
  CHECK(inference_item_bytes(m, sys, sim::Framework::Vllm, 2, 1000, 24, sim::MemoryKind::RecurrentState) ==
        doctest::Approx(2.0 * 7 * 784 * 4 * 1024));
  CHECK(inference_item_bytes(m, sys, sim::Framework::Vllm, 2, 1000, 24, sim::MemoryKind::KvCache) ==
        doctest::Approx(2.0 * 1568 * 4 * 2 * 4 * 64 * 2));
}
