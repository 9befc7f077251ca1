#include "calibrate/profile_writer.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "sim/base/error.h"
#include "sim/base/units.h"

namespace llmsim::calibrate {

namespace {

struct Series {
  std::vector<double> x, t;
};

std::map<std::string, Series> series_by(const std::vector<Sample>& samples, const std::string& bench,
                                        double (*x_of)(const Sample&)) {
  std::map<std::string, Series> m;
  for (const auto& s : samples)
    if (s.item.bench == bench) {
      auto& se = m[s.item.dtype + "|" + std::to_string(s.item.group)];
      se.x.push_back(x_of(s));
      se.t.push_back(s.time_s);
    }
  return m;
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

DType dtype_of(const std::string& name) {
  DType d = DType::BF16;
  parse_dtype(name, d);
  return d;
}

double clamp01(double f) { return std::clamp(f, 1e-6, 1.0); }

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
  if (auto s = series_by(samples, "mem_copy", bytes_of); !s.empty()) f.memory = try_fit(s.begin()->second, "mem_copy", f.notes);
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
  if (auto s = series_by(samples, "h2d_pinned", bytes_of); !s.empty()) f.h2d = try_fit(s.begin()->second, "h2d_pinned", f.notes);
  if (auto s = series_by(samples, "d2h_pinned", bytes_of); !s.empty()) f.d2h = try_fit(s.begin()->second, "d2h_pinned", f.notes);
  for (const auto& [key, se] : series_by(samples, "nccl_all_reduce", bus_bytes)) {
    const int group = std::stoi(key.substr(key.find('|') + 1));
    if (auto fit = try_fit(se, fmt::format("nccl_all_reduce x{}", group), f.notes)) f.all_reduce[group] = *fit;
  }
  for (const char* fam : {"nccl_all_gather", "nccl_reduce_scatter", "nccl_all_to_all", "nccl_broadcast",
                          "nccl_send_recv", "p2p"}) {
    const bool shared = std::string(fam) == "nccl_all_gather" || std::string(fam) == "nccl_reduce_scatter" ||
                        std::string(fam) == "nccl_all_to_all";
    auto x = shared ? +[](const Sample& s) { const double n = std::max(1, s.item.group); return s.item.bytes * (n - 1) / n; }
                    : +[](const Sample& s) { return s.item.bytes; };
    for (const auto& [key, se] : series_by(samples, fam, x)) {
      const std::string name = fmt::format("{} x{}", fam, key.substr(key.find('|') + 1));
      if (auto fit = try_fit(se, name, f.notes)) f.links[name] = *fit;
    }
  }
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
    rows.push_back({name, fmt::format("{} + {:.1f} us", gbps(a.bandwidth_Bps), a.alpha_s * 1e6),
                    sheet > 0 ? gbps(sheet) : "-",
                    sheet > 0 ? fmt::format("{:.3f} [{:.3f}, {:.3f}]", a.bandwidth_Bps / sheet, a.bandwidth_low_Bps / sheet,
                                            a.bandwidth_high_Bps / sheet)
                              : "-",
                    fmt::format("{:.1f}%", 100 * a.rel_rms)});
  };
  if (f.memory) link("device copy (read + write)", *f.memory, base.gpu.memory_bandwidth_Bps);
  if (f.elementwise) link("elementwise kernels (read + write)", *f.elementwise, base.gpu.memory_bandwidth_Bps);
  if (f.launch_s) rows.push_back({"kernel launch", fmt::format("{:.2f} us", *f.launch_s * 1e6), "-", "-", "-"});
  if (f.h2d) link("PCIe host->device, pinned", *f.h2d, base.node.pcie_bandwidth_Bps);
  if (f.d2h) link("PCIe device->host, pinned", *f.d2h, base.node.pcie_bandwidth_Bps);
  for (const auto& [g, a] : f.all_reduce) link(fmt::format("NCCL all-reduce x{} (bus bandwidth)", g), a, base.node.fabric_bandwidth_Bps);
  for (const auto& [name, a] : f.links) link(name + " (bus bandwidth)", a, base.node.fabric_bandwidth_Bps);
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
  auto fraction = [&](const std::string& key, double v, double lo, double hi, const std::string& why) {
    o << fmt::format("{} = {:.4f}   # {}\n", key, clamp01(v), why);
    o << fmt::format("{}_low = {:.4f}\n", key, std::min(clamp01(lo), clamp01(v)));
    o << fmt::format("{}_high = {:.4f}\n", key, std::max(clamp01(hi), clamp01(v)));
  };
  for (const auto& [dtype, g] : f.gemm) {
    if (dtype != "bf16" && dtype != "fp16" && dtype != "fp32" && dtype != "tf32" && dtype != "fp8") continue;
    fraction("gemm_fraction_" + dtype, g.fraction, g.fraction_low, g.fraction_high,
             fmt::format("{} GEMMs, {} compute-bound shapes, fit error {:.1f}%", dtype, g.n, 100 * g.rel_rms));
  }
  if (auto it = f.gemm.find("bf16"); it != f.gemm.end())
    o << fmt::format("gemm_half_k = {:.1f}   # bf16 fit\n", it->second.half_k);
  const double hbm = base.gpu.memory_bandwidth_Bps;
  if (f.memory && hbm > 0)
    fraction("memory_bandwidth_fraction", f.memory->bandwidth_Bps / hbm, f.memory->bandwidth_low_Bps / hbm,
             f.memory->bandwidth_high_Bps / hbm, fmt::format("device copy {} of {}", gbps(f.memory->bandwidth_Bps), gbps(hbm)));
  if (f.elementwise && hbm > 0)
    fraction("elementwise_bandwidth_fraction", f.elementwise->bandwidth_Bps / hbm, f.elementwise->bandwidth_low_Bps / hbm,
             f.elementwise->bandwidth_high_Bps / hbm,
             fmt::format("RMSNorm/SiLU-mul/softmax/RoPE-shaped kernels {} of {}", gbps(f.elementwise->bandwidth_Bps), gbps(hbm)));
  if (f.launch_s) o << fmt::format("kernel_launch_us = {:.2f}   # empty-kernel launch\n", *f.launch_s * 1e6);
  const double pcie = base.node.pcie_bandwidth_Bps;
  if (f.h2d && pcie > 0)
    fraction("pcie_bandwidth_fraction", f.h2d->bandwidth_Bps / pcie, f.h2d->bandwidth_low_Bps / pcie,
             f.h2d->bandwidth_high_Bps / pcie, fmt::format("pinned host->device {} of {}", gbps(f.h2d->bandwidth_Bps), gbps(pcie)));
  // The simulator's fabric fraction is the ring bus bandwidth over the node's NVLink/NVSwitch; take
  // the largest measured group within one node. All-reduce sets the general fraction; all-gather,
  // reduce-scatter, all-to-all and send/recv (pipeline sends) set their own. (Staged PCIe without P2P
  // is modelled separately, so it is not mapped here; the summary still shows it.)
  const double fabric = base.node.fabric_bandwidth_Bps;
  const auto map_fabric = [&](const std::string& key, const std::map<int, AlphaBetaFit>& by_group,
                              const std::string& what) {
    if (const auto fit = in_node_fit(by_group, base))
      fraction(key, fit->second.bandwidth_Bps / fabric, fit->second.bandwidth_low_Bps / fabric,
               fit->second.bandwidth_high_Bps / fabric,
               fmt::format("NCCL {} bus bandwidth over {} GPUs", what, fit->first));
  };
  map_fabric("fabric_bandwidth_fraction", f.all_reduce, "all-reduce");
  map_fabric("fabric_bandwidth_fraction_all_gather", links_of(f, "nccl_all_gather"), "all-gather");
  map_fabric("fabric_bandwidth_fraction_reduce_scatter", links_of(f, "nccl_reduce_scatter"), "reduce-scatter");
  map_fabric("fabric_bandwidth_fraction_all_to_all", links_of(f, "nccl_all_to_all"), "all-to-all");
  map_fabric("fabric_bandwidth_fraction_send_recv", links_of(f, "nccl_send_recv"), "send/recv");
  if (f.cpu_adam) {
    // Measured with every hardware thread of this host; a node of `cpu_cores` cores is assumed to be this host.
    o << fmt::format("cpu_adam_Mparams_per_s = {:.1f}   # fused AdamW, all host threads\n", f.cpu_adam->rate / 1e6);
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
  // (the simulator's ring model, sim/comm_cost.cpp), when the fabric fraction is mapped too.
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
    if (in_node && step_latency_us > 0 && first != std::string::npos && line.compare(first, 17, "fabric_latency_us") == 0) {
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
