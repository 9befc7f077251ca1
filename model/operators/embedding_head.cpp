// The inventories around the layers: the vocab-parallel token (and position) embedding, and the final
// norm, LM head and loss (training) or sampling (inference).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "llmsim/core/error.h"
#include "llmsim/model/operators/op_builders.h"

namespace llmsim::model {

namespace {

using namespace inventory;  // NOLINT(google-build-using-namespace): the builders of this inventory

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

}  // namespace

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
  Operator lm = gemm_op(c, Linear{.name = "head.lm_head",
                                  .module = Module::Head,
                                  .n = vocab_local,
                                  .k = m.hidden,
                                  .rows = dbl(rows),
                                  .quantizable = false,
                                  .role = OpRole::LmHead});
  if (m.tied_embeddings) lm.weight_params = 0;
  // A block format stores the LM head in a block type of its own, which the GEMV reads instead of 16-bit rows.
  if (p.head_weight_bytes > 0) lm.fwd_bytes += dbl(vocab_local) * h * (p.head_weight_bytes - c.wdense);
  inv.ops.push_back(lm);
  const double logits = dbl(rows) * dbl(vocab_local);
  if (p.training) {
    // Cross-entropy in fp32: read the logits, write exp(logits - max) (kept for backward), read it
    // for the sum. Backward reads that buffer and writes the logit gradients.
    Operator loss = pointwise("head.loss", OpKind::Loss, Module::Loss, kLossFlops * logits, logits * (c.a + 2 * kFp32),
                              2 * logits, logits * (kFp32 + c.a));
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
      inv.ops.push_back(comm("head.logits_gather", OpKind::TpComm, Module::Head,
                             dbl(rows) * dbl(vocab_local * c.tp) * c.a, Collective::AllGather, Collective::None));
    const double full = dbl(rows) * dbl(vocab_local * c.tp);
    inv.ops.push_back(
        pointwise("head.sample", OpKind::Elementwise, Module::Head, kSampleFlops * full, full * (c.a + kFp32), 0, 0));
  }
  add_weight_casts(c, inv, "head.weight_cast", Module::Head);
  finish(c, inv);
  return inv;
}

}  // namespace llmsim::model
