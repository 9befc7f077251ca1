// Communication cost model: group layout, ring and hierarchical collectives, staged PCIe, p2p and
// host copies. Expected values are computed by hand in the comments from the preset numbers.
#include <doctest/doctest.h>

#include "llmsim/core/units.h"
#include "llmsim/cost/comm_cost.h"
#include "llmsim/hardware/system_toml.h"
#include "test_util.h"

namespace lt = llmsim::test;
namespace sim = llmsim::sim;
namespace hw = llmsim::hardware;
using llmsim::units::GBps;
using llmsim::units::GiB;
using llmsim::units::us;
using Coll = llmsim::model::Collective;

namespace {

// The preset with the collective base latency set to 0: the hand-derived alpha-beta times below are the
// ring and hierarchical part; "a collective call adds its base latency once" tests the base on the real
// preset.
hw::SystemSpec preset(const std::string& name) {
  auto sys = hw::resolve_system(name, LLMSIM_DATA_DIR);
  sys.efficiency.collective_base_s = sys.efficiency.collective_base_low_s = sys.efficiency.collective_base_high_s = 0;
  return sys;
}

void check_band(const sim::Interval& t) {
  CHECK(t.low <= t.value);
  CHECK(t.value <= t.high);
  CHECK(t.low > 0);
}

}  // namespace

TEST_CASE("make_group: members per node from size, stride and node size") {
  // TP8 (stride 1) in an 8-GPU node: the whole group on one node.
  auto g = sim::make_group(8, 1, 8);
  CHECK(g.size == 8);
  CHECK(g.per_node == 8);
  CHECK(g.nodes() == 1);
  // DP group over TP8 (stride 8) on 8-GPU nodes: one member per node.
  g = sim::make_group(4, 8, 8);
  CHECK(g.per_node == 1);
  CHECK(g.nodes() == 4);
  // stride 2, size 16 on 8-GPU nodes: 8/2 = 4 members per node, 4 nodes.
  g = sim::make_group(16, 2, 8);
  CHECK(g.per_node == 4);
  CHECK(g.nodes() == 4);
  // TP16 (stride 1) on 8-GPU nodes: clamped to the node, 2 nodes.
  g = sim::make_group(16, 1, 8);
  CHECK(g.per_node == 8);
  CHECK(g.nodes() == 2);
  // TP2 in an 8-GPU node: clamped to the group size.
  g = sim::make_group(2, 1, 8);
  CHECK(g.per_node == 2);
  // stride 16 on 8-GPU nodes: every member on its own node.
  CHECK(sim::make_group(2, 16, 8).per_node == 1);
  // A group of one.
  g = sim::make_group(1, 4, 8);
  CHECK(g.size == 1);
  CHECK(g.per_node == 1);
  CHECK(sim::make_group(0, 1, 8).size == 1);
}

TEST_CASE("ring all-reduce on a800-nvlink, 8 ranks, 1 GiB") {
  const auto sys = preset("a800-nvlink");
  // Preset numbers the expectation is built from: 200 GB/s NVLink per direction, 2 us, eff 0.75
  // (band 0.65..0.87).
  REQUIRE(sys.node.fabric_bandwidth_Bps == doctest::Approx(200 * GBps));
  REQUIRE(sys.node.fabric_latency_s == doctest::Approx(2 * us));
  REQUIRE(sys.efficiency.fabric_bandwidth.value == doctest::Approx(0.75));
  const sim::CommCost cc(sys);
  const auto g = sim::make_group(8, 1, 8);
  const double B = 1 * GiB;
  const auto ar = cc.collective(Coll::AllReduce, B, g);
  // 2(n-1) a + 2(n-1)/n B / bw = 14 * 2e-6 + 1.75 * 1073741824 / 150e9 = 0.0125549879467 s
  const double bw = 200e9 * 0.75;
  CHECK(ar.value == doctest::Approx(14 * 2e-6 + 2.0 * 7 / 8 * B / bw));
  CHECK(ar.value == doctest::Approx(0.0125549879467).epsilon(1e-9));
  // Band: low from the high fraction 0.87, high from the low fraction 0.65.
  CHECK(ar.low == doctest::Approx(14 * 2e-6 + 1.75 * B / (200e9 * 0.87)));
  CHECK(ar.high == doctest::Approx(14 * 2e-6 + 1.75 * B / (200e9 * 0.65)));
  check_band(ar);
  CHECK(cc.ring_bandwidth_Bps(g) == doctest::Approx(bw));

  // All-gather (and reduce-scatter) of the same tensor: half the all-reduce's bytes term, half its
  // latency steps: 7 * 2e-6 + 0.875 * B / bw = 0.00627749397333 s.
  const auto ag = cc.collective(Coll::AllGather, B, g);
  const auto rs = cc.collective(Coll::ReduceScatter, B, g);
  CHECK(ag.value - 7 * 2e-6 == doctest::Approx((ar.value - 14 * 2e-6) / 2));
  CHECK(ag.value == doctest::Approx(0.00627749397333).epsilon(1e-9));
  CHECK(rs.value == doctest::Approx(ag.value));
  check_band(ag);
  // All-to-all: same ring cost as all-gather for B sent per rank.
  CHECK(cc.collective(Coll::AllToAll, B, g).value == doctest::Approx(ag.value));
}

