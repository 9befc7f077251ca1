// Inference iteration costs and the fixed-batch simulator: golden numbers derived by hand.
#include <doctest/doctest.h>

#include "llmsim/cost/compute_cost.h"
#include "llmsim/infer/engine_iteration.h"
#include "llmsim/infer/infer_sim.h"
#include "llmsim/infer/iteration_cost.h"
#include "llmsim/model/hf_config.h"
#include "llmsim/run/expert_layout.h"
#include "llmsim/run/feasibility.h"
#include "llmsim/run/framework_profile.h"
#include "memory/memory_test_util.h"

using namespace llmsim;
using llmsim::test::item;
using llmsim::test::preset_model;
using llmsim::test::preset_system;

namespace {
// The weights in `text`'s format as --weight-quant sets them: a block format (gguf:, exl2:) with the kernel format
// that runs it, or a format or method of model_spec.h.
void use_weight_format(sim::InferSpec& in, const char* text) {
  std::string why;
  in.block_format = model::parse_block_format(text, why);
  if (in.block_format)
    in.weight_quant = model::kernel_format(*in.block_format);
  else
    REQUIRE_MESSAGE(model::parse_weight_quant(text, in.weight_quant), why);
}

sim::InferSpec bf16() {
  sim::InferSpec in;
  in.precision = DType::BF16;
  in.kv_dtype = DType::BF16;
  return in;
}
}  // namespace

TEST_CASE("a batch-1 decode step of llama2-7b reads the weights once: bytes / effective bandwidth") {
  const auto m = preset_model("llama2-7b");
  const auto sys = preset_system("a800-nvlink");
  sim::ParallelSpec par;
  const sim::IterationCostModel model(m, sys, par, bf16());
  // 6,738,415,616 parameters in bf16, of which the embedding table (32000 x 4096) is gathered, not read.
  const double read = (6738415616.0 - 32000.0 * 4096) * 2;
  const double expected = read / (2039e9 * 0.88);
  const auto step = model.uniform(1, 1, 128);
  CHECK(step.linear_s.value == doctest::Approx(expected).epsilon(0.03));
  // Everything else (norms, attention over 128 tokens, launches) adds little at batch 1.
  CHECK(step.time_s.value > expected);
  CHECK(step.time_s.value < 1.3 * expected);
  CHECK(model.kv_bytes_per_token() == doctest::Approx(524288.0));  // 2 x 32 layers x 32 heads x 128 x 2 B
}

TEST_CASE("prefill is compute bound: the linear FLOPs 2 N T at the GEMM rate") {
  const auto m = preset_model("llama2-7b");
  const auto sys = preset_system("a800-nvlink");
  sim::ParallelSpec par;
  const sim::IterationCostModel model(m, sys, par, bf16());
  const auto pre = model.uniform(8, 2048, 0);
  const double T = 8.0 * 2048;
  // Projections of 32 layers: 4096 x (3 x 4096 + 4096 + 3 x 11008) weights; plus the LM head for 8 rows.
  const double linear_params = 32.0 * 4096 * (4 * 4096 + 3 * 11008);
  const double flops = 2.0 * linear_params * T;
  CHECK(pre.linear_s.value > flops / 312e12);           // never faster than the peak
  CHECK(pre.linear_s.value < flops / (312e12 * 0.55));  // and at most ~25 % below the large-GEMM default
  CHECK(pre.attention_s.value > 0);
}

TEST_CASE("weight-only int4 cuts batch-1 decode roughly by the weight bytes") {
  const auto m = preset_model("llama2-7b");
  const auto sys = preset_system("rtx4090-pcie");
  sim::ParallelSpec par;
  auto q = bf16();
  q.weight_quant = model::WeightQuant::Int4;
  const sim::IterationCostModel dense(m, sys, par, bf16()), int4(m, sys, par, q);
  const double ratio = dense.uniform(1, 1, 64).linear_s.value / int4.uniform(1, 1, 64).linear_s.value;
  // 2 bytes -> ~0.52 bytes per weight, the LM head stays 16-bit; each GEMM's launch latency stays too.
  CHECK(ratio > 2.7);
  CHECK(ratio < 4.0);
  CHECK(int4.weight_bytes_per_gpu() < 0.35 * dense.weight_bytes_per_gpu());
}

TEST_CASE("DeepSpeed-Inference int8: a dequantize kernel writes a 16-bit copy that a 16-bit GEMM reads") {
  // quantized_gemm (DeepSpeed csrc/transformer/inference/csrc/pt_binding.cpp): launch_dequantize, then
  // cublas_gemm_ex over the copy. Batch-1 decode of llama2-7b: the 6.476e9 projection weights (32 layers x
  // 4096 x (4 x 4096 + 3 x 11008)) move 1 (read int8) + 2 (write 16-bit) + 2 (GEMM read) = 5 bytes each
  // where bf16 moves 2 and a fused int8 kernel 1: about 2.5x the bf16 GEMM time, not half of it.
  const auto m = preset_model("llama2-7b");
  const auto sys = preset_system("a800-nvlink");
  sim::ParallelSpec par;
  auto q = bf16();
  q.weight_quant = model::WeightQuant::Int8;
  sim::IterationOptions unfused;
  unfused.int8_dequantize_to_16bit = true;
  const sim::IterationCostModel dense(m, sys, par, bf16()), fused(m, sys, par, q), ds(m, sys, par, q, unfused);
  const auto d = dense.uniform(1, 1, 128), f = fused.uniform(1, 1, 128), u = ds.uniform(1, 1, 128);
  CHECK(f.linear_s.value / d.linear_s.value == doctest::Approx(0.52).epsilon(0.06));
  CHECK(u.linear_s.value / d.linear_s.value > 2.2);
  CHECK(u.linear_s.value / d.linear_s.value < 2.9);
  // One dequantize kernel per projection GEMM of the inventory (fused QKV, output, fused gate-up, down).
  CHECK(u.launches - f.launches == doctest::Approx(32.0 * 4));
  // Only int8: the flag leaves 16-bit weights and other formats alone.
  auto q4 = bf16();
  q4.weight_quant = model::WeightQuant::Int4;
  const sim::IterationCostModel int4(m, sys, par, q4), int4_ds(m, sys, par, q4, unfused);
  CHECK(int4_ds.uniform(1, 1, 128).linear_s.value == doctest::Approx(int4.uniform(1, 1, 128).linear_s.value));
  const sim::IterationCostModel dense_ds(m, sys, par, bf16(), unfused);
  CHECK(dense_ds.uniform(1, 1, 128).linear_s.value == doctest::Approx(d.linear_s.value));
  // The profiles: DeepSpeed's inference path dequantizes first, the serving engines fuse.
  CHECK(sim::engine_profile(sim::Framework::DeepSpeed).int8_dequantize_to_16bit);
  CHECK_FALSE(sim::engine_profile(sim::Framework::Vllm).int8_dequantize_to_16bit);
  CHECK_FALSE(sim::engine_profile(sim::Framework::Hf).int8_dequantize_to_16bit);
}

TEST_CASE("fixed-batch inference: TTFT, TPOT, throughput and problems") {
  const auto m = preset_model("llama2-13b");
  const auto sys = preset_system("a800-nvlink");
  sim::RunSpec run;
  run.workload = sim::Workload::Inference;
  run.par.gpus = 2;
  run.par.tp = 2;
  run.infer.batch = 16;
  run.infer.input_len = 512;
  run.infer.output_len = 128;
  const auto r = sim::simulate_inference(m, sys, run);
  REQUIRE(r.valid());
  CHECK(r.e2e_s.value == doctest::Approx(r.ttft_s.value + 127 * r.tpot_s.value).epsilon(1e-9));
  CHECK(r.output_tokens_per_s.value == doctest::Approx(16.0 * 128 / r.e2e_s.value).epsilon(1e-9));
  CHECK(r.ttft_s.low <= r.ttft_s.value);
  CHECK(r.tpot_s.value <= r.tpot_s.high);
  CHECK(r.decode_mid.comm_s.value > 0);  // TP all-reduces
  run.infer.input_len = 4000;            // llama2: 4096 positions
  const auto too_long = sim::simulate_inference(m, sys, run);
  REQUIRE(!too_long.valid());
  CHECK(too_long.problems.front().find("maximum context of 4096") != std::string::npos);
}

