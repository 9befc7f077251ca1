// The step graph and its list scheduler: hand-checkable schedules, the pipeline bubble formulas,
// critical paths and the errors for malformed graphs.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "llmsim/train/list_scheduler.h"
#include "llmsim/train/step_graph.h"
#include "llmsim/train/step_terms.h"
#include "test_util.h"

namespace sim = llmsim::sim;
namespace lt = llmsim::test;
using llmsim::ErrorKind;

namespace {

sim::StepNode node(std::string name, sim::ResourceId r, double value) {
  sim::StepNode n;
  n.name = std::move(name);
  n.resource = r;
  n.duration = sim::Interval::exact(value);
  return n;
}

sim::StepNode node(std::string name, sim::ResourceId r, sim::Interval d) {
  sim::StepNode n;
  n.name = std::move(name);
  n.resource = r;
  n.duration = d;
  return n;
}

// One forward or backward pass of a micro-batch on a pipeline stage.
struct PipeOp {
  bool fwd;
  int mb;
};

// Adds the per-stage programs (each stage's ops in its program order, on its own resource) to a graph,
// with chain edges inside a stage and cross-stage edges (forward s -> s+1, backward s+1 -> s, and the
// last stage's forward -> backward of the same micro-batch). Node ids must be a topological order, so
// the ops are taken round-robin over the stages, each once its cross-stage dependency is in the graph.
sim::StepGraph build_pipeline(const std::vector<std::vector<PipeOp>>& programs, double tf, double tb) {
  const int p = static_cast<int>(programs.size());
  int m = 0;
  for (const auto& op : programs[0]) m = std::max(m, op.mb + 1);
  sim::StepGraph g;
  for (int s = 0; s < p; ++s) g.add_resource("stage" + std::to_string(s) + ".compute");
  constexpr auto kNone = std::numeric_limits<sim::NodeId>::max();
  std::vector<std::vector<sim::NodeId>> fwd(p, std::vector<sim::NodeId>(m, kNone)), bwd = fwd;
  std::vector<std::size_t> next(p, 0);
  std::vector<sim::NodeId> prev(p, kNone);
  std::size_t total = 0, added = 0;
  for (const auto& prog : programs) total += prog.size();
  while (added < total) {
    bool progress = false;
    for (int s = 0; s < p; ++s) {
      while (next[s] < programs[s].size()) {
        const PipeOp op = programs[s][next[s]];
        sim::NodeId dep = kNone;
        if (op.fwd && s > 0) dep = fwd[s - 1][op.mb];
        if (!op.fwd) dep = s + 1 < p ? bwd[s + 1][op.mb] : fwd[s][op.mb];
        if ((op.fwd && s > 0) || !op.fwd) {
          if (dep == kNone) break;  // its producer is not in the graph yet
        }
        auto n = node("s" + std::to_string(s) + ".mb" + std::to_string(op.mb) + (op.fwd ? ".fwd" : ".bwd"), s,
                      op.fwd ? tf : tb);
        n.phase = op.fwd ? sim::Phase::Forward : sim::Phase::Backward;
        n.stage = s;
        n.micro_batch = op.mb;
        const auto v = g.add_node(std::move(n));
        if (prev[s] != kNone) g.add_edge(prev[s], v);
        if (dep != kNone && dep != prev[s]) g.add_edge(dep, v);
        (op.fwd ? fwd : bwd)[s][op.mb] = v;
        prev[s] = v;
        ++next[s];
        ++added;
        progress = true;
      }
    }
    REQUIRE(progress);  // the programs must not deadlock
  }
  return g;
}

std::vector<std::vector<PipeOp>> gpipe_programs(int p, int m) {
  std::vector<std::vector<PipeOp>> programs(p);
  for (int s = 0; s < p; ++s) {
    for (int i = 0; i < m; ++i) programs[s].push_back({true, i});
    for (int i = m - 1; i >= 0; --i) programs[s].push_back({false, i});
  }
  return programs;
}

// 1F1B (PipeDream-Flush): p - s - 1 warm-up forwards, then alternate one forward and one backward,
// then the cool-down backwards.
std::vector<std::vector<PipeOp>> one_f_one_b_programs(int p, int m) {
  std::vector<std::vector<PipeOp>> programs(p);
  for (int s = 0; s < p; ++s) {
    const int warmup = std::min(p - s - 1, m);
    int f = 0, b = 0;
    for (; f < warmup; ++f) programs[s].push_back({true, f});
    while (f < m) {
      programs[s].push_back({true, f++});
      programs[s].push_back({false, b++});
    }
    while (b < m) programs[s].push_back({false, b++});
  }
  return programs;
}

}  // namespace

