#include "llmsim/cost/comm_cost.h"

#include <algorithm>
#include <string>

#include "llmsim/core/error.h"
#include "llmsim/core/units.h"

// Alpha-beta models of NCCL collectives. Notation used in the comments below:
//   n  ranks in the group, B bytes of the full (unsharded) tensor,
//   bw per-rank bus bandwidth of the links the ring crosses (bytes/s, one direction),
//   a  per-step latency (seconds), N nodes the group spans, g = group members per node.
// Every time is an Interval: `value` uses the efficiency's best estimate, `low` (the fast edge) uses
// its HIGH fraction and `high` (the slow edge) its LOW fraction. Latency terms are the same in all
// three: the efficiency bands describe sustained bandwidth, not small-message latency.

namespace llmsim::sim {

namespace {

using hardware::Fabric;
using hardware::Fraction;

// Engineering assumption: one-way small-message latency when a system TOML gives none (0). NCCL's
// per-step latency on NVLink/PCIe and on InfiniBand is a few microseconds; 5 us is the middle of the
// commonly quoted 2-10 us range. Only hand-built specs reach this (the loader requires
// fabric_latency_us, and latency_us whenever nics_per_node > 0).
constexpr double kDefaultLatency_s = 5.0 * units::us;

// Engineering assumption: with peer-to-peer disabled (NCCL_P2P_DISABLE=1) NCCL moves intra-node
// traffic through host memory (SHM transport): every hop is a device->host copy by the sender plus a
// host->device copy by the receiver, with an extra pass through host DRAM and all GPUs contending on
// the CPU root complexes. We model the per-rank bandwidth as that of a direct PCIe copy times 0.5
// (two copies in series through one link each), with a band of [0.3, 0.8] for the unknown amount of
// pipelining between the two copies and the root-complex contention. To be replaced by calibration
// (nccl-tests with P2P off on the target box; NVIDIA/nccl-tests issue #117 reports ~12 GB/s of 31.5).
constexpr double kStagedFactorValue = 0.5;
constexpr double kStagedFactorLow = 0.3;
constexpr double kStagedFactorHigh = 0.8;

// Engineering assumption: fixed cost of one host<->device copy (cudaMemcpyAsync launch + DMA engine
// setup + completion), commonly measured at ~5-15 us; 10 us taken.
constexpr double kHostCopyOverhead_s = 10.0 * units::us;

// A sustained bandwidth with its band, bytes/s per rank per direction. `fast` comes from the
// efficiency's high fraction, `slow` from its low fraction.
struct Bandwidth {
  double value = 0;
  double fast = 0;
  double slow = 0;
};

Bandwidth scaled(double peak_Bps, const Fraction& eff) {
  return Bandwidth{peak_Bps * eff.value, peak_Bps * eff.high, peak_Bps * eff.low};
}

// Time to move `bytes` at `bw`: the fast bandwidth gives the low edge, the slow one the high edge.
Interval transfer(double bytes, const Bandwidth& bw) {
  return Interval{bytes / bw.value, bytes / bw.fast, bytes / bw.slow};
}

// A link class: bandwidth per rank and per-step latency.
struct Link {
  Bandwidth bw;
  double latency_s = 0;
};

// Alpha-beta time of `steps` latency steps plus `bytes` over the link.
Interval alpha_beta(double steps, double bytes, const Link& l) {
  return transfer(bytes, l.bw) + Interval::exact(steps * l.latency_s);
}

double or_default(double latency_s) { return latency_s > 0 ? latency_s : kDefaultLatency_s; }

// What a pipeline send is to the fabric-fraction choice below.
enum class Traffic { Collective, Send };

// The NVLink/NVSwitch efficiency of one kind of traffic: its calibrated fraction when the profile has
// one (nccl-tests bus bandwidth of that collective), else the all-reduce-derived fabric fraction.
const Fraction& fabric_fraction(const hardware::Efficiency& eff, model::Collective kind, Traffic traffic) {
  const std::optional<Fraction>* own = nullptr;
  if (traffic == Traffic::Send)
    own = &eff.fabric_send_recv;
  else if (kind == model::Collective::AllGather)
    own = &eff.fabric_all_gather;
  else if (kind == model::Collective::ReduceScatter)
    own = &eff.fabric_reduce_scatter;
  else if (kind == model::Collective::AllToAll)
    own = &eff.fabric_all_to_all;
  return own && *own ? **own : eff.fabric_bandwidth;
}

// Share of a GPU's mesh bandwidth a group of `ranks` GPUs on one node of `gpus` reaches: (r - 1) of the
// (gpus - 1) equal point-to-point links (AMD CDNA 3 white paper: MI300X boards join 8 GPUs with 7
// Infinity Fabric links each, 64 GB/s per direction per link). All r - 1 are usable at once: an
// all-to-all sends to each peer over its own link, and RCCL runs several rings, one per link, over the
// group; the complete symmetric digraph on r vertices splits into r - 1 directed Hamiltonian cycles
// for every r except 4 and 6 (Tillson, J. Combin. Theory B 29, 1980), so r - 1 rings can each take one
// link per GPU per direction (for r = 4 and 6 this is an upper bound). A pair gets one link: 1/(gpus-1).
double mesh_share(int ranks, int gpus) {
  if (gpus <= 1) return 1.0;
  const int r = std::clamp(ranks, 2, gpus);
  return static_cast<double>(r - 1) / (gpus - 1);
}

// Intra-domain link a ring of `ranks` GPUs in one fast-fabric domain runs over for `kind` of traffic.
Link intra_link(const hardware::SystemSpec& sys, int ranks, model::Collective kind = model::Collective::AllReduce,
                Traffic traffic = Traffic::Collective) {
  const auto& node = sys.node;
  const auto& eff = sys.efficiency;
  const Fraction& fabric_eff = fabric_fraction(eff, kind, traffic);
  const double latency = or_default(node.fabric_latency_s);
  // Peer-to-peer disabled: only meaningful on PCIe, but whatever the fabric says, NCCL then stages
  // every transfer through host memory, so p2p = false on any fabric takes the staged PCIe path.
  // Per rank: pcie_bandwidth * pcie efficiency * staged factor (see kStagedFactor*). The latency is
  // doubled because each hop is two copies (device->host, host->device) in series.
  if (!node.p2p) {
    const Bandwidth pcie = scaled(node.pcie_bandwidth_Bps, eff.pcie_bandwidth);
    return Link{Bandwidth{pcie.value * kStagedFactorValue, pcie.fast * kStagedFactorHigh, pcie.slow * kStagedFactorLow},
                2.0 * latency};
  }
  switch (node.fabric) {
    case Fabric::NvSwitch:
      // Every GPU reaches every other at its full NVLink rate through the switch: per rank
      // fabric_bandwidth * fabric efficiency (nccl-tests busbw over per-direction NVLink). This holds
      // across a multi-node NVLink domain too (GB200 NVL72: NVLink switch trays join 18 compute trays,
      // every GPU at 900 GB/s per direction to every other), so a group inside the domain rides it.
      return Link{scaled(node.fabric_bandwidth_Bps, fabric_eff), latency};
    case Fabric::NvLinkPairs:
      // NVLink bridges join GPUs in pairs only. A group of 2 is assumed to be one bridged pair (ranks
      // 2k, 2k+1; CommGroup does not record the stride, so a 2-rank group of stride 2 is treated the
      // same) and runs at the NVLink figure. A larger ring must cross PCIe between pairs, and a ring is
      // as fast as its slowest link, so it gets the PCIe path.
      if (ranks <= 2) return Link{scaled(node.fabric_bandwidth_Bps, fabric_eff), latency};
      return Link{scaled(node.pcie_bandwidth_Bps, eff.pcie_bandwidth), latency};
    case Fabric::Pcie:
      // Direct GPU peer-to-peer over PCIe: per rank pcie_bandwidth * pcie efficiency.
      return Link{scaled(node.pcie_bandwidth_Bps, eff.pcie_bandwidth), latency};
    case Fabric::XgmiMesh:
      // Full mesh: fabric_bandwidth is a GPU's total over its links to the other gpus_per_node - 1
      // GPUs, one link each. A ring collective over r ranks on one node can use only the r - 1 links
      // among its members, so per rank it gets fabric_bandwidth * mesh_share(r) * fabric efficiency.
      return Link{scaled(node.fabric_bandwidth_Bps * mesh_share(ranks, node.gpus_per_node), fabric_eff), latency};
  }
  return Link{scaled(node.pcie_bandwidth_Bps, eff.pcie_bandwidth), latency};
}

// Inter-node link: each GPU's share of the node's scale-out bandwidth,
//   nics_per_node * nic_bandwidth * network efficiency / gpus_per_node,
// because all GPUs of a node communicate at once (e.g. every DP group, one per TP rank, runs its
// gradient all-reduce concurrently), so they split the node's NICs. `nodes` is only for the message.
Link inter_link(const hardware::SystemSpec& sys, int nodes) {
  const auto& net = sys.network;
  if (net.nics_per_node <= 0 || net.nic_bandwidth_Bps <= 0) {
    throw_input(Location{.file = sys.source_file, .key = "network.nics_per_node"},
                "system '" + sys.name + "' has no scale-out network (nics_per_node = " +
                    std::to_string(net.nics_per_node) + ") but a communication group spans " + std::to_string(nodes) +
                    " nodes; use at most " + std::to_string(hardware::fast_domain_gpus(sys)) +
                    " GPUs or describe the network in the system's [network] table");
  }
  return Link{scaled(hardware::nic_share_per_gpu_Bps(sys), sys.efficiency.network_bandwidth),
              or_default(net.latency_s)};
}

// Ring collective of `n` ranks over one link class (single node, or one level of a hierarchy).
//   AllReduce:                          2(n-1) a + 2(n-1)/n * B / bw
//     (reduce-scatter then all-gather; each rank sends and receives 2(n-1)/n of the tensor)
//   ReduceScatter, AllGather, AllToAll: (n-1) a + (n-1)/n * B / bw
//     (each rank sends (n-1) chunks of B/n; for all-to-all, B is what one rank sends, of which
//      (n-1)/n leaves the rank)
Interval ring(model::Collective kind, double bytes, int n, const Link& l) {
  if (n <= 1) return Interval{};
  const double frac = static_cast<double>(n - 1) / n;
  switch (kind) {
    case model::Collective::None: return Interval{};
    case model::Collective::AllReduce: return alpha_beta(2.0 * (n - 1), 2.0 * frac * bytes, l);
    case model::Collective::ReduceScatter:
    case model::Collective::AllGather:
    case model::Collective::AllToAll: return alpha_beta(n - 1, frac * bytes, l);
  }
  return Interval{};
}

}  // namespace

// Megatron rank order puts consecutive members of a group `stride` ranks apart. Ranks fill domains in
// order, so a domain of D GPUs holds D / stride members of the group when stride < D (at least 1, at
// most the whole group); with stride >= D every member sits in a different domain.
CommGroup make_group(int size, int stride, int domain_gpus) {
  if (size <= 1) return CommGroup{1, 1};
  stride = std::max(1, stride);
  domain_gpus = std::max(1, domain_gpus);
  const int per_node = stride < domain_gpus ? std::clamp(domain_gpus / stride, 1, size) : 1;
  return CommGroup{size, per_node};
}

CommCost::CommCost(const hardware::SystemSpec& sys) : sys_(sys) {}

// One collective call: its ring or hierarchical time plus the call's base latency. NCCL's own cost model
// charges every call a base latency besides the per-step latencies of its algorithm (NVIDIA/nccl
// src/graph/tuning.cc, baseLat: 6.6 us for a ring with the LL protocol, hwLat 0.6 us per NVLink step); in
// a serving or training step the call also waits for the slowest rank of its group. The value is
// Efficiency::collective_base_s, fitted on measured runs (docs/validation.md, "Collective base latency").
Interval CommCost::collective(model::Collective kind, double bytes, const CommGroup& group) const {
  // Nothing to move: a group of one, no collective, or an empty tensor (no latency either).
  if (kind == model::Collective::None || group.size <= 1 || bytes <= 0) return Interval{};
  return collective_base_band(sys_.efficiency) + transfer_time(kind, bytes, group);
}

Interval collective_base_band(const hardware::Efficiency& e) {
  return Interval::banded(e.collective_base_s, e.collective_base_low_s, e.collective_base_high_s);
}

// The alpha-beta time of one collective (ring within a domain, hierarchical across domains).
Interval CommCost::transfer_time(model::Collective kind, double bytes, const CommGroup& group) const {
  const int n = group.size;
  const int nodes = group.nodes();
  if (nodes <= 1) return ring(kind, bytes, n, intra_link(sys_, n, kind));

  // Hierarchical (NCCL-style): g members per node on N nodes. An uneven last node (size not a
  // multiple of per_node) is approximated as if all nodes held g members.
  const int g = std::max(1, group.per_node);
  const int N = nodes;
  const Link inter = inter_link(sys_, N);
  switch (kind) {
    case model::Collective::None: return Interval{};
    case model::Collective::AllReduce:
      // Intra reduce-scatter over g:       (g-1) a_i + (g-1)/g * B / bw_i
      // inter all-reduce of B/g over N:    2(N-1) a_n + 2(N-1)/N * (B/g) / bw_n
      // intra all-gather over g:           same as the reduce-scatter
      // (each node's g ranks run g concurrent inter-node rings on their 1/g shard; with g == 1 the
      // intra parts vanish and this is a flat ring over the network).
      return ring(model::Collective::ReduceScatter, bytes, g, intra_link(sys_, g, model::Collective::ReduceScatter)) +
             ring(model::Collective::AllReduce, bytes / g, N, inter) +
             ring(model::Collective::AllGather, bytes, g, intra_link(sys_, g, model::Collective::AllGather));
    case model::Collective::ReduceScatter:
    case model::Collective::AllGather:
      // Intra (g-1) a_i + (g-1)/g * B / bw_i plus inter (N-1) a_n + (N-1)/N * (B/g) / bw_n: one
      // level within the node and one across nodes on the 1/g shard (order reversed for all-gather,
      // same time).
      return ring(kind, bytes, g, intra_link(sys_, g, kind)) + ring(kind, bytes / g, N, inter);
    case model::Collective::AllToAll: {
      // Of the B bytes a rank sends, (n-g)/n go to ranks on other nodes (over bw_n) and (g-1)/n to
      // ranks on its own node (over bw_i). The two proceed in parallel, so the time is the larger of
      // the two, plus (n-1) latency steps of the slower path (chosen on the best estimate, so the
      // latency term is the same in value, low and high).
      const Interval off = transfer(static_cast<double>(n - g) / n * bytes, inter.bw);
      const Link intra = intra_link(sys_, g, kind);
      const Interval on = g > 1 ? transfer(static_cast<double>(g - 1) / n * bytes, intra.bw) : Interval{};
      const double alpha = off.value >= on.value ? inter.latency_s : intra.latency_s;
      return max(off, on) + Interval::exact((n - 1) * alpha);
    }
  }
  return Interval{};
}

// One pipeline send: a + bytes / bw. Within a node the link is that of a 2-rank group (on
// NVLink-pair systems neighbouring stages are assumed to sit on one bridged pair; staged PCIe when
// p2p is off). Across nodes it is the per-GPU share of the node's NICs, even for a single pair,
// because all stage pairs (one per TP/DP rank) send concurrently through the same NICs.
Interval CommCost::p2p(double bytes, bool cross_node) const {
  if (bytes <= 0) return Interval{};
  const Link l = cross_node ? inter_link(sys_, 2) : intra_link(sys_, 2, model::Collective::None, Traffic::Send);
  return alpha_beta(1, bytes, l);
}

// One host<->device copy of pinned memory: fixed overhead (kHostCopyOverhead_s) + bytes over one
// GPU's PCIe link at the PCIe efficiency.
Interval CommCost::host_copy(double bytes) const {
  if (bytes <= 0) return Interval{};
  return transfer(bytes, scaled(sys_.node.pcie_bandwidth_Bps, sys_.efficiency.pcie_bandwidth)) +
         Interval::exact(kHostCopyOverhead_s);
}

// A pageable copy runs at the host's staging rate where that is below the pinned one. Band: the rate was
// measured on one host (Efficiency::pageable_source); other hosts' staging memcpy is taken to run at
// 0.5-1.5x of it (engineering assumption), never faster than the pinned link.
Interval CommCost::host_copy(double bytes, HostMemory memory, CopyDirection direction) const {
  const double rate =
      direction == CopyDirection::HostToDevice ? sys_.efficiency.pageable_h2d_Bps : sys_.efficiency.pageable_d2h_Bps;
  if (memory == HostMemory::Pinned || rate <= 0 || bytes <= 0) return host_copy(bytes);
  const Bandwidth pinned = scaled(sys_.node.pcie_bandwidth_Bps, sys_.efficiency.pcie_bandwidth);
  const Bandwidth bw{std::min(pinned.value, rate), std::min(pinned.fast, 1.5 * rate),
                     std::min(pinned.slow, 0.5 * rate)};
  return transfer(bytes, bw) + Interval::exact(kHostCopyOverhead_s);
}

// Best-estimate per-rank bus bandwidth of the bottleneck level: the intra-node link for a group on
// one node, the per-GPU share of the scale-out network for a group spanning nodes.
double CommCost::ring_bandwidth_Bps(const CommGroup& group) const {
  if (group.nodes() > 1) return inter_link(sys_, group.nodes()).bw.value;
  return intra_link(sys_, group.size).bw.value;
}

Interval CommCost::interference_rate() const {
  const auto& f = sys_.efficiency.comm_interference;
  return Interval{f.value, f.low, f.high};
}

Interval CommCost::interference(Interval overlap) const {
  const Interval r = interference_rate();
  return Interval{r.value * overlap.value, r.low * overlap.low, r.high * overlap.high};
}

}  // namespace llmsim::sim
