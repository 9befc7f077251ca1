// Golden tests of the operator inventory: FLOP totals derived by hand from published formulas.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "llmsim/core/error.h"
#include "llmsim/model/hf_config.h"
#include "llmsim/model/operators.h"
#include "llmsim/model/param_count.h"

using namespace llmsim;
using namespace llmsim::model;

namespace {

ModelSpec llama2_7b() {
  ModelSpec m;
  m.name = "llama2-7b";
  m.model_type = "llama";
  m.num_layers = 32;
  m.hidden = 4096;
  m.num_heads = 32;
  m.num_kv_heads = 32;
  m.head_dim = 128;
  m.ffn_hidden = 11008;
  m.vocab = 32000;
  m.max_positions = 4096;
  m.norm = NormKind::RmsNorm;
  m.mlp = MlpKind::Gated;
  m.position = PositionKind::Rope;
  m.activation = "silu";
  return m;
}

ModelSpec llama2_70b() {
  ModelSpec m = llama2_7b();
  m.name = "llama2-70b";
  m.num_layers = 80;
  m.hidden = 8192;
  m.num_heads = 64;
  m.num_kv_heads = 8;
  m.ffn_hidden = 28672;
  return m;
}

// GPT-3 175B shapes (Brown et al. 2020) with GPT-2 style LayerNorm, GELU, learned positions, biases.
ModelSpec gpt3() {
  ModelSpec m;
  m.name = "gpt3-175b";
  m.model_type = "custom-gpt";
  m.num_layers = 96;
  m.hidden = 12288;
  m.num_heads = 96;
  m.num_kv_heads = 96;
  m.head_dim = 128;
  m.ffn_hidden = 4 * 12288;
  m.vocab = 50257;
  m.max_positions = 2048;
  m.norm = NormKind::LayerNorm;
  m.mlp = MlpKind::Plain;
  m.position = PositionKind::Learned;
  m.activation = "gelu";
  m.qkv_bias = m.out_bias = m.mlp_bias = true;
  m.dropout = 0.1;
  return m;
}

ModelSpec mixtral() {
  ModelSpec m = llama2_7b();
  m.name = "mixtral-8x7b";
  m.num_kv_heads = 8;
  m.ffn_hidden = 0;
  m.vocab = 32000;
  m.moe.num_experts = 8;
  m.moe.experts_per_token = 2;
  m.moe.expert_ffn = 14336;
  return m;
}

double sum_if(const LayerInventory& inv, OpKind kind, double Operator::*field) {
  double s = 0;
  for (const Operator& op : inv.ops)
    if (op.kind == kind) s += op.*field;
  return s;
}

double gemm_fwd(const LayerInventory& inv) { return sum_if(inv, OpKind::Gemm, &Operator::fwd_flops); }

const Operator& find(const LayerInventory& inv, const std::string& name) {
  auto it = std::find_if(inv.ops.begin(), inv.ops.end(), [&](const Operator& op) { return op.name == name; });
  REQUIRE_MESSAGE(it != inv.ops.end(), "missing op " << name);
  return *it;
}

bool has(const LayerInventory& inv, const std::string& name) {
  return std::any_of(inv.ops.begin(), inv.ops.end(), [&](const Operator& op) { return op.name == name; });
}

std::int64_t count_if(const LayerInventory& inv, OpKind kind) {
  return std::count_if(inv.ops.begin(), inv.ops.end(), [&](const Operator& op) { return op.kind == kind; });
}

InventoryParams prefill(std::int64_t b, std::int64_t s, std::int64_t tp = 1) {
  InventoryParams p;
  p.micro_batch = b;
  p.q_len = s;
  p.tp = tp;
  return p;
}

}  // namespace

TEST_CASE("llama2-7b layer: GEMM FLOPs = 2T(4h^2 + 3h*ffn) and weights match the published count") {
  const ModelSpec m = llama2_7b();
  const LayerInventory inv = layer_ops(m, prefill(1, 4096), 0);
  // 2 * 4096 * (4*4096^2 + 3*4096*11008) = 8192 * 202375168
  CHECK(gemm_fwd(inv) == 1657857376256.0);
  // Flash attention is not a GEMM here: the only Gemm ops are the four projections.
  CHECK(count_if(inv, OpKind::Gemm) == 4);  // qkv, out, fused gate_up, down
  CHECK(count_if(inv, OpKind::FlashAttn) == 1);
  CHECK(find(inv, "mlp.gate_up_proj").n == 2 * 11008);
  // 4h^2 + 3h*ffn + 2h (two RMSNorms) = 202,383,360; x32 + 2 x 32000x4096 + 4096 = 6,738,415,616 (Llama-2-7B).
  std::int64_t params = 0;
  for (const Operator& op : inv.ops) params += op.weight_params;
  CHECK(params == 202383360);
  // No dropout in llama, no TP comm at tp=1.
  CHECK_FALSE(has(inv, "attn.residual_dropout"));
  CHECK(count_if(inv, OpKind::TpComm) == 0);
  CHECK(find(inv, "attn.rope").fwd_flops == doctest::Approx(3.0 * 4096 * 64 * 128));
}

