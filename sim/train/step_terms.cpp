#include "llmsim/train/step_terms.h"

#include <algorithm>

#include "llmsim/core/dtype.h"

namespace llmsim::sim {

namespace {
double dbl(std::int64_t v) { return static_cast<double>(v); }
}  // namespace

LayerGroups layer_groups(const ParallelSpec& p, int gpn) {
  LayerGroups g;
  g.tp = make_group(static_cast<int>(p.tp), 1, gpn);
  g.cp = make_group(static_cast<int>(p.cp), static_cast<int>(p.tp), gpn);
  g.ep = make_group(static_cast<int>(p.ep), static_cast<int>(p.tp * p.cp), gpn);
  return g;
}

CommGroup dp_group(const ParallelSpec& p, int gpn) {
  return make_group(static_cast<int>(p.dp), static_cast<int>(p.tp * p.cp), gpn);
}

bool pipeline_crosses_nodes(const ParallelSpec& p, int gpn) { return p.tp * p.cp * p.dp >= gpn; }

double pipeline_send_bytes(const model::ModelSpec& m, const TrainSpec& t, const ParallelSpec& p) {
  return dbl(t.micro_batch) * dbl(t.seq_len / std::max<std::int64_t>(1, p.cp)) * dbl(m.hidden) *
         dtype_bytes(activation_dtype(t.precision)) / dbl(p.tp);
}

model::Collective grad_reduce_collective(int zero_stage) {
  return zero_stage == 0 ? model::Collective::AllReduce : model::Collective::ReduceScatter;
}

double param_bytes_16bit(double params) { return params * 2.0; }

double offload_shard_bytes(double elements, std::int64_t dp) { return elements * 2.0 / dbl(dp); }

double interfered_span(double base, double comm, double rate) {
  if (rate <= 0 || comm <= 0 || base <= 0) return base;
  // base + rate x min(comm, span) = span: the communication ends inside the span, or covers all of it.
  return comm < base / (1.0 - rate) ? base + rate * comm : base / (1.0 - rate);
}

double optimizer_shard(double trainable, const TrainSpec& t, std::int64_t dp) {
  return t.zero_stage >= 1 ? trainable / dbl(dp) : trainable;
}

double optimizer_update_bytes(const TrainStateBytes& state, double shard) { return shard * state.update_traffic(); }

double cpu_adam_seconds(double shard, const hardware::SystemSpec& sys, std::int64_t gpus) {
  // CPU Adam runs on the node's own cores (a compute tray's, in a rack-scale NVLink domain).
  const double node_gpus = std::min<double>(std::max(1, sys.node.gpus_per_node), dbl(gpus));
  const double rate = sys.efficiency.cpu_adam_params_per_s;
  return rate > 0 ? shard * node_gpus / rate : 0.0;
}

bool gathers_params_after_step(const TrainSpec& t, std::int64_t dp) {
  return t.zero_stage >= 1 && t.zero_stage <= 2 && dp > 1;
}

}  // namespace llmsim::sim
