#pragma once
// From raw samples to a hardware profile: fits every curve the simulator uses (fit.h), maps the fits
// onto the system TOML's [efficiency] keys (docs/system-toml.md), and writes the calibrated profile
// beside its raw samples and fingerprint.
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "llmsim/calibrate/fingerprint.h"
#include "llmsim/calibrate/fit.h"
#include "llmsim/calibrate/sample.h"
#include "llmsim/hardware/system_spec.h"

namespace llmsim::calibrate {

// network_bandwidth_fraction derived from a multi-node all-reduce fit by inverting the simulator's
// hierarchical all-reduce (how: profile_writer.cpp, derive_network_fraction).
struct NetworkFractionFit {
  double value = 0, low = 0, high = 0;  // network_bandwidth_fraction and its band (unclamped)
  double bandwidth_Bps = 0;             // bytes/s: the per-GPU inter-node bus bandwidth solved for
  double share_Bps = 0;                 // bytes/s: a GPU's share of its node's NICs (the datasheet it is a fraction of)
  int group = 0, nodes = 0;             // the fit it came from: ranks, hosts
  double rel_rms = 0;                   // that fit's relative RMS residual
  std::string why;                      // the source comment written beside the key
};

struct CalibrationFits {
  std::map<std::string, GemmFit> gemm;      // by dtype ("bf16", …)
  std::optional<AlphaBetaFit> memory;       // mem_copy: bytes read + written
  std::optional<AlphaBetaFit> elementwise;  // every elementwise-kernel sample pooled: bytes read + written
  std::optional<double> launch_s;           // empty-kernel launch
  // The smallest library GEMM call (hardware::Efficiency::gemm_call_s): the median time of the 16-bit GEMM
  // samples of at most kGemmCallMaxBytes and kGemmCallMaxFlops, which neither their bytes nor their FLOPs
  // explain (under 2 us of streaming or compute on current GPUs); with how many samples it came from.
  std::optional<double> gemm_call_s;
  int gemm_call_samples = 0;
  std::optional<AlphaBetaFit> h2d;                         // h2d_pinned
  std::optional<AlphaBetaFit> d2h;                         // d2h_pinned
  std::optional<AlphaBetaFit> h2d_pageable, d2h_pageable;  // from and to malloc'd host memory
  // Collective fits (all_reduce, links and their across-node maps) take the bandwidth from messages of
  // 64 MiB or more and the latency from messages of 1 MiB or less; alpha_s = -1 when the sweep has no
  // small messages (latency not measured: the written profile keeps the preset's fabric latency).
  std::map<int, AlphaBetaFit> all_reduce;  // NCCL all-reduce by group size, on bus bytes (nodes = 1)
  // Every other link and collective with nodes = 1, by "family xN" (nccl_all_gather x8, p2p x2, …), on bus bytes as
  // nccl-tests counts them (all-gather / reduce-scatter (n-1)/n x size, all-to-all (n-1)/n x size,
  // broadcast / send-recv / p2p x size). All-gather, reduce-scatter, all-to-all and send/recv within one
  // node map to their fabric_bandwidth_fraction_<collective> keys; broadcast and p2p are reported only.
  std::map<std::string, AlphaBetaFit> links;
  // The same for groups spanning nodes (samples with nodes > 1: imported multi-node nccl-tests logs), kept
  // apart from single-node groups of the same size: all-reduce by (group, nodes), the rest by (family,
  // group, nodes), e.g. {"nccl_all_gather", 16, 2} (reported as "nccl_all_gather x16 over 2 nodes"). They
  // cross the network, so none maps to a fabric fraction; the all-reduce with the most nodes sets
  // network_bandwidth_fraction (`network`).
  std::map<std::pair<int, int>, AlphaBetaFit> all_reduce_across_nodes;
  std::map<std::tuple<std::string, int, int>, AlphaBetaFit> links_across_nodes;
  std::optional<NetworkFractionFit> network;
  std::optional<RateFit> cpu_adam;        // parameters/s with all host threads
  std::optional<RateFit> host_bandwidth;  // host_triad bytes/s
  std::vector<std::string> notes;         // what could not be fitted, and why
  // Nothing fitted: a profile written from these fits would be the preset marked calibrated.
  bool empty() const {
    return gemm.empty() && !memory && !elementwise && !launch_s && !gemm_call_s && !h2d && !d2h && !h2d_pageable &&
           !d2h_pageable && all_reduce.empty() && links.empty() && all_reduce_across_nodes.empty() &&
           links_across_nodes.empty() && !network && !cpu_adam && !host_bandwidth;
  }
};

inline constexpr double kGemmCallMaxBytes = 8.0 * 1024 * 1024;  // operands and result, bytes
inline constexpr double kGemmCallMaxFlops = 1e9;
inline constexpr int kGemmCallMinSamples = 3;

// Fits whatever the samples contain; families with too few points are noted, not errors.
CalibrationFits fit_samples(const std::vector<Sample>& samples, const hardware::SystemSpec& base);

// One row of the end-of-run summary: measured vs datasheet per curve.
struct SummaryRow {
  std::string curve;      // "gemm bf16", "HBM copy", "PCIe h2d pinned", "NCCL all-reduce x8", "CPU Adam", …
  std::string measured;   // with unit
  std::string datasheet;  // with unit, or "-"
  std::string fraction;   // measured / datasheet, with band
  std::string fit_error;  // relative RMS residual of the fit
};
std::vector<SummaryRow> summarize(const CalibrationFits& fits, const hardware::SystemSpec& base);

// The [efficiency] table (TOML text, calibrated = true) the fits support; keys without a fit are left
// out so the documented defaults keep applying to them.
std::string efficiency_table(const CalibrationFits& fits, const hardware::SystemSpec& base, const std::string& source);

// Writes `<out_dir>/<base name>-calibrated.toml` (the base system TOML with its [efficiency] table
// replaced) and `<out_dir>/fingerprint.json`; returns the profile's path. The profile loads with
// hardware::load_system_toml.
std::string write_profile(const std::string& out_dir, const hardware::SystemSpec& base, const CalibrationFits& fits,
                          const Fingerprint& fingerprint);

}  // namespace llmsim::calibrate