TEST_CASE("gpt3 layer without flash: GEMM FLOPs = 24Bsh^2 + 4Bs^2h (Narayanan et al. 2021)") {
  const ModelSpec m = gpt3();
  const std::int64_t B = 1, s = 2048, h = 12288;
  InventoryParams p = prefill(B, s);
  p.flash_attn = false;
  const LayerInventory inv = layer_ops(m, p, 0);
  const double fwd = 24.0 * B * s * h * h + 4.0 * B * s * s * h;  // 7,627,861,917,696
  CHECK(gemm_fwd(inv) == fwd);
  CHECK(fwd == 7627861917696.0);
  // Their 72BLsh^2(1 + s/6h) (without recompute) is forward + backward = 3 x forward per layer.
  const double fwd_bwd = gemm_fwd(inv) + sum_if(inv, OpKind::Gemm, &Operator::bwd_flops);
  CHECK(fwd_bwd == doctest::Approx(72.0 * B * s * h * h * (1.0 + double(s) / (6.0 * h))));
  // The unfused chain with dropout, and the residual dropouts.
  CHECK(has(inv, "attn.scores"));
  CHECK(has(inv, "attn.softmax"));
  CHECK(has(inv, "attn.dropout"));
  CHECK(has(inv, "attn.context"));
  CHECK(has(inv, "attn.residual_dropout"));
  CHECK(has(inv, "mlp.residual_dropout"));
  CHECK_FALSE(has(inv, "attn.rope"));
  CHECK(find(inv, "mlp.up_proj").n == 4 * h);
  // Biases: qkv 3h, out h, up 4h, down h; LayerNorm gamma+beta twice.
  std::int64_t params = 0;
  for (const Operator& op : inv.ops) params += op.weight_params;
  CHECK(params == 12 * h * h + 13 * h);

  const LayerInventory head = head_ops(m, p);
  CHECK(find(head, "head.lm_head").fwd_flops == 2.0 * B * s * h * 50257);  // 2BshV
  CHECK(find(head, "head.lm_head").bwd_flops == 4.0 * B * s * h * 50257);
  CHECK(has(head, "head.loss"));

  const LayerInventory emb = embedding_ops(m, p);
  CHECK(has(emb, "embed.tokens"));
  CHECK(has(emb, "embed.positions"));
  CHECK(has(emb, "embed.dropout"));
  CHECK(find(emb, "embed.tokens").weight_params == 50257 * h);
  CHECK(find(emb, "embed.positions").weight_params == 2048 * h);
}

TEST_CASE("tp=8 divides every attention and MLP GEMM by 8") {
  const ModelSpec m = llama2_7b();
  for (bool flash : {true, false}) {
    InventoryParams p1 = prefill(2, 2048, 1), p8 = prefill(2, 2048, 8);
    p1.flash_attn = p8.flash_attn = flash;
    const LayerInventory a = layer_ops(m, p1, 3), b = layer_ops(m, p8, 3);
    CHECK(gemm_fwd(b) * 8 == gemm_fwd(a));
    CHECK(sum_if(b, OpKind::FlashAttn, &Operator::fwd_flops) * 8 == sum_if(a, OpKind::FlashAttn, &Operator::fwd_flops));
    // tp=8 adds one all-reduce after each block, carrying the full T x h activations.
    CHECK(count_if(b, OpKind::TpComm) == 2);
    const Operator& ar = find(b, "attn.tp_allreduce");
    CHECK(ar.comm_bytes == 2.0 * 2048 * 4096 * 2);
    CHECK(ar.collective == Collective::AllReduce);
    CHECK(ar.bwd_collective == Collective::AllReduce);
  }
  // The vocab-parallel head splits the vocab as well.
  const LayerInventory h1 = head_ops(m, prefill(1, 1024, 1)), h8 = head_ops(m, prefill(1, 1024, 8));
  CHECK(find(h8, "head.lm_head").n == 4000);
  CHECK(find(h8, "head.lm_head").fwd_flops * 8 == find(h1, "head.lm_head").fwd_flops);
  CHECK(find(h8, "head.loss_allreduce").comm_bytes == 1024.0 * 4 * 3);
}

TEST_CASE("sequence parallelism: gathers before the GEMMs, reduce-scatters after, norms on T/tp tokens") {
  const ModelSpec m = llama2_7b();
  InventoryParams p = prefill(1, 4096, 4);
  p.sequence_parallel = true;
  const LayerInventory sp = layer_ops(m, p, 0);
  const LayerInventory no_sp = layer_ops(m, prefill(1, 4096, 4), 0);
  CHECK(count_if(sp, OpKind::TpComm) == 4);
  const Operator& ag = find(sp, "attn.sp_allgather");
  CHECK(ag.collective == Collective::AllGather);
  CHECK(ag.bwd_collective == Collective::ReduceScatter);
  CHECK(find(sp, "mlp.tp_reduce_scatter").collective == Collective::ReduceScatter);
  CHECK(find(sp, "attn.norm").fwd_flops * 4 == find(no_sp, "attn.norm").fwd_flops);
  CHECK(find(sp, "mlp.residual").fwd_bytes * 4 == find(no_sp, "mlp.residual").fwd_bytes);
  CHECK(gemm_fwd(sp) == gemm_fwd(no_sp));
  // The all-gather must precede the QKV GEMM.
  std::size_t ag_at = 0, qkv_at = 0;
  for (std::size_t i = 0; i < sp.ops.size(); ++i) {
    if (sp.ops[i].name == "attn.sp_allgather") ag_at = i;
    if (sp.ops[i].name == "attn.qkv_proj") qkv_at = i;
  }
  CHECK(ag_at < qkv_at);
}

TEST_CASE("flash causal attention does half the FLOPs of the unfused score + context GEMMs") {
  const ModelSpec m = llama2_7b();
  InventoryParams p = prefill(2, 4096);
  const LayerInventory flash = layer_ops(m, p, 0);
  p.flash_attn = false;
  const LayerInventory unfused = layer_ops(m, p, 0);
  const double fa = find(flash, "attn.flash").fwd_flops;
  const double chain = find(unfused, "attn.scores").fwd_flops + find(unfused, "attn.context").fwd_flops;
  CHECK(chain == 4.0 * 2 * 32 * 4096.0 * 4096 * 128);
  CHECK(fa * 2 == chain);
  CHECK(find(flash, "attn.flash").bwd_flops == 2.5 * fa);
  // Non-causal: no halving.
  p.flash_attn = true;
  p.causal = false;
  CHECK(find(layer_ops(m, p, 0), "attn.flash").fwd_flops == chain);
  // The fused kernel never writes the s x s matrix: far fewer bytes than the chain.
  CHECK(find(flash, "attn.flash").fwd_bytes * 10 < find(unfused, "attn.softmax").fwd_bytes);
}

