#pragma once
// Internal to calibrate/: what the nccl-tests text and JSON readers (nccl_tests_import.cpp,
// nccl_tests_json.cpp) share: the nccl-tests binaries and the sample family each maps to, the
// launcher prefixes of MPI / Slurm output, the run's ranks and hosts, and the sample a result row makes.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "llmsim/calibrate/nccl_tests_import.h"
#include "llmsim/calibrate/sample.h"
#include "llmsim/core/error.h"

namespace llmsim::calibrate::nccl_format {

// nccl-tests binaries ("<name>_perf") and the sample family each maps to ("" = not supported here).
struct Binary {
  const char* name;
  const char* family;
};

inline constexpr Binary kBinaries[] = {
    {"all_reduce", "nccl_all_reduce"},
    {"all_gather", "nccl_all_gather"},
    {"reduce_scatter", "nccl_reduce_scatter"},
    {"alltoall", "nccl_all_to_all"},
    {"broadcast", "nccl_broadcast"},
    {"sendrecv", "nccl_send_recv"},
    {"reduce", ""},
    {"gather", ""},
    {"scatter", ""},
    {"hypercube", ""},
    {"alltoallv", ""},
    {"bisection", ""},
};

inline constexpr const char* kSupported =
    "all_reduce_perf, all_gather_perf, reduce_scatter_perf, alltoall_perf, broadcast_perf, sendrecv_perf";

struct RunInfo {
  int nthread = 0, ngpus = 0, iters = 0;
  std::map<int, int> ranks_per_group;                    // from "#  Rank" lines / JSON devices
  std::map<int, std::set<std::string>> hosts_per_group;  // host names of the same
  std::set<std::string> gpu_names;                       // device names the Rank lines / JSON devices print
  // Counts `n` more ranks in `group` (a Rank line, or a JSON device entry's threads x GPUs); more than
  // kMaxLogRanks in one group is an Input error at `where`: no run's log.
  void add_ranks(int group, int n, const Location& where);
  int ranks() const {
    int r = 0;
    for (const auto& [g, c] : ranks_per_group) r = std::max(r, c);
    return std::max(r, nthread * ngpus);
  }
  // Hosts the measured group spans: every group of a run has the same layout, so the largest count
  // is taken; 1 when no line names a host.
  int nodes() const {
    std::size_t n = 1;
    for (const auto& [g, hosts] : hosts_per_group) n = std::max(n, hosts.size());
    return static_cast<int>(n);
  }
};

// Whitespace-trimmed text as a string (the reader builds strings from it).
std::string trim(const std::string& s);

std::vector<std::string> split_ws(const std::string& s);

std::optional<double> parse_double(const std::string& s);

std::optional<long long> parse_int(const std::string& s);

// Bounds of the counts a log prints about its run: nccl-tests starts a few threads per process and a few
// GPUs per thread, and no run has more ranks than kMaxLogRanks. A count past its bound is garbage (a
// paste's damage), and products of such counts would overflow.
inline constexpr long long kMaxThreadsOrGpus = 1024;
inline constexpr long long kMaxLogRanks = 1 << 20;
// `value` as an int when 0 <= value <= cap; an Input error at `where` naming `what` otherwise.
int log_count(long long value, long long cap, const Location& where, const std::string& what);

bool all_digits(const std::string& s);

bool is_ident(char c);

// "<name>_perf" occurrences in a line with a non-identifier character (or nothing) before them, so that
// "reduce_perf" does not match inside "all_reduce_perf".
std::vector<const Binary*> binaries_in(const std::string& line);

// The collective named by a file name: "all_reduce_perf.txt", "allreduce-8gpu.log", "nccl_alltoall.json"…
// Underscores and dashes are ignored, so spellings with and without them match.
const Binary* binary_from_filename(const std::string& path, std::vector<const Binary*>& all);

// nccl-tests type names -> llmsim dtype names (others are kept as printed).
std::string dtype_of(const std::string& t);

bool is_reduction_family(const std::string& family);

// Prefixes that launchers put before every line: Open MPI --tag-output "[1,0]<stdout>:" and
// Slurm srun --label "0: ".
std::string strip_launcher_prefix(const std::string& line);

// The host of a "Rank" line's tokens: "... Pid 12345 on HOST device 0 ..." ("" when absent). The
// format is "on %10s device", so the host is the one token between "on" and "device".
std::string host_of_rank_line(const std::vector<std::string>& tok);

// The device name of a "Rank" line's tokens: everything after the bus id that follows "device N"
// ("... device  0 [0x07] NVIDIA A100-SXM4-80GB" -> "NVIDIA A100-SXM4-80GB"; "" when absent).
std::string gpu_of_rank_line(const std::vector<std::string>& tok);

// Picks the collective: the binary the log names, else the file name. Throws when neither tells.
std::string choose_family(const std::string& path, const std::string& starting, const std::set<std::string>& in_log);

std::string binary_name_of(const std::string& text);

Sample make_sample(const std::string& family, double bytes, const std::string& type, double time_us, int iters);

}  // namespace llmsim::calibrate::nccl_format
