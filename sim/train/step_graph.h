#pragma once
// The operator graph of one simulated training step (or any schedule): nodes are operator executions
// on a resource (a GPU stream, a link, the CPU), edges are dependencies. Built by the workload
// builders, scheduled by list_scheduler.h. Boost.Graph adjacency list underneath.
#include <cstdint>
#include <string>
#include <vector>

#include <boost/graph/adjacency_list.hpp>

#include "llmsim/core/interval.h"

namespace llmsim::sim {

// What a node spends its time on, for the breakdown tables.
enum class Phase { Forward, Backward, Recompute, Optimizer, Communication, Offload, Other };
enum class OpClass {
  Gemm,
  Attention,
  Elementwise,
  Norm,
  CollectiveAllReduce,
  CollectiveReduceScatter,
  CollectiveAllGather,
  CollectiveAllToAll,
  P2p,
  Memcpy,
  CpuOptimizer,
  Other
};
std::string_view phase_name(
    Phase p);  // "forward", "backward", "recompute", "optimizer", "communication", "offload", "other"
std::string_view op_class_name(
    OpClass c);  // "gemm", "attention", "elementwise", "norm", "all_reduce", "reduce_scatter",
                 // "all_gather", "all_to_all", "p2p", "memcpy", "cpu_optimizer", "other"

using ResourceId = int;  // index into StepGraph::resources()

struct StepNode {
  std::string name;         // e.g. "s0.mb3.fwd.c1", "s0.dp.bucket2"
  ResourceId resource = 0;  // the stream / link / CPU it occupies exclusively while it runs
  Interval duration;        // seconds
  Phase phase = Phase::Other;
  OpClass op_class = OpClass::Other;
  int stage = 0;         // pipeline stage (for the trace and per-stage reports)
  int micro_batch = -1;  // -1 when not tied to a micro-batch
};

// A dependency: `to` may start once `from` has run `fraction` of its duration (1 = finished). A
// fraction below 1 models work released part-way through a coarse node, e.g. a gradient bucket that
// is ready when the first layers of a backward chunk are done.
struct StepEdge {
  double fraction = 1.0;
};

using StepBoostGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, StepNode, StepEdge>;
using NodeId = StepBoostGraph::vertex_descriptor;

// Communication that shares a GPU with a compute stream slows it while both run (NCCL's kernels hold SMs
// and HBM bandwidth; hardware::Efficiency::comm_interference): a node on `target` loses the graph's
// interference rate in seconds for every second that a node on `source` runs beside it.
struct Interference {
  ResourceId source = 0;
  ResourceId target = 0;
};

class StepGraph {
 public:
  // Resources are named ("stage0.compute", "stage0.dp_comm", "node.cpu", …) and must be added first.
  ResourceId add_resource(std::string name);
  NodeId add_node(StepNode node);
  // `from` must have been added before `to` (node ids are a topological order by construction).
  void add_edge(NodeId from, NodeId to, double fraction = 1.0);
  // Nodes on `source` slow nodes on `target` at `interference_rate()` (value, low, high: one per pass).
  void add_interference(ResourceId source, ResourceId target);
  void set_interference_rate(Interval rate);

  const std::vector<Interference>& interference() const { return interference_; }
  Interval interference_rate() const { return interference_rate_; }

  const std::vector<std::string>& resources() const { return resources_; }
  const StepBoostGraph& graph() const { return g_; }
  std::size_t size() const { return boost::num_vertices(g_); }
  const StepNode& node(NodeId v) const { return g_[v]; }

 private:
  std::vector<std::string> resources_;
  StepBoostGraph g_;
  std::vector<Interference> interference_;
  Interval interference_rate_;
};

}  // namespace llmsim::sim
