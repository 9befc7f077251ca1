#pragma once
// Where a calibration ran: host, GPUs, software versions, tool version and git sha, date, command line
// and an allow-listed environment (CUDA_VISIBLE_DEVICES, NCCL_*), plus quality flags. Written beside the
// profile as fingerprint.json and summarised in its `source`.
#include <optional>
#include <string>
#include <vector>

#include "llmsim/calibrate/gpu_bench.h"
#include "llmsim/calibrate/sample.h"

namespace llmsim::calibrate {

struct Fingerprint {
  std::string tool_version;  // llmsim version
  std::string git_sha;       // of the source tree at configure time ("unknown" outside git)
  std::string date_utc;      // ISO 8601
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> environment;  // allow-listed only
  std::string host_cpu;                                          // model name from /proc/cpuinfo
  int host_threads = 0;                                          // hardware threads
  double host_memory_bytes = 0;                                  // from /proc/meminfo
  std::optional<GpuInfo> gpu;                                    // absent for host-only calibrations
  int noisy_samples = 0;                                         // samples whose spread stayed above the target
  int clocked_samples = 0;                                       // GPU samples with a known SM clock (NVML readable)
  int throttled_samples = 0;    // of those, measured while power or heat held the clock down
  double sm_clock_MHz_min = 0;  // MHz, over the clocked samples (0 = none)
  double sm_clock_MHz_median = 0;
  std::vector<std::string> notes;  // quality remarks (throttling, skipped families, …)
};

// Fills everything but `gpu`, the quality counts and `notes` from this process and host.
Fingerprint host_fingerprint(const std::vector<std::string>& argv);

// Fills the quality counts (noisy, clocked and throttled samples, SM clock range) from the samples.
void add_sample_quality(Fingerprint& f, const std::vector<Sample>& samples);

// JSON text of the fingerprint (stable key order).
std::string fingerprint_json(const Fingerprint& f);

// Reads a fingerprint.json written by fingerprint_json (quality counts included); an unreadable or
// malformed file is an Input error naming it and the key.
Fingerprint read_fingerprint(const std::string& path);

// One line for a profile's `source` field.
std::string fingerprint_summary(const Fingerprint& f);

}  // namespace llmsim::calibrate