TEST_CASE("expert parallelism: each rank reads only its experts and pays the all-to-alls") {
  const auto m = preset_model("mixtral-8x7b");
  const auto sys = preset_system("dgx-h100");
  sim::ParallelSpec one, ep8;
  ep8.ep = 8;
  const sim::IterationCostModel a(m, sys, one, bf16()), b(m, sys, ep8, bf16());
  const auto da = a.uniform(32, 1, 512), db = b.uniform(32, 1, 512);
  CHECK(db.linear_s.value < 0.5 * da.linear_s.value);  // 32 tokens x top-2 touch all 8 experts: 1/8 of them per rank
  CHECK(db.comm_s.value > da.comm_s.value);            // dispatch + combine all-to-alls per MoE layer
  CHECK(b.weight_bytes_per_gpu() < 0.3 * a.weight_bytes_per_gpu());
}

TEST_CASE("expert parallelism inside the tensor-parallel group (inference TP8 + EP8): no all-to-all, same weights") {
  // vLLM --enable-expert-parallel at data-parallel size 1, SGLang --ep-size 8 with --tp 8 (sim/run/expert_layout.h):
  // each rank owns an eighth of the experts whole instead of an eighth of every expert.
  const auto m = preset_model("mixtral-8x7b");
  const auto sys = preset_system("dgx-h100");
  sim::ParallelSpec tp8, ep8;
  tp8.gpus = ep8.gpus = 8;
  tp8.tp = ep8.tp = 8;
  tp8.dp = ep8.dp = 1;
  ep8.ep = 8;
  REQUIRE(sim::experts_within_tp(ep8));
  CHECK(sim::expert_tp(ep8) == 1);
  const sim::IterationCostModel a(m, sys, tp8, bf16()), b(m, sys, ep8, bf16());
  // The same bytes per GPU: 1/8 of the experts whole = every expert over 8 ranks.
  CHECK(b.weight_bytes_per_gpu() == doctest::Approx(a.weight_bytes_per_gpu()).epsilon(1e-9));
  const auto da = a.uniform(64, 1, 512), db = b.uniform(64, 1, 512);
  // The tokens are on every rank after attention: only the TP all-reduces communicate.
  CHECK(db.comm_s.value == doctest::Approx(da.comm_s.value).epsilon(1e-9));
  // The same FLOPs and weight bytes per rank, in fewer, wider GEMMs: within a few percent.
  CHECK(db.linear_s.value == doctest::Approx(da.linear_s.value).epsilon(0.15));
  // Uneven routing slows the rank with the busiest experts; tensor-parallel experts share every expert's load.
  ep8.expert_imbalance = 2;
  const sim::IterationCostModel skewed(m, sys, ep8, bf16());
  CHECK(skewed.uniform(64, 512, 0).linear_s.value > 1.2 * b.uniform(64, 512, 0).linear_s.value);
  // The memory model counts the same weights per GPU.
  sim::RunSpec mem;
  mem.workload = sim::Workload::Inference;
  mem.par = tp8;
  mem = sim::with_defaults(mem);
  sim::RunSpec mem_ep = mem;
  mem_ep.par.ep = 8;
  CHECK(item(sim::evaluate_memory(m, sys, mem_ep), "weights") ==
        doctest::Approx(item(sim::evaluate_memory(m, sys, mem), "weights")).epsilon(1e-9));
  // Training keeps EP across data-parallel ranks; inference takes the TP group, and refuses what fits neither.
  sim::RunSpec run;
  run.workload = sim::Workload::Inference;
  run.par = ep8;
  run.par.expert_imbalance = 1;
  CHECK(sim::structural_problems(run, m).empty());
  run.workload = sim::Workload::Pretrain;
  run.train.global_batch = 1;
  CHECK(sim::structural_problems(run, m).front().find("ep 8 does not divide dp 1") != std::string::npos);
  run.workload = sim::Workload::Inference;
  run.par.tp = 4;
  run.par.dp = 2;
  const auto why = sim::structural_problems(run, m);
  REQUIRE_FALSE(why.empty());
  CHECK(why.front().find("divides neither dp 2") != std::string::npos);
}

TEST_CASE("a sliding window limits the keys each new token attends to, in prefill and decode") {
  auto m = preset_model("mistral-7b");  // 4096-token window
  REQUIRE(m.sliding_window == 4096);
  auto full = m;
  full.sliding_window = 0;
  const auto sys = preset_system("a800-nvlink");
  sim::ParallelSpec par;
  par.gpus = 1;
  const sim::IterationCostModel windowed(m, sys, par, bf16()), unwindowed(full, sys, par, bf16());
  // Within the window nothing changes.
  CHECK(windowed.uniform(1, 2048, 0).attention_s.value == unwindowed.uniform(1, 2048, 0).attention_s.value);
  // A 16,000-token prompt: the full causal pairs are 16000 x 16001 / 2 = 128,008,000; with the window the
  // first 4096 tokens see all their predecessors (4096 x 4097 / 2 = 8,390,656) and the other 11,904 see
  // 4096 keys each (48,758,784): 57,149,440. Prefill attention is compute-bound, so its time scales so.
  const double ratio =
      windowed.uniform(1, 16000, 0).attention_s.value / unwindowed.uniform(1, 16000, 0).attention_s.value;
  CHECK(ratio == doctest::Approx(57149440.0 / 128008000.0).epsilon(1e-6));
  // Decode at a 16k context reads the window's keys, not the whole cache.
  CHECK(windowed.uniform(1, 1, 16000).attention_s.value < 0.5 * unwindowed.uniform(1, 1, 16000).attention_s.value);
}

TEST_CASE("host critical path: an eager iteration lasts at least its launches times the host's rate") {
  const auto m = preset_model("llama2-7b");
  const auto sys = preset_system("a800-nvlink");
  sim::ParallelSpec par;
  sim::IterationOptions fused;
  fused.host_dispatch = sim::Interval::exact(1e-3);  // far slower than any kernel of a batch-1 decode step
  const sim::IterationCostModel a(m, sys, par, bf16(), fused);
  const auto step = a.uniform(1, 1, 128);
  // Fused kernels: 10 per layer (attn norm, QKV, RoPE, out proj, residual, MLP norm, gate+up, SwiGLU,
  // down proj, residual) + the decode attention kernel = 11 x 32 layers; the token gather; the final norm,
  // the LM head and the sampling kernel: 356 launches.
  CHECK(step.launches == 356);
  CHECK(step.time_s.value == doctest::Approx(0.356));
  CHECK(step.host_wait_s.value > 0.3);
  // transformers' eager code: 35 per layer (6-kernel RMSNorms, q/k/v and gate/up separate, RoPE as 5 + 5,
  // the transpose copy, act and product apart) x 32 + the gather + a 6-kernel final norm + the LM head +
  // sampling = 1,129.
  sim::IterationOptions hf = fused;
  hf.glue = sim::hf_model_code_glue(false);
  const sim::IterationCostModel b(m, sys, par, bf16(), hf);
  CHECK(b.uniform(1, 1, 128).launches == 1129);
  // The engine's per-iteration overhead comes on top of the span.
  hf.overhead_s = 2e-3;
  const sim::IterationCostModel c(m, sys, par, bf16(), hf);
  CHECK(c.uniform(1, 1, 128).time_s.value == doctest::Approx(1.129 + 2e-3));
  // Without host work the iteration is the GPU's time alone.
  const sim::IterationCostModel d(m, sys, par, bf16());
  CHECK(d.uniform(1, 1, 128).host_wait_s.value == 0);
  CHECK(d.uniform(1, 1, 128).time_s.value < 0.02);
}

