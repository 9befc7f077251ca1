#pragma once
// Raw calibration samples: one timed measurement per row, appended to `samples.csv` as it is measured
// (and flushed), so an interrupted run resumes where it stopped and loses nothing.
#include <cstdint>
#include <fstream>
#include <set>
#include <string>
#include <vector>

namespace llmsim::calibrate {

// What to measure: one point of one benchmark family (see plan.h for the families).
struct BenchItem {
  std::string bench;                 // family: "gemm", "mem_copy", "h2d_pinned", "nccl_all_reduce", "cpu_adam", …
  std::string dtype;                 // "bf16", "fp32", … ("" when not applicable)
  std::int64_t m = 0, n = 0, k = 0;  // GEMM shape (0 otherwise)
  double bytes = 0;                  // message / buffer size in bytes (the family's convention, see plan.h)
  int group = 1;                     // ranks taking part (collectives, p2p), threads (host benchmarks)
  int nodes = 1;                     // hosts the group spans (collectives across nodes through MPI, imported logs)
  // Stable identity: "gemm|bf16|4096|4096|4096|0|1", with "|n<nodes>" appended when nodes > 1 (so the
  // keys of single-node samples, and resume of older folders, are unchanged).
  std::string key() const;
};

// One measurement of an item.
struct Sample {
  BenchItem item;
  double flops = 0;         // FLOPs per operation (GEMM, Adam), else 0
  double time_s = 0;        // seconds per operation: median of the timed repeats
  double spread = 0;        // (max - min) / median of the repeats
  int repeats = 0;          // timed repeats behind the median
  bool noisy = false;       // spread stayed above the target after the maximum repeats
  double sm_clock_MHz = 0;  // MHz: the GPU's SM clock read (NVML) right after the measurement; 0 = unknown
  bool throttled = false;   // a power or thermal clock reduction was active at that moment (NVML reasons)
};

// The append-only CSV of samples in a calibration output folder.
class SampleLog {
 public:
  // Opens (creating if needed) `path`; existing rows are read so that done() knows them. A malformed
  // existing file is an Input error naming path:line.
  explicit SampleLog(std::string path);
  bool done(const BenchItem& item) const;  // already measured (resume)
  void append(const Sample& s);            // writes and flushes one row
  const std::vector<Sample>& samples() const { return samples_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::vector<Sample> samples_;
  std::set<std::string> keys_;
  std::ofstream out_;
};

// Holds an exclusive lock on a calibration folder while one llmsim writes to it (flock(2) on the folder
// itself, so no lock file is left behind and a crashed run's lock goes with its process). A second
// calibrate, resume, import or refit of the same folder is refused with an Input error naming the folder
// instead of appending the same samples twice.
class FolderLock {
 public:
  explicit FolderLock(const std::string& dir);  // the folder must exist
  ~FolderLock();
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

 private:
  int fd_ = -1;
};

// `samples` with each item measured once: a repeated item (same key(), e.g. from two runs that wrote one
// folder at once before it was locked) keeps its first sample; `dropped` counts the others.
std::vector<Sample> unique_samples(const std::vector<Sample>& samples, std::size_t& dropped);

// Reads a samples CSV (the SampleLog format) without opening it for writing.
std::vector<Sample> read_samples(const std::string& path);

// The CSV header SampleLog writes. Files with an older header (without nodes; without sm_clock_MHz and
// throttled too) are still read, and SampleLog rewrites such a file in the current format before
// appending to it.
const char* sample_csv_header();

}  // namespace llmsim::calibrate
