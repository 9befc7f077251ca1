#include "llmsim/calibrate/profile_writer.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "llmsim/core/error.h"
#include "llmsim/core/units.h"
#include "llmsim/cost/comm_cost.h"
#include "llmsim/hardware/efficiency.h"
#include "llmsim/hardware/efficiency_keys.h"

namespace llmsim::calibrate {

namespace {

struct Series {
  std::vector<double> x, t;
};

// One curve: samples of one family, dtype, group size and node count. Nodes are part of the key because
// 16 ranks on one node (NVSwitch) and 16 ranks on 2 nodes (the network) are different links.
struct SeriesKey {
  std::string dtype;
  int group = 1;
  int nodes = 1;
  auto operator<=>(const SeriesKey&) const = default;
};

std::map<SeriesKey, Series> series_by(const std::vector<Sample>& samples, const std::string& bench,
                                      double (*x_of)(const Sample&)) {
  std::map<SeriesKey, Series> m;
  for (const auto& s : samples)
    if (s.item.bench == bench) {
      auto& se = m[SeriesKey{s.item.dtype, s.item.group, std::max(1, s.item.nodes)}];
      se.x.push_back(x_of(s));
      se.t.push_back(s.time_s);
    }
  return m;
}

// "nccl_all_gather x8", "nccl_all_gather x16 over 2 nodes".
std::string curve_name(const std::string& family, int group, int nodes) {
  return nodes > 1 ? fmt::format("{} x{} over {} nodes", family, group, nodes) : fmt::format("{} x{}", family, group);
}

double bytes_of(const Sample& s) { return s.item.bytes; }
// NCCL all-reduce moves 2(n-1)/n of the buffer over each rank's link (nccl-tests "busbw").
double bus_bytes(const Sample& s) {
  const double n = std::max(1, s.item.group);
  return s.item.bytes * 2.0 * (n - 1) / n;
}

std::optional<AlphaBetaFit> try_fit(const Series& s, const std::string& what, std::vector<std::string>& notes) {
  try {
    return fit_alpha_beta(s.x, s.t);
  } catch (const Error& e) {
    notes.push_back(fmt::format("{}: not fitted ({})", what, e.what()));
    return std::nullopt;
  }
}

// The sizes (on the fit's x axis: bus bytes) below which a collective's time is mostly its latency and
// above which mostly its bandwidth. nccl-tests sweeps run from 8 B to GiBs; NCCL's own tuning switches
// from the low-latency protocols to Simple in the MiB range, and a 1 GiB all-reduce spends over 99 % of
// its time on bandwidth, so the intercept of a fit over large messages is noise, not latency.
constexpr double kLatencyRegionBytes = 1024.0 * 1024;         // <= 1 MiB
constexpr double kBandwidthRegionBytes = 64.0 * 1024 * 1024;  // >= 64 MiB

std::size_t distinct_sizes(const std::vector<double>& x) {
  std::vector<double> v = x;
  std::sort(v.begin(), v.end());
  return static_cast<std::size_t>(std::unique(v.begin(), v.end()) - v.begin());
}

// The samples of `s` whose x lies in [lo, hi].
Series region(const Series& s, double lo, double hi) {
  Series out;
  for (std::size_t i = 0; i < s.x.size(); ++i)
    if (s.x[i] >= lo && s.x[i] <= hi) {
      out.x.push_back(s.x[i]);
      out.t.push_back(s.t[i]);
    }
  return out;
}

// A collective's alpha-beta fit from a sweep as nccl-tests prints it: zero-byte rows dropped (their time
// is launch overhead only), the bandwidth from the bandwidth-bound sizes (>= 64 MiB when the sweep has two
// of them, else every size), the latency from the latency-bound sizes (<= 1 MiB, at least two of them).
// Without small messages the latency is not measured: alpha_s is -1 and the profile keeps the preset's.
std::optional<AlphaBetaFit> collective_fit(const Series& all, const std::string& what,
                                           std::vector<std::string>& notes) {
  const Series s = region(all, 1e-300, std::numeric_limits<double>::infinity());
  if (s.x.size() < all.x.size())
    notes.push_back(fmt::format("{}: {} zero-byte row(s) left out of the fit", what, all.x.size() - s.x.size()));
  const Series large = region(s, kBandwidthRegionBytes, std::numeric_limits<double>::infinity());
  const bool bw_region = distinct_sizes(large.x) >= 2;
  auto fit = try_fit(bw_region ? large : s, what, notes);
  if (!fit) return fit;
  const Series small = region(s, 0, kLatencyRegionBytes);
  if (distinct_sizes(small.x) >= 2) {
    if (const auto lat = try_fit(small, what + " (latency)", notes)) {
      fit->alpha_s = lat->alpha_s;
      fit->alpha_low_s = lat->alpha_low_s;
      fit->alpha_high_s = lat->alpha_high_s;
    }
  } else {
    fit->alpha_s = fit->alpha_low_s = fit->alpha_high_s = -1;
    notes.push_back(fmt::format("{}: no messages of 1 MiB or less, latency not measured (the preset's stays)", what));
  }
  if (!bw_region)
    notes.push_back(fmt::format("{}: fewer than two sizes of 64 MiB or more; bandwidth fitted over every size", what));
  return fit;
}

DType dtype_of(const std::string& name) {
  DType d = DType::BF16;
  parse_dtype(name, d);
  return d;
}

double clamp01(double f) { return std::clamp(f, 1e-6, 1.0); }

// A fraction with its band as the [efficiency] table writes it (efficiency_table): clamped to (0, 1],
// band widened to contain the value. The simulator reads back exactly this (to the 4 printed decimals).
hardware::Fraction written_fraction(double v, double lo, double hi) {
  const double value = clamp01(v);
  return hardware::Fraction{.value = value, .low = std::min(clamp01(lo), value), .high = std::max(clamp01(hi), value)};
}

// "0.573 [0.568, 0.579]"; an edge the fit leaves without bound (a bus bandwidth the intra-node steps alone
// account for) reads "unbounded" rather than "inf".
std::string band_text(double v, double lo, double hi) {
  const auto one = [](double x) { return std::isfinite(x) ? fmt::format("{:.3f}", x) : std::string("unbounded"); };
  return fmt::format("{} [{}, {}]", one(v), one(lo), one(hi));
}

hardware::Fraction fraction_of(const AlphaBetaFit& a, double peak_Bps) {
  return written_fraction(a.bandwidth_Bps / peak_Bps, a.bandwidth_low_Bps / peak_Bps, a.bandwidth_high_Bps / peak_Bps);
}

std::string gbps(double Bps) { return fmt::format("{:.1f} GB/s", Bps / 1e9); }

// A TOML basic string body.
std::string toml_escaped(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) o += c;
  }
  return o;
}