TEST_CASE("groups of one, Collective::None and empty tensors cost nothing") {
  const auto sys = preset("a800-nvlink");
  const sim::CommCost cc(sys);
  for (auto k : {Coll::AllReduce, Coll::ReduceScatter, Coll::AllGather, Coll::AllToAll}) {
    const auto t = cc.collective(k, 1 * GiB, sim::make_group(1, 1, 8));
    CHECK(t.value == 0);
    CHECK(t.low == 0);
    CHECK(t.high == 0);
  }
  CHECK(cc.collective(Coll::None, 1 * GiB, sim::make_group(8, 1, 8)).high == 0);
  CHECK(cc.collective(Coll::AllReduce, 0, sim::make_group(8, 1, 8)).high == 0);
}

TEST_CASE("a collective call adds its base latency once, with its band; sends and copies do not") {
  // The shipped default (hardware/efficiency.cpp): 45 us [35, 50], fitted by calibrate fit-runs.
  const auto with = hw::resolve_system("dgx-a100-80gb", LLMSIM_DATA_DIR);
  REQUIRE(with.efficiency.collective_base_s == doctest::Approx(45 * us));
  REQUIRE(with.efficiency.collective_base_low_s == doctest::Approx(35 * us));
  REQUIRE(with.efficiency.collective_base_high_s == doctest::Approx(50 * us));
  const auto without = preset("dgx-a100-80gb");
  const sim::CommCost a(with), b(without);
  // A decode step's TP8 all-reduce of one token row (8192 x 2 B): the base dominates it.
  const double B = 8192 * 2;
  const auto tp8 = sim::make_group(8, 1, 8);
  const auto t = a.collective(Coll::AllReduce, B, tp8);
  const auto t0 = b.collective(Coll::AllReduce, B, tp8);
  CHECK(t.value - t0.value == doctest::Approx(45e-6));
  CHECK(t.low - t0.low == doctest::Approx(35e-6));
  CHECK(t.high - t0.high == doctest::Approx(50e-6));
  // Hand value without the base: 14 x 2 us + 1.75 x 16384 / (300e9 x 0.75) = 28.127 us; with it 73.127 us.
  CHECK(t0.value == doctest::Approx(14 * 2e-6 + 1.75 * B / (300e9 * 0.75)));
  CHECK(t.value == doctest::Approx(73.127e-6).epsilon(1e-4));
  // Once per call, also when the call is hierarchical (reduce-scatter, inter-node all-reduce, all-gather).
  const auto two_nodes = sim::make_group(16, 1, 8);
  CHECK(a.collective(Coll::AllReduce, B, two_nodes).value - b.collective(Coll::AllReduce, B, two_nodes).value ==
        doctest::Approx(45e-6));
  for (auto k : {Coll::ReduceScatter, Coll::AllGather, Coll::AllToAll})
    CHECK(a.collective(k, B, tp8).value - b.collective(k, B, tp8).value == doctest::Approx(45e-6));
  // No call, no base: a group of one, nothing to move, no collective.
  CHECK(a.collective(Coll::AllReduce, B, sim::make_group(1, 1, 8)).high == 0);
  CHECK(a.collective(Coll::AllReduce, 0, tp8).high == 0);
  CHECK(a.collective(Coll::None, B, tp8).high == 0);
  // Pipeline sends and host copies keep their own latencies.
  CHECK(a.p2p(B, false).value == doctest::Approx(b.p2p(B, false).value));
  CHECK(a.host_copy(B).value == doctest::Approx(b.host_copy(B).value));
}