TEST_CASE("engines: graph replay for small decode batches, eager Python dispatch otherwise, C++ runtimes never") {
  const auto m = preset_model("llama2-7b");
  auto sys = preset_system("a800-nvlink");
  sys.efficiency.host_dispatch_s = 1e-3;
  sys.efficiency.host_dispatch_low_s = sys.efficiency.host_dispatch_high_s = 0;  // exact
  sim::ParallelSpec par;
  const sim::EngineIterationCost vllm(m, sys, par, bf16(), sim::engine_profile(sim::Framework::Vllm));
  const std::vector<sim::SequenceWork> decode(8, sim::SequenceWork{1, 100});
  CHECK(vllm.replays_graph(decode));
  CHECK(vllm.iteration(decode).host_wait_s.value == 0);
  const std::vector<sim::SequenceWork> prefill(1, sim::SequenceWork{16, 0});
  CHECK_FALSE(vllm.replays_graph(prefill));
  CHECK(vllm.iteration(prefill).time_s.value > 0.3);  // 356 launches at 1 ms, issued from Python
  const sim::EngineIterationCost trt(m, sys, par, bf16(), sim::engine_profile(sim::Framework::TrtLlm));
  CHECK(trt.iteration(prefill).host_wait_s.value == 0);
  const sim::EngineIterationCost hf(m, sys, par, bf16(), sim::engine_profile(sim::Framework::Hf));
  CHECK_FALSE(hf.replays_graph(decode));
  CHECK(hf.iteration(decode).time_s.value > 1.0);
}

TEST_CASE("HF generate: decode attention without split-KV streams a head's cache at one SM's share") {
  // Qwen2-7B (28 layers, 28 query heads, 4 KV heads of 128) at batch 1 and a 31,000-token context on an
  // A100: 28 blocks on 108 SMs; each reads its head's K and V, 31,001 x 128 x 2 x 2 B, at
  // HBM bandwidth x memory fraction / 108 per block.
  const auto m = preset_model("qwen2-7b");
  const auto sys = preset_system("dgx-a100-80gb");
  sim::ParallelSpec par;
  sim::IterationOptions split, nosplit;
  nosplit.decode_split_kv = false;
  const sim::IterationCostModel a(m, sys, par, bf16(), split), b(m, sys, par, bf16(), nosplit);
  const auto fast = a.uniform(1, 1, 31000), slow = b.uniform(1, 1, 31000);
  const double share = sys.gpu.memory_bandwidth_Bps * sys.efficiency.memory_bandwidth.value / sys.gpu.sm_count;
  const double per_layer = 31001.0 * 128 * 2 * 2 / share;
  CHECK(slow.attention_s.value == doctest::Approx(28 * per_layer).epsilon(1e-9));
  CHECK(28 * per_layer > 0.025);  // ~26.8 ms per token
  // The split kernel reads the 4 KV heads' 63.5 MB per layer at the full bandwidth: ~25x faster.
  CHECK(fast.attention_s.value < slow.attention_s.value / 20);
  // More blocks than SMs (batch 8 x 28 heads = 224 > 2 x 108): three waves of one block's time.
  CHECK(b.uniform(8, 1, 31000).attention_s.value == doctest::Approx(3 * 28 * per_layer).epsilon(1e-9));
}

TEST_CASE("vLLM before 0.4.3: decode reads a KV head once per query head, the re-reads out of L2") {
  // Qwen2-7B (28 layers, 28 query heads over 4 KV heads of 128: groups of 7) at batch 1 and a 31,000-token
  // context on an A100: paged_attention_v1/v2 run one block per query head, so the SMs read each layer's
  // 31,001 x 2 x 4 x 128 x 2 B = 63.5 MB of cache 7 times, at the L2 read bandwidth (5120 B/clk x 1410 MHz)
  // times the streaming fraction; the HBM read once is the shorter.
  const auto m = preset_model("qwen2-7b");
  const auto sys = preset_system("dgx-a100-80gb");
  sim::ParallelSpec par;
  sim::IterationOptions packed, per_head;
  per_head.decode_kv_per_query_head = true;
  const sim::IterationCostModel a(m, sys, par, bf16(), packed), b(m, sys, par, bf16(), per_head);
  const double kv = 31001.0 * 2 * 4 * 128 * 2;
  const double l2 = 5120 * 1410e6 * sys.efficiency.memory_bandwidth.value;
  CHECK(b.uniform(1, 1, 31000).attention_s.value == doctest::Approx(28 * 7 * kv / l2).epsilon(1e-9));
  CHECK(28 * 7 * kv / l2 > 1.9e-3);  // ~1.96 ms per token against ~1.13 ms reading the cache once
  CHECK(b.uniform(1, 1, 31000).attention_s.value > 1.7 * a.uniform(1, 1, 31000).attention_s.value);
  // Multi-head attention (one query head per KV head) reads its cache once either way.
  const auto mha = preset_model("llama2-7b");
  CHECK(sim::IterationCostModel(mha, sys, par, bf16(), per_head).uniform(1, 1, 4000).attention_s.value ==
        sim::IterationCostModel(mha, sys, par, bf16(), packed).uniform(1, 1, 4000).attention_s.value);
  // A GPU whose L2 read bandwidth no source states keeps the HBM read alone.
  const auto h200 = preset_system("hgx-h200");
  CHECK(sim::IterationCostModel(m, h200, par, bf16(), per_head).uniform(1, 1, 31000).attention_s.value ==
        sim::IterationCostModel(m, h200, par, bf16(), packed).uniform(1, 1, 31000).attention_s.value);
  // The rule belongs to the releases that decoded through PagedAttention.forward_decode.
  CHECK(sim::released_profile(sim::Framework::Vllm, parse_version("0.4.2")).decode_kv_per_query_head);
  CHECK_FALSE(sim::released_profile(sim::Framework::Vllm, parse_version("0.4.3")).decode_kv_per_query_head);
  CHECK_FALSE(sim::released_profile(sim::Framework::Vllm, std::nullopt).decode_kv_per_query_head);
}

TEST_CASE("DeepSeek sparse attention at decode: the indexer reads every key, MLA gathers the top-k latents") {
  const auto m = llmsim::model::load_hf_config(std::string(LLMSIM_TEST_DATA_DIR) + "/models/deepseek-v3.2-exp");
  auto dense = m;
  dense.dsa = {};
  const auto sys = preset_system("hgx-h200");
  sim::ParallelSpec par;
  par.gpus = par.tp = 8;
  const auto attention = [&](const llmsim::model::ModelSpec& spec, std::int64_t context) {
    return sim::IterationCostModel(spec, sys, par, bf16()).uniform(1, 1, context).attention_s.value;
  };
  // Below the top-k every key is attended either way: the difference is the indexer alone, one MQA-logits
  // GEMM per layer at fp8 (H200): 64 heads' queries against 1,001 keys over 128, reading the fp8 queries and
  // head weights, the 132-byte keys, writing and reading an fp32 logit per key and writing the new key.
  const double keys = 1001, flops = 2.0 * 64 * 128 * keys;
  const double bytes = 64 * (128 + 4) + keys * 132 + 2 * 4 * keys + 132;
  const sim::ComputeCost cost(sys);
  const double indexer = cost.gemm(64, 1001, 128, 1, flops, bytes, DType::FP8).value;
  CHECK(attention(m, 1000) - attention(dense, 1000) == doctest::Approx(61 * indexer).epsilon(1e-6));
  // At 100,000 cached tokens MLA reads 2,048 latent rows instead of all of them: 2.4 MB and the indexer's 14 MB
  // per layer against 115 MB (the kernels' launch and call floors keep the ratio near 2).
  CHECK(attention(m, 100000) < attention(dense, 100000) / 2);
}

TEST_CASE("HF generate: DynamicCache's torch.cat and the unpad gather copy the whole cache every step") {
  const auto m = preset_model("qwen2-7b");
  const auto sys = preset_system("dgx-a100-80gb");
  sim::ParallelSpec par;
  sim::IterationOptions none, copies;
  copies.kv_copy_passes = 2;
  const sim::IterationCostModel a(m, sys, par, bf16(), none), b(m, sys, par, bf16(), copies);
  // Two passes, each reading and writing 31,001 tokens x (K and V: 2 x 4 heads x 128) x 2 B per layer.
  const double bytes = 2.0 * 2 * 31001 * (2 * 4 * 128) * 2;
  const double bw = sys.gpu.memory_bandwidth_Bps * sys.efficiency.elementwise_bandwidth.value;
  const double extra = b.uniform(1, 1, 31000).other_s.value - a.uniform(1, 1, 31000).other_s.value;
  // ... each copy kernel after its launch latency (4 kernels per layer).
  CHECK(extra * 1e3 ==
        doctest::Approx((28 * bytes / bw + 28 * 4 * sys.efficiency.kernel_launch_s) * 1e3).epsilon(1e-6));
  CHECK(b.uniform(1, 1, 31000).launches - a.uniform(1, 1, 31000).launches == 28 * 4);
}