TEST_CASE("decode: attention bytes are dominated by reading the K/V cache") {
  const ModelSpec m = llama2_7b();
  InventoryParams p;
  p.micro_batch = 4;
  p.q_len = 1;
  p.kv_len = 4096;
  p.training = false;
  const LayerInventory inv = layer_ops(m, p, 0);
  const Operator& fa = find(inv, "attn.flash");
  const double kv_bytes = 2.0 * 4 * 4096 * 4096 * 2;  // K and V: 2 * b * kv_len * kv_dim * 2 bytes
  const double q_o_lse = 2.0 * 4 * 4096 * 2 + 4.0 * 32 * 4;
  CHECK(fa.fwd_bytes == kv_bytes + q_o_lse);
  CHECK(kv_bytes / fa.fwd_bytes > 0.99);
  // No causal halving for one query against its whole context.
  CHECK(fa.fwd_flops == 4.0 * 4 * 32 * 1 * 4096 * 128);
  // Inference: no backward figures, no dropout.
  CHECK(inv.bwd_flops() == 0);
  CHECK(inv.bwd_bytes() == 0);
  // The LM head runs on the last token of each sequence only.
  InventoryParams pre = p;
  pre.q_len = pre.kv_len = 512;
  CHECK(find(head_ops(m, pre), "head.lm_head").m == 4);
  CHECK(has(head_ops(m, pre), "head.sample"));
  CHECK_FALSE(has(head_ops(m, pre), "head.loss"));
}

TEST_CASE("chunked prefill and sliding windows count only the visible keys") {
  ModelSpec m = llama2_7b();
  InventoryParams p = prefill(1, 1024);
  p.kv_len = 4096;  // 1024 new tokens after 3072 cached ones
  const double per_pair = 4.0 * 32 * 128;
  CHECK(find(layer_ops(m, p, 0), "attn.flash").fwd_flops == per_pair * (1024.0 * 4096 - 1024.0 * 1024 / 2));
  m.sliding_window = 1000;
  CHECK(find(layer_ops(m, p, 0), "attn.flash").fwd_flops == per_pair * 1024.0 * 1000);
  p.q_len = 1;
  CHECK(find(layer_ops(m, p, 0), "attn.flash").fwd_flops == per_pair * 1000);
}

TEST_CASE("GQA: QKV output columns are (q_dim + 2 kv_dim) / tp") {
  const ModelSpec m = llama2_70b();
  for (std::int64_t tp : {1, 2, 8}) {
    const LayerInventory inv = layer_ops(m, prefill(1, 128, tp), 0);
    const Operator& qkv = find(inv, "attn.qkv_proj");
    CHECK(qkv.n == (8192 + 2 * 1024) / tp);
    CHECK(qkv.k == 8192);
    CHECK(qkv.m == 128);
    CHECK(qkv.weight_params == 8192 * (8192 + 2 * 1024) / tp);
    CHECK(find(inv, "attn.out_proj").k == 8192 / tp);
  }
  // 8 KV heads over 16 ranks: each rank holds one whole KV head, replicated on 2 ranks (vLLM's
  // QKVParallelLinear): 8192 / 16 query columns + 2 x 128 key/value columns.
  // A copy: find() returns a reference into the inventory, which is a temporary here (a reference would
  // dangle at the end of the statement: AddressSanitizer's heap-use-after-free).
  const Operator rep = find(layer_ops(m, prefill(1, 128, 16), 0), "attn.qkv_proj");
  CHECK(rep.n == 512 + 256);
  CHECK(rep.weight_params == 8192 * 768);
  CHECK(kv_heads_per_rank(m, 16) == 1);
  CHECK(kv_heads_per_rank(m, 8) == 1);
  CHECK(kv_heads_per_rank(m, 2) == 4);
  // Beyond the even 1/16 share (half a head's K and V), each rank holds the other half: 2 x 128 x 8192 x 0.5.
  CHECK(replicated_kv_params(m, 16) == doctest::Approx(2.0 * 128 * 8192 * 0.5));
  CHECK(replicated_kv_params(m, 8) == 0);
  // 6 KV heads and 4 ranks divide neither way.
  ModelSpec six = m;
  six.num_heads = 48;
  six.num_kv_heads = 6;
  CHECK(kv_heads_per_rank(six, 4) == 0);
  CHECK_THROWS_AS(layer_ops(six, prefill(1, 128, 4), 0), Error);
}

TEST_CASE("mixtral MoE layer: expert FLOPs = 2 T top_k 3 h expert_ffn") {
  const ModelSpec m = mixtral();
  const std::int64_t T = 2 * 4096;
  const LayerInventory inv = layer_ops(m, prefill(2, 4096), 0);
  double experts = 0;
  for (const Operator& op : inv.ops)
    if (op.kind == OpKind::Gemm && op.name.rfind("moe.experts_", 0) == 0) experts += op.fwd_flops;
  CHECK(experts == 2.0 * T * 2 * 3 * 4096 * 14336);
  const Operator& up = find(inv, "moe.experts_gate_up_proj");
  CHECK(up.batch == 8);
  CHECK(up.m == T * 2 / 8);  // balanced routing
  CHECK(up.weight_params == 8 * 4096 * 2 * 14336);
  const Operator& router = find(inv, "moe.router");
  CHECK(router.n == 8);
  CHECK(router.fwd_flops == 2.0 * T * 4096 * 8);
  const Operator& dispatch = find(inv, "moe.dispatch");
  CHECK(dispatch.kind == OpKind::MoeComm);
  CHECK(dispatch.comm_bytes == double(T) * 2 * 4096 * 2);
  CHECK(has(inv, "moe.combine"));
  CHECK_FALSE(has(inv, "mlp.down_proj"));
  // Router stays unsplit under tp, experts split.
  const LayerInventory tp2 = layer_ops(m, prefill(2, 4096, 2), 0);
  CHECK(find(tp2, "moe.router").n == 8);
  CHECK(find(tp2, "moe.experts_down_proj").k == 14336 / 2);

  // Decode of one token reads only the two experts it routes to.
  InventoryParams d;
  d.q_len = 1;
  d.kv_len = 100;
  d.training = false;
  const Operator dup = find(layer_ops(m, d, 0), "moe.experts_gate_up_proj");  // a copy (see above)
  CHECK(dup.batch == 2);
  CHECK(dup.m == 1);
  CHECK(dup.weight_params == 8 * 4096 * 2 * 14336);
  CHECK(dup.fwd_flops == 2.0 * 2 * 4096 * 2 * 14336);
}

