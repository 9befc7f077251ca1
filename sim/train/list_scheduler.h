#pragma once
// List scheduling of a StepGraph: nodes in id order (a topological order, see step_graph.h), each
// starting at the later of its dependencies' release times and its resource becoming free. Builders
// encode each resource's program order (e.g. 1F1B) by adding nodes in that order plus chain edges,
// so the schedule is deterministic. Three passes give the value, low and high schedules.
// A node on a resource that others interfere with (StepGraph::add_interference) is lengthened by the
// graph's rate times its overlap with the interfering nodes already scheduled; builders add a collective
// before the compute it runs beside (a prefetch before the layer, a bucket before the next layer), so
// that is the overlap.
#include <vector>

#include "llmsim/train/step_graph.h"

namespace llmsim::sim {

struct ScheduledNode {
  double start = 0;  // seconds from the step start (best-estimate schedule)
  double end = 0;
  double interference = 0;  // seconds of end - start lost to communication beside it (best estimate)
};

struct Schedule {
  std::vector<ScheduledNode> nodes;   // indexed by NodeId, best-estimate durations
  Interval makespan;                  // seconds; low/high from scheduling with all-low / all-high durations
  std::vector<NodeId> critical_path;  // from the first to the last node, best-estimate schedule
  std::vector<double> busy_s;         // per resource: seconds it is busy (best estimate)
};

Schedule schedule(const StepGraph& g);

}  // namespace llmsim::sim