TEST_CASE("HF before 4.48: Mistral-derived flash-attention classes expand K and V to the query heads") {
  // Qwen2FlashAttention2.forward (transformers 4.37-4.47) calls repeat_kv between DynamicCache.update and
  // _flash_attention_forward, whose _upad_input gathers the expanded tensors; 4.48.0's flash_attention_forward
  // passes the KV heads as they are, and LlamaFlashAttention2 never expanded them.
  CHECK(sim::released_profile(sim::Framework::Hf, parse_version("4.38.2")).repeat_kv_for_flash);
  CHECK(sim::released_profile(sim::Framework::Hf, parse_version("4.47.1")).repeat_kv_for_flash);
  CHECK_FALSE(sim::released_profile(sim::Framework::Hf, parse_version("4.48.0")).repeat_kv_for_flash);
  CHECK_FALSE(sim::released_profile(sim::Framework::Hf, std::nullopt).repeat_kv_for_flash);
  CHECK_FALSE(sim::released_profile(sim::Framework::Vllm, parse_version("0.4.2")).repeat_kv_for_flash);
  const auto m = preset_model("qwen2-7b");
  CHECK(m.flash_class_repeats_kv);
  CHECK_FALSE(preset_model("llama3-8b").flash_class_repeats_kv);
  const auto sys = preset_system("dgx-a100-80gb");
  sim::ParallelSpec par;
  sim::IterationOptions copies, repeated;
  copies.kv_copy_passes = repeated.kv_copy_passes = 2;
  repeated.repeat_kv_for_flash = true;
  const sim::IterationCostModel a(m, sys, par, bf16(), copies), b(m, sys, par, bf16(), repeated);
  // Per layer at 31,001 cached tokens, cache = 31,001 x (K and V: 2 x 4 heads x 128) x 2 B; group 28 / 4 = 7:
  // repeat_kv reads the cache and writes 7 x it, and the gather copies 7 x it instead of 1 x (read and write).
  const double cache = 31001.0 * (2 * 4 * 128) * 2;
  const double extra_bytes = (1 + 7) * cache + 2 * (7 - 1) * cache;
  const double bw = sys.gpu.memory_bandwidth_Bps * sys.efficiency.elementwise_bandwidth.value;
  const double extra = b.uniform(1, 1, 31000).other_s.value - a.uniform(1, 1, 31000).other_s.value;
  // ... and two more kernels (K and V) after their launch latency.
  CHECK(extra * 1e3 ==
        doctest::Approx((28 * extra_bytes / bw + 28 * 2 * sys.efficiency.kernel_launch_s) * 1e3).epsilon(1e-6));
  CHECK(b.uniform(1, 1, 31000).launches - a.uniform(1, 1, 31000).launches == 28 * 2);
  // A model whose class passes the KV heads through is unchanged.
  auto llama_like = m;
  llama_like.flash_class_repeats_kv = false;
  const sim::IterationCostModel c(llama_like, sys, par, bf16(), copies), d(llama_like, sys, par, bf16(), repeated);
  CHECK(d.uniform(1, 1, 31000).time_s.value == c.uniform(1, 1, 31000).time_s.value);
}

TEST_CASE("local and global layers: only the windowed layers' attention is capped by the window") {
  // Gemma-2-9B at an 8,000-token prompt: 21 layers slide over 4,096 keys, 21 see all of them.
  auto m = llmsim::model::load_hf_config(std::string(LLMSIM_TEST_DATA_DIR) + "/models/gemma-2-9b/config.json");
  const auto sys = preset_system("hgx-h200");
  sim::ParallelSpec par;
  const auto ttft = [&](const llmsim::model::ModelSpec& spec) {
    return sim::IterationCostModel(spec, sys, par, bf16()).uniform(1, 8000, 0).attention_s.value;
  };
  const double mixed = ttft(m);
  auto all_local = m;
  all_local.global_every = 0;
  auto all_global = m;
  all_global.sliding_window = 0;
  CHECK(ttft(all_local) < mixed);
  CHECK(mixed < ttft(all_global));
  // Half the layers of each kind: the mixed model's attention is the mean of the two.
  CHECK(mixed == doctest::Approx((ttft(all_local) + ttft(all_global)) / 2).epsilon(1e-9));
}

TEST_CASE("FasterTransformer launches every kernel from C++ without CUDA graphs, and decodes one block per head") {
  // NVIDIA/FasterTransformer @df4a7534 has no cudaGraph call in src/: every decode step pays the stream
  // launch floor per kernel and the measured library-call floor per GEMM, where TensorRT-LLM replays a graph.
  const auto m = preset_model("llama2-7b");
  const auto sys = preset_system("a800-nvlink");
  sim::ParallelSpec par;
  const auto& ft_profile = sim::engine_profile(sim::Framework::FasterTransformer);
  CHECK(ft_profile.name == "fastertransformer");
  CHECK(ft_profile.batching == sim::Batching::Static);
  CHECK_FALSE(ft_profile.decode_split_kv);  // decoder_masked_multihead_attention: grid(num_heads, batch)
  const sim::EngineIterationCost ft(m, sys, par, bf16(), ft_profile);
  const sim::EngineIterationCost trt(m, sys, par, bf16(), sim::engine_profile(sim::Framework::TrtLlm));
  const std::vector<sim::SequenceWork> decode(1, sim::SequenceWork{1, 128});
  CHECK_FALSE(ft.replays_graph(decode));
  CHECK(trt.replays_graph(decode));
  const auto f = ft.iteration(decode);
  const auto t = trt.iteration(decode);
  CHECK(f.host_wait_s.value == 0);  // a C++ runtime: no Python host floor
  CHECK(f.launches == t.launches);
  // Every kernel at least the 5 us launch floor of the preset, plus the 0.2 ms per-step overhead.
  CHECK(f.time_s.value >= f.launches * sys.efficiency.kernel_launch_s + 0.2e-3);
  // The graph replay's floor is 1.5 us: FT's batch-1 step is slower by at least 3.5 us per kernel, less
  // the TRT-LLM profile's equal per-step overhead.
  CHECK(f.time_s.value - t.time_s.value >= f.launches * (sys.efficiency.kernel_launch_s - 1.5e-6) * 0.9);
}

