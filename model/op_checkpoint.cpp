#include "llmsim/model/op_checkpoint.h"

#include <numeric>

#include "llmsim/core/dtype.h"

namespace llmsim::model {

namespace {

double dbl(std::int64_t v) { return static_cast<double>(v); }

}  // namespace

std::vector<double> reference_projection_widths(const ModelSpec& m, const Operator& op, std::int64_t tp) {
  const double n = dbl(op.n);
  if (op.role == OpRole::QkvProj && attention_input_projections(m) == 3) {
    const double q = dbl(m.q_dim() / tp);
    const double kv = (n - q) / 2;  // k and v: the KV heads this rank holds (replicated when tp exceeds them)
    return {q, kv, kv};
  }
  if (op.role == OpRole::GateUpProj && mlp_input_projections(m) == 2) return {n / 2, n / 2};
  return {n};
}

OpCheckpoint alternate_matmul_checkpoint(const ModelSpec& m, const std::vector<Operator>& ops,
                                         const InventoryParams& p) {
  const double a = dtype_bytes(p.act_dtype);
  const double tp = dbl(p.tp);
  const double tokens = dbl(p.micro_batch) * dbl(p.q_len);
  OpCheckpoint out;
  out.recompute_share.assign(ops.size(), 1.0);
  std::int64_t mm = 0;  // the block's aten.mm counter
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const Operator& op = ops[i];
    double& share = out.recompute_share[i];
    switch (op.kind) {
      case OpKind::Gemm: {
        // Attention's batched score/context GEMMs (bmm) and the grouped expert GEMMs are not aten.mm:
        // recomputed, and they do not advance the counter.
        if (is_attention_core(op) || op.routed_expert) break;
        const std::vector<double> widths = reference_projection_widths(m, op, p.tp);
        const double total = std::accumulate(widths.begin(), widths.end(), 0.0);
        const double rows = op.k > 0 ? op.fwd_flops / (2.0 * dbl(op.k)) / std::max(total, 1.0) : 0.0;
        double recomputed = 0;
        for (const double w : widths) {
          ++mm;
          if (mm % 2 == 0)
            recomputed += w;
          else
            out.saved_bytes += rows * w * a;
        }
        share = total > 0 ? recomputed / total : 0.0;
        break;
      }
      case OpKind::FlashAttn:
        // SDPA's outputs: the attention output and its fp32 log-sum-exp per query and head.
        share = 0;
        out.saved_bytes += tokens * dbl(m.o_dim()) / tp * a + 4.0 * tokens * dbl(m.num_heads) / tp;
        break;
      case OpKind::LinearAttn:
        // The recurrence's output (value_dim, or Mamba-2's inner width, per token), like SDPA's.
        share = 0;
        out.saved_bytes += tokens * dbl(m.linear_attn.output_dim()) / tp * a;
        break;
      case OpKind::TpComm:
        // The sequence-parallel reduce-scatter's output (1/tp of the exchanged tensor) is saved; the
        // all-gathers and all-reduces run again.
        if (op.collective == Collective::ReduceScatter) {
          share = 0;
          out.saved_bytes += op.comm_bytes / tp;
        }
        break;
      case OpKind::MoeComm:
        if (op.collective == Collective::AllToAll) {
          share = 0;
          out.saved_bytes += op.comm_bytes;
        }
        break;
      default: break;  // norms, RoPE, activations, residuals, casts, dequantization: recomputed
    }
  }
  return out;
}

}  // namespace llmsim::model