// The fit of the largest group that fits in one node of `base` (the fabric fractions describe the
// intra-node NVLink/NVSwitch; groups spanning nodes, e.g. from imported multi-node nccl-tests logs,
// measure the network too and are reported only). nullopt when there is none or the base system's
// fabric is not mapped (PCIe, or peer-to-peer off: the simulator models those paths separately).
std::optional<std::pair<int, AlphaBetaFit>> in_node_fit(const std::map<int, AlphaBetaFit>& by_group,
                                                        const hardware::SystemSpec& base) {
  if (!base.node.p2p || base.node.fabric == hardware::Fabric::Pcie || base.node.fabric_bandwidth_Bps <= 0)
    return std::nullopt;
  std::optional<std::pair<int, AlphaBetaFit>> best;
  for (const auto& [g, a] : by_group)
    if (g > 1 && g <= std::max(1, base.node.gpus_per_node)) best = std::make_pair(g, a);
  return best;
}

// f.links entries of one family by group size ("nccl_all_gather x8" -> 8).
std::map<int, AlphaBetaFit> links_of(const CalibrationFits& f, const std::string& family) {
  std::map<int, AlphaBetaFit> out;
  const std::string prefix = family + " x";
  for (const auto& [name, a] : f.links)
    if (name.rfind(prefix, 0) == 0) out[std::stoi(name.substr(prefix.size()))] = a;
  return out;
}

// The fabric fraction (of the NVLink/NVSwitch datasheet) an in-node fit maps to, with the group it
// came from; nullopt when in_node_fit has none.
std::optional<std::pair<int, hardware::Fraction>> fabric_fraction_of(const std::map<int, AlphaBetaFit>& by_group,
                                                                     const hardware::SystemSpec& base) {
  const auto fit = in_node_fit(by_group, base);
  if (!fit) return std::nullopt;
  return std::make_pair(fit->first, fraction_of(fit->second, base.node.fabric_bandwidth_Bps));
}

std::optional<hardware::Fraction> pcie_fraction_of(const CalibrationFits& f, const hardware::SystemSpec& base) {
  if (!f.h2d || base.node.pcie_bandwidth_Bps <= 0) return std::nullopt;
  return fraction_of(*f.h2d, base.node.pcie_bandwidth_Bps);
}

