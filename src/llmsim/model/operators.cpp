// Per-layer operator inventory for one GPU of a Megatron-style tensor-parallel group.
//
// Sharding: QKV and gate/up are column-parallel (output features split over tp), the attention output
// projection and the MLP down projection are row-parallel (input features split, partial sums
// reduced by a TpComm op), the embedding table and the LM head are vocab-parallel.
//
// Conventions (the simulator and the docs rely on them):
//  * GEMM forward FLOPs = 2*m*n*k*batch. Backward = 2x forward: the activation-gradient GEMM and the
//    weight-gradient GEMM each cost one forward. bwd_weight_flops = forward for GEMMs with weights,
//    0 for the attention score/context batched GEMMs (both of their gradients are activation
//    gradients). Bias adds are fused into the GEMM epilogue: they count in bytes and weight_params,
//    not in FLOPs, so GEMM FLOPs stay exactly 2mnk.
//  * GEMM forward bytes = A + B + C once each: activations in the activation dtype, weights in the
//    weight dtype (the dequantized act dtype when a dequant op precedes the GEMM). Backward bytes are
//    the two backward GEMMs' reads and writes: dgrad reads dY and W and writes dX, wgrad reads X and
//    dY and writes dW (= 2x forward bytes).
//  * Memory-bound kernels: bytes = tensors read + tensors written; FLOPs = a small per-element count
//    (constants below). Their backward figures are written out per kernel (see each builder).
//  * Flash attention forward FLOPs = 4*b*heads/tp*head_dim*pairs, pairs = q_len*kv_len without a
//    causal mask, half of that for causal prefill (q_len == kv_len); backward = 2.5x forward
//    (FlashAttention-2: the recomputed scores plus the four backward matmuls).
//  * Each TpComm op stands for one collective of comm_bytes in forward (`collective`) and one in
//    backward (`bwd_collective`); comm_bytes is the full unsharded tensor.
//  * Backward figures are zero when InventoryParams::training is false.
#include "llmsim/model/operators.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "llmsim/core/error.h"

