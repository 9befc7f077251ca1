#include "llmsim/train/list_scheduler.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace llmsim::sim {

namespace {
constexpr NodeId kNone = std::numeric_limits<NodeId>::max();
constexpr double kRelTol = 1e-12;

// What ran on an interfering resource in one pass: its nodes' [start, end) in program order. A resource
// runs one node at a time, so starts and ends both increase.
struct Spans {
  std::vector<double> start, end;
  // Seconds of [a, b) covered by the spans.
  double overlap(double a, double b) const {
    double o = 0;
    for (auto i = static_cast<std::size_t>(std::upper_bound(end.begin(), end.end(), a) - end.begin());
         i < start.size() && start[i] < b; ++i)
      o += std::max(0.0, std::min(b, end[i]) - std::max(a, start[i]));
    return o;
  }
};

// A node of `base` seconds starting at `start` beside the interfering spans: lengthened by `rate` x its
// overlap with them, the overlap taken over the lengthened window (a fixed point: the rate is below 1, and
// a few steps settle it to rounding).
double interfered(double start, double base, double rate, const std::vector<const Spans*>& sources) {
  if (rate <= 0 || sources.empty() || base <= 0) return base;
  double d = base;
  for (int k = 0; k < 8; ++k) {
    double o = 0;
    for (const Spans* s : sources) o += s->overlap(start, start + d);
    const double next = base + rate * o;
    if (std::abs(next - d) <= kRelTol * next) return next;
    d = next;
  }
  return d;
}
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
  // Interference: per pass, the spans of every interfering resource, and each resource's sources.
  const Interval rate = g.interference_rate();
  std::vector<Spans> spans_v(nres), spans_l(nres), spans_h(nres);
  std::vector<bool> is_source(nres, false);
  std::vector<std::vector<ResourceId>> sources_of(nres);
  for (const Interference& i : g.interference()) {
    is_source[static_cast<std::size_t>(i.source)] = true;
    sources_of[static_cast<std::size_t>(i.target)].push_back(i.source);
  }
  std::vector<const Spans*> src_v, src_l, src_h;

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
    double d_v = node.duration.value, d_l = node.duration.low, d_h = node.duration.high;
    if (!sources_of[r].empty()) {
      src_v.clear();
      src_l.clear();
      src_h.clear();
      for (const ResourceId c : sources_of[r]) {
        src_v.push_back(&spans_v[static_cast<std::size_t>(c)]);
        src_l.push_back(&spans_l[static_cast<std::size_t>(c)]);
        src_h.push_back(&spans_h[static_cast<std::size_t>(c)]);
      }
      d_v = interfered(start_v, d_v, rate.value, src_v);
      d_l = interfered(start_l, d_l, rate.low, src_l);
      d_h = interfered(start_h, d_h, rate.high, src_h);
    }
    out.nodes[v] = {start_v, start_v + d_v, d_v - node.duration.value};
    lo[v] = {start_l, start_l + d_l};
    hi[v] = {start_h, start_h + d_h};
    fr = {out.nodes[v].end, lo[v].end, hi[v].end};
    if (is_source[r]) {
      const auto push = [](Spans& s, const ScheduledNode& x) {
        s.start.push_back(x.start);
        s.end.push_back(x.end);
      };
      push(spans_v[r], out.nodes[v]);
      push(spans_l[r], lo[v]);
      push(spans_h[r], hi[v]);
    }

    // What determined the start: the dependency when it is (within rounding) as late as the start,
    // else the previous node on the resource, which made this one wait.
    if (dep != kNone && ready_v >= start_v - kRelTol * std::abs(start_v)) {
      parent[v] = dep;
    } else if (last_on[r] != kNone) {
      parent[v] = last_on[r];
    }
    last_on[r] = v;

    out.busy_s[r] += d_v;
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