TEST_CASE("staged PCIe (p2p off) on rtx4090-pcie is the p2p PCIe bandwidth times 0.5") {
  const auto staged_sys = preset("rtx4090-pcie");
  REQUIRE_FALSE(staged_sys.node.p2p);
  // PCIe 4.0 x16 derived: 16 * 1.969 GB/s = 31.504 GB/s; pcie efficiency 0.85 (0.75..0.90).
  REQUIRE(staged_sys.node.pcie_bandwidth_Bps == doctest::Approx(31.504 * GBps));
  REQUIRE(staged_sys.node.fabric_latency_s == doctest::Approx(15 * us));
  auto p2p_sys = staged_sys;
  p2p_sys.node.p2p = true;
  const sim::CommCost staged(staged_sys), direct(p2p_sys);
  const auto g = sim::make_group(8, 1, 8);
  const double B = 1 * GiB;

  const double pcie = 31.504e9;
  CHECK(direct.ring_bandwidth_Bps(g) == doctest::Approx(pcie * 0.85));
  CHECK(staged.ring_bandwidth_Bps(g) == doctest::Approx(pcie * 0.85 * 0.5));

  const auto s = staged.collective(Coll::AllReduce, B, g);
  const auto d = direct.collective(Coll::AllReduce, B, g);
  // Latency: 15 us per step direct, doubled to 30 us staged; 14 steps for 8 ranks.
  const double s_bytes = s.value - 14 * 30e-6;
  const double d_bytes = d.value - 14 * 15e-6;
  CHECK(d_bytes == doctest::Approx(1.75 * B / (pcie * 0.85)));
  CHECK(s_bytes == doctest::Approx(2.0 * d_bytes));  // exactly the factor 0.5 in bandwidth
  // Hand value: 14 * 30e-6 + 1.75 * 1073741824 / (31.504e9 * 0.85 * 0.5)
  CHECK(s.value == doctest::Approx(14 * 30e-6 + 1.75 * B / (pcie * 0.425)));
  // Band of the staged factor: [0.3, 0.8] on top of the PCIe band [0.75, 0.90].
  CHECK(s.low - 14 * 30e-6 == doctest::Approx(1.75 * B / (pcie * 0.90 * 0.8)));
  CHECK(s.high - 14 * 30e-6 == doctest::Approx(1.75 * B / (pcie * 0.75 * 0.3)));
  check_band(s);
  check_band(d);
  CHECK(s.value > d.value);

  // p2p within the node takes the same staged path.
  const auto sp = staged.p2p(B, false);
  CHECK(sp.value == doctest::Approx(30e-6 + B / (pcie * 0.425)));
}

TEST_CASE("rtx3090-nvlink: a pair uses the NVLink bridge, a larger ring the PCIe path") {
  const auto sys = preset("rtx3090-nvlink");
  REQUIRE(sys.node.fabric == hw::Fabric::NvLinkPairs);
  REQUIRE(sys.node.fabric_bandwidth_Bps == doctest::Approx(56.25 * GBps));
  const sim::CommCost cc(sys);
  const double nvlink = 56.25e9 * 0.75;  // 42.1875 GB/s
  const double pcie = 31.504e9 * 0.85;   // 26.7784 GB/s
  CHECK(cc.ring_bandwidth_Bps(sim::make_group(2, 1, 8)) == doctest::Approx(nvlink));
  CHECK(cc.ring_bandwidth_Bps(sim::make_group(4, 1, 8)) == doctest::Approx(pcie));
  CHECK(cc.ring_bandwidth_Bps(sim::make_group(8, 1, 8)) == doctest::Approx(pcie));
  const double B = 1 * GiB;
  // 2 ranks: 2 * 1 * 2 us + 2 * 1/2 * B / nvlink.
  CHECK(cc.collective(Coll::AllReduce, B, sim::make_group(2, 1, 8)).value == doctest::Approx(2 * 2e-6 + B / nvlink));
  // 4 ranks: 2 * 3 * 2 us + 2 * 3/4 * B / pcie.
  CHECK(cc.collective(Coll::AllReduce, B, sim::make_group(4, 1, 8)).value ==
        doctest::Approx(6 * 2e-6 + 1.5 * B / pcie));
  // Pipeline neighbours are assumed bridged.
  CHECK(cc.p2p(B, false).value == doctest::Approx(2e-6 + B / nvlink));
}