namespace llmsim::model {

namespace {

using i64 = std::int64_t;

// Per-element FLOP counts of the memory-bound kernels. They hardly matter for time (bandwidth
// decides) but make FLOP totals honest.
constexpr double kRmsNormFlops = 4;    // square, accumulate, scale by 1/rms, scale by gamma
constexpr double kLayerNormFlops = 7;  // mean, subtract, square, accumulate, scale, gamma, beta
constexpr double kRopeFlops = 3;       // x*cos + rotate(x)*sin
constexpr double kSoftmaxFlops = 6;    // scale, mask, max, subtract+exp, sum, normalize
constexpr double kDropoutFlops = 2;    // compare a random number, scale the kept value
constexpr double kAddFlops = 1;        // residual add
constexpr double kDequantFlops = 2;    // unpack / table lookup, multiply by the scale
constexpr double kLossFlops = 5;       // max, subtract+exp, sum, log, pick the target
constexpr double kSampleFlops = 5;     // temperature, max, exp, sum, normalize
constexpr double kFp32 = 4;            // softmax statistics, router probabilities, loss buffers
constexpr double kIndexBytes = 8;      // int64 token / expert index

double dbl(i64 v) { return static_cast<double>(v); }
i64 ceil_div(i64 a, i64 b) { return (a + b - 1) / b; }

// Storage formats that a GEMM cannot consume directly in this model: a dequantize kernel expands them
// to the activation dtype first (bitsandbytes / GPTQ-style; fused int4 kernels are faster than this).
bool is_packed(DType t) { return t == DType::INT8 || t == DType::INT4 || t == DType::NF4 || t == DType::FP8; }

// Shared per-call quantities.
struct Ctx {
  const ModelSpec& m;
  const InventoryParams& p;
  i64 b = 0, q = 0, kv = 0, tp = 1;
  i64 T = 0;          // tokens in the micro-batch
  i64 Tn = 0;         // tokens the norms / dropout / residual see: T, or ceil(T/tp) with sequence parallelism
  bool sp = false;    // sequence parallelism in effect (needs tp > 1)
  double a = 2;       // activation bytes per element
  double r = 2;       // residual-stream (and norm) bytes per element: a, or wider under AMP (EagerGlue)
  bool quant = false; // layer linear weights are stored packed and dequantized before each GEMM
  double wr = 2;      // bytes per weight element as a layer GEMM reads it
  double wpacked = 0; // bytes per packed weight element, scales included
  double wdense = 2;  // bytes per element of weights that are never quantized (norms, embeddings, router, LM head)
};

Ctx make_ctx(const ModelSpec& m, const InventoryParams& p) {
  Ctx c{m, p};
  c.b = p.micro_batch;
  c.q = p.q_len;
  c.kv = p.kv_len == 0 ? p.q_len : p.kv_len;
  c.tp = p.tp;
  c.T = c.b * c.q;
  c.sp = p.sequence_parallel && p.tp > 1;
  // Megatron requires s % tp == 0 with SP; ceil keeps odd decode batches usable (the largest shard).
  c.Tn = c.sp ? ceil_div(c.T, c.tp) : c.T;
  c.a = dtype_bytes(p.act_dtype);
  c.r = p.glue.stream_bytes(c.a);
  c.quant = is_packed(p.weight_dtype);
  c.wdense = c.quant ? c.a : dtype_bytes(p.weight_dtype);
  c.wr = c.wdense;
  // Group-wise scales: one fp16 scale per group_size weights (per-channel scales are negligible).
  const double scales = m.quant.group_size > 0 ? 2.0 / dbl(m.quant.group_size) : 0.0;
  c.wpacked = c.quant ? dtype_bytes(p.weight_dtype) + scales : 0.0;
  return c;
}

void require_divides(i64 tp, i64 value, const char* what, const char* why) {
  if (value % tp != 0)
    throw_input(Location{.key = "tp"}, fmt::format("tp={} must divide {}={} ({})", tp, what, value, why));
}

void validate(const ModelSpec& m, const InventoryParams& p) {
  if (p.micro_batch <= 0)
    throw_input(Location{.key = "micro_batch"}, fmt::format("micro_batch={} must be positive", p.micro_batch));
  if (p.q_len <= 0) throw_input(Location{.key = "q_len"}, fmt::format("q_len={} must be positive", p.q_len));
  // The context includes the queries themselves, so a shorter one is a caller mistake.
  if (p.kv_len < 0 || (p.kv_len > 0 && p.kv_len < p.q_len))
    throw_input(Location{.key = "kv_len"},
                fmt::format("kv_len={} must be 0 (= q_len) or at least q_len={}", p.kv_len, p.q_len));
  if (p.tp <= 0) throw_input(Location{.key = "tp"}, fmt::format("tp={} must be positive", p.tp));
  require_divides(p.tp, m.num_heads, "num_heads", "query heads are split across tensor-parallel ranks");
  require_divides(p.tp, m.num_kv_heads, "num_kv_heads", "key/value heads are split across tensor-parallel ranks");
  require_divides(p.tp, m.ffn_hidden, "ffn_hidden", "MLP columns are split across tensor-parallel ranks");
  if (m.moe.enabled()) {
    if (m.moe.sparse_step <= 0)
      throw_input(Location{.key = "moe.sparse_step"},
                  fmt::format("moe.sparse_step={} must be positive", m.moe.sparse_step));
    if (m.moe.experts_per_token <= 0 || m.moe.experts_per_token > m.moe.num_experts)
      throw_input(Location{.key = "moe.experts_per_token"},
                  fmt::format("moe.experts_per_token={} must be between 1 and num_experts={}",
                              m.moe.experts_per_token, m.moe.num_experts));
    require_divides(p.tp, m.moe.expert_ffn, "moe.expert_ffn", "expert columns are split across tensor-parallel ranks");
    require_divides(p.tp, m.moe.shared_expert_ffn, "moe.shared_expert_ffn",
                    "shared-expert columns are split across tensor-parallel ranks");
  }
}

Operator make_op(std::string name, OpKind kind, Module module) {
  Operator op;
  op.name = std::move(name);
  op.kind = kind;
  op.module = module;
  return op;
}

// A memory-bound kernel with its forward and backward figures.
Operator pointwise(std::string name, OpKind kind, Module module, double flops, double bytes, double bwd_flops,
                   double bwd_bytes) {
  Operator op = make_op(std::move(name), kind, module);
  op.fwd_flops = flops;
  op.fwd_bytes = bytes;
  op.bwd_flops = bwd_flops;
  op.bwd_bytes = bwd_bytes;
  return op;
}

Operator comm(std::string name, OpKind kind, Module module, double bytes, Collective fwd, Collective bwd) {
  Operator op = make_op(std::move(name), kind, module);
  op.comm_bytes = bytes;
  op.collective = fwd;
  op.bwd_collective = bwd;
  return op;
}

// A linear projection: C[rows, n] = X[rows, k] * W[k, n], possibly `batch` experts each with its own W.
struct Linear {
  std::string name;
  Module module = Module::Attention;
  i64 n = 0, k = 0;
  double rows = 0;     // activation rows over the whole batch (routed tokens for experts)
  i64 batch = 1;       // weight matrices read (experts that receive tokens)
  i64 held = 1;        // weight matrices held on this GPU (all experts)
  bool bias = false;   // column-parallel biases are sharded like n, row-parallel ones are replicated: n either way
  bool quantizable = true;  // the router and gates stay in high precision (as bitsandbytes / GPTQ leave them)
};

// Dequantize kernel ahead of a packed-weight GEMM: read the packed weights (+ scales), write them in
// the activation dtype. Backward repeats it for the activation-gradient GEMM (QLoRA keeps no
// dequantized copy).
Operator dequant_op(const Ctx& c, const Linear& l) {
  const double params = dbl(l.k) * dbl(l.n) * dbl(l.batch);
  const double bytes = params * (c.wpacked + c.a);
  return pointwise(l.name + ".dequant", OpKind::Elementwise, l.module, kDequantFlops * params, bytes,
                   kDequantFlops * params, bytes);
}

Operator gemm_op(const Ctx& c, const Linear& l) {
  const double wread = (c.quant && l.quantizable) ? c.wr : c.wdense;
  const double weights = dbl(l.k) * dbl(l.n) * dbl(l.batch);
  const double bias = l.bias ? dbl(l.n) * dbl(l.batch) : 0.0;
  const double x = l.rows * dbl(l.k), y = l.rows * dbl(l.n);
  Operator op = make_op(l.name, OpKind::Gemm, l.module);
  op.batch = l.batch;
  op.m = static_cast<i64>(std::ceil(l.rows / dbl(l.batch)));
  op.n = l.n;
  op.k = l.k;
  op.fwd_flops = 2.0 * l.rows * dbl(l.n) * dbl(l.k);
  op.fwd_bytes = (x + y) * c.a + (weights + bias) * wread;
  const double dgrad = (y + x) * c.a + weights * wread;               // read dY, W; write dX
  const double wgrad = (x + y) * c.a + (weights + bias) * wread;      // read X, dY; write dW (+ db)
  op.bwd_flops = 2.0 * op.fwd_flops;
  op.bwd_weight_flops = op.fwd_flops;
  op.bwd_bytes = dgrad + wgrad;
  op.bwd_weight_bytes = wgrad;
  op.weight_params = l.k * l.n * l.held + (l.bias ? l.n * l.held : 0);
  return op;
}

void add_linear(const Ctx& c, std::vector<Operator>& ops, const Linear& l) {
  if (c.quant && l.quantizable) ops.push_back(dequant_op(c, l));
  ops.push_back(gemm_op(c, l));
}

// Weightless batched GEMM over activations (attention scores / context). Both gradients are
// activation gradients, each costing one forward in FLOPs and bytes.
Operator batched_gemm(const Ctx& c, std::string name, i64 batch, i64 m, i64 n, i64 k) {
  Operator op = make_op(std::move(name), OpKind::Gemm, Module::Attention);
  op.batch = batch;
  op.m = m;
  op.n = n;
  op.k = k;
  op.fwd_flops = 2.0 * dbl(m) * dbl(n) * dbl(k) * dbl(batch);
  op.fwd_bytes = (dbl(m) * dbl(k) + dbl(k) * dbl(n) + dbl(m) * dbl(n)) * dbl(batch) * c.a;
  op.bwd_flops = 2.0 * op.fwd_flops;
  op.bwd_bytes = 2.0 * op.fwd_bytes;
  return op;
}

// LayerNorm / RMSNorm over `tokens` rows of hidden. Forward reads x, writes y and the per-row
// statistics (fp32); backward reads x, dy and the statistics, writes dx, and reduces dgamma (dbeta).
Operator norm_op(const Ctx& c, std::string name, i64 tokens) {
  const bool ln = c.m.norm == NormKind::LayerNorm;
  const double elems = dbl(tokens) * dbl(c.m.hidden);
  const double params = (ln ? 2.0 : 1.0) * dbl(c.m.hidden);
  const double stats = dbl(tokens) * kFp32 * (ln ? 2.0 : 1.0);
  const double flops = elems * (ln ? kLayerNormFlops : kRmsNormFlops);
  // Input and output in the residual dtype (= the activation dtype unless AMP keeps the stream in fp32).
  Operator op = pointwise(std::move(name), OpKind::Norm, Module::Norm, flops, 2 * elems * c.r + params * c.wdense + stats,
                          2 * flops, 3 * elems * c.r + 2 * params * c.wdense + stats);
  op.bwd_weight_flops = elems * (ln ? 3.0 : 2.0);  // dgamma: multiply + accumulate; dbeta: accumulate
  op.weight_params = static_cast<i64>(params);
  return op;
}

// Dropout on `elems` elements; Megatron keeps a one-byte mask. Backward reads dy and the mask and
// writes dx: the same traffic as forward.
Operator dropout_op(const Ctx& c, std::string name, Module module, double elems) {
  const double bytes = elems * (2 * c.a + 1);
  return pointwise(std::move(name), OpKind::Elementwise, module, kDropoutFlops * elems, bytes,
                   kDropoutFlops * elems, bytes);
}

bool has_dropout(const Ctx& c) { return c.p.training && c.m.dropout > 0; }

// The tail of an attention or MLP block: partial-sum reduction over TP, dropout, residual add.
// The residual add's backward is the gradient sum at the fork (read two, write one) = forward.
void add_block_tail(const Ctx& c, std::vector<Operator>& ops, const std::string& prefix, Module module) {
  const double full = dbl(c.T) * dbl(c.m.hidden) * c.a;
  if (c.tp > 1) {
    if (c.sp)
      ops.push_back(comm(prefix + ".tp_reduce_scatter", OpKind::TpComm, module, full, Collective::ReduceScatter,
                         Collective::AllGather));
    else
      ops.push_back(comm(prefix + ".tp_allreduce", OpKind::TpComm, module, full, Collective::AllReduce,
                         Collective::AllReduce));
  }
  const double elems = dbl(c.Tn) * dbl(c.m.hidden);
  if (has_dropout(c)) ops.push_back(dropout_op(c, prefix + ".residual_dropout", Module::Residual, elems));
  // Read the residual stream and the block output, write the stream (wider than the activations under AMP).
  const double add_bytes = (2 * c.r + c.a) * elems;
  ops.push_back(pointwise(prefix + ".residual", OpKind::Elementwise, Module::Residual, kAddFlops * elems, add_bytes,
                          kAddFlops * elems, add_bytes));
}

// With sequence parallelism the block input is sharded over tokens and gathered before the first GEMM.
void add_sp_gather(const Ctx& c, std::vector<Operator>& ops, const std::string& prefix, Module module) {
  if (!c.sp) return;
  ops.push_back(comm(prefix + ".sp_allgather", OpKind::TpComm, module, dbl(c.T) * dbl(c.m.hidden) * c.a,
                     Collective::AllGather, Collective::ReduceScatter));
}

// (query, key) pairs one head of one sequence evaluates in a fused kernel that skips masked tiles.
// Causal: the keys visible to the queries grow linearly from kv-q to kv (continuous approximation),
// capped by a sliding window. q == kv gives exactly q*kv/2; decode (q == 1) sees all kv keys.
double attended_pairs(i64 q, i64 kv, bool causal, i64 window) {
  if (!causal) return dbl(q) * dbl(kv);
  const double w = window > 0 ? dbl(window) : dbl(kv);
  if (q == 1) return std::min(dbl(kv), w);
  const double lo = dbl(kv - q), hi = dbl(kv);
  if (w >= hi) return (hi * hi - lo * lo) / 2;
  if (w <= lo) return dbl(q) * w;
  return (w * w - lo * lo) / 2 + (hi - w) * w;
}

// FlashAttention: q, k, v read once and o (+ fp32 logsumexp) written; no q x kv tensor in memory.
// Backward reads q, k, v, o, do (+ lse) and writes dq, dk, dv: twice the forward traffic.
Operator flash_op(const Ctx& c) {
  const i64 heads = c.m.num_heads / c.tp, kv_heads = c.m.num_kv_heads / c.tp;
  const i64 window = c.m.sliding_window;
  // With a sliding window the kernel only loads the keys some query can see.
  const i64 kv_read = (window > 0 && c.p.causal) ? std::min(c.kv, window + c.q - 1) : c.kv;
  const double q_elems = dbl(c.T) * dbl(heads) * dbl(c.m.head_dim);
  const double kv_elems = dbl(c.b) * dbl(kv_read) * dbl(kv_heads) * dbl(c.m.head_dim);
  const double lse = dbl(c.T) * dbl(heads) * kFp32;
  Operator op = make_op("attn.flash", OpKind::FlashAttn, Module::Attention);
  op.fwd_flops = 4.0 * dbl(c.b) * dbl(heads) * dbl(c.m.head_dim) * attended_pairs(c.q, c.kv, c.p.causal, window);
  op.fwd_bytes = (2 * q_elems + 2 * kv_elems) * c.a + lse;
  op.bwd_flops = 2.5 * op.fwd_flops;
  op.bwd_bytes = 2 * op.fwd_bytes;
  return op;
}

// The unfused chain (eager attention): real kernels compute and mask the full q x kv score matrix, so
// no causal halving. Softmax backward reads y and dy and writes dx.
void add_unfused_attention(const Ctx& c, std::vector<Operator>& ops) {
  const i64 heads = c.m.num_heads / c.tp;
  const i64 batch = c.b * heads;
  const double scores = dbl(batch) * dbl(c.q) * dbl(c.kv);
  ops.push_back(batched_gemm(c, "attn.scores", batch, c.q, c.kv, c.m.head_dim));
  // Fused (Megatron's scaled masked softmax): read and write the scores once. HF eager chain: scale
  // (2a), mask add (2a), fp32 softmax (a + 4), cast back (4 + a); backward: cast (a + 4), fp32 softmax
  // backward (3 x 4), scale (2a).
  const bool chain = c.p.glue.eager_softmax_chain;
  ops.push_back(pointwise("attn.softmax", OpKind::Elementwise, Module::Attention, kSoftmaxFlops * scores,
                          scores * (chain ? 6 * c.a + 2 * kFp32 : 2 * c.a), 4 * scores,
                          scores * (chain ? 3 * c.a + 4 * kFp32 : 3 * c.a)));
  if (has_dropout(c)) ops.push_back(dropout_op(c, "attn.dropout", Module::Attention, scores));
  ops.push_back(batched_gemm(c, "attn.context", batch, c.q, c.m.head_dim, c.kv));
}

// Autocast casting the wide (fp32) normed input to the activation dtype once for each of `projections`
// projections reading it; backward casts their input gradients back and sums them in fp32.
void add_input_casts(const Ctx& c, std::vector<Operator>& ops, const std::string& prefix, Module module,
                     double rows, int projections) {
  if (!c.p.glue.casts_inputs(c.a) || projections <= 0) return;
  const double elems = rows * dbl(c.m.hidden), n = projections;
  const double bytes = n * elems * (c.r + c.a);
  ops.push_back(pointwise(prefix + ".input_cast", OpKind::Elementwise, module, 0, bytes, 0,
                          bytes + (n - 1) * 3 * elems * c.r));
}

void add_attention(const Ctx& c, std::vector<Operator>& ops) {
  const ModelSpec& m = c.m;
  ops.push_back(norm_op(c, "attn.norm", c.Tn));
  add_sp_gather(c, ops, "attn", Module::Attention);
  add_input_casts(c, ops, "attn", Module::Attention, dbl(c.T), attention_input_projections(m));
  add_linear(c, ops, Linear{.name = "attn.qkv_proj", .module = Module::Attention,
                            .n = (m.q_dim() + 2 * m.kv_dim()) / c.tp, .k = m.hidden, .rows = dbl(c.T),
                            .bias = m.qkv_bias});
  if (m.position == PositionKind::Rope) {
    // Rotated in place: read and write the rotated part of q and k (cos/sin tables are cache-resident).
    // Eager code runs it as several kernels (EagerGlue::rope_kernels), each a read and a write.
    const double elems = dbl(c.T) * dbl((m.num_heads + m.num_kv_heads) / c.tp) * dbl(m.head_dim) * m.rotary_fraction;
    const double passes = std::max(1, c.p.glue.rope_kernels);
    ops.push_back(pointwise("attn.rope", OpKind::Elementwise, Module::Attention, kRopeFlops * elems,
                            passes * 2 * elems * c.a, kRopeFlops * elems, passes * 2 * elems * c.a));
  }
  // Flash attention applies attention-probability dropout inside the kernel (no extra traffic).
  if (c.p.flash_attn)
    ops.push_back(flash_op(c));
  else
    add_unfused_attention(c, ops);
  if (c.p.glue.attn_output_copy) {
    // (b, heads, s, d) -> (b, s, heads * d) made contiguous for the output projection; its gradient likewise.
    const double out = dbl(c.T) * dbl(m.q_dim() / c.tp) * c.a;
    ops.push_back(pointwise("attn.output_copy", OpKind::Elementwise, Module::Attention, 0, 2 * out, 0, 2 * out));
  }
  add_linear(c, ops, Linear{.name = "attn.out_proj", .module = Module::Attention, .n = m.hidden,
                            .k = m.q_dim() / c.tp, .rows = dbl(c.T), .bias = m.out_bias});
  add_block_tail(c, ops, "attn", Module::Attention);
}

// Activation (and the gated multiply) over rows x width. Gated: read gate and up, write h; backward
// reads gate, up and dh, writes dgate and dup. Plain: read x, write y; backward reads x, dy, writes dx.
Operator activation_op(const Ctx& c, std::string name, Module module, double rows, i64 width) {
  const std::string& act = c.m.activation;
  const double per = act.find("gelu") != std::string::npos ? 8.0 : act == "relu" ? 1.0 : 4.0;  // silu: exp, add, div, mul
  const double elems = rows * dbl(width);
  // Split (eager): act(gate) writes a tensor the product reads back: forward 2 + 3 passes instead of 3;
  // backward: the product's (read 3, write 2) plus the activation's (read 2, write 1).
  const bool split = c.p.glue.split_gated_activation;
  if (c.m.mlp == MlpKind::Gated)
    return pointwise(std::move(name), OpKind::Elementwise, module, (per + 1) * elems,
                     (split ? 5 : 3) * elems * c.a, 2 * (per + 1) * elems, (split ? 8 : 5) * elems * c.a);
  return pointwise(std::move(name), OpKind::Elementwise, module, per * elems, 2 * elems * c.a, 2 * per * elems,
                   3 * elems * c.a);
}

// One feed-forward network (dense MLP, the routed experts or the shared expert), `ffn` columns per GPU.
// Gated MLPs use one fused gate+up GEMM (n = 2*ffn/tp, Megatron's fc1); same FLOPs as two GEMMs and
// reads the input once.
void add_ffn(const Ctx& c, std::vector<Operator>& ops, const std::string& prefix, Module module, i64 ffn_local,
             double rows, i64 batch, i64 held) {
  const bool gated = c.m.mlp == MlpKind::Gated;
  add_linear(c, ops, Linear{.name = prefix + (gated ? "gate_up_proj" : "up_proj"), .module = module,
                            .n = (gated ? 2 : 1) * ffn_local, .k = c.m.hidden, .rows = rows, .batch = batch,
                            .held = held, .bias = c.m.mlp_bias});
  ops.push_back(activation_op(c, prefix + "act", module, rows, ffn_local));
  add_linear(c, ops, Linear{.name = prefix + "down_proj", .module = module, .n = c.m.hidden, .k = ffn_local,
                            .rows = rows, .batch = batch, .held = held, .bias = c.m.mlp_bias});
}

void add_mlp(const Ctx& c, std::vector<Operator>& ops) {
  if (c.m.ffn_hidden == 0) return;  // a dense layer without MLP (only possible in hand-made specs)
  ops.push_back(norm_op(c, "mlp.norm", c.Tn));
  add_sp_gather(c, ops, "mlp", Module::Mlp);
  add_input_casts(c, ops, "mlp", Module::Mlp, dbl(c.T), mlp_input_projections(c.m));
  add_ffn(c, ops, "mlp.", Module::Mlp, c.m.ffn_hidden / c.tp, dbl(c.T), 1, 1);
  add_block_tail(c, ops, "mlp", Module::Mlp);
}

// MoE block. Balanced routing: every expert that gets tokens gets T*top_k/E of them (the
// load-balancing loss aims at it), and min(E, T*top_k) experts receive tokens, so decode reads only
// the experts it uses. Experts are TP-sharded like the dense MLP; the dispatch/combine all-to-alls
// are always listed and only cost anything when the simulator applies expert parallelism.
void add_moe(const Ctx& c, std::vector<Operator>& ops) {
  const MoeSpec& e = c.m.moe;
  const double h = dbl(c.m.hidden), T = dbl(c.T);
  const double routed = T * dbl(e.experts_per_token);  // (token, expert) assignments
  const i64 active = std::min(e.num_experts, c.T * e.experts_per_token);
  ops.push_back(norm_op(c, "moe.norm", c.Tn));
  add_sp_gather(c, ops, "moe", Module::Moe);
  add_linear(c, ops, Linear{.name = "moe.router", .module = Module::Moe, .n = e.num_experts, .k = c.m.hidden,
                            .rows = T, .quantizable = false});
  // Softmax + top-k in fp32: read the logits, write the probabilities and the chosen (index, weight) pairs.
  const double logits = T * dbl(e.num_experts);
  ops.push_back(pointwise("moe.topk", OpKind::Elementwise, Module::Moe, kSoftmaxFlops * logits,
                          logits * (c.a + kFp32) + routed * (kIndexBytes + kFp32), 4 * logits,
                          logits * (kFp32 + c.a) * 2));
  // Permute: copy each token once per chosen expert into expert order; the inverse gathers back.
  const double perm = (T * h + routed * h) * c.a;
  ops.push_back(pointwise("moe.permute", OpKind::Elementwise, Module::Moe, 0, perm, 0, perm));
  const double a2a = routed * h * c.a;
  ops.push_back(comm("moe.dispatch", OpKind::MoeComm, Module::Moe, a2a, Collective::AllToAll, Collective::AllToAll));
  add_ffn(c, ops, "moe.experts_", Module::Moe, e.expert_ffn / c.tp, routed, active, e.num_experts);
  ops.push_back(comm("moe.combine", OpKind::MoeComm, Module::Moe, a2a, Collective::AllToAll, Collective::AllToAll));
  // Unpermute: weighted sum of each token's top-k expert outputs (multiply + add per element).
  ops.push_back(pointwise("moe.unpermute", OpKind::Elementwise, Module::Moe, 2 * routed * h,
                          perm + routed * kFp32, 2 * 2 * routed * h, 2 * perm));
  if (e.shared_expert_ffn > 0) {
    add_ffn(c, ops, "moe.shared_", Module::Moe, e.shared_expert_ffn / c.tp, T, 1, 1);
    if (e.shared_expert_gate)
      add_linear(c, ops, Linear{.name = "moe.shared_gate", .module = Module::Moe, .n = 1, .k = c.m.hidden,
                                .rows = T, .quantizable = false});
    // Add the shared expert's output (times sigmoid(gate) when gated) to the routed output.
    const double elems = T * h;
    const double flops = (e.shared_expert_gate ? 2.0 : 1.0) * elems;
    ops.push_back(pointwise("moe.shared_add", OpKind::Elementwise, Module::Moe, flops, 3 * elems * c.a, 2 * flops,
                            4 * elems * c.a));
  }
  add_block_tail(c, ops, "moe", Module::Moe);
}

// A table gather of `rows` rows (rows_hit of them in this GPU's shard). Backward: read dY, zero and
// fill the dense table gradient (PyTorch's default dense embedding gradient), accumulate the hit rows.
Operator gather_op(const Ctx& c, std::string name, double rows, double rows_hit, i64 table_rows) {
  const double h = dbl(c.m.hidden);
  Operator op = make_op(std::move(name), OpKind::Embedding, Module::Embedding);
  op.fwd_bytes = rows * kIndexBytes + rows_hit * h * c.wdense + rows * h * c.a;
  op.bwd_flops = rows_hit * h;
  op.bwd_weight_flops = op.bwd_flops;
  op.bwd_weight_bytes = dbl(table_rows) * h * c.wdense + 2 * rows_hit * h * c.wdense;
  op.bwd_bytes = rows * h * c.a + op.bwd_weight_bytes;
  op.weight_params = table_rows * c.m.hidden;
  return op;
}

// Autocast casting this inventory's stored (fp32) GEMM weights to the compute dtype in every forward
// (each micro-batch: autocast's cache lasts one forward), and backward casting their gradients back
// (autograd of the cast). One op for all of them; its bytes do not depend on the tokens.
void add_weight_casts(const Ctx& c, LayerInventory& inv, const std::string& name, Module module) {
  if (!c.p.glue.casts_weights(c.a)) return;
  const double wc = c.p.glue.weight_cast_bytes;
  double params = 0;
  for (const Operator& op : inv.ops)
    if (op.kind == OpKind::Gemm) params += dbl(op.weight_params);
  if (params <= 0) return;
  const double bytes = params * (wc + c.a);
  inv.ops.push_back(pointwise(name, OpKind::Elementwise, module, 0, bytes, 0, bytes));
}

void finish(const Ctx& c, LayerInventory& inv) {
  if (c.p.training) return;
  for (Operator& op : inv.ops) {
    op.bwd_flops = op.bwd_bytes = op.bwd_weight_flops = op.bwd_weight_bytes = 0;
    op.bwd_collective = Collective::None;
  }
}

}  // namespace

int attention_input_projections(const ModelSpec& m) {
  const std::string& t = m.model_type;
  return (t == "gpt2" || t == "gpt_neox" || t == "custom-gpt") ? 1 : 3;
}

int mlp_input_projections(const ModelSpec& m) { return m.mlp == MlpKind::Gated ? 2 : 1; }

std::string_view op_kind_name(OpKind k) {
  switch (k) {
    case OpKind::Gemm: return "gemm";
    case OpKind::FlashAttn: return "flash_attn";
    case OpKind::Elementwise: return "elementwise";
    case OpKind::Norm: return "norm";
    case OpKind::Embedding: return "embedding";
    case OpKind::Loss: return "loss";
    case OpKind::TpComm: return "tp_comm";
    case OpKind::MoeComm: return "moe_comm";
  }
  return "?";
}

std::string_view module_name(Module m) {
  switch (m) {
    case Module::Embedding: return "embedding";
    case Module::Attention: return "attention";
    case Module::Mlp: return "mlp";
    case Module::Moe: return "moe";
    case Module::Norm: return "norm";
    case Module::Residual: return "residual";
    case Module::Head: return "head";
    case Module::Loss: return "loss";
  }
  return "?";
}

std::string_view collective_name(Collective c) {
  switch (c) {
    case Collective::None: return "none";
    case Collective::AllReduce: return "all_reduce";
    case Collective::ReduceScatter: return "reduce_scatter";
    case Collective::AllGather: return "all_gather";
    case Collective::AllToAll: return "all_to_all";
  }
  return "?";
}

double LayerInventory::fwd_flops() const {
  double s = 0;
  for (const Operator& op : ops) s += op.fwd_flops;
  return s;
}
double LayerInventory::bwd_flops() const {
  double s = 0;
  for (const Operator& op : ops) s += op.bwd_flops;
  return s;
}
double LayerInventory::fwd_bytes() const {
  double s = 0;
  for (const Operator& op : ops) s += op.fwd_bytes;
  return s;
}
double LayerInventory::bwd_bytes() const {
  double s = 0;
  for (const Operator& op : ops) s += op.bwd_bytes;
  return s;
}

// gpt_neox parallel_residual (x + attn(ln1(x)) + mlp(ln2(x))) executes the same kernels as the
// sequential layout; only the dependency between the blocks differs, so the inventory is the same.
LayerInventory layer_ops(const ModelSpec& m, const InventoryParams& p, std::int64_t layer_index) {
  validate(m, p);
  if (layer_index < 0 || (m.num_layers > 0 && layer_index >= m.num_layers))
    throw_input(Location{.key = "layer"},
                fmt::format("layer index {} is outside 0..{}", layer_index, m.num_layers - 1));
  const Ctx c = make_ctx(m, p);
  LayerInventory inv;
  add_attention(c, inv.ops);
  if (m.is_moe_layer(layer_index))
    add_moe(c, inv.ops);
  else
    add_mlp(c, inv.ops);
  add_weight_casts(c, inv, "layer.weight_cast", Module::Attention);
  finish(c, inv);
  return inv;
}

// Vocab-parallel token embedding: each GPU gathers the rows in its vocab shard (on average T/tp of
// them), writes zeros elsewhere, and the partial results are summed (all-reduce; reduce-scatter with
// SP, after which the sequence stays sharded). The embedding output needs no gradient, so the
// all-reduce has no backward collective; the reduce-scatter's backward all-gathers dY.
// The vocab shard is ceil(vocab/tp) rows: Megatron pads the vocab to a multiple of 128*tp, which
// differs by < 128 rows per GPU; plain ceil keeps tp=1 exact for unpadded Hugging Face models.
LayerInventory embedding_ops(const ModelSpec& m, const InventoryParams& p) {
  validate(m, p);
  const Ctx c = make_ctx(m, p);
  LayerInventory inv;
  const double T = dbl(c.T), h = dbl(m.hidden);
  inv.ops.push_back(gather_op(c, "embed.tokens", T, T / dbl(c.tp), ceil_div(m.vocab, c.tp)));
  if (c.tp > 1) {
    if (c.sp)
      inv.ops.push_back(comm("embed.tp_reduce_scatter", OpKind::TpComm, Module::Embedding, T * h * c.a,
                             Collective::ReduceScatter, Collective::AllGather));
    else
      inv.ops.push_back(comm("embed.tp_allreduce", OpKind::TpComm, Module::Embedding, T * h * c.a,
                             Collective::AllReduce, Collective::None));
  }
  const double rows = dbl(c.Tn);
  if (m.position == PositionKind::Learned) {
    // Replicated position table: gather and add to the (reduced) token embeddings.
    Operator pos = gather_op(c, "embed.positions", rows, rows, m.max_positions);
    pos.fwd_flops = rows * h;
    pos.fwd_bytes += rows * h * c.a;
    inv.ops.push_back(pos);
  }
  if (has_dropout(c)) inv.ops.push_back(dropout_op(c, "embed.dropout", Module::Embedding, rows * h));
  finish(c, inv);
  return inv;
}

// Final norm, vocab-parallel LM head and loss / sampling. Training runs the head on every token;
// inference only on the last position of each sequence (m = micro_batch). The LM head is not
// quantized (bitsandbytes, GPTQ and AWQ keep it in high precision). Tied embeddings: the GEMM uses the
// embedding table, so weight_params is 0 here (the table is counted once, on embed.tokens).
LayerInventory head_ops(const ModelSpec& m, const InventoryParams& p) {
  validate(m, p);
  const Ctx c = make_ctx(m, p);
  LayerInventory inv;
  const i64 vocab_local = ceil_div(m.vocab, c.tp);
  const i64 rows = p.training ? c.T : c.b;
  const double h = dbl(m.hidden);
  inv.ops.push_back(norm_op(c, "head.norm", c.Tn));
  add_input_casts(c, inv.ops, "head", Module::Head, dbl(rows), 1);
  if (c.tp > 1) {
    // Column-parallel over the vocab: SP gathers the sequence (reduce-scatter in backward); without SP
    // the input is replicated and only its gradient is all-reduced in backward.
    if (c.sp)
      inv.ops.push_back(comm("head.sp_allgather", OpKind::TpComm, Module::Head, dbl(c.T) * h * c.a,
                             Collective::AllGather, Collective::ReduceScatter));
    else if (p.training)
      inv.ops.push_back(comm("head.tp_comm", OpKind::TpComm, Module::Head, dbl(c.T) * h * c.a, Collective::None,
                             Collective::AllReduce));
  }
  Operator lm = gemm_op(c, Linear{.name = "head.lm_head", .module = Module::Head, .n = vocab_local, .k = m.hidden,
                                  .rows = dbl(rows), .quantizable = false});
  if (m.tied_embeddings) lm.weight_params = 0;
  inv.ops.push_back(lm);
  const double logits = dbl(rows) * dbl(vocab_local);
  if (p.training) {
    // Cross-entropy in fp32: read the logits, write exp(logits - max) (kept for backward), read it
    // for the sum. Backward reads that buffer and writes the logit gradients.
    Operator loss = pointwise("head.loss", OpKind::Loss, Module::Loss, kLossFlops * logits,
                              logits * (c.a + 2 * kFp32), 2 * logits, logits * (kFp32 + c.a));
    inv.ops.push_back(loss);
    if (c.p.glue.fp32_loss_upcast) {
      // logits.float() (read a, write fp32) before the loss; backward casts the fp32 gradient back.
      const double up = logits * (c.a + kFp32);
      inv.ops.push_back(pointwise("head.loss_upcast", OpKind::Elementwise, Module::Loss, 0, up, 0, up));
    }
    // Vocab-parallel cross-entropy all-reduces three fp32 values per token (Megatron: max, target
    // logit, sum of exp); local backward.
    if (c.tp > 1)
      inv.ops.push_back(comm("head.loss_allreduce", OpKind::TpComm, Module::Loss, dbl(c.T) * kFp32 * 3,
                             Collective::AllReduce, Collective::None));
  } else {
    // Sampling needs the whole vocabulary row: gather the shards (vLLM gathers the logits).
    if (c.tp > 1)
      inv.ops.push_back(comm("head.logits_gather", OpKind::TpComm, Module::Head, dbl(rows) * dbl(vocab_local * c.tp) * c.a,
                             Collective::AllGather, Collective::None));
    const double full = dbl(rows) * dbl(vocab_local * c.tp);
    inv.ops.push_back(pointwise("head.sample", OpKind::Elementwise, Module::Head, kSampleFlops * full,
                                full * (c.a + kFp32), 0, 0));
  }
  add_weight_casts(c, inv, "head.weight_cast", Module::Head);
  finish(c, inv);
  return inv;
}

bool is_attention_core(const Operator& op) {
  return op.name == "attn.flash" || op.name == "attn.scores" || op.name == "attn.softmax" ||
         op.name == "attn.dropout" || op.name == "attn.context";
}

}  // namespace llmsim::model