TEST_CASE("engine releases: TGI before 2.0.0 decodes eagerly, vLLM before 0.8.0 runs its V0 engine") {
  using sim::Framework;
  // TGI #1428 (1.4.1: --enable-cuda-graphs, opt-in) and #1703 (2.0.0: graphs 1..32 by default).
  const auto tgi_103 = sim::released_profile(Framework::Tgi, parse_version("1.0.3"));
  CHECK_FALSE(tgi_103.cuda_graphs);
  CHECK(sim::released_profile(Framework::Tgi, parse_version("2.0.0")).cuda_graphs);
  CHECK(sim::released_profile(Framework::Tgi, std::nullopt).cuda_graphs);
  // #1820 (2.0.2): waiting_served_ratio 1.2 -> 0.3.
  CHECK(sim::released_profile(Framework::Tgi, parse_version("2.0.1")).waiting_served_ratio == doctest::Approx(1.2));
  CHECK(sim::released_profile(Framework::Tgi, parse_version("2.0.2")).waiting_served_ratio == doctest::Approx(0.3));
  const auto m = preset_model("llama2-7b");
  const auto sys = preset_system("a800-nvlink");
  sim::ParallelSpec par;  // TP 8: 1.7 GB of weights per GPU, fewer microseconds than the host's launches
  par.tp = 8;
  par.gpus = 8;
  const std::vector<sim::SequenceWork> decode(8, sim::SequenceWork{1, 100});
  const sim::EngineIterationCost old_tgi(m, sys, par, bf16(), tgi_103);
  const sim::EngineIterationCost new_tgi(m, sys, par, bf16(), sim::engine_profile(Framework::Tgi));
  CHECK_FALSE(old_tgi.replays_graph(decode));
  CHECK(new_tgi.replays_graph(decode));
  // Eager Python: the step takes at least its launches at the host's rate each.
  const auto step = old_tgi.iteration(decode);
  CHECK(step.time_s.value >= step.launches * sys.efficiency.host_dispatch_s);
  CHECK(step.host_wait_s.value > 0);  // the host, not the weights, sets the pace
  CHECK(step.time_s.value > new_tgi.iteration(decode).time_s.value);

  // vLLM V0: no chunked prefill, prefill-only iterations, a budget of max(max_model_len, 2048), graphs up to
  // 256, and the v0.6.0 profile's per-step CPU work (3.8 ms; before 0.6.0 also 81 us per sequence).
  const auto v063 = sim::released_profile(Framework::Vllm, parse_version("0.6.3"), 32768);
  CHECK_FALSE(v063.chunked_prefill);
  CHECK(v063.separate_prefill);
  CHECK(v063.max_batched_tokens == 32768);
  CHECK(sim::released_profile(Framework::Vllm, parse_version("0.6.3"), 1024).max_batched_tokens == 2048);
  CHECK(v063.cuda_graph_max_batch == 256);
  CHECK(v063.iteration_overhead_s == doctest::Approx(3.8e-3));
  CHECK(v063.iteration_overhead_per_seq_s == 0);
  CHECK(sim::released_profile(Framework::Vllm, parse_version("0.5.4")).iteration_overhead_s == doctest::Approx(3.8e-3));
  const auto v1 = sim::released_profile(Framework::Vllm, parse_version("0.8.0"), 32768);
  CHECK(v1.chunked_prefill);
  CHECK(v1.max_batched_tokens == sim::engine_profile(Framework::Vllm).max_batched_tokens);
  CHECK(v1.iteration_overhead_s == doctest::Approx(sim::engine_profile(Framework::Vllm).iteration_overhead_s));
}

TEST_CASE("vLLM before 0.6.0: the host's per-step work grows with the batch and the GPU waits for it") {
  // vllm #6801: at batch 200, sampling, input preparation, output processing and scheduling took ~20 ms per
  // step in v0.5.x; the profile takes it as the 3.8 ms scheduling share plus (20 - 3.8) / 200 = 81 us per
  // sequence. llama3-8b on one H100, decode at 512 tokens of context: a 256-sequence step of 0.5.4 is
  // 3.8 + 256 x 0.081 = 24.54 ms of host work longer than its GPU time, and 0.6.3's only 3.8 ms.
  const auto m = preset_model("llama3-8b");
  const auto sys = preset_system("dgx-h100");
  sim::ParallelSpec par;
  const auto v054 = sim::released_profile(sim::Framework::Vllm, parse_version("0.5.4"), 2048);
  const auto v063 = sim::released_profile(sim::Framework::Vllm, parse_version("0.6.3"), 2048);
  REQUIRE(v054.iteration_overhead_per_seq_s == doctest::Approx(81e-6));
  const sim::EngineIterationCost old_vllm(m, sys, par, bf16(), v054);
  const sim::EngineIterationCost new_vllm(m, sys, par, bf16(), v063);
  for (const std::int64_t b : {1, 64, 256}) {
    const double t_old = old_vllm.uniform(b, 1, 512).time_s.value;
    const double t_new = new_vllm.uniform(b, 1, 512).time_s.value;
    // Same kernels and graphs; only the host term differs: 81 us per sequence.
    CHECK(t_old - t_new == doctest::Approx(static_cast<double>(b) * 81e-6).epsilon(1e-9));
  }
  CHECK(old_vllm.uniform(256, 1, 512).time_s.value - old_vllm.uniform(256, 1, 512).linear_s.value > 24.5e-3);
}

TEST_CASE("fp8 weights on a GPU without FP8 tensor cores: vLLM's weight-only FP8 Marlin, refused elsewhere") {
  // vLLM (docs quantization/fp8, PR #5975): on Ampere fp8 checkpoints run as W8A16, the GEMM reading 1-byte
  // weights and computing in 16 bits. llama3-8b decode at batch 1 on one A100: weight streaming sets the
  // pace, so fp8 weights take about half the 16-bit step's GEMM time; a 4 x 2,048-token prefill is compute
  // bound and runs at the 16-bit peak, no faster than bf16 weights.
  CHECK(model::gemm_dtype(model::WeightQuant::Fp8, DType::BF16, true) == DType::FP8);
  CHECK(model::gemm_dtype(model::WeightQuant::Fp8, DType::BF16, false) == DType::BF16);
  const auto m = preset_model("llama3-8b");
  const auto a100 = preset_system("dgx-a100-80gb");
  REQUIRE(a100.gpu.peak(DType::FP8) <= 0);
  sim::ParallelSpec par;
  auto in = bf16();
  const sim::IterationCostModel dense(m, a100, par, in);
  in.weight_quant = model::WeightQuant::Fp8;
  const sim::IterationCostModel w8a16(m, a100, par, in);
  const double ratio = w8a16.uniform(1, 1, 256).linear_s.value / dense.uniform(1, 1, 256).linear_s.value;
  CHECK(ratio > 0.45);
  CHECK(ratio < 0.6);
  CHECK(w8a16.uniform(4, 2048, 0).linear_s.value >= 0.95 * dense.uniform(4, 2048, 0).linear_s.value);

  // Feasibility: vLLM 0.5.1 and later run it; TensorRT-LLM, vLLM 0.5.0 and MoE experts do not.
  sim::RunSpec run;
  run.workload = sim::Workload::Inference;
  run.infer = in;
  run.infer.framework = sim::Framework::Vllm;
  run.infer.engine_version = parse_version("0.5.4");
  CHECK(sim::inference_problems(m, a100, run).empty());
  run.infer.engine_version = parse_version("0.5.0");
  CHECK_FALSE(sim::inference_problems(m, a100, run).empty());
  run.infer.engine_version.reset();
  run.infer.framework = sim::Framework::TrtLlm;
  const auto trt = sim::inference_problems(m, a100, run);
  REQUIRE(trt.size() == 1);
  CHECK(trt[0].find("weight-only fp8") != std::string::npos);
  run.infer.framework = sim::Framework::Vllm;
  const auto moe = sim::inference_problems(preset_model("mixtral-8x7b"), a100, run);
  REQUIRE(moe.size() == 1);
  CHECK(moe[0].find("MoE") != std::string::npos);
  CHECK(sim::inference_problems(m, preset_system("dgx-h100"), run).empty());
}

TEST_CASE("TP decode: every collective call of the step pays the collective base latency once") {
  // llama2-70b at TP8 on one DGX A100, batch 1 at 128 tokens of context. One decode step calls 2 x 80
  // layer all-reduces (attention output and MLP output), 1 all-reduce of the vocab-parallel embedding and
  // 1 all-gather of the logits for sampling: 162 calls. With the base latency at 45 us the step's
  // communication grows by 162 x 45 us = 7.29 ms over the same system without it.
  const auto m = preset_model("llama2-70b");
  const auto with = preset_system("dgx-a100-80gb");
  REQUIRE(with.efficiency.collective_base_s == doctest::Approx(45e-6));
  auto without = with;
  without.efficiency.collective_base_s = without.efficiency.collective_base_low_s =
      without.efficiency.collective_base_high_s = 0;
  sim::ParallelSpec par;
  par.tp = 8;
  const sim::IterationCostModel a(m, with, par, bf16()), b(m, without, par, bf16());
  const auto t = a.uniform(1, 1, 128), t0 = b.uniform(1, 1, 128);
  CHECK(t.comm_s.value - t0.comm_s.value == doctest::Approx(162 * 45e-6).epsilon(1e-9));
  CHECK(t.time_s.value - t0.time_s.value == doctest::Approx(162 * 45e-6).epsilon(1e-6));
  // At TP1 there is no collective call: the base changes nothing.
  sim::ParallelSpec one;
  CHECK(sim::IterationCostModel(m, with, one, bf16()).uniform(1, 1, 128).time_s.value ==
        doctest::Approx(sim::IterationCostModel(m, without, one, bf16()).uniform(1, 1, 128).time_s.value));
}