TEST_CASE("phase and op-class names") {
  CHECK(sim::phase_name(sim::Phase::Forward) == "forward");
  CHECK(sim::phase_name(sim::Phase::Backward) == "backward");
  CHECK(sim::phase_name(sim::Phase::Recompute) == "recompute");
  CHECK(sim::phase_name(sim::Phase::Optimizer) == "optimizer");
  CHECK(sim::phase_name(sim::Phase::Communication) == "communication");
  CHECK(sim::phase_name(sim::Phase::Offload) == "offload");
  CHECK(sim::phase_name(sim::Phase::Other) == "other");
  CHECK(sim::op_class_name(sim::OpClass::Gemm) == "gemm");
  CHECK(sim::op_class_name(sim::OpClass::Attention) == "attention");
  CHECK(sim::op_class_name(sim::OpClass::Elementwise) == "elementwise");
  CHECK(sim::op_class_name(sim::OpClass::Norm) == "norm");
  CHECK(sim::op_class_name(sim::OpClass::CollectiveAllReduce) == "all_reduce");
  CHECK(sim::op_class_name(sim::OpClass::CollectiveReduceScatter) == "reduce_scatter");
  CHECK(sim::op_class_name(sim::OpClass::CollectiveAllGather) == "all_gather");
  CHECK(sim::op_class_name(sim::OpClass::CollectiveAllToAll) == "all_to_all");
  CHECK(sim::op_class_name(sim::OpClass::P2p) == "p2p");
  CHECK(sim::op_class_name(sim::OpClass::Memcpy) == "memcpy");
  CHECK(sim::op_class_name(sim::OpClass::CpuOptimizer) == "cpu_optimizer");
  CHECK(sim::op_class_name(sim::OpClass::Other) == "other");
}

TEST_CASE("resources and nodes get consecutive ids") {
  sim::StepGraph g;
  CHECK(g.add_resource("stage0.compute") == 0);
  CHECK(g.add_resource("stage0.dp_comm") == 1);
  CHECK(g.resources().size() == 2);
  CHECK(g.add_node(node("a", 0, 1.0)) == 0);
  CHECK(g.add_node(node("b", 1, 1.0)) == 1);
  CHECK(g.size() == 2);
  CHECK(g.node(1).name == "b");
}

TEST_CASE("empty graph") {
  sim::StepGraph g;
  g.add_resource("r");
  const auto s = sim::schedule(g);
  CHECK(s.nodes.empty());
  CHECK(s.makespan.value == 0);
  CHECK(s.critical_path.empty());
  REQUIRE(s.busy_s.size() == 1);
  CHECK(s.busy_s[0] == 0);
}

TEST_CASE("a chain on one resource sums the durations") {
  sim::StepGraph g;
  const auto r = g.add_resource("gpu");
  const auto a = g.add_node(node("a", r, 1.0));
  const auto b = g.add_node(node("b", r, 2.0));
  const auto c = g.add_node(node("c", r, 3.5));
  g.add_edge(a, b);
  g.add_edge(b, c);
  const auto s = sim::schedule(g);
  CHECK(s.makespan.value == doctest::Approx(6.5));
  CHECK(s.nodes[b].start == doctest::Approx(1.0));
  CHECK(s.nodes[c].start == doctest::Approx(3.0));
  CHECK(s.nodes[c].end == doctest::Approx(6.5));
  CHECK(s.busy_s[0] == doctest::Approx(6.5));
  CHECK(s.critical_path == std::vector<sim::NodeId>{a, b, c});
}

TEST_CASE("independent nodes on two resources overlap") {
  sim::StepGraph g;
  const auto r0 = g.add_resource("compute");
  const auto r1 = g.add_resource("comm");
  g.add_node(node("a", r0, 2.0));
  const auto b = g.add_node(node("b", r1, 3.0));
  const auto s = sim::schedule(g);
  CHECK(s.nodes[0].start == 0);
  CHECK(s.nodes[1].start == 0);
  CHECK(s.makespan.value == doctest::Approx(3.0));
  CHECK(s.busy_s[0] == doctest::Approx(2.0));
  CHECK(s.busy_s[1] == doctest::Approx(3.0));
  CHECK(s.critical_path == std::vector<sim::NodeId>{b});
}

