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

OffloadBucketCopies offload_bucket_copies(const CommCost& comm, const FrameworkProfile& fw, const TrainSpec& t,
                                          double elements, std::int64_t dp, std::int64_t mb, std::int64_t m) {
  const OffloadCopies& oc = fw.offload;
  const HostMemory memory = offload_buffers_pinned(fw, t) ? HostMemory::Pinned : HostMemory::Pageable;
  const double part = elements / dbl(dp);
  const double part16 = offload_shard_bytes(elements, dp);  // the partition in 16 bits
  const bool last = mb >= m - 1;
  if (t.zero_stage >= 3) {
    if (!oc.zero3_round_trip) return {Interval{}, comm.host_copy(part16, memory, CopyDirection::DeviceToHost)};
    // Out to the host buffer and back every micro-batch; at the boundary once more out, through the host cast.
    OffloadBucketCopies c{comm.host_copy(part16, memory, CopyDirection::HostToDevice),
                          comm.host_copy(part16, memory, CopyDirection::DeviceToHost)};
    if (last) c.d2h += comm.host_copy(part16, HostMemory::Pageable, CopyDirection::DeviceToHost);
    return c;
  }
  // ZeRO-1 reduces (and copies) only at the last micro-batch; ZeRO-2 every micro-batch.
  const bool accumulates = oc.accumulate_on_host && t.zero_stage >= 2 && m > 1;
  OffloadBucketCopies c;
  if (accumulates && mb > 0) c.h2d = comm.host_copy(part16, memory, CopyDirection::HostToDevice);
  c.d2h = comm.host_copy(last ? part * oc.grad_bytes : part16, memory, CopyDirection::DeviceToHost);
  return c;
}

Interval offload_param_return(const CommCost& comm, const FrameworkProfile& fw, const TrainSpec& t, double shard) {
  if (t.zero_stage < 3) return comm.host_copy(shard * fw.offload.param_bytes);
  if (fw.offload.zero3_round_trip)  // cast to 16 bits on the host into a temporary, then copied
    return comm.host_copy(param_bytes_16bit(shard), HostMemory::Pageable, CopyDirection::HostToDevice);
  return comm.host_copy(param_bytes_16bit(shard));
}

bool offload_buffers_pinned(const FrameworkProfile& fw, const TrainSpec& t) {
  return t.offload_pin_memory.value_or(fw.offload.pinned);
}

bool offload_copies_hold_host(const FrameworkProfile& fw, const TrainSpec& t) {
  // A copy to or from pageable memory holds the host thread that launches the compute until it is done
  // (CUDA runtime API, "API synchronization behavior": a device-to-pageable copy returns once complete, a
  // pageable-to-device copy first synchronizes its stream), so nothing is queued behind it meanwhile.
  return t.offload != Offload::None && !offload_buffers_pinned(fw, t);
}

bool offload_copies_on_compute_stream(const FrameworkProfile& fw, const TrainSpec& t) {
  if (t.offload == Offload::None) return false;
  if (offload_copies_hold_host(fw, t)) return true;
  return t.zero_stage <= 2 && fw.offload.on_reduce_stream &&
         grad_reduce_on_compute_stream(fw, t.zero_stage, t.overlap_grad_reduce);
}

double interfered_span(double base, double comm, double rate) {
  if (rate <= 0 || comm <= 0 || base <= 0) return base;
  // base + rate x min(comm, span) = span: the communication ends inside the span, or covers all of it.
  return comm < base / (1.0 - rate) ? base + rate * comm : base / (1.0 - rate);
}

double optimizer_shard(double trainable, const TrainSpec& t, std::int64_t dp) {
  return t.zero_stage >= 1 ? trainable / dbl(dp) : trainable;
}

double optimizer_update_bytes(const TrainStateBytes& state, double shard) { return shard * state.update_traffic(); }

double host_update_bytes(const TrainStateBytes& state) {
  const double updated = state.master > 0 ? state.master : state.weight;
  return updated + 2.0 * (updated + state.states);
}

double cpu_adam_seconds(double shard, const hardware::SystemSpec& sys, std::int64_t gpus, double bytes_per_param) {
  // CPU Adam runs on the node's own cores (a compute tray's, in a rack-scale NVLink domain).
  const double node_gpus = std::min<double>(std::max(1, sys.node.gpus_per_node), dbl(gpus));
  const double rate = sys.efficiency.cpu_adam_params_per_s * kCpuAdamRateBytes / bytes_per_param;
  return rate > 0 && bytes_per_param > 0 ? shard * node_gpus / rate : 0.0;
}

bool gathers_params_after_step(const TrainSpec& t, std::int64_t dp) {
  return t.zero_stage >= 1 && t.zero_stage <= 2 && dp > 1;
}

}  // namespace llmsim::sim