TEST_CASE("eager engines: each collective call costs the host collective_host_us beyond its launch") {
  // llama2-7b at TP8 on a DGX A100, batch-1 decode: 2 x 32 layer all-reduces, the embedding's all-reduce
  // and the logits' all-gather = 66 calls. An eager iteration is host bound (launches x host rate); with
  // 100 us of host work per call beyond its launch it lasts 66 x 100 us = 6.6 ms longer. A graph replay
  // or a C++ runtime passes no host rate, so the calls cost nothing there.
  const auto m = preset_model("llama2-7b");
  auto sys = preset_system("dgx-a100-80gb");
  REQUIRE(sys.efficiency.collective_host_s == 0);  // shipped off (not determined by the development files)
  sim::ParallelSpec par;
  par.tp = 8;
  sim::IterationOptions eager;
  eager.host_dispatch = sim::Interval::exact(28e-6);
  eager.collective_host = sim::Interval::exact(0);
  const sim::IterationCostModel without(m, sys, par, bf16(), eager);
  eager.collective_host = sim::Interval::exact(100e-6);
  const sim::IterationCostModel with(m, sys, par, bf16(), eager);
  const auto a = without.uniform(1, 1, 128), b = with.uniform(1, 1, 128);
  CHECK(b.collective_calls == 66);
  REQUIRE(a.host_wait_s.value > 0);  // host bound already
  CHECK(b.time_s.value - a.time_s.value == doctest::Approx(66 * 100e-6).epsilon(1e-9));
  // Through the engine profiles: TGI before 2.0 decodes eagerly and pays the calls, TensorRT-LLM does not.
  sys.efficiency.collective_host_s = 100e-6;
  auto tgi = sim::engine_profile(sim::Framework::Tgi);
  tgi.cuda_graphs = false;
  const sim::EngineIterationCost t(m, sys, par, bf16(), tgi);
  sys.efficiency.collective_host_s = 0;
  const sim::EngineIterationCost t0(m, sys, par, bf16(), tgi);
  CHECK(t.uniform(1, 1, 128).time_s.value - t0.uniform(1, 1, 128).time_s.value ==
        doctest::Approx(66 * 100e-6).epsilon(1e-6));
  sys.efficiency.collective_host_s = 100e-6;
  const sim::EngineIterationCost r(m, sys, par, bf16(), sim::engine_profile(sim::Framework::TrtLlm));
  sys.efficiency.collective_host_s = 0;
  const sim::EngineIterationCost r0(m, sys, par, bf16(), sim::engine_profile(sim::Framework::TrtLlm));
  CHECK(r.uniform(1, 1, 128).time_s.value == doctest::Approx(r0.uniform(1, 1, 128).time_s.value));
}

TEST_CASE("FP4 (NVFP4) on Blackwell: FP4 GEMMs for NVFP4 weights, a 0.5625-byte KV cache, refused where absent") {
  // NVFP4 packs 4-bit E2M1 elements with one E4M3 scale per 16: (4 + 8/16) / 8 = 0.5625 B an element.
  CHECK(llmsim::dtype_bytes(DType::FP4) == 0.5625);
  CHECK(model::quantized_weight_bytes(model::WeightQuant::Nvfp4, DType::BF16) == 0.5625);
  CHECK(model::gemm_dtype(model::WeightQuant::Nvfp4, DType::BF16, true) == DType::FP4);
  CHECK(model::gemm_dtype(model::WeightQuant::Mxfp4, DType::BF16, true) == DType::BF16);  // dequantized into bf16
  // llama3-70b prefill of 4 x 4,096 tokens at TP8 on HGX B200 is compute bound: NVFP4 weights run its
  // GEMMs at the FP4 peak (9,000 TFLOP/s dense) where fp8 weights run them at FP8's (4,500).
  const auto m = preset_model("llama3-70b");
  const auto sys = preset_system("hgx-b200");
  REQUIRE(sys.gpu.peak(DType::FP4) == doctest::Approx(9000e12));
  sim::ParallelSpec par;
  par.tp = 8;
  auto in = bf16();
  in.weight_quant = model::WeightQuant::Nvfp4;
  const auto fp4 = sim::IterationCostModel(m, sys, par, in).uniform(4, 4096, 0);
  in.weight_quant = model::WeightQuant::Fp8;
  const auto fp8 = sim::IterationCostModel(m, sys, par, in).uniform(4, 4096, 0);
  CHECK(fp4.linear_s.value < 0.75 * fp8.linear_s.value);
  // The KV cache in fp4 holds 0.5625 B per element: 80 layers x 8 heads x 128 x 2 x 0.5625 = 92,160 B/token.
  in.kv_dtype = DType::FP4;
  CHECK(sim::IterationCostModel(m, sys, par, in).kv_bytes_per_token() == doctest::Approx(92160.0 / 8));
  // On Hopper there is no FP4 tensor path: an NVFP4 checkpoint or an fp4 KV cache is infeasible, with why.
  sim::RunSpec run;
  run.workload = sim::Workload::Inference;
  run.par.gpus = run.par.tp = 8;
  run.infer.batch = 1;
  run.infer.input_len = 128;
  run.infer.output_len = 16;
  run.infer.precision = DType::BF16;
  run.infer.weight_quant = model::WeightQuant::Nvfp4;
  const auto h100 = preset_system("dgx-h100");
  const auto why = sim::inference_problems(m, h100, run);
  bool named = false;
  for (const auto& w : why) named = named || w.find("no fp4 compute path") != std::string::npos;
  CHECK(named);
  run.infer.weight_quant = model::WeightQuant::None;
  run.infer.kv_dtype = DType::FP4;
  named = false;
  for (const auto& w : sim::inference_problems(m, h100, run))
    named = named || w.find("an fp4 KV cache") != std::string::npos;
  CHECK(named);
  CHECK(sim::inference_problems(m, sys, run).empty());  // B200 has it
}

TEST_CASE("the LM head runs once per sequence; HF generate before 4.45.0 ran it over every prompt token") {
  // transformers PR #31292 (released in 4.45.0): generate() passes num_logits_to_keep=1, so the prefill's
  // LM head sees the last position alone; before, LlamaForCausalLM.forward ran lm_head over every position
  // and upcast all of those logits to fp32.
  CHECK(sim::released_profile(sim::Framework::Hf, Version{4, 44, 2}).all_prompt_logits);
  CHECK_FALSE(sim::released_profile(sim::Framework::Hf, Version{4, 45, 0}).all_prompt_logits);
  CHECK_FALSE(sim::released_profile(sim::Framework::Hf, std::nullopt).all_prompt_logits);
  CHECK_FALSE(sim::released_profile(sim::Framework::Vllm, Version{0, 2, 0}).all_prompt_logits);

  const auto m = preset_model("qwen2-7b");  // hidden 3,584, vocab 152,064, untied head
  const auto sys = preset_system("dgx-a100-80gb");
  sim::ParallelSpec par;
  sim::IterationOptions last, all;
  all.all_prompt_logits = true;
  const sim::IterationCostModel a(m, sys, par, bf16(), last), b(m, sys, par, bf16(), all);
  // Prefill of 2,048 tokens: 2,047 more rows through the head, 2 x 2,047 x 3,584 x 152,064 FLOPs.
  const double flops = 2.0 * 2047 * 3584 * 152064;
  const double extra = b.uniform(1, 2048, 0).linear_s.value - a.uniform(1, 2048, 0).linear_s.value;
  CHECK(extra > flops / 312e12);
  CHECK(extra < flops / (312e12 * 0.5));
  // ... and those logits pass once more through memory (16-bit read, fp32 write).
  CHECK(b.uniform(1, 2048, 0).other_s.value > a.uniform(1, 2048, 0).other_s.value);
  // A decode step has one new token per sequence: the same rows either way, one per sequence.
  CHECK(b.uniform(8, 1, 128).time_s.value == doctest::Approx(a.uniform(8, 1, 128).time_s.value));
  // The head's rows are the sequences: 64 of them cost more than one.
  CHECK(a.uniform(64, 1, 0).linear_s.value > a.uniform(1, 1, 0).linear_s.value);
}