TEST_CASE("nodes on the same resource serialise without an edge") {
  sim::StepGraph g;
  const auto r = g.add_resource("gpu");
  const auto a = g.add_node(node("a", r, 2.0));
  const auto b = g.add_node(node("b", r, 3.0));
  const auto s = sim::schedule(g);
  CHECK(s.nodes[b].start == doctest::Approx(2.0));
  CHECK(s.makespan.value == doctest::Approx(5.0));
  // The resource made b wait, so a is on the critical path.
  CHECK(s.critical_path == std::vector<sim::NodeId>{a, b});
}

TEST_CASE("an edge fraction releases the successor part-way through its predecessor") {
  sim::StepGraph g;
  const auto r0 = g.add_resource("compute");
  const auto r1 = g.add_resource("comm");
  const auto a = g.add_node(node("bwd", r0, {4.0, 2.0, 8.0}));
  const auto b = g.add_node(node("bucket", r1, {1.0, 1.0, 1.0}));
  g.add_edge(a, b, 0.5);
  const auto s = sim::schedule(g);
  CHECK(s.nodes[b].start == doctest::Approx(2.0));
  CHECK(s.nodes[b].end == doctest::Approx(3.0));
  CHECK(s.makespan.value == doctest::Approx(4.0));
  CHECK(s.makespan.low == doctest::Approx(2.0));   // b: [1, 2], a: [0, 2]
  CHECK(s.makespan.high == doctest::Approx(8.0));  // b: [4, 5], a: [0, 8]
}

TEST_CASE("low and high makespans come from the low and high durations") {
  sim::StepGraph g;
  const auto r0 = g.add_resource("compute");
  const auto r1 = g.add_resource("comm");
  const auto a = g.add_node(node("a", r0, {2.0, 1.0, 3.0}));
  const auto b = g.add_node(node("b", r0, {4.0, 3.0, 6.0}));
  const auto c = g.add_node(node("c", r1, {5.0, 5.0, 5.0}));  // overlaps a and b; longer only at low
  g.add_edge(a, b);
  (void)c;
  const auto s = sim::schedule(g);
  CHECK(s.makespan.value == doctest::Approx(6.0));
  CHECK(s.makespan.low == doctest::Approx(5.0));
  CHECK(s.makespan.high == doctest::Approx(9.0));
  // nodes[] hold the best-estimate schedule.
  CHECK(s.nodes[b].start == doctest::Approx(2.0));
  CHECK(s.nodes[b].end == doctest::Approx(6.0));
}

TEST_CASE("communication beside compute slows it by the interference rate times the overlap, by hand") {
  // Builders add a collective before the compute it runs beside, and a compute node sees the communication
  // already scheduled: ag [0, 1] beside a (2 s) at rate 0.25 overlaps 1 s, so a takes 2.25 s. rs [1, 5] is
  // added after a (a does not see it) and covers b, which starts at 2.25: b = 2 + 0.25 b, b = 2 / 0.75.
  sim::StepGraph g;
  const auto comp = g.add_resource("compute");
  const auto dp = g.add_resource("dp");
  g.add_interference(dp, comp);
  g.set_interference_rate({0.25, 0.1, 0.5});
  const auto ag = g.add_node(node("ag", dp, 1.0));
  const auto a = g.add_node(node("a", comp, 2.0));
  const auto rs = g.add_node(node("rs", dp, 4.0));
  const auto b = g.add_node(node("b", comp, 2.0));
  g.add_edge(ag, rs);
  const auto s = sim::schedule(g);
  CHECK(s.nodes[a].end == doctest::Approx(2.25));
  CHECK(s.nodes[a].interference == doctest::Approx(0.25));
  CHECK(s.nodes[rs].start == doctest::Approx(1.0));
  CHECK(s.nodes[rs].end == doctest::Approx(5.0));  // communication is not slowed
  CHECK(s.nodes[b].start == doctest::Approx(2.25));
  CHECK(s.nodes[b].end - s.nodes[b].start == doctest::Approx(2.0 / 0.75));
  CHECK(s.busy_s[static_cast<std::size_t>(comp)] == doctest::Approx(2.25 + 2.0 / 0.75));
  CHECK(s.makespan.value == doctest::Approx(5.0));
  // The band's edges use the rate's: at 0.5, a = 2.5 and b = 2 + 0.5 x min(b, 5 - 2.5) = 3.25, ending at
  // 5.75; at 0.1, a = 2.1, b = 2 / 0.9 ends at 4.32, before rs.
  CHECK(s.makespan.high == doctest::Approx(5.75));
  CHECK(s.makespan.low == doctest::Approx(5.0));
  // The closed form the fast estimate uses gives the same spans.
  CHECK(sim::interfered_span(2.0, 1.0, 0.25) == doctest::Approx(2.25));
  CHECK(sim::interfered_span(2.0, 5.0 - 2.25, 0.25) == doctest::Approx(2.0 / 0.75));
  CHECK(sim::interfered_span(2.0, 5.0 - 2.5, 0.5) == doctest::Approx(3.25));
  CHECK(sim::interfered_span(2.0, 0.0, 0.25) == 2.0);
}