// The link fractions the written profile will carry: write_profile replaces the base's [efficiency]
// table, so whatever this calibration does not map falls back to the documented defaults (which is
// what every shipped preset carries anyway).
hardware::Efficiency carried_link_efficiency(const CalibrationFits& f, const hardware::SystemSpec& base) {
  hardware::Efficiency e = hardware::default_efficiency(base.gpu.compute_capability);
  if (const auto fr = fabric_fraction_of(f.all_reduce, base)) e.fabric_bandwidth = fr->second;
  if (const auto fr = fabric_fraction_of(links_of(f, "nccl_all_gather"), base)) e.fabric_all_gather = fr->second;
  if (const auto fr = fabric_fraction_of(links_of(f, "nccl_reduce_scatter"), base))
    e.fabric_reduce_scatter = fr->second;
  if (const auto fr = pcie_fraction_of(f, base)) e.pcie_bandwidth = *fr;
  return e;
}

// Seconds per byte of the tensor the simulator spends in one collective at large messages (a difference
// of two sizes, so the latency terms cancel).
double sim_seconds_per_byte(const sim::CommCost& comm, model::Collective kind, const sim::CommGroup& group) {
  constexpr double kBytes = 1024.0 * 1024.0 * 1024.0;
  return (comm.collective(kind, 2 * kBytes, group).value - comm.collective(kind, kBytes, group).value) / kBytes;
}

// network_bandwidth_fraction from the multi-node all-reduce fit with the most nodes (ties: the largest
// group): the simulator's hierarchical all-reduce (sim/cost/comm_cost.cpp) inverted at large messages, where
// latency no longer matters. With n ranks on N nodes, g = n / N per node, the simulator spends per byte
// B of the all-reduced tensor
//   dt/dB = I + 2(N-1)/N / g / (share f)
// where I is its intra-node reduce-scatter + all-gather over g GPUs (priced by sim::CommCost on the base
// system with the link fractions the profile will carry), share = nics_per_node nic_bandwidth /
// gpus_per_node (a GPU's part of its node's NICs) and f the network fraction. The fit's slope on bus
// bytes 2(n-1)/n B gives the measured dt/dB = 2(n-1)/n / busbw, hence
//   f = [2(N-1)/(N g share)] / [2(n-1)/(n busbw) - I].
// The band maps the fit's bandwidth band through the same formula with I at its best estimate: when the
// simulator prices a multi-node collective it adds the intra-node band itself.
std::optional<NetworkFractionFit> derive_network_fraction(const CalibrationFits& f, const hardware::SystemSpec& base,
                                                          std::vector<std::string>& notes) {
  const std::pair<int, int>* key = nullptr;
  const AlphaBetaFit* fit = nullptr;
  for (const auto& [k, a] : f.all_reduce_across_nodes)
    if (!key || k.second > key->second || (k.second == key->second && k.first > key->first)) {
      key = &k;
      fit = &a;
    }
  if (!key) return std::nullopt;
  const auto [n, nodes] = *key;
  const std::string what = curve_name("nccl_all_reduce", n, nodes);
  const auto skip = [&](const std::string& why) {
    notes.push_back(fmt::format("{}: network_bandwidth_fraction not mapped ({})", what, why));
    return std::nullopt;
  };
  const double share = hardware::nic_share_per_gpu_Bps(base);
  if (share <= 0)
    return skip(fmt::format("the base system '{}' has no scale-out network ([network] nics_per_node)", base.name));
  if (n % nodes != 0) return skip(fmt::format("{} ranks do not split evenly over {} nodes", n, nodes));
  const int g = n / nodes;
  if (g > std::max(1, base.node.gpus_per_node))
    return skip(
        fmt::format("{} ranks per node, but a node of '{}' has {} GPUs", g, base.name, base.node.gpus_per_node));

  hardware::SystemSpec sys = base;
  sys.efficiency = carried_link_efficiency(f, base);
  const sim::CommCost comm(sys);
  const sim::CommGroup node_group{g, g};
  const double intra = sim_seconds_per_byte(comm, model::Collective::ReduceScatter, node_group) +
                       sim_seconds_per_byte(comm, model::Collective::AllGather, node_group);
  const double network_at_line_rate = 2.0 * (nodes - 1) / nodes / g / share;  // s/B at f = 1
  // f for a bus bandwidth; +inf when the intra-node part alone takes as long as the measurement.
  const auto fraction_at = [&](double busbw) {
    const double network = 2.0 * (n - 1) / n / busbw - intra;
    return network > 0 ? network_at_line_rate / network : std::numeric_limits<double>::infinity();
  };
  NetworkFractionFit out;
  out.value = fraction_at(fit->bandwidth_Bps);
  if (!std::isfinite(out.value))
    return skip(
        fmt::format("the measured {:.3g} s/GB is no more than the intra-node reduce-scatter + all-gather "
                    "alone ({:.3g} s/GB at fabric fraction {:.3f}): the fabric is faster than the profile says",
                    2.0 * (n - 1) / n / fit->bandwidth_Bps * 1e9, intra * 1e9, sys.efficiency.fabric_bandwidth.value));
  out.low = fraction_at(fit->bandwidth_low_Bps);
  out.high = fraction_at(fit->bandwidth_high_Bps);
  out.share_Bps = share;
  out.bandwidth_Bps = out.value * share;
  out.group = n;
  out.nodes = nodes;
  out.rel_rms = fit->rel_rms;
  const bool own_rs_ag = sys.efficiency.fabric_reduce_scatter || sys.efficiency.fabric_all_gather;
  out.why = fmt::format(
      "NCCL all-reduce over {} nodes x {} GPUs, hierarchical model inverted: network {} of {} per GPU; intra-node "
      "steps as this profile prices them (fabric fraction {:.3f}, {}{})",
      nodes, g, gbps(out.bandwidth_Bps), gbps(share), sys.efficiency.fabric_bandwidth.value,
      in_node_fit(f.all_reduce, base) ? "calibrated" : "default",
      own_rs_ag ? ", reduce-scatter/all-gather their own" : "");
  if (out.value > 1 || !std::isfinite(out.high))
    notes.push_back(
        fmt::format("{}: the inverted network bandwidth {} is {} the NICs' {} per GPU (fitted fraction {}); the "
                    "profile writes {} (check the base system's [network] and fabric: NCCL's tree or NVLink SHARP "
                    "across nodes, or more NICs than the preset's, move more than a ring over the NICs would)",
                    what, gbps(out.bandwidth_Bps), out.value > 1 ? "above" : "within reach of", gbps(share),
                    band_text(out.value, out.low, out.high), [&] {
                      const auto w = written_fraction(out.value, out.low, out.high);
                      return band_text(w.value, w.low, w.high);
                    }()));
  return out;
}

}  // namespace