TEST_CASE("local engines: a GGUF decode step streams the file type's exact bytes") {
  const auto m = preset_model("llama3-8b");
  const auto sys = preset_system("rtx3090-nvlink");
  sim::ParallelSpec par;
  const auto engine = sim::engine_profile(sim::Framework::LlamaCpp);
  const auto step_of = [&](const char* type) {
    sim::InferSpec in;
    in.precision = in.kv_dtype = DType::FP16;
    in.framework = sim::Framework::LlamaCpp;
    use_weight_format(in, type);
    REQUIRE(in.block_format.has_value());
    const sim::EngineIterationCost cost(m, sys, par, in, engine);
    return cost.uniform(1, 1, 512);
  };
  // By hand: 6.98 B projection weights x 4.5 bits + the 525 M-weight head in Q6_K = 4.36 GB for Q4_0; x 8.5 bits
  // + the head in Q8_0 = 7.97 GB for Q8_0, both at 936 GB/s x 0.88.
  const double proj = 32.0 * (2 * 4096.0 * 4096 + 2 * 4096.0 * 1024 + 3 * 4096.0 * 14336), head = 128256.0 * 4096;
  const double bw = 936e9 * 0.88;
  const auto q40 = step_of("gguf:Q4_0"), q80 = step_of("gguf:Q8_0");
  CHECK(q40.linear_s.value == doctest::Approx((proj * 4.5 + head * 6.5625) / 8 / bw).epsilon(0.1));
  CHECK(q80.linear_s.value == doctest::Approx((proj + head) * 8.5 / 8 / bw).epsilon(0.1));
  // The rest of the step (graph nodes, the cache) does not scale with the bits.
  CHECK(q80.time_s.value / q40.time_s.value > 1.6);
  CHECK(q80.time_s.value / q40.time_s.value < 1.83);
  // A single-token step replays llama.cpp's CUDA graph: no host work per kernel.
  CHECK(q40.host_wait_s.value == 0);
}

TEST_CASE("local engines: ExLlamaV2's CUDA graphs from 0.1.9, and memory in EXL2's bits") {
  const auto v2 = sim::released_profile(sim::Framework::ExLlamaV2, std::nullopt);
  CHECK(v2.cuda_graphs);
  CHECK_FALSE(v2.python_dispatch);
  CHECK(v2.compute_precision == DType::FP16);
  CHECK(v2.fp16_accumulate);
  const auto v1 = sim::released_profile(sim::Framework::ExLlamaV2, Version{0, 0, 1});
  CHECK_FALSE(v1.cuda_graphs);
  CHECK(sim::released_profile(sim::Framework::ExLlamaV2, Version{0, 1, 9}).cuda_graphs);
  // Llama-2-7B at exl2:4.0: 6.48 B projection weights x 4 bits + the 131 M-weight head x 6 bits (the embedding
  // stays in host memory) = 3.336 GB of weights.
  const auto m = preset_model("llama2-7b");
  sim::RunSpec run;
  run.workload = sim::Workload::Inference;
  run.infer.framework = sim::Framework::ExLlamaV2;
  run.infer.precision = run.infer.kv_dtype = DType::FP16;
  use_weight_format(run.infer, "exl2:4.0");
  run = sim::with_defaults(run);
  const auto mem = sim::evaluate_memory(m, preset_system("rtx4090-pcie"), run);
  const double proj = 32.0 * 4096 * (4 * 4096 + 3 * 11008), table = 32000.0 * 4096;
  CHECK(item(mem, "weights") == doctest::Approx(proj * 0.5 + table * 0.75).epsilon(1e-3));
}

TEST_CASE("llama.cpp --gpu-layers: the host's layers stream at its memory bandwidth, or cross PCIe for prompts") {
  const auto m = preset_model("llama2-70b");
  const auto sys = preset_system("rtx4090-pcie");
  sim::ParallelSpec par;
  sim::InferSpec in;
  in.precision = in.kv_dtype = DType::FP16;
  in.framework = sim::Framework::LlamaCpp;
  use_weight_format(in, "gguf:Q4_0");
  const auto engine = sim::engine_profile(sim::Framework::LlamaCpp);
  const auto cost = [&](std::int64_t gpu_layers) {
    sim::InferSpec o = in;
    o.gpu_layers = gpu_layers;
    return sim::EngineIterationCost(m, sys, par, o, engine);
  };
  // Q4_0: 4.5 bits per projection weight; a Llama-2-70B layer holds 8192 x (2 x 8192 + 2 x 1024) + 3 x 8192 x 28672
  // projection weights (norms at 16 bits are negligible). 40 of 80 layers on the host at 281.6 GB/s x 0.6.
  const double layer = 8192.0 * (2 * 8192 + 2 * 1024) + 3.0 * 8192 * 28672;
  const double host_bw = sys.node.host_memory_bandwidth_Bps * sys.efficiency.host_memory_bandwidth.value;
  const auto all = cost(-1).uniform(1, 1, 512), half = cost(40).uniform(1, 1, 512);
  CHECK(all.cpu_s.value == 0);
  CHECK(half.cpu_s.value > 40 * layer * 4.5 / 8 / host_bw);  // + their KV cache and the output layer
  CHECK(half.cpu_s.value < 1.05 * (40 * layer * 4.5 / 8 + 8192.0 * 32000 * 6.5625 / 8) / host_bw);
  // The GPU computes its 40 layers: about half the decode GEMMs of the whole model on the GPU.
  CHECK(half.linear_s.value == doctest::Approx(all.linear_s.value / 2).epsilon(0.05));
  // N = the layers: every layer on the GPU, the output layer on the host (llama.cpp's off-by-one).
  const auto head_only = cost(80).uniform(1, 1, 512);
  CHECK(head_only.cpu_s.value == doctest::Approx(8192.0 * 32000 * 6.5625 / 8 / host_bw).epsilon(0.01));
  // A prompt of 32 tokens or more copies the host's layers to the GPU (from pageable memory), chunk by chunk of
  // 512 tokens, and computes every layer there.
  const auto p512 = cost(40).uniform(1, 512, 0), p1024 = cost(40).uniform(1, 1024, 0);
  CHECK(p512.cpu_s.value == 0);
  CHECK(p512.comm_s.value > 40 * layer * 4.5 / 8 / sys.efficiency.pageable_h2d_Bps);
  CHECK(p1024.comm_s.value == doctest::Approx(2 * p512.comm_s.value).epsilon(0.01));
  CHECK(cost(-1).uniform(1, 512, 0).comm_s.value == 0);
}

