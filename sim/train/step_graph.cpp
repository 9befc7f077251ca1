#include "llmsim/train/step_graph.h"

#include <fmt/format.h>

#include "llmsim/core/error.h"

namespace llmsim::sim {

namespace {
[[noreturn]] void throw_internal(const std::string& message) { throw Error(ErrorKind::Internal, Location{}, message); }
}  // namespace

std::string_view phase_name(Phase p) {
  switch (p) {
    case Phase::Forward: return "forward";
    case Phase::Backward: return "backward";
    case Phase::Recompute: return "recompute";
    case Phase::Optimizer: return "optimizer";
    case Phase::Communication: return "communication";
    case Phase::Offload: return "offload";
    case Phase::Other: return "other";
  }
  return "other";
}

std::string_view op_class_name(OpClass c) {
  switch (c) {
    case OpClass::Gemm: return "gemm";
    case OpClass::Attention: return "attention";
    case OpClass::Elementwise: return "elementwise";
    case OpClass::Norm: return "norm";
    case OpClass::CollectiveAllReduce: return "all_reduce";
    case OpClass::CollectiveReduceScatter: return "reduce_scatter";
    case OpClass::CollectiveAllGather: return "all_gather";
    case OpClass::CollectiveAllToAll: return "all_to_all";
    case OpClass::P2p: return "p2p";
    case OpClass::Memcpy: return "memcpy";
    case OpClass::CpuOptimizer: return "cpu_optimizer";
    case OpClass::Other: return "other";
  }
  return "other";
}

ResourceId StepGraph::add_resource(std::string name) {
  resources_.push_back(std::move(name));
  return static_cast<ResourceId>(resources_.size() - 1);
}

NodeId StepGraph::add_node(StepNode node) {
  if (node.resource < 0 || static_cast<std::size_t>(node.resource) >= resources_.size()) {
    throw_internal(fmt::format("step graph node '{}' uses resource {}, but only {} resources exist", node.name,
                               node.resource, resources_.size()));
  }
  return boost::add_vertex(std::move(node), g_);
}

void StepGraph::add_interference(ResourceId source, ResourceId target) {
  const auto known = [&](ResourceId r) { return r >= 0 && static_cast<std::size_t>(r) < resources_.size(); };
  if (!known(source) || !known(target) || source == target)
    throw_internal(fmt::format("step graph interference {} -> {} needs two distinct resources of the {}", source,
                               target, resources_.size()));
  interference_.push_back(Interference{source, target});
}

void StepGraph::set_interference_rate(Interval rate) {
  if (!(rate.low >= 0 && rate.low <= rate.value && rate.value <= rate.high && rate.high < 1))
    throw_internal(fmt::format("step graph interference rate {} [{}, {}] must satisfy 0 <= low <= value <= high < 1",
                               rate.value, rate.low, rate.high));
  interference_rate_ = rate;
}

void StepGraph::add_edge(NodeId from, NodeId to, double fraction) {
  const std::size_t n = boost::num_vertices(g_);
  if (from >= n || to >= n) {
    throw_internal(fmt::format("step graph edge {} -> {} names a node that does not exist ({} nodes)", from, to, n));
  }
  if (from >= to) {
    throw_internal(fmt::format("step graph edge {} -> {} ('{}' -> '{}') does not go forward in node order", from, to,
                               g_[from].name, g_[to].name));
  }
  if (!(fraction > 0.0 && fraction <= 1.0)) {
    throw_internal(fmt::format("step graph edge '{}' -> '{}' has fraction {}, outside (0, 1]", g_[from].name,
                               g_[to].name, fraction));
  }
  boost::add_edge(from, to, StepEdge{fraction}, g_);
}

}  // namespace llmsim::sim