TEST_CASE("shared expert with a sigmoid gate (qwen2_moe)") {
  ModelSpec m = mixtral();
  m.moe.shared_expert_ffn = 5632;
  m.moe.shared_expert_gate = true;
  const LayerInventory inv = layer_ops(m, prefill(1, 256), 0);
  CHECK(find(inv, "moe.shared_gate_up_proj").n == 2 * 5632);
  CHECK(find(inv, "moe.shared_gate").n == 1);
  CHECK(has(inv, "moe.shared_add"));
  // Interleaved MoE: with sparse_step 2 layer 0 is dense, layer 1 MoE.
  m.moe.sparse_step = 2;
  m.ffn_hidden = 11008;
  CHECK(has(layer_ops(m, prefill(1, 256), 0), "mlp.down_proj"));
  CHECK(has(layer_ops(m, prefill(1, 256), 1), "moe.router"));
}

TEST_CASE("invalid tensor parallelism and shapes are rejected with the rule") {
  const ModelSpec m = llama2_7b();
  try {
    layer_ops(m, prefill(1, 128, 3), 0);
    FAIL("tp=3 accepted");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::Input);
    CHECK(e.where().key == "tp");
    CHECK(e.message().find("tp=3") != std::string::npos);
    CHECK(e.message().find("num_heads=32") != std::string::npos);
  }
  CHECK_THROWS_AS(embedding_ops(m, prefill(1, 128, 3)), Error);
  CHECK_THROWS_AS(head_ops(m, prefill(0, 128)), Error);
  CHECK_THROWS_AS(layer_ops(m, prefill(1, 0), 0), Error);
  InventoryParams p = prefill(1, 128);
  p.kv_len = 64;
  CHECK_THROWS_AS(layer_ops(m, p, 0), Error);
  CHECK_THROWS_AS(layer_ops(m, prefill(1, 128), 32), Error);
  // The vocab is padded, not required to divide: 32000 / 3 rounds up, with tp=3-compatible heads.
  ModelSpec odd = m;
  odd.num_heads = odd.num_kv_heads = 24;
  odd.ffn_hidden = 11010;
  CHECK(find(head_ops(odd, prefill(1, 16, 3)), "head.lm_head").n == 10667);
}

TEST_CASE("bwd_weight_flops: forward FLOPs for weight GEMMs, 0 for attention batched GEMMs") {
  InventoryParams p = prefill(1, 1024);
  p.flash_attn = false;
  const LayerInventory inv = layer_ops(gpt3(), p, 0);
  for (const Operator& op : inv.ops) {
    if (op.kind != OpKind::Gemm) continue;
    CAPTURE(op.name);
    CHECK(op.bwd_flops == 2 * op.fwd_flops);
    if (op.name == "attn.scores" || op.name == "attn.context") {
      CHECK(op.bwd_weight_flops == 0);
      CHECK(op.weight_params == 0);
    } else {
      CHECK(op.bwd_weight_flops == op.fwd_flops);
      CHECK(op.weight_params > 0);
      CHECK(op.bwd_weight_bytes > 0);
      CHECK(op.bwd_weight_bytes < op.bwd_bytes);
    }
  }
  // Forward bytes: X, W, bias and Y once each. Backward: the dgrad GEMM (dY, W, dX) and the wgrad GEMM
  // (X, dY, dW, db) = 2x forward less the bias, which dgrad does not read.
  const Operator& qkv = find(inv, "attn.qkv_proj");
  const double bias = 3.0 * 12288 * 2;
  CHECK(qkv.fwd_bytes == (1024.0 * 12288 + 12288.0 * 3 * 12288 + 1024.0 * 3 * 12288) * 2 + bias);
  CHECK(qkv.bwd_bytes == 2 * qkv.fwd_bytes - bias);
  CHECK(qkv.bwd_weight_bytes == qkv.fwd_bytes);
}

TEST_CASE("NF4 weights add a dequantize kernel before each layer linear GEMM") {
  const ModelSpec m = llama2_7b();
  InventoryParams p = prefill(1, 512);
  const LayerInventory bf16 = layer_ops(m, p, 0);
  p.weight_dtype = DType::NF4;
  const LayerInventory nf4 = layer_ops(m, p, 0);
  int dequant = 0;
  for (std::size_t i = 0; i < nf4.ops.size(); ++i) {
    const Operator& op = nf4.ops[i];
    if (op.name.size() < 8 || op.name.substr(op.name.size() - 8) != ".dequant") continue;
    ++dequant;
    CHECK(op.kind == OpKind::Elementwise);
    REQUIRE(i + 1 < nf4.ops.size());
    const Operator& g = nf4.ops[i + 1];
    CHECK(g.kind == OpKind::Gemm);
    CHECK(op.name == g.name + ".dequant");
    const double params = double(g.k) * double(g.n);
    CHECK(op.fwd_bytes == params * (0.5 + 2));  // packed read + bf16 write
    CHECK(op.bwd_bytes == op.fwd_bytes);        // dequantized again for the dgrad GEMM
  }
  CHECK(dequant == 4);  // qkv, out, gate_up, down
  for (const Operator& op : bf16.ops) CHECK(op.name.find("dequant") == std::string::npos);
  CHECK(gemm_fwd(nf4) == gemm_fwd(bf16));
  // The LM head is not quantized.
  for (const Operator& op : head_ops(m, p).ops) CHECK(op.name.find("dequant") == std::string::npos);
}

