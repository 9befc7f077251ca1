#pragma once
// Time of communication on a system: collectives (ring / hierarchical alpha-beta models), pipeline
// point-to-point sends and host<->device copies. Each time is an Interval whose band comes from the
// efficiency bands of the links crossed. Knows the system's topology, not models or schedules.
#include "llmsim/core/interval.h"
#include "llmsim/hardware/system_spec.h"
#include "llmsim/model/operators.h"

namespace llmsim::sim {

// Where the members of a communication group sit. Ranks are laid out with the group's stride; a group
// of `size` ranks spans `nodes` fast-fabric domains with `per_node` members on each (size = nodes *
// per_node). A domain is hardware::fast_domain_gpus(): the node, or a multi-node NVLink domain (GB200
// NVL72), inside which traffic rides the fabric, not the NICs.
struct CommGroup {
  int size = 1;      // ranks in the group
  int per_node = 1;  // members of the group in one fast-fabric domain
  int nodes() const { return per_node > 0 ? (size + per_node - 1) / per_node : 1; }
};

// Group of `size` ranks whose consecutive members are `stride` ranks apart (Megatron order: TP
// innermost, then CP, then DP, then PP), on fast-fabric domains of `domain_gpus` GPUs (pass
// hardware::fast_domain_gpus(sys)).
CommGroup make_group(int size, int stride, int domain_gpus);

// The base latency of one collective call with its band (Efficiency::collective_base_s and its low/high; a
// missing edge is the value).
Interval collective_base_band(const hardware::Efficiency& e);

// Host memory a copy reads or writes, and which way it goes.
enum class HostMemory { Pinned, Pageable };
enum class CopyDirection { HostToDevice, DeviceToHost };

class CommCost {
 public:
  explicit CommCost(const hardware::SystemSpec& sys);

  // Time of one collective over `group` where `bytes` is the full (unsharded) tensor: the all-reduced
  // tensor, the all-gather's output, the reduce-scatter's input, what one rank sends in an all-to-all.
  // Includes the call's base latency (Efficiency::collective_base_s). 0 for a group of one or
  // Collective::None.
  Interval collective(model::Collective kind, double bytes, const CommGroup& group) const;

  // One point-to-point transfer of `bytes` between neighbouring pipeline stages (cross_node: the two
  // ranks are on different nodes).
  Interval p2p(double bytes, bool cross_node) const;

  // Host<->device copy of `bytes` over one GPU's PCIe link (pinned memory), either direction.
  Interval host_copy(double bytes) const;
  // The same from or to pageable host memory: staged by the driver, at the lower of the pinned rate and the
  // host's pageable rate in that direction (Efficiency::pageable_h2d_Bps / pageable_d2h_Bps).
  Interval host_copy(double bytes, HostMemory memory, CopyDirection direction) const;

  // Compute seconds lost per second of communication running beside the compute on the same GPU
  // (Efficiency::comm_interference): value, fast edge (low) and slow edge (high).
  Interval interference_rate() const;
  // Compute seconds lost to `overlap` seconds of communication beside it, edge by edge: the rule the layer
  // costs and the closed-form estimate apply, and the step graph's scheduler applies at interference_rate().
  Interval interference(Interval overlap) const;

  // Bus bandwidth (bytes/s, best estimate) a ring over `group` sustains per rank; for reports and tests.
  double ring_bandwidth_Bps(const CommGroup& group) const;

 private:
  Interval transfer_time(model::Collective kind, double bytes, const CommGroup& group) const;
  const hardware::SystemSpec& sys_;
};

}  // namespace llmsim::sim