TEST_CASE("without interference declared, or at rate 0, overlap costs nothing") {
  for (const bool declared : {false, true}) {
    sim::StepGraph g;
    const auto comp = g.add_resource("compute");
    const auto dp = g.add_resource("dp");
    if (declared) g.add_interference(dp, comp);  // rate left at 0
    g.add_node(node("ag", dp, 1.0));
    const auto a = g.add_node(node("a", comp, 2.0));
    const auto s = sim::schedule(g);
    CHECK(s.nodes[a].end == doctest::Approx(2.0));
    CHECK(s.nodes[a].interference == 0);
  }
  sim::StepGraph g;
  const auto r = g.add_resource("r");
  CHECK_THROWS_AS(g.add_interference(r, r), llmsim::Error);
  CHECK_THROWS_AS(g.set_interference_rate({0.5, 0.6, 0.7}), llmsim::Error);
}

TEST_CASE("critical path of a diamond") {
  // a (1) -> b (3) -> d (1) and a -> c (1) -> d; b and c on their own resources, a and d on r0.
  sim::StepGraph g;
  const auto r0 = g.add_resource("r0");
  const auto r1 = g.add_resource("r1");
  const auto r2 = g.add_resource("r2");
  const auto a = g.add_node(node("a", r0, 1.0));
  const auto b = g.add_node(node("b", r1, 3.0));
  const auto c = g.add_node(node("c", r2, 1.0));
  const auto d = g.add_node(node("d", r0, 1.0));
  g.add_edge(a, b);
  g.add_edge(a, c);
  g.add_edge(b, d);
  g.add_edge(c, d);
  auto s = sim::schedule(g);
  CHECK(s.makespan.value == doctest::Approx(5.0));
  CHECK(s.critical_path == std::vector<sim::NodeId>{a, b, d});

  // Swap the weights: the path goes through c instead.
  sim::StepGraph h;
  h.add_resource("r0");
  h.add_resource("r1");
  h.add_resource("r2");
  h.add_node(node("a", r0, 1.0));
  h.add_node(node("b", r1, 1.0));
  h.add_node(node("c", r2, 3.0));
  h.add_node(node("d", r0, 1.0));
  h.add_edge(a, b);
  h.add_edge(a, c);
  h.add_edge(b, d);
  h.add_edge(c, d);
  s = sim::schedule(h);
  CHECK(s.critical_path == std::vector<sim::NodeId>{a, c, d});
}

TEST_CASE("critical path prefers the dependency edge over an equal resource wait") {
  sim::StepGraph g;
  const auto r0 = g.add_resource("r0");
  const auto r1 = g.add_resource("r1");
  const auto a = g.add_node(node("a", r0, 2.0));  // r0 free at 2
  const auto b = g.add_node(node("b", r1, 2.0));  // released at 2
  const auto c = g.add_node(node("c", r0, 1.0));
  g.add_edge(b, c);
  (void)a;
  const auto s = sim::schedule(g);
  CHECK(s.nodes[c].start == doctest::Approx(2.0));
  CHECK(s.critical_path == std::vector<sim::NodeId>{b, c});
}

TEST_CASE("GPipe by hand: 2 stages x 2 micro-batches") {
  const int p = 2, m = 2;
  const double tf = 1.0, tb = 2.0;
  const auto g = build_pipeline(gpipe_programs(p, m), tf, tb);
  REQUIRE(g.size() == static_cast<std::size_t>(2 * p * m));
  const auto s = sim::schedule(g);
  // Stage 0 forwards [0,1] [1,2]; stage 1 forwards [1,2] [2,3]; stage 1 backwards [3,5] [5,7];
  // stage 0 backwards [5,7] [7,9].
  const double expected = (m + p - 1) * (tf + tb);
  CHECK(expected == doctest::Approx(9.0));
  CHECK(s.makespan.value == doctest::Approx(expected));
  for (double busy : s.busy_s) CHECK(busy == doctest::Approx(m * (tf + tb)));
  // The critical path starts with the first forward and ends with the last backward on stage 0.
  REQUIRE(!s.critical_path.empty());
  CHECK(g.node(s.critical_path.front()).phase == sim::Phase::Forward);
  CHECK(g.node(s.critical_path.back()).stage == 0);
  CHECK(g.node(s.critical_path.back()).phase == sim::Phase::Backward);
  double path_time = 0;
  for (auto v : s.critical_path) path_time += g.node(v).duration.value;
  CHECK(path_time == doctest::Approx(expected));  // no gaps along it
}