CalibrationFits fit_samples(const std::vector<Sample>& samples, const hardware::SystemSpec& base) {
  CalibrationFits f;
  // GEMMs, per dtype, against the datasheet peak of that dtype.
  std::map<std::string, std::vector<Sample>> gemm;
  for (const auto& s : samples)
    if (s.item.bench == "gemm") gemm[s.item.dtype].push_back(s);
  for (const auto& [dtype, list] : gemm) {
    const double peak = base.gpu.peak(dtype_of(dtype));
    if (peak <= 0) {
      f.notes.push_back(fmt::format("gemm {}: the base system has no {} peak to compare with", dtype, dtype));
      continue;
    }
    try {
      f.gemm[dtype] = fit_gemm(list, peak, base.gpu.sm_count, base.gpu.memory_bandwidth_Bps);
    } catch (const Error& e) {
      f.notes.push_back(fmt::format("gemm {}: not fitted ({})", dtype, e.what()));
    }
  }
  if (auto s = series_by(samples, "mem_copy", bytes_of); !s.empty())
    f.memory = try_fit(s.begin()->second, "mem_copy", f.notes);
  {
    // One curve for the memory-bound compute kernels (RMSNorm, SiLU-mul, softmax, RoPE shapes pooled):
    // the simulator prices all of them at one bandwidth; the pooled fit's band spans the kernels.
    Series pooled;
    for (const auto& [kernel, se] : series_by(samples, "elementwise", bytes_of)) {
      pooled.x.insert(pooled.x.end(), se.x.begin(), se.x.end());
      pooled.t.insert(pooled.t.end(), se.t.begin(), se.t.end());
    }
    if (!pooled.x.empty()) f.elementwise = try_fit(pooled, "elementwise", f.notes);
  }
  for (const auto& s : samples)
    if (s.item.bench == "launch") f.launch_s = s.time_s;
  {
    std::vector<double> small;
    for (const auto& s : samples)
      if (s.item.bench == "gemm" && (s.item.dtype == "bf16" || s.item.dtype == "fp16") &&
          s.item.bytes <= kGemmCallMaxBytes && s.flops <= kGemmCallMaxFlops && s.time_s > 0)
        small.push_back(s.time_s);
    if (static_cast<int>(small.size()) >= kGemmCallMinSamples) {
      std::sort(small.begin(), small.end());
      const std::size_t n = small.size();
      f.gemm_call_s = n % 2 ? small[n / 2] : 0.5 * (small[n / 2 - 1] + small[n / 2]);
      f.gemm_call_samples = static_cast<int>(n);
    } else if (!gemm.empty()) {
      f.notes.push_back(fmt::format("smallest GEMM call: {} 16-bit GEMM samples of <= 8 MiB and <= 1 GFLOP (needs {})",
                                    small.size(), kGemmCallMinSamples));
    }
  }
  if (auto s = series_by(samples, "h2d_pinned", bytes_of); !s.empty())
    f.h2d = try_fit(s.begin()->second, "h2d_pinned", f.notes);
  if (auto s = series_by(samples, "d2h_pinned", bytes_of); !s.empty())
    f.d2h = try_fit(s.begin()->second, "d2h_pinned", f.notes);
  // Pageable copies are not affine in size (small ones stay in the driver's staging buffer): their rate for
  // the large copies that ZeRO-Offload makes comes from the sizes of 64 MiB or more where there are two.
  auto large_copies = [](const Series& s) {
    const Series large = region(s, kBandwidthRegionBytes, std::numeric_limits<double>::infinity());
    return distinct_sizes(large.x) >= 2 ? large : s;
  };
  if (auto s = series_by(samples, "h2d_pageable", bytes_of); !s.empty())
    f.h2d_pageable = try_fit(large_copies(s.begin()->second), "h2d_pageable", f.notes);
  if (auto s = series_by(samples, "d2h_pageable", bytes_of); !s.empty())
    f.d2h_pageable = try_fit(large_copies(s.begin()->second), "d2h_pageable", f.notes);
  for (const auto& [key, se] : series_by(samples, "nccl_all_reduce", bus_bytes)) {
    auto fit = collective_fit(se, curve_name("nccl_all_reduce", key.group, key.nodes), f.notes);
    if (!fit) continue;
    if (key.nodes > 1)
      f.all_reduce_across_nodes[{key.group, key.nodes}] = *fit;
    else
      f.all_reduce[key.group] = *fit;
  }
  for (const char* fam :
       {"nccl_all_gather", "nccl_reduce_scatter", "nccl_all_to_all", "nccl_broadcast", "nccl_send_recv", "p2p"}) {
    const bool shared = std::string(fam) == "nccl_all_gather" || std::string(fam) == "nccl_reduce_scatter" ||
                        std::string(fam) == "nccl_all_to_all";
    auto x = shared ? +[](const Sample& s) { const double n = std::max(1, s.item.group); return s.item.bytes * (n - 1) / n; }
                    : +[](const Sample& s) { return s.item.bytes; };
    for (const auto& [key, se] : series_by(samples, fam, x)) {
      auto fit = collective_fit(se, curve_name(fam, key.group, key.nodes), f.notes);
      if (!fit) continue;
      if (key.nodes > 1)
        f.links_across_nodes[{fam, key.group, key.nodes}] = *fit;
      else
        f.links[curve_name(fam, key.group, key.nodes)] = *fit;
    }
  }
  f.network = derive_network_fraction(f, base, f.notes);
  std::vector<double> amount, secs;
  for (const auto& s : samples)
    if (s.item.bench == "cpu_adam") {
      amount.push_back(s.flops);
      secs.push_back(s.time_s);
    }
  if (!amount.empty()) f.cpu_adam = fit_rate(amount, secs);
  amount.clear();
  secs.clear();
  for (const auto& s : samples)
    if (s.item.bench == "host_triad") {
      amount.push_back(s.item.bytes);
      secs.push_back(s.time_s);
    }
  if (!amount.empty()) f.host_bandwidth = fit_rate(amount, secs);
  // A bus bandwidth above the datasheet's per-GPU fabric bandwidth cannot be this system's: the profile
  // writes 1.0 for it, and the note says the datasheet is probably another part's.
  const double fabric = base.node.fabric_bandwidth_Bps;
  const auto above = [&](const std::string& curve, const AlphaBetaFit& a) {
    if (fabric <= 0 || a.bandwidth_Bps <= 1.05 * fabric) return;
    f.notes.push_back(
        fmt::format("{}: {:.1f} GB/s bus bandwidth is {:.2f}x {}'s {:.1f} GB/s fabric datasheet; the "
                    "profile writes 1.0. Check that --system holds the GPUs (and NVLink generation) "
                    "that ran",
                    curve, a.bandwidth_Bps / 1e9, a.bandwidth_Bps / fabric, base.name, fabric / 1e9));
  };
  for (const auto& [g, a] : f.all_reduce) above(fmt::format("nccl_all_reduce x{}", g), a);
  for (const auto& [name, a] : f.links) above(name, a);
  return f;
}

