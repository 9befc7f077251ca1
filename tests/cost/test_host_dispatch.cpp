// The host critical path's launch counts (sim/cost/host_dispatch.h): what eager code issues per
// operator, and the span rule max(GPU, host).
#include <doctest/doctest.h>

#include "llmsim/cost/host_dispatch.h"

using namespace llmsim;
using model::Operator;
using model::OpKind;

TEST_CASE("a trained GEMM launches one kernel forward and two backward; frozen, one") {
  Operator g;
  g.kind = OpKind::Gemm;
  g.bwd_flops = 4;
  g.bwd_weight_flops = 2;
  CHECK(sim::forward_launches(g) == 1);
  CHECK(sim::backward_launches(g, true) == 2);
  CHECK(sim::backward_launches(g, false) == 1);
  // HF runs q, k and v as three nn.Linear calls: three of each.
  g.launches = 3;
  CHECK(sim::forward_launches(g) == 3);
  CHECK(sim::backward_launches(g, true) == 6);
  // With biases (Qwen2's q, k, v) each trained bias is summed over the rows by a kernel of its own.
  g.bias = true;
  CHECK(sim::backward_launches(g, true) == 9);
  CHECK(sim::backward_launches(g, false) == 3);
}

TEST_CASE("norms split by eager code, collectives and operators without backward") {
  Operator n;
  n.kind = OpKind::Norm;
  n.bwd_bytes = 1;
  CHECK(sim::forward_launches(n, 6) == 6);         // LlamaRMSNorm in transformers' eager code
  CHECK(sim::backward_launches(n, true, 6) == 6);  // no weight: the input gradient's kernels alone
  n.weight_params = 4096;  // a trained weight adds its reduction over the rows; a frozen one does not
  CHECK(sim::backward_launches(n, true, 6) == 7);
  CHECK(sim::backward_launches(n, false, 6) == 6);
  CHECK(sim::backward_launches(n, true) == 2);  // a fused norm: the dX kernel and the dgamma reduction
  Operator c;
  c.kind = OpKind::TpComm;
  c.collective = model::Collective::AllReduce;
  c.bwd_collective = model::Collective::None;
  CHECK(sim::forward_launches(c) == 1);
  CHECK(sim::backward_launches(c, true) == 0);
  Operator e;
  e.kind = OpKind::Embedding;  // a gather without backward work here
  CHECK(sim::backward_launches(e, true) == 0);
}

TEST_CASE("the span is the slower of the GPU and the host, edge by edge") {
  const sim::Interval gpu{2e-3, 1.5e-3, 3e-3};
  const sim::Interval s = sim::host_bound(gpu, sim::Interval::exact(2.5e-3));
  CHECK(s.value == doctest::Approx(2.5e-3));
  CHECK(s.low == doctest::Approx(2.5e-3));
  CHECK(s.high == doctest::Approx(3e-3));
  const sim::Interval none = sim::host_bound(gpu, {});
  CHECK(none.value == gpu.value);
  CHECK(none.low == gpu.low);
}