TEST_CASE("llama.cpp --gpu-layers: memory on the GPU and in host memory, and who may keep layers on the host") {
  const auto m = preset_model("llama2-70b");
  const auto sys = preset_system("rtx4090-pcie");
  sim::RunSpec run;
  run.workload = sim::Workload::Inference;
  run.infer.framework = sim::Framework::LlamaCpp;
  run.infer.precision = run.infer.kv_dtype = DType::FP16;
  use_weight_format(run.infer, "gguf:Q4_0");
  run = sim::with_defaults(run);
  const auto all = sim::evaluate_memory(m, sys, run);
  run.infer.gpu_layers = 40;
  const auto half = sim::evaluate_memory(m, sys, run);
  // The token embedding (32000 x 8192 in Q4_0) is in host memory either way; with 40 layers the host also holds
  // half of the layers and the output layer, and the KV cache of its layers.
  const double table = 32000.0 * 8192;
  CHECK(item(all, "weights") == doctest::Approx(2 * item(half, "weights") + table * 6.5625 / 8).epsilon(0.001));
  CHECK(half.host_bytes > all.host_bytes);
  CHECK(all.host_bytes == doctest::Approx(table * 4.5 / 8));
  CHECK(item(half, "kv_cache") == doctest::Approx(item(all, "kv_cache") / 2));
  // Split over two GPUs by layers, the last stage holds its 40 layers and the output layer, and no embedding to
  // take off (the first stage's is in host memory).
  sim::RunSpec split = run;
  split.infer.gpu_layers = -1;
  split.par.pp = 2;
  split.par.gpus = 2;
  split = sim::with_defaults(split);
  const double head = table * 6.5625 / 8;
  CHECK(item(sim::evaluate_memory(m, sys, split), "weights") ==
        doctest::Approx((item(all, "weights") - head) / 2 + head).epsilon(0.001));
  // Only llama.cpp keeps layers in host memory, on one GPU.
  run.infer.framework = sim::Framework::Vllm;
  CHECK(sim::inference_problems(m, sys, run).front().find("only llama.cpp's profile") != std::string::npos);
  run.infer.framework = sim::Framework::LlamaCpp;
  run.par.tp = 2;
  run.par.gpus = 2;
  CHECK(sim::inference_problems(m, sys, run).front().find("one GPU (tp 1, pp 1)") != std::string::npos);
}

TEST_CASE("weights on the GPU: the memory model and the engine's iteration cost (serve's KV budget) agree") {
  struct Case {
    const char* model;
    const char* system;
    sim::Framework engine;
    const char* format;
    std::int64_t gpu_layers;
  };
  for (const Case& k : {Case{"llama3-8b", "dgx-h100", sim::Framework::Vllm, "fp8", -1},
                        Case{"llama3-8b", "dgx-h100", sim::Framework::Vllm, "none", -1},
                        Case{"mixtral-8x7b", "dgx-h100", sim::Framework::Vllm, "int4", -1},
                        Case{"llama3-8b", "rtx4090-pcie", sim::Framework::LlamaCpp, "gguf:Q4_K_M", -1},
                        Case{"llama2-70b", "rtx4090-pcie", sim::Framework::LlamaCpp, "gguf:Q4_0", 40},
                        Case{"llama2-7b", "rtx4090-pcie", sim::Framework::LlamaCpp, "gguf:Q8_0", 32}}) {
    INFO(k.model << " " << k.format << " gpu_layers " << k.gpu_layers);
    const auto m = preset_model(k.model);
    const auto sys = preset_system(k.system);
    sim::RunSpec run;
    run.workload = sim::Workload::Inference;
    run.infer.framework = k.engine;
    run.infer.gpu_layers = k.gpu_layers;
    use_weight_format(run.infer, k.format);
    run = sim::with_defaults(run);
    const double memory = item(sim::evaluate_memory(m, sys, run), "weights");
    const sim::EngineIterationCost cost(m, sys, run.par, run.infer, sim::engine_profile(k.engine));
    CHECK(cost.weight_bytes_per_gpu() == doctest::Approx(memory).epsilon(0.001));
  }
}

TEST_CASE("decode over Gated DeltaNet layers: only the full-attention layers' time grows with the context") {
  // Qwen3.5-9B: 8 of 32 layers attend; the other 24 read and write each sequence's state once per step,
  // whatever the context (the gated delta rule's recurrent form).
  const auto m = llmsim::model::load_hf_config(std::string(LLMSIM_TEST_DATA_DIR) + "/models/qwen3.5-9b");
  auto attending = m;  // the same model with every layer attending
  attending.linear_attn = {};
  REQUIRE(m.attention_layers() == 8);
  const auto sys = preset_system("hgx-h200");
  sim::ParallelSpec par;
  const auto decode = [&](const llmsim::model::ModelSpec& spec, std::int64_t context) {
    return sim::IterationCostModel(spec, sys, par, bf16()).uniform(8, 1, context).attention_s.value;
  };
  const double hybrid_growth = decode(m, 65536) - decode(m, 1024);
  const double full_growth = decode(attending, 65536) - decode(attending, 1024);
  CHECK(hybrid_growth > 0);
  CHECK(hybrid_growth == doctest::Approx(full_growth * 8 / 32).epsilon(1e-9));
  // The rest is the rule's: the same at any context, and what a model of full-attention layers would not pay.
  const double rule = decode(m, 1024) - decode(attending, 1024) * 8 / 32;
  CHECK(rule > 0);
  CHECK(decode(m, 65536) - decode(attending, 65536) * 8 / 32 == doctest::Approx(rule).epsilon(1e-9));
  // Per step it moves each state twice (fp32, mamba_ssm_dtype): 8 sequences x 32 heads x 128 x 128 x 4 B x 2,
  // and more than it would at 16 bits.
  auto bf16_state = m;
  bf16_state.linear_attn.state_dtype = llmsim::DType::BF16;
  CHECK(decode(bf16_state, 1024) < decode(m, 1024));
}

TEST_CASE("vLLM V1 keeps a recurrent state in one page of the attention pool: blocks as large as that page") {
  // Qwen3.5-9B on one GPU: an attention layer's K and V take 2 x 4 heads x 256 x 2 B = 4,096 B per token; a
  // Gated DeltaNet layer's state (fp32 states and the convolution's inputs) one twenty-fourth of the 24 layers'.
  // The attention block grows to 16 x ceil(state page / 4,096 B): 528 tokens (vLLM logs "Setting attention block
  // size to 528 tokens"); 8 attention and 24 state layers make KV cache groups of 8, so a sequence holds one
  // block per 528 tokens and three state blocks.
  const auto m = llmsim::model::load_hf_config(std::string(LLMSIM_TEST_DATA_DIR) + "/models/qwen3.5-9b");
  const double kv = llmsim::model::kv_bytes_per_token(m, m.num_layers, 1, 2.0);
  const double state = llmsim::model::linear_state_bytes_per_sequence(m, m.num_layers, 1, 2.0);
  CHECK(kv == doctest::Approx(8 * 4096.0));
  const double page_tokens = state / 24 / 4096;
  CHECK(page_tokens > 512);
  CHECK(page_tokens < 528);
  const sim::StatePages p = sim::aligned_state_pages(m, kv, state, 16);
  CHECK(p.block_tokens == 528);
  CHECK(p.state_blocks == 3);
  // Granite-4.0-H-350M: 4 attention and 28 Mamba-2 layers, groups of 4: seven state blocks.
  const auto granite = llmsim::model::load_hf_config(std::string(LLMSIM_TEST_DATA_DIR) + "/models/granite-4.0-h-350m");
  CHECK(sim::aligned_state_pages(granite, llmsim::model::kv_bytes_per_token(granite, granite.num_layers, 1, 2.0),
                                 llmsim::model::linear_state_bytes_per_sequence(granite, granite.num_layers, 1, 2.0),
                                 16)
            .state_blocks == 7);
  // A model without state layers keeps the engine's blocks.
  const sim::StatePages dense = sim::aligned_state_pages(preset_model("llama3-8b"), 131072, 0, 16);
  CHECK(dense.block_tokens == 16);
  CHECK(dense.state_blocks == 0);
  // V1 aligns the pages; V0 kept the states apart (MambaCacheManager).
  CHECK(sim::engine_profile(sim::Framework::Vllm).align_state_pages);
  CHECK_FALSE(sim::released_profile(sim::Framework::Vllm, parse_version("0.6.3")).align_state_pages);
}

TEST_CASE("decode over Mamba-2 layers: only the attention layers' time grows with the context") {
  const auto m = llmsim::model::load_hf_config(std::string(LLMSIM_TEST_DATA_DIR) + "/models/granite-4.0-h-350m");
  auto attending = m;
  attending.linear_attn = {};
  const auto sys = preset_system("hgx-h200");
  sim::ParallelSpec par;
  const auto decode = [&](const llmsim::model::ModelSpec& spec, std::int64_t context) {
    return sim::IterationCostModel(spec, sys, par, bf16()).uniform(8, 1, context).attention_s.value;
  };
  CHECK(decode(m, 30000) - decode(m, 1000) ==
        doctest::Approx((decode(attending, 30000) - decode(attending, 1000)) * 4 / 32).epsilon(1e-9));
}