std::vector<SummaryRow> summarize(const CalibrationFits& f, const hardware::SystemSpec& base) {
  std::vector<SummaryRow> rows;
  for (const auto& [dtype, g] : f.gemm) {
    const double peak = base.gpu.peak(dtype_of(dtype));
    rows.push_back({fmt::format("gemm {} (large-GEMM fraction, half_k {:.0f})", dtype, g.half_k),
                    fmt::format("{:.1f} TFLOP/s", g.fraction * peak / 1e12), fmt::format("{:.1f} TFLOP/s", peak / 1e12),
                    fmt::format("{:.3f} [{:.3f}, {:.3f}]", g.fraction, g.fraction_low, g.fraction_high),
                    fmt::format("{:.1f}%", 100 * g.rel_rms)});
  }
  auto link = [&](const std::string& name, const AlphaBetaFit& a, double sheet) {
    const std::string latency = a.alpha_s < 0 ? "latency not measured" : fmt::format("{:.1f} us", a.alpha_s * 1e6);
    rows.push_back({name, fmt::format("{} + {}", gbps(a.bandwidth_Bps), latency), sheet > 0 ? gbps(sheet) : "-",
                    sheet > 0
                        ? band_text(a.bandwidth_Bps / sheet, a.bandwidth_low_Bps / sheet, a.bandwidth_high_Bps / sheet)
                        : "-",
                    fmt::format("{:.1f}%", 100 * a.rel_rms)});
  };
  if (f.memory) link("device copy (read + write)", *f.memory, base.gpu.memory_bandwidth_Bps);
  if (f.elementwise) link("elementwise kernels (read + write)", *f.elementwise, base.gpu.memory_bandwidth_Bps);
  if (f.launch_s) rows.push_back({"kernel launch", fmt::format("{:.2f} us", *f.launch_s * 1e6), "-", "-", "-"});
  if (f.gemm_call_s)
    rows.push_back({"smallest GEMM call", fmt::format("{:.2f} us", *f.gemm_call_s * 1e6), "-", "-", "-"});
  if (f.h2d) link("PCIe host->device, pinned", *f.h2d, base.node.pcie_bandwidth_Bps);
  if (f.d2h) link("PCIe device->host, pinned", *f.d2h, base.node.pcie_bandwidth_Bps);
  if (f.h2d_pageable) link("PCIe host->device, pageable", *f.h2d_pageable, base.node.pcie_bandwidth_Bps);
  if (f.d2h_pageable) link("PCIe device->host, pageable", *f.d2h_pageable, base.node.pcie_bandwidth_Bps);
  for (const auto& [g, a] : f.all_reduce)
    link(fmt::format("NCCL all-reduce x{} (bus bandwidth)", g), a, base.node.fabric_bandwidth_Bps);
  for (const auto& [name, a] : f.links) link(name + " (bus bandwidth)", a, base.node.fabric_bandwidth_Bps);
  // Groups spanning nodes, against the network rather than NVSwitch (the fraction shown is of the whole
  // collective, intra-node steps included). A ring collective's bus bandwidth across nodes is bounded by
  // the node's NICs together (nics_per_node x nic_bandwidth: NCCL runs a ring per NIC, each crossing
  // the node boundary through its own NIC while its other hops run over NVLink), which is what
  // nccl-tests users compare multi-node busbw with. An all-to-all rank sends (n-g)/n of its buffer off
  // the node through its share of the NICs while its bus bytes count (n-1)/n, so its bound is
  // share x (n-1)/(n-g); send/recv and p2p go through one GPU's share.
  const double share = hardware::nic_share_per_gpu_Bps(base);
  const double node_nics = share * std::max(1, base.node.gpus_per_node);
  for (const auto& [key, a] : f.all_reduce_across_nodes)
    link(fmt::format("NCCL all-reduce x{} over {} nodes (bus bandwidth)", key.first, key.second), a, node_nics);
  for (const auto& [key, a] : f.links_across_nodes) {
    const auto& [family, n, nodes] = key;
    const int g = n / nodes;
    double sheet = share;
    if (family == "nccl_all_gather" || family == "nccl_reduce_scatter" || family == "nccl_broadcast") sheet = node_nics;
    if (family == "nccl_all_to_all" && n > g) sheet = share * (n - 1) / (n - g);
    link(curve_name(family, n, nodes) + " (bus bandwidth)", a, sheet);
  }
  // The network fraction itself is of a GPU's share, as the simulator's inter-node link is; shown as the
  // profile writes it (clamped to (0, 1]; the note gives the fitted one when it is above 1 or unbounded).
  if (f.network) {
    const auto& w = *f.network;
    const auto written = written_fraction(w.value, w.low, w.high);
    rows.push_back({fmt::format("network (from all-reduce x{} over {} nodes)", w.group, w.nodes), gbps(w.bandwidth_Bps),
                    gbps(w.share_Bps),
                    band_text(written.value, written.low, written.high) +
                        (written.value < w.value || !std::isfinite(w.high) ? " (written; see note)" : ""),
                    fmt::format("{:.1f}%", 100 * w.rel_rms)});
  }
  if (f.cpu_adam)
    rows.push_back({"CPU Adam (all host threads)", fmt::format("{:.0f} Mparams/s", f.cpu_adam->rate / 1e6), "-",
                    fmt::format("range {:.0f}-{:.0f}", f.cpu_adam->low / 1e6, f.cpu_adam->high / 1e6), "-"});
  if (f.host_bandwidth)
    rows.push_back({"host memory (STREAM triad)", gbps(f.host_bandwidth->rate),
                    base.node.host_memory_bandwidth_Bps > 0 ? gbps(base.node.host_memory_bandwidth_Bps) : "-",
                    base.node.host_memory_bandwidth_Bps > 0
                        ? fmt::format("{:.3f}", f.host_bandwidth->rate / base.node.host_memory_bandwidth_Bps)
                        : "-",
                    "-"});
  return rows;
}

