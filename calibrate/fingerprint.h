#pragma once
// Where a calibration ran: host, GPUs, software versions, tool version and git sha, date, command line
// and an allow-listed environment (CUDA_VISIBLE_DEVICES, NCCL_*), plus quality flags. Written beside the
// profile as fingerprint.json and summarised in its `source`.
#include <optional>
#include <string>
#include <vector>

#include "calibrate/gpu_bench.h"
#include "calibrate/sample.h"

namespace llmsim::calibrate {

struct Fingerprint {
  std::string tool_version;     // llmsim version
  std::string git_sha;          // of the source tree at configure time ("unknown" outside git)
  std::string date_utc;         // ISO 8601
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> environment;  // allow-listed only
  std::string host_cpu;         // model name from /proc/cpuinfo
  int host_threads = 0;         // hardware threads
  double host_memory_bytes = 0; // from /proc/meminfo
  std::optional<GpuInfo> gpu;   // absent for host-only calibrations
  int noisy_samples = 0;        // samples whose spread stayed above the target
  std::vector<std::string> notes;  // quality remarks (throttling, skipped families, …)
};

// Fills everything but `gpu`, `noisy_samples` and `notes` from this process and host.
Fingerprint host_fingerprint(const std::vector<std::string>& argv);

// JSON text of the fingerprint (stable key order).
std::string fingerprint_json(const Fingerprint& f);

// One line for a profile's `source` field.
std::string fingerprint_summary(const Fingerprint& f);

}  // namespace llmsim::calibrate