TEST_CASE("int4 weights under AutoGPTQ's training path: five eager kernels, 16.5 B per weight, none in backward") {
  // qlinear_cuda_old.py at >= 128 rows: shift into int32 (read 0.5 + 2/128 scale bytes, write 4), cast to
  // int8 (4 + 1), and in place (1 + 1), subtract zeros (1 + 1), multiply by the scales (1 + 2): 16.5 + 1/64 B.
  const ModelSpec m = [] {
    ModelSpec x = llama2_7b();
    x.quant.format = WeightQuant::Int4;
    x.quant.group_size = 128;
    return x;
  }();
  InventoryParams p = prefill(1, 512);
  p.weight_dtype = DType::INT4;
  const LayerInventory fused = layer_ops(m, p, 0);
  p.dequant = DequantKernel::TorchUnpack;
  const LayerInventory unpack = layer_ops(m, p, 0);
  REQUIRE(fused.ops.size() == unpack.ops.size());
  int dequant = 0;
  for (std::size_t i = 0; i < unpack.ops.size(); ++i) {
    const Operator& op = unpack.ops[i];
    if (op.role != OpRole::Dequant) continue;
    ++dequant;
    const Operator& g = unpack.ops[i + 1];
    const double params = double(g.k) * double(g.n);
    CHECK(op.fwd_bytes == doctest::Approx(params * (0.5 + 2.0 / 128 + 14 + 2)));
    CHECK(op.bwd_bytes == 0);  // autograd kept the expanded weight for the dgrad GEMM
    CHECK(op.launches == 5);
    CHECK(fused.ops[i].fwd_bytes == doctest::Approx(params * (0.5 + 2.0 / 128 + 2)));
    CHECK(fused.ops[i].bwd_bytes == fused.ops[i].fwd_bytes);
    CHECK(fused.ops[i].launches == 1);
  }
  CHECK(dequant == 4);
}

TEST_CASE("names of kinds, modules and collectives") {
  CHECK(op_kind_name(OpKind::FlashAttn) == "flash_attn");
  CHECK(op_kind_name(OpKind::MoeComm) == "moe_comm");
  CHECK(module_name(Module::Residual) == "residual");
  CHECK(collective_name(Collective::ReduceScatter) == "reduce_scatter");
  const LayerInventory inv = layer_ops(llama2_7b(), prefill(1, 64), 0);
  double f = 0, b = 0;
  for (const Operator& op : inv.ops) {
    f += op.fwd_flops;
    b += op.bwd_bytes;
  }
  CHECK(inv.fwd_flops() == f);
  CHECK(inv.bwd_bytes() == b);
  CHECK(inv.fwd_flops() > gemm_fwd(inv));
}

TEST_CASE("eager glue (HF code under AMP): each pass adds the bytes derived by hand; fused is unchanged") {
  const ModelSpec m = llama2_7b();
  InventoryParams fused = prefill(2, 1024);
  InventoryParams eager = fused;
  eager.glue.rope_kernels = 5;
  eager.glue.attn_output_copy = true;
  eager.glue.split_gated_activation = true;
  eager.glue.residual_bytes = 4;
  eager.glue.cast_projection_inputs = true;
  eager.glue.weight_cast_bytes = 4;
  eager.glue.fp32_loss_upcast = true;
  const auto f = layer_ops(m, fused, 0), e = layer_ops(m, eager, 0);
  const double T = 2 * 1024, h = 4096, F = 11008;
  const double E = T * h;  // elements of one activation
  // Fused: no glue ops, bf16 residual add (read 2, write 1).
  CHECK(!has(f, "attn.input_cast"));
  CHECK(!has(f, "attn.output_copy"));
  CHECK(!has(f, "layer.weight_cast"));
  CHECK(find(f, "attn.residual").fwd_bytes == doctest::Approx(3 * E * 2));
  // q, k, v each cast the fp32 normed input: 3 E (4 + 2); backward adds the fp32 sum of 3 gradients.
  CHECK(find(e, "attn.input_cast").fwd_bytes == doctest::Approx(3 * E * 6));
  CHECK(find(e, "attn.input_cast").bwd_bytes == doctest::Approx(3 * E * 6 + 2 * 3 * E * 4));
  CHECK(find(e, "mlp.input_cast").fwd_bytes == doctest::Approx(2 * E * 6));  // gate and up
  // fp32 residual stream: read 4 + 2, write 4.
  CHECK(find(e, "attn.residual").fwd_bytes == doctest::Approx(10 * E));
  // RoPE: 5 kernels over q and k instead of 1.
  CHECK(find(e, "attn.rope").fwd_bytes == doctest::Approx(5 * find(f, "attn.rope").fwd_bytes));
  // transpose(1, 2).contiguous() of the attention output: read and write T x q_dim bf16.
  CHECK(find(e, "attn.output_copy").fwd_bytes == doctest::Approx(2 * E * 2));
  // SiLU then the product: forward 5 passes of T x ffn instead of 3; backward 8 instead of 5.
  CHECK(find(e, "mlp.act").fwd_bytes == doctest::Approx(5 * T * F * 2));
  CHECK(find(e, "mlp.act").bwd_bytes == doctest::Approx(8 * T * F * 2));
  CHECK(find(f, "mlp.act").fwd_bytes == doctest::Approx(3 * T * F * 2));
  // fp32 norm in and out: twice the bf16 traffic of the activations.
  const double params = h * 2 /* weight */ + T * 4 /* fp32 rstd */;
  CHECK(find(e, "attn.norm").fwd_bytes == doctest::Approx(2 * E * 4 + params));
  // Weight casts: every layer weight read in fp32 and written in bf16 once per forward (and the
  // gradients back in backward): 202,383,360 params x 6 bytes.
  const double layer_params = 4.0 * h * h + 3.0 * h * F;
  CHECK(find(e, "layer.weight_cast").fwd_bytes == doctest::Approx(layer_params * 6));
  CHECK(find(e, "layer.weight_cast").bwd_bytes == doctest::Approx(layer_params * 6));
  // Glue moves bytes, not FLOPs.
  CHECK(gemm_fwd(e) == doctest::Approx(gemm_fwd(f)));
  // The head: one input cast, logits upcast to fp32 (read 2, write 4 per logit), its weight cast.
  const auto he = head_ops(m, eager);
  CHECK(find(he, "head.input_cast").fwd_bytes == doctest::Approx(E * 6));
  CHECK(find(he, "head.loss_upcast").fwd_bytes == doctest::Approx(T * 32000 * 6));
  CHECK(find(he, "head.weight_cast").fwd_bytes == doctest::Approx(32000 * h * 6));
}

