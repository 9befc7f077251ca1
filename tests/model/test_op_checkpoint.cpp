// torchtitan's op-level selective activation checkpointing over the operator inventory: what it saves
// and what it runs again, derived by hand from its policy (model/op_checkpoint.h).
#include <doctest/doctest.h>

#include <string>

#include "llmsim/model/op_checkpoint.h"
#include "llmsim/model/operators.h"
#include "llmsim/model/presets.h"

using namespace llmsim;
using namespace llmsim::model;

namespace {

// Llama-3-8B's preset (meta-llama/Meta-Llama-3-8B config.json): q 4096, k and v 8 heads x 128, ffn 14336.
ModelSpec llama3_8b() { return resolve_model("llama3-8b", LLMSIM_DATA_DIR); }

double share_of(const std::vector<Operator>& ops, const OpCheckpoint& c, OpRole role) {
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (ops[i].role == role) return c.recompute_share[i];
  return -1;
}

}  // namespace

TEST_CASE("op-level SAC saves every odd mm of a Llama block, SDPA's outputs, and reruns the rest") {
  const ModelSpec m = llama3_8b();
  InventoryParams p;
  p.micro_batch = 2;
  p.q_len = 1024;
  const auto ops = layer_ops(m, p, 0).ops;
  const OpCheckpoint c = alternate_matmul_checkpoint(m, ops, p);
  REQUIRE(c.recompute_share.size() == ops.size());
  // mms in torchtitan's order: wq 1, wk 2, wv 3, wo 4, w1 5, w3 6, w2 7; odd ones saved.
  // QKV GEMM: only wk (1024 of 4096 + 1024 + 1024 columns) reruns.
  CHECK(share_of(ops, c, OpRole::QkvProj) == doctest::Approx(1024.0 / 6144.0));
  CHECK(share_of(ops, c, OpRole::OutProj) == doctest::Approx(1.0));     // wo, the 4th
  CHECK(share_of(ops, c, OpRole::GateUpProj) == doctest::Approx(0.5));  // w1 saved, w3 rerun
  CHECK(share_of(ops, c, OpRole::AttentionCore) == doctest::Approx(0.0));
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].kind == OpKind::Norm || ops[i].role == OpRole::Rope) CHECK(c.recompute_share[i] == 1.0);
    if (ops[i].kind == OpKind::Gemm && ops[i].module == Module::Mlp && ops[i].role == OpRole::Other)
      CHECK(c.recompute_share[i] == 0.0);  // w2, the 7th
  }
  // Saved per token: wq 4096 + wv 1024 + w1 14336 + w2 4096 + SDPA output 4096 elements in bf16, and
  // SDPA's fp32 log-sum-exp for 32 heads.
  const double tokens = 2.0 * 1024.0;
  CHECK(c.saved_bytes == doctest::Approx(tokens * ((4096.0 + 1024 + 14336 + 4096 + 4096) * 2 + 32 * 4)));
}

TEST_CASE("op-level SAC under sequence parallelism keeps the reduce-scatters' outputs and reruns the gathers") {
  const ModelSpec m = llama3_8b();
  InventoryParams p;
  p.micro_batch = 1;
  p.q_len = 2048;
  p.tp = 8;
  p.sequence_parallel = true;
  const auto ops = layer_ops(m, p, 0).ops;
  const OpCheckpoint c = alternate_matmul_checkpoint(m, ops, p);
  int gathers = 0, scatters = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].kind != OpKind::TpComm) continue;
    if (ops[i].collective == Collective::AllGather) {
      ++gathers;
      CHECK(c.recompute_share[i] == 1.0);
    }
    if (ops[i].collective == Collective::ReduceScatter) {
      ++scatters;
      CHECK(c.recompute_share[i] == 0.0);
    }
  }
  CHECK(gathers == 2);
  CHECK(scatters == 2);
  // Per rank: wq 512 + wv 128 + w1 1792 + w2 4096 (the row-parallel partial sums, whole) + SDPA 512,
  // lse for 4 heads, and the two reduce-scatter outputs (2048 / 8 tokens x 4096).
  const double tokens = 2048.0;
  const double expect = tokens * ((512.0 + 128 + 1792 + 4096 + 512) * 2 + 4 * 4) + 2 * (tokens / 8) * 4096 * 2;
  CHECK(c.saved_bytes == doctest::Approx(expect));
}

TEST_CASE("reference projection widths split fused GEMMs as the model code runs them") {
  ModelSpec m = llama3_8b();
  InventoryParams p;
  p.q_len = 16;
  const auto ops = layer_ops(m, p, 0).ops;
  for (const auto& op : ops) {
    if (op.role == OpRole::QkvProj)
      CHECK(reference_projection_widths(m, op, 1) == std::vector<double>{4096, 1024, 1024});
    if (op.role == OpRole::GateUpProj)
      CHECK(reference_projection_widths(m, op, 1) == std::vector<double>{14336, 14336});
  }
  m.fused_qkv = m.fused_gate_up = true;  // Phi-3's qkv_proj and gate_up_proj: one mm each
  for (const auto& op : layer_ops(m, p, 0).ops)
    if (op.role == OpRole::QkvProj || op.role == OpRole::GateUpProj)
      CHECK(reference_projection_widths(m, op, 1).size() == 1);
}
