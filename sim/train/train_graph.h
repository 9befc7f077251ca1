#pragma once
// Builds the operator graph of one training step: for every pipeline stage's representative rank,
// the layer executions of every micro-batch in the pipeline schedule's order (forward, recompute,
// backward), pipeline sends, ZeRO-3 parameter gathers and gradient reduce-scatters, data-parallel
// gradient buckets, the optimizer step, ZeRO-1/2 parameter all-gathers and ZeRO-Offload transfers.
// Per-layer costs are computed once per kind of layer and shared by every identical execution.
#include <memory>
#include <vector>

#include "llmsim/cost/comm_cost.h"
#include "llmsim/cost/compute_cost.h"
#include "llmsim/hardware/system_spec.h"
#include "llmsim/model/model_spec.h"
#include "llmsim/run/framework_profile.h"
#include "llmsim/run/run_spec.h"
#include "llmsim/train/step_graph.h"
#include "llmsim/train/train_layer_cost.h"

namespace llmsim::sim {

enum class ResourceKind { Compute, DpComm, Send, Pcie, Cpu };

// What each node of the graph stands for, beyond StepNode (indexed by NodeId).
struct NodeInfo {
  int cost = -1;            // index into TrainGraph::costs for layer executions, else -1
  bool forward = false;     // layer execution: forward (else backward or recompute)
  double comm_s = 0;        // best-estimate seconds of blocking collectives inside the node
  const char* module = "";  // breakdown module for nodes that are not layer executions
  int layer = -1;           // layer execution: global layer index (-1 embedding / head / other nodes)
};

// A forward or backward pass of one micro-batch through one model chunk on one stage.
struct TaskSpan {
  int micro_batch = 0;
  int chunk = 0;
  bool forward = true;
  NodeId first = 0;  // first node of the pass on the compute stream
  NodeId last = 0;   // last node
};

struct TrainGraph {
  StepGraph graph;
  std::vector<NodeInfo> info;                // per node
  std::vector<ResourceKind> resource_kind;   // per resource
  std::vector<int> resource_stage;           // per resource
  std::vector<LayerCost> costs;              // distinct layer kinds
  std::vector<std::vector<TaskSpan>> tasks;  // per stage, in program order
  std::int64_t micro_batches = 0;            // per data-parallel rank per step
  std::vector<double> stage_trainable;       // trainable parameters per stage's GPU (before ZeRO)
};

struct TrainGraphInputs {
  const model::ModelSpec& model;
  const hardware::SystemSpec& system;
  const RunSpec& run;  // with_defaults applied, structurally valid
  const FrameworkProfile& framework;
  const ComputeCost& compute;
  const CommCost& comm;
};

TrainGraph build_train_graph(const TrainGraphInputs& in);

// Stage s's layers as [first, first + count) for each of its vp chunks (chunk c of stage s holds the
// (c * pp + s)-th slice under interleaving; without it the last L % pp stages take one extra layer).
std::vector<std::pair<std::int64_t, std::int64_t>> stage_chunks(std::int64_t stage, std::int64_t pp, std::int64_t vp,
                                                                std::int64_t layers);

}  // namespace llmsim::sim