TEST_CASE("eager glue: HF's unfused softmax chain (scale, mask, fp32 softmax, cast back)") {
  const ModelSpec m = llama2_7b();
  InventoryParams p = prefill(1, 512);
  p.flash_attn = false;
  const double scores = 32.0 * 512 * 512;
  CHECK(find(layer_ops(m, p, 0), "attn.softmax").fwd_bytes == doctest::Approx(2 * scores * 2));
  p.glue.eager_softmax_chain = true;
  const auto inv = layer_ops(m, p, 0);
  CHECK(find(inv, "attn.softmax").fwd_bytes == doctest::Approx(scores * (2 + 2 + 2 + 4 + 4 + 2 + 2 + 2)));
  CHECK(find(inv, "attn.softmax").bwd_bytes == doctest::Approx(scores * (2 + 4 + 3 * 4 + 2 + 2)));
}

TEST_CASE("operator roles are set where the operators are made") {
  // Fused attention: one core op; unfused (with dropout): the scores, softmax, dropout, context chain.
  ModelSpec m = llama2_7b();
  InventoryParams p = prefill(1, 512);
  const auto roles = [](const LayerInventory& inv, OpRole r) {
    std::vector<std::string> names;
    for (const Operator& op : inv.ops)
      if (op.role == r) names.push_back(op.name);
    return names;
  };
  CHECK(roles(layer_ops(m, p, 0), OpRole::AttentionCore) == std::vector<std::string>{"attn.flash"});
  m.dropout = 0.1;
  p.flash_attn = false;
  CHECK(roles(layer_ops(m, p, 0), OpRole::AttentionCore) ==
        std::vector<std::string>{"attn.scores", "attn.softmax", "attn.dropout", "attn.context"});
  for (const Operator& op : layer_ops(m, p, 0).ops) CHECK(is_attention_core(op) == (op.role == OpRole::AttentionCore));
  CHECK(roles(layer_ops(m, p, 0), OpRole::QkvProj) == std::vector<std::string>{"attn.qkv_proj"});
  CHECK(roles(layer_ops(m, p, 0), OpRole::OutProj) == std::vector<std::string>{"attn.out_proj"});
  CHECK(roles(layer_ops(m, p, 0), OpRole::Rope) == std::vector<std::string>{"attn.rope"});

  // NF4: every dequant kernel has the Dequant role and precedes the GEMM it feeds.
  p = prefill(1, 512);
  p.weight_dtype = DType::NF4;
  CHECK(roles(layer_ops(llama2_7b(), p, 0), OpRole::Dequant).size() == 4);

  // MoE with a shared expert: the routed experts' ops (and only they) are marked for EP sharding; the
  // router, the shared gate and the LM head are GEMMs a weight format leaves in high precision.
  ModelSpec moe = mixtral();
  moe.moe.shared_expert_ffn = 5632;
  moe.moe.shared_expert_gate = true;
  const LayerInventory inv = layer_ops(moe, p, 0);
  std::vector<std::string> routed;
  for (const Operator& op : inv.ops)
    if (op.routed_expert) routed.push_back(op.name);
  CHECK(routed == std::vector<std::string>{"moe.experts_gate_up_proj.dequant", "moe.experts_gate_up_proj",
                                           "moe.experts_act", "moe.experts_down_proj.dequant",
                                           "moe.experts_down_proj"});
  CHECK(roles(inv, OpRole::Router) == std::vector<std::string>{"moe.router"});
  CHECK(roles(inv, OpRole::SharedGate) == std::vector<std::string>{"moe.shared_gate"});
  CHECK_FALSE(find(inv, "moe.router").quantizable);
  CHECK_FALSE(find(inv, "moe.shared_gate").quantizable);
  CHECK(find(inv, "moe.shared_gate_up_proj").quantizable);
  const LayerInventory head = head_ops(moe, p);
  CHECK(roles(head, OpRole::LmHead) == std::vector<std::string>{"head.lm_head"});
  CHECK_FALSE(find(head, "head.lm_head").quantizable);
}

TEST_CASE("qk-norm (Qwen3): an RMSNorm over every query and key head of this rank, before RoPE") {
  ModelSpec m = llama2_70b();  // 64 heads, 8 KV heads of 128
  m.qk_norm = true;
  const LayerInventory inv = layer_ops(m, prefill(1, 1024, 8), 0);
  const Operator& qk = find(inv, "attn.qk_norm");
  CHECK(qk.kind == OpKind::Norm);
  CHECK(qk.weight_params == 2 * 128);  // one head_dim scale for q, one for k, replicated over TP
  // Rows: 1024 tokens x (64 + 8) / 8 heads; bf16 read + write, the scales, fp32 statistics per row.
  const double rows = 1024.0 * (64 + 8) / 8, elems = rows * 128;
  CHECK(qk.fwd_bytes == doctest::Approx(2 * elems * 2 + 256 * 2 + rows * 4));
  CHECK(qk.fwd_flops == doctest::Approx(4 * elems));
  // It sits between the QKV projection and RoPE.
  std::size_t at_qkv = 0, at_qk = 0, at_rope = 0;
  for (std::size_t i = 0; i < inv.ops.size(); ++i) {
    if (inv.ops[i].name == "attn.qkv_proj") at_qkv = i;
    if (inv.ops[i].name == "attn.qk_norm") at_qk = i;
    if (inv.ops[i].name == "attn.rope") at_rope = i;
  }
  CHECK(at_qkv < at_qk);
  CHECK(at_qk < at_rope);
  m.qk_norm = false;
  CHECK_FALSE(has(layer_ops(m, prefill(1, 1024, 8), 0), "attn.qk_norm"));
}

