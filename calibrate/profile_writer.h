#pragma once
// From raw samples to a hardware profile: fits every curve the simulator uses (fit.h), maps the fits
// onto the system TOML's [efficiency] keys (docs/system-toml.md), and writes the calibrated profile
// beside its raw samples and fingerprint.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "calibrate/fingerprint.h"
#include "calibrate/fit.h"
#include "calibrate/sample.h"
#include "hardware/system_spec.h"

namespace llmsim::calibrate {

struct CalibrationFits {
  std::map<std::string, GemmFit> gemm;                 // by dtype ("bf16", …)
  std::optional<AlphaBetaFit> memory;                  // mem_copy: bytes read + written
  std::optional<AlphaBetaFit> elementwise;             // every elementwise-kernel sample pooled: bytes read + written
  std::optional<double> launch_s;                      // empty-kernel launch
  std::optional<AlphaBetaFit> h2d;                     // h2d_pinned
  std::optional<AlphaBetaFit> d2h;                     // d2h_pinned
  std::map<int, AlphaBetaFit> all_reduce;              // NCCL all-reduce by group size, on bus bytes
  // Every other link and collective, by "family xN" (nccl_all_gather x8, p2p x2, …), on bus bytes as
  // nccl-tests counts them (all-gather / reduce-scatter (n-1)/n x size, all-to-all (n-1)/n x size,
  // broadcast / send-recv / p2p x size). All-gather, reduce-scatter, all-to-all and send/recv within one
  // node map to their fabric_bandwidth_fraction_<collective> keys; broadcast and p2p are reported only.
  std::map<std::string, AlphaBetaFit> links;
  std::optional<RateFit> cpu_adam;                     // parameters/s with all host threads
  std::optional<RateFit> host_bandwidth;               // host_triad bytes/s
  std::vector<std::string> notes;                      // what could not be fitted, and why
};

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
