#include "llmsim/calibrate/nccl_tests_format.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <sstream>

#include "llmsim/core/strings.h"

namespace llmsim::calibrate::nccl_format {

// Whitespace-trimmed text as a string (the reader builds strings from it).
std::string trim(const std::string& s) { return std::string(trim_space(s)); }
std::vector<std::string> split_ws(const std::string& s) { return split_words(s); }
std::optional<double> parse_double(const std::string& s) { return parse_finite(s); }

std::optional<long long> parse_int(const std::string& s) {
  long long v = 0;
  const char* b = s.data();
  const char* e = s.data() + s.size();
  auto [p, ec] = std::from_chars(b, e, v);
  if (ec != std::errc() || p != e) return std::nullopt;
  return v;
}

int log_count(long long value, long long cap, const Location& where, const std::string& what) {
  if (value < 0 || value > cap)
    throw_input(where, what + " = " + std::to_string(value) + ": must be from 0 to " + std::to_string(cap));
  return static_cast<int>(value);
}

void RunInfo::add_ranks(int group, int n, const Location& where) {
  int& ranks = ranks_per_group[group];
  ranks += n;  // n <= kMaxThreadsOrGpus^2 and ranks <= kMaxLogRanks before: no overflow
  if (ranks > kMaxLogRanks)
    throw_input(where, "more than " + std::to_string(kMaxLogRanks) + " ranks in one group: not one run's log");
}

bool all_digits(const std::string& s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

bool is_ident(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// "<name>_perf" occurrences in a line with a non-identifier character (or nothing) before them, so that
// "reduce_perf" does not match inside "all_reduce_perf".
std::vector<const Binary*> binaries_in(const std::string& line) {
  std::vector<const Binary*> found;
  for (const auto& b : kBinaries) {
    const std::string needle = std::string(b.name) + "_perf";
    for (std::size_t pos = line.find(needle); pos != std::string::npos; pos = line.find(needle, pos + 1)) {
      if (pos == 0 || !is_ident(line[pos - 1])) {
        found.push_back(&b);
        break;
      }
    }
  }
  return found;
}

// The collective named by a file name: "all_reduce_perf.txt", "allreduce-8gpu.log", "nccl_alltoall.json"…
// Underscores and dashes are ignored, so spellings with and without them match.
const Binary* binary_from_filename(const std::string& path, std::vector<const Binary*>& all) {
  std::string stem = std::filesystem::path(path).stem().string();
  std::string s;
  for (char c : stem)
    if (c != '_' && c != '-') s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  // Only the supported collectives (and alltoallv, to keep it from reading as alltoall) are recognised by
  // name; "reduce", "gather", "scatter" are too common as words.
  struct Key {
    const char* key;
    const char* binary;
  };
  static constexpr Key kKeys[] = {
      {"allreduce", "all_reduce"}, {"allgather", "all_gather"}, {"reducescatter", "reduce_scatter"},
      {"alltoallv", "alltoallv"},  {"alltoall", "alltoall"},    {"broadcast", "broadcast"},
      {"sendrecv", "sendrecv"}};
  std::set<std::string> names;
  for (const auto& k : kKeys) {
    const std::string key = k.key;
    for (std::size_t pos = s.find(key); pos != std::string::npos; pos = s.find(key, pos + 1)) {
      if (key == "alltoall" && pos + key.size() < s.size() && s[pos + key.size()] == 'v') continue;
      names.insert(k.binary);
      break;
    }
  }
  for (const auto& b : kBinaries)
    if (names.count(b.name)) all.push_back(&b);
  return all.size() == 1 ? all.front() : nullptr;
}

// nccl-tests type names -> llmsim dtype names (others are kept as printed).
std::string dtype_of(const std::string& t) {
  if (t == "float") return "fp32";
  if (t == "half") return "fp16";
  if (t == "bfloat16") return "bf16";
  if (t == "double") return "fp64";
  if (t == "f8e4m3" || t == "f8e5m2") return "fp8";
  return t;
}

bool is_reduction_family(const std::string& family) {
  return family == "nccl_all_reduce" || family == "nccl_reduce_scatter";
}

// Prefixes that launchers put before every line: Open MPI --tag-output "[1,0]<stdout>:" and
// Slurm srun --label "0: ".
std::string strip_launcher_prefix(const std::string& line) {
  if (!line.empty() && line[0] == '[') {
    for (const char* tag : {"]<stdout>:", "]<stderr>:"}) {
      const std::size_t p = line.find(tag);
      if (p != std::string::npos && p < 32) return line.substr(p + std::string(tag).size());
    }
  }
  std::size_t i = 0;
  while (i < line.size() && line[i] == ' ') ++i;
  const std::size_t digits = i;
  while (i < line.size() && std::isdigit(static_cast<unsigned char>(line[i]))) ++i;
  if (i > digits && i < line.size() && line[i] == ':' && (i + 1 == line.size() || line[i + 1] == ' '))
    return line.substr(i + 1);
  return line;
}

// The host of a "Rank" line's tokens: "... Pid 12345 on HOST device 0 ..." ("" when absent). The
// format is "on %10s device", so the host is the one token between "on" and "device".
std::string host_of_rank_line(const std::vector<std::string>& tok) {
  for (std::size_t i = 0; i + 2 < tok.size(); ++i)
    if (tok[i] == "on" && tok[i + 2] == "device") return tok[i + 1];
  return {};
}

std::string gpu_of_rank_line(const std::vector<std::string>& tok) {
  for (std::size_t i = 0; i + 2 < tok.size(); ++i) {
    if (tok[i] != "device" || tok[i + 2].empty() || tok[i + 2].front() != '[') continue;
    std::string name;
    for (std::size_t j = i + 3; j < tok.size(); ++j) name += (name.empty() ? "" : " ") + tok[j];
    return name;
  }
  return {};
}

// Picks the collective: the binary the log names, else the file name. Throws when neither tells.
std::string choose_family(const std::string& path, const std::string& starting, const std::set<std::string>& in_log) {
  std::string binary = starting;
  if (binary.empty() && in_log.size() > 1) {
    std::string list;
    for (const auto& n : in_log) list += (list.empty() ? "" : ", ") + n + "_perf";
    throw_input(Location{.file = path},
                "the log names several nccl-tests binaries (" + list + "); keep one run per file");
  }
  if (binary.empty() && in_log.size() == 1) binary = *in_log.begin();
  if (binary.empty()) {
    std::vector<const Binary*> all;
    const Binary* b = binary_from_filename(path, all);
    if (all.size() > 1)
      throw_input(Location{.file = path},
                  "the file name names several collectives; name it after the one "
                  "nccl-tests binary that wrote it, e.g. all_reduce_perf.txt");
    if (b) binary = b->name;
  }
  if (binary.empty())
    throw_input(Location{.file = path},
                "cannot tell which collective this nccl-tests output measured: it names no *_perf binary. "
                "Name the file after the binary that wrote it, e.g. all_reduce_perf.txt (supported: " +
                    std::string(kSupported) + ")");
  for (const auto& b : kBinaries) {
    if (binary != b.name) continue;
    if (std::string(b.family).empty())
      throw_input(Location{.file = path},
                  binary + "_perf is not supported for calibration (supported: " + std::string(kSupported) + ")");
    return b.family;
  }
  throw_input(Location{.file = path}, "unknown nccl-tests binary '" + binary + "'");
}

std::string binary_name_of(const std::string& text) {
  const auto found = binaries_in(text);
  return found.empty() ? std::string() : std::string(found.front()->name);
}

Sample make_sample(const std::string& family, double bytes, const std::string& type, double time_us, int iters) {
  Sample s;
  s.item.bench = family;
  s.item.dtype = dtype_of(type);
  s.item.bytes = bytes;
  s.time_s = time_us * 1e-6;
  s.repeats = iters;
  return s;
}

}  // namespace llmsim::calibrate::nccl_format