TEST_CASE("multi-head latent attention: the inventory holds the parameter count; scores over 192, values over 128") {
  const ModelSpec m = load_hf_config(std::string(LLMSIM_TEST_DATA_DIR) + "/models/deepseek-v2-lite/config.json");
  InventoryParams p;
  p.micro_batch = 1;
  p.q_len = 1024;
  for (const std::int64_t layer : {0, 1}) {  // dense, then MoE
    const auto inv = layer_ops(m, p, layer);
    double weights = 0;
    for (const auto& op : inv.ops) weights += static_cast<double>(op.weight_params);
    CHECK(weights == doctest::Approx(static_cast<double>(count_layer_params(m, layer).total())));
  }
  const auto inv = layer_ops(m, p, 0);
  const auto flash =
      std::find_if(inv.ops.begin(), inv.ops.end(), [](const Operator& op) { return op.kind == OpKind::FlashAttn; });
  REQUIRE(flash != inv.ops.end());
  // Causal 1024 x 1024 (the kernel counts 1024^2 / 2 pairs); 16 heads,
  // q.k over 192 and p.v over 128: 2 * 16 * (192 + 128) FLOPs per pair.
  CHECK(flash->fwd_flops == doctest::Approx(2.0 * 16 * (192 + 128) * 1024.0 * 1024.0 / 2));
  // The out-projection reads the heads' values: 16 x 128.
  const auto out =
      std::find_if(inv.ops.begin(), inv.ops.end(), [](const Operator& op) { return op.role == OpRole::OutProj; });
  REQUIRE(out != inv.ops.end());
  CHECK(out->k == 16 * 128);
  // Decode over the latent (absorbed): 2 * 16 * (512 + 64) + 2 * 16 * 512 FLOPs per key; 576 cached per token.
  const AttentionShape a = attention_shape(m, 1);
  CHECK(a.decode_flops_per_pair == doctest::Approx(2.0 * 16 * 576 + 2.0 * 16 * 512));
  CHECK(a.cache_row == 576);
  CHECK(attention_shape(m, 2).cache_row == 576);  // the latent is whole on every TP rank
  // Without MLA the shape is the familiar one: 4 * heads * head_dim per pair, K and V of the rank's KV heads.
  const ModelSpec llama = llama2_70b();
  CHECK(attention_shape(llama, 8).prefill_flops_per_pair == doctest::Approx(4.0 * 8 * 128));
  CHECK(attention_shape(llama, 8).cache_row == doctest::Approx(2.0 * 1 * 128));
}

TEST_CASE("internlm2, olmo2, chatglm, baichuan, falcon: a layer's inventory weights are its parameter count") {
  const std::string dir = std::string(LLMSIM_TEST_DATA_DIR) + "/models/";
  InventoryParams p;
  p.micro_batch = 1;
  p.q_len = 512;
  const auto weights = [](const LayerInventory& inv) {
    double w = 0;
    for (const auto& op : inv.ops) w += static_cast<double>(op.weight_params);
    return w;
  };
  for (const char* name : {"internlm2_5-7b", "olmo-2-1124-7b", "chatglm3-6b", "baichuan2-7b", "falcon-40b-instruct",
                           "gemma-2-9b", "gemma-3-1b-it", "gpt-oss-120b"}) {
    CAPTURE(name);
    const ModelSpec m = load_hf_config(dir + name + "/config.json");
    CHECK(weights(layer_ops(m, p, 0)) == doctest::Approx(static_cast<double>(count_layer_params(m, 0).total())));
  }
  // OLMo-2's full-width q/k norms: q_dim + kv_dim scales, split with the heads under TP.
  const ModelSpec olmo = load_hf_config(dir + "olmo-2-1124-7b/config.json");
  const auto qk_weights = [&](std::int64_t tp) {
    InventoryParams q = p;
    q.tp = tp;
    const auto inv = layer_ops(olmo, q, 0);
    const auto it =
        std::find_if(inv.ops.begin(), inv.ops.end(), [](const Operator& op) { return op.name == "attn.qk_norm"; });
    REQUIRE(it != inv.ops.end());
    return it->weight_params;
  };
  CHECK(qk_weights(1) == 4096 + 4096);
  CHECK(qk_weights(4) == (4096 + 4096) / 4);
  // Falcon-7B's one input_layernorm feeds both blocks: no mlp.norm, and the count agrees.
  const ModelSpec f7 = model_from_hf_json(JsonDocument{
      .file = "mem.json",
      .text = "{}",
      .root = nlohmann::json::parse(R"({"model_type": "falcon", "multi_query": true, "parallel_attn": true})")});
  const auto inv7 = layer_ops(f7, p, 0);
  CHECK(std::none_of(inv7.ops.begin(), inv7.ops.end(), [](const Operator& op) { return op.name == "mlp.norm"; }));
  CHECK(weights(inv7) == doctest::Approx(static_cast<double>(count_layer_params(f7, 0).total())));
}

