#include "llmsim/model/operators/op_builders.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "llmsim/core/error.h"

namespace llmsim::model::inventory {

// Per-element FLOP counts of the memory-bound kernels. They hardly matter for time (bandwidth
// decides) but make FLOP totals honest.

Ctx make_ctx(const ModelSpec& m, const InventoryParams& p) {
  Ctx c{m, p};
  c.b = p.micro_batch;
  c.q = p.q_len;
  c.kv = p.kv_len == 0 ? p.q_len : p.kv_len;
  c.tp = p.tp;
  c.etp = p.expert_tp > 0 ? p.expert_tp : p.tp;
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
  // MXFP4 (OCP MX v1.0) keeps one 1-byte E8M0 scale per 32 elements instead; NVFP4's E4M3 scale per 16
  // is in dtype_bytes(FP4) already.
  const double scales = p.weight_dtype == DType::FP4           ? 0.0
                        : m.quant.format == WeightQuant::Mxfp4 ? 1.0 / 32.0
                        : m.quant.group_size > 0               ? 2.0 / dbl(m.quant.group_size)
                                                               : 0.0;
  c.wpacked = !c.quant ? 0.0 : p.packed_weight_bytes > 0 ? p.packed_weight_bytes : dtype_bytes(p.weight_dtype) + scales;
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
  if (kv_heads_per_rank(m, p.tp) == 0)
    throw_input(Location{.key = "tp"},
                fmt::format("tp={} and num_kv_heads={} must divide one another (key/value heads are split across "
                            "tensor-parallel ranks, or replicated when there are fewer of them than ranks)",
                            p.tp, m.num_kv_heads));
  require_divides(p.tp, m.ffn_hidden, "ffn_hidden", "MLP columns are split across tensor-parallel ranks");
  if (m.linear_attn.kind == LinearMixer::GatedDeltaNet) {
    require_divides(p.tp, m.linear_attn.key_heads, "linear_num_key_heads",
                    "Gated DeltaNet key heads are split across tensor-parallel ranks");
    require_divides(p.tp, m.linear_attn.value_heads, "linear_num_value_heads",
                    "Gated DeltaNet value heads are split across tensor-parallel ranks");
  }
  if (m.linear_attn.kind == LinearMixer::Mamba2)
    require_divides(p.tp, m.linear_attn.ssm_heads, "mamba_n_heads",
                    "Mamba-2 heads are split across tensor-parallel ranks");
  if (m.moe.enabled()) {
    if (m.moe.sparse_step <= 0)
      throw_input(Location{.key = "moe.sparse_step"},
                  fmt::format("moe.sparse_step={} must be positive", m.moe.sparse_step));
    if (m.moe.experts_per_token <= 0 || m.moe.experts_per_token > m.moe.num_experts)
      throw_input(Location{.key = "moe.experts_per_token"},
                  fmt::format("moe.experts_per_token={} must be between 1 and num_experts={}", m.moe.experts_per_token,
                              m.moe.num_experts));
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

Operator with_role(Operator op, OpRole role) {
  op.role = role;
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

// Dequantize kernel(s) ahead of a packed-weight GEMM (InventoryParams::dequant).
// Fused: read the packed weights (+ scales), write them in the activation dtype; the backward repeats it for
// the activation-gradient GEMM (QLoRA keeps no dequantized copy).
// TorchUnpack (AutoGPTQ qlinear_cuda_old.py): per element, the shift reads the packed word and writes an
// int32 (4 B), .to(int8) reads it and writes 1 B, bitwise_and and the zero subtraction each read and write
// 1 B, the scale multiply reads 1 B and writes the activation dtype: packed + 14 B + a, in 5 kernels; nothing
// in the backward (autograd saved the expanded weight).
Operator dequant_op(const Ctx& c, const Linear& l) {
  const double params = dbl(l.k) * dbl(l.n) * dbl(l.batch);
  const bool unpack = c.p.dequant == DequantKernel::TorchUnpack;
  const double bytes = params * (c.wpacked + (unpack ? kTorchUnpackBytes : 0.0) + c.a);
  Operator op = with_role(pointwise(l.name + ".dequant", OpKind::Elementwise, l.module, kDequantFlops * params, bytes,
                                    unpack ? 0.0 : kDequantFlops * params, unpack ? 0.0 : bytes),
                          OpRole::Dequant);
  if (unpack) op.launches = kTorchUnpackKernels;
  return op;
}

Operator gemm_op(const Ctx& c, const Linear& l) {
  const double wread = (c.quant && l.quantizable) ? c.wr : c.wdense;
  const double weights = dbl(l.k) * dbl(l.n) * dbl(l.batch);
  const double bias = l.bias ? dbl(l.n) * dbl(l.batch) : 0.0;
  const double x = l.rows * dbl(l.k), y = l.rows * dbl(l.n);
  Operator op = make_op(l.name, OpKind::Gemm, l.module);
  op.role = l.role;
  op.quantizable = l.quantizable;
  op.batch = l.batch;
  op.m = static_cast<i64>(std::ceil(l.rows / dbl(l.batch)));
  op.n = l.n;
  op.k = l.k;
  op.fwd_flops = 2.0 * l.rows * dbl(l.n) * dbl(l.k);
  op.fwd_bytes = (x + y) * c.a + (weights + bias) * wread;
  const double dgrad = (y + x) * c.a + weights * wread;           // read dY, W; write dX
  const double wgrad = (x + y) * c.a + (weights + bias) * wread;  // read X, dY; write dW (+ db)
  op.bwd_flops = 2.0 * op.fwd_flops;
  op.bwd_weight_flops = op.fwd_flops;
  op.bwd_bytes = dgrad + wgrad;
  op.bwd_weight_bytes = wgrad;
  op.weight_params = l.k * l.n * l.held + (l.bias ? l.n * l.held : 0);
  op.bias = l.bias;
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
  Operator op =
      pointwise(std::move(name), OpKind::Norm, Module::Norm, flops, 2 * elems * c.r + params * c.wdense + stats,
                2 * flops, 3 * elems * c.r + 2 * params * c.wdense + stats);
  op.bwd_weight_flops = elems * (ln ? 3.0 : 2.0);  // dgamma: multiply + accumulate; dbeta: accumulate
  op.weight_params = static_cast<i64>(params);
  return op;
}

// Dropout on `elems` elements; Megatron keeps a one-byte mask. Backward reads dy and the mask and
// writes dx: the same traffic as forward.
Operator dropout_op(const Ctx& c, std::string name, Module module, double elems) {
  const double bytes = elems * (2 * c.a + 1);
  return pointwise(std::move(name), OpKind::Elementwise, module, kDropoutFlops * elems, bytes, kDropoutFlops * elems,
                   bytes);
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
      ops.push_back(
          comm(prefix + ".tp_allreduce", OpKind::TpComm, module, full, Collective::AllReduce, Collective::AllReduce));
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

// Autocast casting the wide (fp32) normed input to the activation dtype once for each of `projections`
// projections reading it; backward casts their input gradients back and sums them in fp32.
void add_input_casts(const Ctx& c, std::vector<Operator>& ops, const std::string& prefix, Module module, double rows,
                     int projections) {
  if (!c.p.glue.casts_inputs(c.a) || projections <= 0) return;
  const double elems = rows * dbl(c.m.hidden), n = projections;
  const double bytes = n * elems * (c.r + c.a);
  ops.push_back(with_role(
      pointwise(prefix + ".input_cast", OpKind::Elementwise, module, 0, bytes, 0, bytes + (n - 1) * 3 * elems * c.r),
      OpRole::Cast));
  ops.back().launches = n;  // one cast per projection
}

// Autocast casting this inventory's stored (fp32) GEMM weights to the compute dtype in every forward
// (each micro-batch: autocast's cache lasts one forward), and backward casting their gradients back
// (autograd of the cast). One op for all of them; its bytes do not depend on the tokens.
void add_weight_casts(const Ctx& c, LayerInventory& inv, const std::string& name, Module module) {
  if (!c.p.glue.casts_weights(c.a)) return;
  const double wc = c.p.glue.weight_cast_bytes;
  double params = 0, weights = 0;
  for (const Operator& op : inv.ops)
    if (op.kind == OpKind::Gemm && op.weight_params > 0) {
      params += dbl(op.weight_params);
      weights += op.launches;  // one cast per nn.Linear weight (q, k and v apart where the code has them apart)
    }
  if (params <= 0) return;
  const double bytes = params * (wc + c.a);
  inv.ops.push_back(with_role(pointwise(name, OpKind::Elementwise, module, 0, bytes, 0, bytes), OpRole::Cast));
  inv.ops.back().launches = weights;
}

void finish(const Ctx& c, LayerInventory& inv) {
  if (c.p.training) return;
  for (Operator& op : inv.ops) {
    op.bwd_flops = op.bwd_bytes = op.bwd_weight_flops = op.bwd_weight_bytes = 0;
    op.bwd_collective = Collective::None;
  }
}

}  // namespace llmsim::model::inventory