TEST_CASE("dgx-a100-80gb: hierarchical collectives across 2 nodes") {
  const auto sys = preset("dgx-a100-80gb");
  // [node] 300 GB/s NVSwitch, 2 us; [network] 8 NICs x 200 Gb/s (25 GB/s), 2 us; eff net 0.85.
  REQUIRE(sys.node.fabric_bandwidth_Bps == doctest::Approx(300 * GBps));
  REQUIRE(sys.network.nics_per_node == 8);
  REQUIRE(sys.network.nic_bandwidth_Bps == doctest::Approx(25 * GBps));
  REQUIRE(sys.network.latency_s == doctest::Approx(2 * us));
  REQUIRE(sys.efficiency.network_bandwidth.value == doctest::Approx(0.85));
  const sim::CommCost cc(sys);
  const double B = 1 * GiB;
  const double bw_i = 300e9 * 0.75;         // 225 GB/s
  const double bw_n = 8 * 25e9 * 0.85 / 8;  // 21.25 GB/s per GPU

  const auto g = sim::make_group(16, 1, 8);
  REQUIRE(g.per_node == 8);
  REQUIRE(g.nodes() == 2);
  CHECK(cc.ring_bandwidth_Bps(g) == doctest::Approx(bw_n));

  // All-reduce: intra RS (7 * 2us + 7/8 B / bw_i) + inter AR of B/8 over 2 nodes
  // (2 * 1 * 2us + 2 * 1/2 * (B/8) / bw_n) + intra AG (same as RS) = 0.0146994536742 s.
  const auto ar = cc.collective(Coll::AllReduce, B, g);
  const double intra = 7 * 2e-6 + 7.0 / 8 * B / bw_i;
  const double inter = 2 * 2e-6 + (B / 8) / bw_n;
  CHECK(ar.value == doctest::Approx(2 * intra + inter));
  CHECK(ar.value == doctest::Approx(0.0146994536742).epsilon(1e-9));
  check_band(ar);

  // Reduce-scatter: intra RS + inter RS of B/8 over 2 nodes = 0.00734972683712 s.
  const auto rs = cc.collective(Coll::ReduceScatter, B, g);
  CHECK(rs.value == doctest::Approx(intra + 2e-6 + 0.5 * (B / 8) / bw_n));
  CHECK(rs.value == doctest::Approx(0.00734972683712).epsilon(1e-9));
  CHECK(cc.collective(Coll::AllGather, B, g).value == doctest::Approx(rs.value));
  check_band(rs);

  // All-to-all: off-node 8/16 B over bw_n (25.26 ms) beats on-node 7/16 B over bw_i (2.09 ms), so
  // max = off-node, plus 15 network latency steps = 0.0252945135059 s.
  const auto a2a = cc.collective(Coll::AllToAll, B, g);
  CHECK(a2a.value == doctest::Approx(0.5 * B / bw_n + 15 * 2e-6));
  CHECK(a2a.value == doctest::Approx(0.0252945135059).epsilon(1e-9));
  check_band(a2a);

  // DP group over TP8 (stride 8), 2 nodes, one member each: flat ring over the network,
  // 2 * 2us + 2 * 1/2 * B / bw_n = 0.0505330270118 s.
  const auto dp = sim::make_group(2, 8, 8);
  REQUIRE(dp.per_node == 1);
  const auto dp_ar = cc.collective(Coll::AllReduce, B, dp);
  CHECK(dp_ar.value == doctest::Approx(0.0505330270118).epsilon(1e-9));
  CHECK(dp_ar.low == doctest::Approx(4e-6 + B / (25e9 * 0.92)));
  CHECK(dp_ar.high == doctest::Approx(4e-6 + B / (25e9 * 0.75)));
  check_band(dp_ar);

  // Pipeline sends: NVSwitch within a node, the per-GPU NIC share across nodes.
  CHECK(cc.p2p(B, false).value == doctest::Approx(2e-6 + B / bw_i));
  CHECK(cc.p2p(B, true).value == doctest::Approx(2e-6 + B / bw_n));
  check_band(cc.p2p(B, true));
}