TEST_CASE("DeepSeek sparse attention: the indexer over every visible pair, MLA over the top-k, in the MQA form") {
  const ModelSpec m = load_hf_config(std::string(LLMSIM_TEST_DATA_DIR) + "/models/deepseek-v3.2-exp");
  InventoryParams p;
  p.q_len = 32768;
  p.tp = 8;
  p.flash_attn = true;
  // The layer holds what count_params counts for it (a dense layer and an MoE one).
  for (const std::int64_t l : {0, 3}) {
    InventoryParams one = p;
    one.tp = 1;
    std::int64_t params = 0;
    for (const Operator& op : layer_ops(m, one, l).ops) params += op.weight_params;
    CHECK(params == count_layer_params(m, l).total());
  }
  const auto ops = layer_ops(m, p, 0).ops;
  const auto find = [&](const std::string& name) {
    const auto it = std::find_if(ops.begin(), ops.end(), [&](const Operator& op) { return op.name == name; });
    REQUIRE(it != ops.end());
    return *it;
  };
  // 32,768 causal queries: the indexer scores all s^2 / 2 pairs over 64 heads of 128 (whole on every TP rank);
  // MLA attends to min(visible, 2048) keys, 2048^2 / 2 + (32768 - 2048) x 2048 pairs, each of the rank's 16
  // heads scoring over the latent and RoPE key (576) and summing in the latent (512).
  const double s = 32768, k = 2048;
  const Operator indexer = find("attn.indexer");
  CHECK(is_attention_core(indexer));
  CHECK(indexer.fwd_flops == doctest::Approx(2.0 * 64 * 128 * s * s / 2));
  CHECK(find("attn.indexer_q").weight_params == 1536 * 64 * 128);  // replicated: not divided by tp
  const Operator core = find("attn.flash");
  CHECK(core.fwd_flops == doctest::Approx(2.0 * 16 * (2 * 512 + 64) * (k * k / 2 + (s - k) * k)));
  // Dense MLA (the same layer without the indexer) in its expanded form: 2 x 16 x (192 + 128) per pair. On a
  // TP-8 rank the replicated indexer alone outweighs it; with all 128 heads on one GPU sparse attention
  // saves 1.6x at 32k tokens (4.40e13 against 1.81e13 + 0.88e13 FLOPs).
  ModelSpec dense = m;
  dense.dsa = {};
  const auto flash_of = [](const ModelSpec& spec, const InventoryParams& q, const std::string& name) {
    const auto inv = layer_ops(spec, q, 0).ops;
    const auto it = std::find_if(inv.begin(), inv.end(), [&](const Operator& op) { return op.name == name; });
    REQUIRE(it != inv.end());
    return it->fwd_flops;
  };
  CHECK(flash_of(dense, p, "attn.flash") == doctest::Approx(2.0 * 16 * (192 + 128) * s * s / 2));
  CHECK(indexer.fwd_flops > flash_of(dense, p, "attn.flash"));
  InventoryParams one = p;
  one.tp = 1;
  CHECK(flash_of(dense, one, "attn.flash") > 1.6 * (flash_of(m, one, "attn.flash") + flash_of(m, one, "attn.indexer")));
}

TEST_CASE("a Gated DeltaNet layer: the weights its parameters count, the rule's chunked FLOPs, heads split by tp") {
  const ModelSpec m = load_hf_config(std::string(LLMSIM_TEST_DATA_DIR) + "/models/qwen3.5-9b");
  InventoryParams p;
  p.q_len = 4096;
  // Every layer's inventory holds the weights count_params counts for it, the Gated DeltaNet (0) and the
  // full-attention one with its output gate (3) alike.
  for (const std::int64_t l : {0, 3}) {
    std::int64_t params = 0;
    for (const Operator& op : layer_ops(m, p, l).ops) params += op.weight_params;
    CHECK(params == count_layer_params(m, l).total());
  }
  const auto rule = [&](std::int64_t tp) {
    InventoryParams q = p;
    q.tp = tp;
    const auto inv = layer_ops(m, q, 0).ops;
    const auto it =
        std::find_if(inv.begin(), inv.end(), [](const Operator& op) { return op.kind == OpKind::LinearAttn; });
    REQUIRE(it != inv.end());
    CHECK(is_attention_core(*it));
    return *it;
  };
  // Per token and value head, chunks of 64 over key and value heads of 128: 6 C dk + 4 C dv + 6 dk dv + C^2 / 1.5.
  const double per_token = 6.0 * 64 * 128 + 4.0 * 64 * 128 + 6.0 * 128 * 128 + 2.0 / 3.0 * 64 * 64;
  CHECK(recurrence_work(m, 1).chunk_flops_per_token == doctest::Approx(32 * per_token));
  CHECK(rule(1).fwd_flops == doctest::Approx(4096.0 * 32 * per_token));
  CHECK(rule(2).fwd_flops == doctest::Approx(rule(1).fwd_flops / 2));  // 16 of the 32 value heads per rank
  // The full-attention layer's fused projection carries the output gate's columns: 2 x 16 x 256 + 2 x 4 x 256.
  const auto full = layer_ops(m, p, 3).ops;
  const auto qkv =
      std::find_if(full.begin(), full.end(), [](const Operator& op) { return op.role == OpRole::QkvProj; });
  REQUIRE(qkv != full.end());
  CHECK(qkv->n == 2 * 16 * 256 + 2 * 4 * 256);
  CHECK(std::none_of(full.begin(), full.end(), [](const Operator& op) { return op.kind == OpKind::LinearAttn; }));
  // Tensor parallelism must split the Gated DeltaNet heads too.
  InventoryParams odd = p;
  odd.tp = 32;
  ModelSpec wide = m;
  wide.num_heads = 32;
  wide.num_kv_heads = 32;
  try {
    (void)layer_ops(wide, odd, 0);
    FAIL("tp 32 does not divide the 16 key heads");
  } catch (const Error& e) {
    CHECK(e.message().find("linear_num_key_heads=16") != std::string::npos);
  }
}

TEST_CASE("a Mamba-2 layer: the weights its parameters count, the SSD scan's FLOPs, B and C replicated under tp") {
  const ModelSpec m = load_hf_config(std::string(LLMSIM_TEST_DATA_DIR) + "/models/granite-4.0-h-350m");
  InventoryParams p;
  p.q_len = 2048;
  for (const std::int64_t l : {0, 10}) {
    std::int64_t params = 0;
    for (const Operator& op : layer_ops(m, p, l).ops) params += op.weight_params;
    CHECK(params == count_layer_params(m, l).total());
  }
  // Per token: 48 heads x (2 C P + 4 N P) + 1 group x 2 C N at C = 256, P = 32, N = 128 (Dao and Gu 2024, Sec. 6).
  const RecurrenceWork w = recurrence_work(m, 1);
  CHECK(w.chunk == 256);
  CHECK(w.chunk_flops_per_token == doctest::Approx(48.0 * (2 * 256 * 32 + 4 * 128 * 32) + 2.0 * 256 * 128));
  CHECK(w.recurrent_flops_per_token == doctest::Approx(48.0 * 5 * 128 * 32));
  // At tp 2 each rank scans 24 heads but computes the one group's B and C whole.
  const RecurrenceWork h = recurrence_work(m, 2);
  CHECK(h.chunk_flops_per_token == doctest::Approx(24.0 * (2 * 256 * 32 + 4 * 128 * 32) + 2.0 * 256 * 128));
  CHECK(ssm_groups_per_rank(m, 2) == 1);
  CHECK(conv_channels_per_rank(m, 2) == 768 + 2 * 128);
}
