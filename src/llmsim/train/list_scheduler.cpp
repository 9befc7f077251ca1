#include "llmsim/train/list_scheduler.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace llmsim::sim {

namespace {
constexpr NodeId kNone = std::numeric_limits<NodeId>::max();
constexpr double kRelTol = 1e-12;
}  // namespace

Schedule schedule(const StepGraph& g) {
  const StepBoostGraph& bg = g.graph();
  const std::size_t n = g.size();
  const std::size_t nres = g.resources().size();

  Schedule out;
  out.nodes.resize(n);
  out.busy_s.assign(nres, 0.0);
  if (n == 0) return out;

  // Per-pass node times for the low and high schedules (the value pass writes into out.nodes).
  std::vector<ScheduledNode> lo(n), hi(n);
  // Per resource: when it becomes free in each pass, and the last node it ran (value pass).
  std::vector<Interval> free_at(nres);
  std::vector<NodeId> last_on(nres, kNone);
  // Value pass: the node whose completion (or partial release) fixed this node's start; kNone if none.
  std::vector<NodeId> parent(n, kNone);

  Interval makespan;
  for (NodeId v = 0; v < n; ++v) {
    const StepNode& node = bg[v];
    const auto r = static_cast<std::size_t>(node.resource);

    // Ready times: latest release over the in-edges, one sweep for all three passes.
    double ready_v = 0, ready_l = 0, ready_h = 0;
    NodeId dep = kNone;  // the in-edge source with the latest release (value pass), first one on ties
    for (auto [e, e_end] = boost::in_edges(v, bg); e != e_end; ++e) {
      const NodeId u = boost::source(*e, bg);
      const double f = bg[*e].fraction;
      const ScheduledNode& pv = out.nodes[u];
      const double rel_v = pv.start + f * (pv.end - pv.start);
      if (dep == kNone || rel_v > ready_v) {
        ready_v = std::max(ready_v, rel_v);
        dep = u;
      }
      ready_l = std::max(ready_l, lo[u].start + f * (lo[u].end - lo[u].start));
      ready_h = std::max(ready_h, hi[u].start + f * (hi[u].end - hi[u].start));
    }

    Interval& fr = free_at[r];
    const double start_v = std::max(ready_v, fr.value);
    const double start_l = std::max(ready_l, fr.low);
    const double start_h = std::max(ready_h, fr.high);
    out.nodes[v] = {start_v, start_v + node.duration.value};
    lo[v] = {start_l, start_l + node.duration.low};
    hi[v] = {start_h, start_h + node.duration.high};
    fr = {out.nodes[v].end, lo[v].end, hi[v].end};

    // What determined the start: the dependency when it is (within rounding) as late as the start,
    // else the previous node on the resource, which made this one wait.
    if (dep != kNone && ready_v >= start_v - kRelTol * std::abs(start_v)) {
      parent[v] = dep;
    } else if (last_on[r] != kNone) {
      parent[v] = last_on[r];
    }
    last_on[r] = v;

    out.busy_s[r] += node.duration.value;
    makespan.value = std::max(makespan.value, out.nodes[v].end);
    makespan.low = std::max(makespan.low, lo[v].end);
    makespan.high = std::max(makespan.high, hi[v].end);
  }
  out.makespan = makespan;

  // Critical path: back from the node that ends last (lowest id on ties) along the parents.
  NodeId last = 0;
  for (NodeId v = 1; v < n; ++v) {
    if (out.nodes[v].end > out.nodes[last].end) last = v;
  }
  for (NodeId v = last; v != kNone; v = parent[v]) out.critical_path.push_back(v);
  std::reverse(out.critical_path.begin(), out.critical_path.end());
  return out;
}

}  // namespace llmsim::sim