TEST_CASE("host_copy: 10 us + bytes over one PCIe link") {
  const auto sys = preset("a800-nvlink");
  const sim::CommCost cc(sys);
  const double B = 1 * GiB;
  const auto t = cc.host_copy(B);
  // 10e-6 + 1073741824 / (31.504e9 * 0.85) = 0.0401073106683 s; band from 0.90 / 0.75.
  CHECK(t.value == doctest::Approx(0.0401073106683).epsilon(1e-9));
  CHECK(t.low == doctest::Approx(10e-6 + B / (31.504e9 * 0.90)));
  CHECK(t.high == doctest::Approx(10e-6 + B / (31.504e9 * 0.75)));
  check_band(t);
  CHECK(cc.host_copy(0).value == 0);
}

TEST_CASE("a group spanning nodes on a system without scale-out network is an input error") {
  auto sys = preset("dgx-a100-80gb");
  sys.network.nics_per_node = 0;
  const sim::CommCost cc(sys);
  const auto e = lt::error_of([&] { cc.collective(Coll::AllReduce, 1 * GiB, sim::make_group(16, 1, 8)); });
  CHECK(e.kind() == llmsim::ErrorKind::Input);
  CHECK(e.where().key == "network.nics_per_node");
  CHECK(e.message().find("2 nodes") != std::string::npos);
  CHECK(lt::error_of([&] { cc.p2p(1 * GiB, true); }).where().key == "network.nics_per_node");
  CHECK(lt::error_of([&] { (void)cc.ring_bandwidth_Bps(sim::make_group(4, 8, 8)); }).kind() ==
        llmsim::ErrorKind::Input);
  // A group within one node is still fine.
  CHECK(cc.collective(Coll::AllReduce, 1 * GiB, sim::make_group(8, 1, 8)).value > 0);
}

TEST_CASE("every preset: bands are ordered for in-node collectives, p2p and host copies") {
  for (const auto& name : hw::list_system_presets(LLMSIM_DATA_DIR)) {
    CAPTURE(name);
    const auto sys = preset(name);
    const sim::CommCost cc(sys);
    const int gpn = sys.node.gpus_per_node;
    for (auto k : {Coll::AllReduce, Coll::ReduceScatter, Coll::AllGather, Coll::AllToAll})
      check_band(cc.collective(k, 256e6, sim::make_group(gpn, 1, gpn)));
    check_band(cc.p2p(64e6, false));
    check_band(cc.host_copy(64e6));
    if (sys.network.nics_per_node > 0) {
      check_band(cc.collective(Coll::AllReduce, 256e6, sim::make_group(4 * gpn, 1, gpn)));
      check_band(cc.collective(Coll::AllToAll, 256e6, sim::make_group(4 * gpn, 1, gpn)));
    }
  }
}