std::string efficiency_table(const CalibrationFits& f, const hardware::SystemSpec& base, const std::string& source) {
  std::ostringstream o;
  o << "[efficiency]\n";
  o << "calibrated = true                  # written by llmsim calibrate from measured samples (samples.csv)\n";
  o << fmt::format("source = \"{}\"\n", toml_escaped(source));
  auto write = [&](const std::string& key, const hardware::Fraction& fr, const std::string& why) {
    o << fmt::format("{} = {:.4f}   # {}\n", key, fr.value, why);
    o << fmt::format("{}_low = {:.4f}\n", key, fr.low);
    o << fmt::format("{}_high = {:.4f}\n", key, fr.high);
  };
  auto fraction = [&](const std::string& key, double v, double lo, double hi, const std::string& why) {
    write(key, written_fraction(v, lo, hi), why);
  };
  using F = hardware::FractionField;
  const auto toml_key = [](F field) { return std::string(hardware::fraction_key(field).toml_key); };
  for (const auto& [dtype, g] : f.gemm) {
    DType t{};
    const auto& calibrated = hardware::gemm_fraction_dtypes();
    if (!parse_dtype(dtype, t) || std::find(calibrated.begin(), calibrated.end(), t) == calibrated.end()) continue;
    fraction(hardware::gemm_fraction_key(t), g.fraction, g.fraction_low, g.fraction_high,
             fmt::format("{} GEMMs, {} compute-bound shapes, fit error {:.1f}%", dtype, g.n, 100 * g.rel_rms));
  }
  if (auto it = f.gemm.find("bf16"); it != f.gemm.end())
    o << fmt::format("{} = {:.1f}   # bf16 fit\n", hardware::kGemmHalfKKey, it->second.half_k);
  const double hbm = base.gpu.memory_bandwidth_Bps;
  if (f.memory && hbm > 0)
    fraction(toml_key(F::MemoryBandwidth), f.memory->bandwidth_Bps / hbm, f.memory->bandwidth_low_Bps / hbm,
             f.memory->bandwidth_high_Bps / hbm,
             fmt::format("device copy {} of {}", gbps(f.memory->bandwidth_Bps), gbps(hbm)));
  if (f.elementwise && hbm > 0)
    fraction(toml_key(F::ElementwiseBandwidth), f.elementwise->bandwidth_Bps / hbm,
             f.elementwise->bandwidth_low_Bps / hbm, f.elementwise->bandwidth_high_Bps / hbm,
             fmt::format("RMSNorm/SiLU-mul/softmax/RoPE-shaped kernels {} of {}", gbps(f.elementwise->bandwidth_Bps),
                         gbps(hbm)));
  if (f.launch_s)
    o << fmt::format("{} = {:.2f}   # empty-kernel launch\n", hardware::kKernelLaunchKey, *f.launch_s * 1e6);
  if (f.gemm_call_s)
    o << fmt::format("{} = {:.2f}   # median of {} 16-bit GEMM calls of <= 8 MiB and <= 1 GFLOP\n",
                     hardware::kGemmCallKey, *f.gemm_call_s * 1e6, f.gemm_call_samples);
  if (const auto fr = pcie_fraction_of(f, base))
    write(toml_key(F::PcieBandwidth), *fr,
          fmt::format("pinned host->device {} of {}", gbps(f.h2d->bandwidth_Bps), gbps(base.node.pcie_bandwidth_Bps)));
  // The simulator's fabric fraction is the ring bus bandwidth over the node's NVLink/NVSwitch; take
  // the largest measured group within one node. All-reduce sets the general fraction; all-gather,
  // reduce-scatter, all-to-all and send/recv (pipeline sends) set their own. (Staged PCIe without P2P
  // is modelled separately, so it is not mapped here; the summary still shows it.)
  const auto map_fabric = [&](const std::string& key, const std::map<int, AlphaBetaFit>& by_group,
                              const std::string& what) {
    if (const auto fr = fabric_fraction_of(by_group, base))
      write(key, fr->second, fmt::format("NCCL {} bus bandwidth over {} GPUs", what, fr->first));
  };
  map_fabric(toml_key(F::FabricBandwidth), f.all_reduce, "all-reduce");
  map_fabric(toml_key(F::FabricAllGather), links_of(f, "nccl_all_gather"), "all-gather");
  map_fabric(toml_key(F::FabricReduceScatter), links_of(f, "nccl_reduce_scatter"), "reduce-scatter");
  map_fabric(toml_key(F::FabricAllToAll), links_of(f, "nccl_all_to_all"), "all-to-all");
  map_fabric(toml_key(F::FabricSendRecv), links_of(f, "nccl_send_recv"), "send/recv");
  // The scale-out network: from a multi-node all-reduce, through the simulator's hierarchical model
  // (derive_network_fraction), with the intra-node fractions written above.
  if (f.network)
    fraction(toml_key(F::NetworkBandwidth), f.network->value, f.network->low, f.network->high, f.network->why);
  // Pageable copies: their large-copy rate, which the host's staging memcpy sets (Efficiency::pageable_h2d_Bps).
  if (f.h2d_pageable)
    o << fmt::format("{} = {:.2f}   # host->device from malloc'd memory\n", hardware::kPageableH2dKey,
                     f.h2d_pageable->bandwidth_Bps / 1e9);
  if (f.d2h_pageable)
    o << fmt::format("{} = {:.2f}   # device->host to malloc'd memory\n", hardware::kPageableD2hKey,
                     f.d2h_pageable->bandwidth_Bps / 1e9);
  if (f.cpu_adam) {
    // Measured with every hardware thread of this host; a node of `cpu_cores` cores is assumed to be this host.
    o << fmt::format("{} = {:.1f}   # fused AdamW, all host threads\n", hardware::kCpuAdamKey, f.cpu_adam->rate / 1e6);
  }
  return o.str();
}