TEST_CASE("GPipe and 1F1B bubbles: makespan = (m + p - 1)(tf + tb)") {
  struct Case {
    int p, m;
    double tf, tb;
  };
  for (const Case c : {Case{4, 8, 1.0, 2.0}, Case{2, 2, 1.0, 2.0}, Case{3, 5, 0.5, 1.0}, Case{8, 16, 1.0, 2.0},
                       Case{4, 4, 1.0, 1.0}}) {
    CAPTURE(c.p);
    CAPTURE(c.m);
    const double expected = (c.m + c.p - 1) * (c.tf + c.tb);
    const double bubble = (c.p - 1) * (c.tf + c.tb);
    for (bool one_f_one_b : {false, true}) {
      CAPTURE(one_f_one_b);
      const auto programs = one_f_one_b ? one_f_one_b_programs(c.p, c.m) : gpipe_programs(c.p, c.m);
      const auto g = build_pipeline(programs, c.tf, c.tb);
      const auto s = sim::schedule(g);
      CHECK(s.makespan.value == doctest::Approx(expected));
      CHECK(s.makespan.value - c.m * (c.tf + c.tb) == doctest::Approx(bubble));
      // Bubble fraction relative to the ideal time: (p - 1) / m.
      CHECK((s.makespan.value - c.m * (c.tf + c.tb)) / (c.m * (c.tf + c.tb)) == doctest::Approx(double(c.p - 1) / c.m));
    }
  }
}

TEST_CASE("1F1B by hand: p = 4, m = 8, tf = 1, tb = 2 takes 33") {
  const auto g = build_pipeline(one_f_one_b_programs(4, 8), 1.0, 2.0);
  const auto s = sim::schedule(g);
  CHECK(s.makespan.value == doctest::Approx(33.0));
  CHECK(s.makespan.low == doctest::Approx(33.0));
  CHECK(s.makespan.high == doctest::Approx(33.0));
  // The last stage starts its first backward right after its first forward: at 3 + 1 = 4.
  for (sim::NodeId v = 0; v < g.size(); ++v) {
    const auto& n = g.node(v);
    if (n.stage == 3 && n.micro_batch == 0 && n.phase == sim::Phase::Backward) {
      CHECK(s.nodes[v].start == doctest::Approx(4.0));
    }
  }
}

TEST_CASE("malformed graphs are internal errors") {
  sim::StepGraph g;
  const auto r = g.add_resource("gpu");
  const auto a = g.add_node(node("a", r, 1.0));
  const auto b = g.add_node(node("b", r, 1.0));
  CHECK(lt::error_of([&] { g.add_edge(b, a); }).kind() == ErrorKind::Internal);
  CHECK(lt::error_of([&] { g.add_edge(a, a); }).kind() == ErrorKind::Internal);
  CHECK(lt::error_of([&] { g.add_edge(a, 7); }).kind() == ErrorKind::Internal);
  CHECK(lt::error_of([&] { g.add_edge(a, b, 0.0); }).kind() == ErrorKind::Internal);
  CHECK(lt::error_of([&] { g.add_edge(a, b, -0.5); }).kind() == ErrorKind::Internal);
  CHECK(lt::error_of([&] { g.add_edge(a, b, 1.5); }).kind() == ErrorKind::Internal);
  CHECK(lt::error_of([&] { g.add_edge(a, b, std::nan("")); }).kind() == ErrorKind::Internal);
  CHECK(lt::error_of([&] { g.add_node(node("c", 1, 1.0)); }).kind() == ErrorKind::Internal);
  CHECK(lt::error_of([&] { g.add_node(node("c", -1, 1.0)); }).kind() == ErrorKind::Internal);
  CHECK_NOTHROW(g.add_edge(a, b, 1.0));
  CHECK_NOTHROW(g.add_edge(a, b, 1e-9));
  CHECK(boost::num_edges(g.graph()) == 2);
}