TEST_CASE("NVL72: TP16 and EP32 inside the 72-GPU NVLink domain ride NVLink; 9 HGX B200 nodes go over IB") {
  const auto nvl = preset("gb200-nvl72");
  const auto b200 = preset("hgx-b200");
  const int domain = hw::fast_domain_gpus(nvl);
  REQUIRE(domain == 72);
  const sim::CommCost cc(nvl), cb(b200);
  const double eff = nvl.efficiency.fabric_bandwidth.value;
  const double lat = nvl.node.fabric_latency_s;

  // TP16 (stride 1): 16 GPUs over 4 trays, one domain. Ring all-reduce of 1 GiB over NVLink:
  //   2 x 15/16 x 1 GiB / (900 GB/s x eff) + 2 x 15 x latency.
  const auto tp16 = sim::make_group(16, 1, domain);
  CHECK(tp16.nodes() == 1);
  const double nvlink_ar = 2.0 * 15 / 16 * GiB / (900 * GBps * eff) + 30 * lat;
  const auto t_nvl = cc.collective(Coll::AllReduce, 1 * GiB, tp16);
  CHECK(t_nvl.value == doctest::Approx(nvlink_ar));
  CHECK(cc.ring_bandwidth_Bps(tp16) == doctest::Approx(900 * GBps * eff));
  // Were the tray the boundary (4 GPUs), the same group would span 4 trays and cross the NICs
  // (4 x 400 Gb/s per tray = 50 GB/s per GPU): several times slower.
  const auto by_tray = sim::make_group(16, 1, nvl.node.gpus_per_node);
  CHECK(by_tray.nodes() == 4);
  CHECK(cc.collective(Coll::AllReduce, 1 * GiB, by_tray).value > 3 * t_nvl.value);
  // The same TP16 on HGX B200 nodes of 8 spans 2 nodes: hierarchical, its middle step over IB.
  const auto t_b200 = cb.collective(Coll::AllReduce, 1 * GiB, sim::make_group(16, 1, hw::fast_domain_gpus(b200)));
  CHECK(t_b200.value > 1.5 * t_nvl.value);  // 6.0 ms vs 3.0 ms: the inter-node all-reduce of B/8 dominates

  // EP32 next to TP2 (stride 2): 32 ranks over 64 GPUs of the rack, still one domain.
  //   all-to-all of 1 GiB: 31/32 x 1 GiB / (900 GB/s x eff_a2a) + 31 x latency.
  const auto ep32 = sim::make_group(32, 2, domain);
  CHECK(ep32.nodes() == 1);
  const double eff_a2a = nvl.efficiency.fabric_all_to_all ? nvl.efficiency.fabric_all_to_all->value
                                                          : nvl.efficiency.fabric_bandwidth.value;
  CHECK(cc.collective(Coll::AllToAll, 1 * GiB, ep32).value ==
        doctest::Approx(31.0 / 32 * GiB / (900 * GBps * eff_a2a) + 31 * lat));
  CHECK(cb.collective(Coll::AllToAll, 1 * GiB, sim::make_group(32, 2, 8)).value >
        3 * cc.collective(Coll::AllToAll, 1 * GiB, ep32).value);

  // Beyond the domain (a DP group of 2 racks, stride 72) the NICs carry it: 4 x 50 GB/s / 4 GPUs x net eff.
  const auto racks = sim::make_group(2, 72, domain);
  CHECK(racks.nodes() == 2);
  CHECK(cc.ring_bandwidth_Bps(racks) == doctest::Approx(50 * GBps * nvl.efficiency.network_bandwidth.value));
}

TEST_CASE("xgmi-mesh (mi300x): a group of r GPUs gets (r - 1) of the 7 links, 64 GB/s each") {
  const auto sys = preset("mi300x");
  const sim::CommCost cc(sys);
  const double eff = sys.efficiency.fabric_bandwidth.value;
  CHECK(cc.ring_bandwidth_Bps(sim::make_group(8, 1, 8)) == doctest::Approx(448 * GBps * eff));
  CHECK(cc.ring_bandwidth_Bps(sim::make_group(4, 1, 8)) == doctest::Approx(3 * 64 * GBps * eff));
  CHECK(cc.ring_bandwidth_Bps(sim::make_group(2, 1, 8)) == doctest::Approx(64 * GBps * eff));
  // Ring all-reduce of 1 GiB over all 8: 2 x 7/8 x 1 GiB / (448 GB/s x eff) + 14 x latency.
  CHECK(cc.collective(Coll::AllReduce, 1 * GiB, sim::make_group(8, 1, 8)).value ==
        doctest::Approx(2.0 * 7 / 8 * GiB / (448 * GBps * eff) + 14 * sys.node.fabric_latency_s));
  // A pipeline send between two GPUs has one link.
  CHECK(cc.p2p(1 * GiB, false).value ==
        doctest::Approx(
            GiB / (64 * GBps * sys.efficiency.fabric_send_recv.value_or(sys.efficiency.fabric_bandwidth).value) +
            sys.node.fabric_latency_s));
  // On an NVSwitch board of the same per-GPU rate a pair would get the whole 448; the mesh gives it 1/7.
  auto switched = sys;
  switched.node.fabric = hw::Fabric::NvSwitch;
  CHECK(sim::CommCost(switched).ring_bandwidth_Bps(sim::make_group(2, 1, 8)) ==
        doctest::Approx(7 * cc.ring_bandwidth_Bps(sim::make_group(2, 1, 8))));
}