std::string write_profile(const std::string& out_dir, const hardware::SystemSpec& base, const CalibrationFits& fits,
                          const Fingerprint& fp) {
  namespace fs = std::filesystem;
  fs::create_directories(out_dir);
  std::ifstream in(base.source_file);
  if (!in) throw_not_found(Location{.file = base.source_file}, "cannot read the base system TOML");
  // Copy the base TOML without its [efficiency] table (up to the next table header), renamed.
  std::ostringstream text;
  std::string line;
  bool skipping = false;
  const std::string name = base.name + "-calibrated";
  // The ring's per-step latency from the all-reduce fit over the largest group: alpha = 2(n-1) steps
  // (the simulator's ring model, sim/cost/comm_cost.cpp), when the fabric fraction is mapped too.
  double step_latency_us = 0;
  if (const auto fit = in_node_fit(fits.all_reduce, base)) {
    const auto& [g, a] = *fit;
    if (a.alpha_s > 0) step_latency_us = a.alpha_s / (2.0 * (g - 1)) * 1e6;
  }
  bool in_node = false;
  while (std::getline(in, line)) {
    const auto first = line.find_first_not_of(" \t");
    const bool header = first != std::string::npos && line[first] == '[';
    if (header) {
      skipping = line.compare(first, 12, "[efficiency]") == 0;
      in_node = line.compare(first, 6, "[node]") == 0;
    }
    if (skipping) continue;
    if (in_node && step_latency_us > 0 && first != std::string::npos &&
        line.compare(first, 17, "fabric_latency_us") == 0) {
      text << fmt::format("fabric_latency_us = {:.3f}   # calibrated: NCCL all-reduce latency / 2(n-1) ring steps\n",
                          step_latency_us);
      continue;
    }
    if (line.rfind("name =", 0) == 0 || line.rfind("name=", 0) == 0) {
      text << fmt::format("name = \"{}\"   # calibrated copy of {}\n", name, base.name);
      continue;
    }
    text << line << "\n";
  }
  text << "\n" << efficiency_table(fits, base, fingerprint_summary(fp));
  const std::string path = (fs::path(out_dir) / (name + ".toml")).string();
  std::ofstream(path) << text.str();
  std::ofstream(fs::path(out_dir) / "fingerprint.json") << fingerprint_json(fp);
  return path;
}

}  // namespace llmsim::calibrate
