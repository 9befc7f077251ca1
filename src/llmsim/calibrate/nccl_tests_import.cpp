// Import of NVIDIA nccl-tests output. The format follows the nccl-tests sources (github.com/NVIDIA/nccl-tests,
// src/common.cu and, since the JSON output, src/util.cu):
//
//   # nccl-tests version 2.x.y nccl-headers=... nccl-library=...          (newer versions only)
//   # Collective test starting: all_reduce_perf                           (newer versions only)
//   # nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1
//   validation: 1 graph: 0
//   #
//   # Using devices
//   #  Rank  0 Group  0 Pid  12345 on   hostname device  0 [0x07] NVIDIA A100-SXM4-80GB   (one per rank,
//   #                                                    [0000:07:00] in newer versions, no Group in old ones)
//   #
//   #                                                              out-of-place                       in-place
//   #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw
//   #wrong #        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s) (GB/s)
//              8             2     float     sum      -1    30.12    0.00    0.00      0    29.85    0.00    0.00 0
//   ...
//   # Out of bounds values : 0 OK
//   # Avg bus bandwidth    : 95.5
//
// Rows are "%12li  %12li  %8s  %6s  %6s" (size, count, type, redop, root) then, out-of-place first,
// "  %7s  %6.2f  %6.2f  %5g" (time in microseconds, algbw, busbw, #wrong or N/A) per placement; "time"
// reads "cputime" with -C 1. all_gather, alltoall and broadcast print redop "none" (old versions an
// empty string, which leaves no token) and root -1 except broadcast; sendrecv prints the op name and -1.
// Old alltoall/broadcast headers have no root / no redop column. Per-iteration columns (-P) and
// timestamps (-S) only follow the first time/algbw/busbw block, which is all that is read here.
//
// The host names of the "#  Rank" lines (JSON: of the "devices" entries) tell how many nodes the run
// spanned: an MPI run of 2 hosts x 8 GPUs gives 16 ranks on 2 nodes, which the fits keep apart from a
// 16-GPU run on one node.
//
// The JSON output (-J file.json, util.cu, JSON_FILE_VERSION 2): {"version", "args": [argv...], "config":
// {"nthreads", "ngpus", "iterations", ..., "devices": [{"rank", "group", "pid", "hostname", ...} one
// per process]},
// "results": [{"size", "count", "type", "redop", "root" (a "%6i" string), "out_of_place": {"time" |
// "cpu_time", "alg_bw", "bus_bw", "nwrong"} or null, "in_place": {...}, ...}], ...}.
#include "llmsim/calibrate/nccl_tests_import.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "llmsim/core/error.h"
#include "llmsim/core/json_reader.h"

namespace llmsim::calibrate {

namespace {

// nccl-tests binaries ("<name>_perf") and the sample family each maps to ("" = not supported here).
struct Binary {
  const char* name;
  const char* family;
};
constexpr Binary kBinaries[] = {
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
constexpr const char* kSupported =
    "all_reduce_perf, all_gather_perf, reduce_scatter_perf, alltoall_perf, broadcast_perf, sendrecv_perf";

std::string trim(const std::string& s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::vector<std::string> split_ws(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  std::string t;
  while (in >> t) out.push_back(t);
  return out;
}

std::optional<long long> parse_int(const std::string& s) {
  long long v = 0;
  const char* b = s.data();
  const char* e = s.data() + s.size();
  auto [p, ec] = std::from_chars(b, e, v);
  if (ec != std::errc() || p != e) return std::nullopt;
  return v;
}

std::optional<double> parse_double(const std::string& s) {
  double v = 0;
  const char* b = s.data();
  const char* e = s.data() + s.size();
  if (b != e && *b == '+') ++b;
  auto [p, ec] = std::from_chars(b, e, v);
  if (ec != std::errc() || p != e || !std::isfinite(v)) return std::nullopt;
  return v;
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

struct RunInfo {
  int nthread = 0, ngpus = 0, iters = 0;
  std::map<int, int> ranks_per_group;                    // from "#  Rank" lines / JSON devices
  std::map<int, std::set<std::string>> hosts_per_group;  // host names of the same
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

// The host of a "Rank" line's tokens: "... Pid 12345 on HOST device 0 ..." ("" when absent). The
// format is "on %10s device", so the host is the one token between "on" and "device".
std::string host_of_rank_line(const std::vector<std::string>& tok) {
  for (std::size_t i = 0; i + 2 < tok.size(); ++i)
    if (tok[i] == "on" && tok[i + 2] == "device") return tok[i + 1];
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

// --- text ------------------------------------------------------------------------------------------------

// What the reader has gathered so far from one nccl-tests output.
struct ImportRow {
  int line;
  Sample sample;
  std::string redop;
};
struct ImportState {
  RunInfo run;
  std::vector<std::string> columns;  // names of the column header line
  std::string starting;              // "# Collective test starting: X"
  std::set<std::string> named;       // "<name>_perf" seen anywhere else
  std::vector<ImportRow> rows;
  bool seen_params = false;
};

// A '#' line: the test's name, its parameters (nThread … iters), a rank line, or the column header.
void read_comment_line(ImportState& st, const std::string& t, const Location& loc) {
  const std::string body = trim(t.substr(1));
  const auto tok = split_ws(body);
  if (tok.empty()) return;
  if (body.rfind("Collective test starting:", 0) == 0 || body.rfind("Collective test concluded:", 0) == 0) {
    const std::string name = binary_name_of(" " + trim(body.substr(body.find(':') + 1)));
    if (!name.empty()) {
      if (!st.starting.empty() && st.starting != name)
        throw_input(
            loc, "a second nccl-tests run (" + name + "_perf after " + st.starting + "_perf); keep one run per file");
      st.starting = name;
    }
    return;
  }
  if (tok[0] == "nThread") {
    // "nThread 1 nGpus 8 minBytes 8 maxBytes ... warmup iters: 5 iters: 20 agg iters: 1 ..."
    if (st.seen_params && !st.rows.empty())
      throw_input(loc, "a second nccl-tests run starts here; keep one run per file");
    st.seen_params = true;
    st.run = RunInfo{};
    st.columns.clear();
    for (std::size_t i = 0; i + 1 < tok.size(); ++i) {
      const auto v = parse_int(tok[i + 1]);
      if (!v) continue;
      if (tok[i] == "nThread") st.run.nthread = static_cast<int>(*v);
      if (tok[i] == "nGpus") st.run.ngpus = static_cast<int>(*v);
      if (tok[i] == "iters:" && (i == 0 || (tok[i - 1] != "warmup" && tok[i - 1] != "agg")))
        st.run.iters = static_cast<int>(*v);
    }
    return;
  }
  if (tok[0] == "Rank" && tok.size() >= 2 && parse_int(tok[1])) {
    // "Rank  3 Group  0 Pid ..." (no Group in old versions)
    int group = 0;
    if (tok.size() >= 4 && tok[2] == "Group")
      if (const auto g = parse_int(tok[3])) group = static_cast<int>(*g);
    ++st.run.ranks_per_group[group];
    if (const std::string host = host_of_rank_line(tok); !host.empty()) st.run.hosts_per_group[group].insert(host);
    return;
  }
  if (std::find(tok.begin(), tok.end(), "size") != tok.end() &&
      std::find(tok.begin(), tok.end(), "count") != tok.end() &&
      std::find(tok.begin(), tok.end(), "type") != tok.end() &&
      (std::find(tok.begin(), tok.end(), "time") != tok.end() ||
       std::find(tok.begin(), tok.end(), "cputime") != tok.end())) {
    if (!st.rows.empty() && st.columns.empty() == false && tok != st.columns)
      throw_input(loc, "a second table with different columns; keep one run per file");
    st.columns = tok;
    return;
  }
  return;  // other comments: "Using devices", units line, "Avg bus bandwidth", …
}

// A result row (size count type [redop] [root] time algbw busbw #wrong …) under `columns`; nothing
// when its time is below the printed resolution.
std::optional<ImportRow> read_result_row(const std::vector<std::string>& columns, const RunInfo& run,
                                         const std::vector<std::string>& tok, const Location& loc) {
  // A result row: size count type [redop] [root] time algbw busbw #wrong time algbw busbw #wrong …
  if (columns[0] != "size" || columns.size() < 3 || columns[1] != "count" || columns[2] != "type")
    throw_input(loc, "unexpected column header (expected 'size count type …'): cannot read this row");
  std::size_t time_col = 0;
  for (std::size_t c = 3; c < columns.size(); ++c)
    if (columns[c] == "time" || columns[c] == "cputime") {
      time_col = c;
      break;
    }
  if (tok.size() < 3) throw_input(loc, "malformed nccl-tests row: expected size, count, type, time, …");
  const auto size = parse_int(tok[0]);
  const auto count = parse_int(tok[1]);
  if (!size || !count || *size < 0) throw_input(loc, "malformed nccl-tests row: size and count must be integers");
  if (parse_double(tok[2]))
    throw_input(loc, "malformed nccl-tests row: expected a type name in column 3, got '" + tok[2] + "'");
  std::size_t j = 3;
  std::string redop;
  for (std::size_t c = 3; c < time_col; ++c) {
    if (columns[c] == "redop") {
      // Old all-to-all / all-gather printed an empty op name, which leaves no token.
      if (j < tok.size() && !parse_double(tok[j])) redop = tok[j++];
    } else if (columns[c] == "root") {
      if (j >= tok.size() || !parse_int(tok[j]))
        throw_input(loc, "malformed nccl-tests row: expected an integer root in the 'root' column");
      ++j;
    } else {
      ++j;  // an unknown label column
    }
  }
  if (j + 2 >= tok.size()) throw_input(loc, "malformed nccl-tests row: missing time / algbw / busbw values");
  const auto time_us = parse_double(tok[j]);
  if (!time_us || *time_us < 0 || !parse_double(tok[j + 1]) || !parse_double(tok[j + 2]))
    throw_input(loc, "malformed nccl-tests row: time, algbw and busbw must be numbers, got '" + tok[j] + " " +
                         tok[j + 1] + " " + tok[j + 2] + "'");
  if (j + 3 < tok.size()) {
    if (const auto wrong = parse_double(tok[j + 3]); wrong && *wrong > 0)
      throw_input(loc, "nccl-tests reports " + tok[j + 3] +
                           " wrong elements in this row (validation failed); fix the run before calibrating from it");
  }
  if (*time_us <= 0) return std::nullopt;  // below the printed resolution: nothing to fit
  return ImportRow{loc.line, make_sample("", static_cast<double>(*size), tok[2], *time_us, run.iters), redop};
}

NcclTestsLog import_text(const std::string& path, const std::string& text) {
  ImportState st;
  std::istringstream in(text);
  std::string raw;
  int line_no = 0;
  while (std::getline(in, raw)) {
    ++line_no;
    if (!raw.empty() && raw.back() == '\r') raw.pop_back();
    const std::string line = strip_launcher_prefix(raw);
    const std::string t = trim(line);
    if (t.empty()) continue;
    const Location loc{.file = path, .line = line_no};
    if (t[0] == '#') {
      read_comment_line(st, t, loc);
      continue;
    }
    const auto tok = split_ws(t);
    if (st.columns.empty() || !all_digits(tok[0])) {
      // Not a result row: NCCL INFO/WARN output, the launch command, an error message…
      for (const Binary* b : binaries_in(t)) st.named.insert(b->name);
      continue;
    }
    if (auto row = read_result_row(st.columns, st.run, tok, loc)) st.rows.push_back(std::move(*row));
  }

  if (st.columns.empty())
    throw_input(Location{.file = path},
                "not an nccl-tests output: no '#  size  count  type … time  algbw  busbw' column header");
  if (st.rows.empty()) throw_input(Location{.file = path}, "the nccl-tests output has no result rows");

  NcclTestsLog log;
  log.collective = choose_family(path, st.starting, st.named);
  log.ranks = st.run.ranks();
  log.nodes = st.run.nodes();
  if (log.ranks <= 0)
    throw_input(Location{.file = path},
                "cannot tell how many GPUs ran: the log lacks both the '#  Rank …' lines and the "
                "'# nThread … nGpus …' line");
  for (auto& r : st.rows) {
    if (is_reduction_family(log.collective) && (r.redop.empty() || r.redop == "none"))
      throw_input(Location{.file = path, .line = r.line},
                  "this row has no reduction op, which a " + log.collective.substr(5) +
                      " test always prints: the log comes from another test (check the file name)");
    r.sample.item.bench = log.collective;
    r.sample.item.group = log.ranks;
    r.sample.item.nodes = log.nodes;
    log.samples.push_back(r.sample);
  }
  return log;
}

// --- JSON ------------------------------------------------------------------------------------------------

NcclTestsLog import_json(const std::string& path) {
  const JsonDocument doc = parse_json_file(path);
  const auto& root = doc.root;
  if (!root.is_object() || !root.contains("results") || !root["results"].is_array())
    throw_input(Location{.file = path}, "not an nccl-tests JSON output (-J): no \"results\" list");

  RunInfo run;
  if (root.contains("config") && root["config"].is_object()) {
    const auto& c = root["config"];
    auto get_int = [&](const char* key) {
      return c.contains(key) && c[key].is_number_integer() ? c[key].get<int>() : 0;
    };
    run.nthread = get_int("nthreads");
    run.ngpus = get_int("ngpus");
    run.iters = get_int("iterations");
    // One device entry per process (the first rank of each), so a group's ranks = entries x threads x GPUs.
    // Each entry names its process's host ("hostname"); an output without them counts as one node.
    if (c.contains("devices") && c["devices"].is_array()) {
      for (const auto& d : c["devices"]) {
        const int g =
            d.is_object() && d.contains("group") && d["group"].is_number_integer() ? d["group"].get<int>() : 0;
        run.ranks_per_group[g] += std::max(1, run.nthread) * std::max(1, run.ngpus);
        if (d.is_object() && d.contains("hostname") && d["hostname"].is_string()) {
          const std::string host = trim(d["hostname"].get<std::string>());
          if (!host.empty()) run.hosts_per_group[g].insert(host);
        }
      }
    }
  }

  std::string starting;
  if (root.contains("args") && root["args"].is_array() && !root["args"].empty() && root["args"][0].is_string())
    starting = binary_name_of(" " + std::filesystem::path(root["args"][0].get<std::string>()).filename().string());

  NcclTestsLog log;
  log.collective = choose_family(path, starting, {});
  log.ranks = run.ranks();
  log.nodes = run.nodes();
  if (log.ranks <= 0)
    throw_input(doc.where("config"), "cannot tell how many GPUs ran: no config.nthreads / config.ngpus");

  const auto& results = root["results"];
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    const std::string key = "results[" + std::to_string(i) + "]";
    Location loc = doc.where("results");
    loc.key = key;
    if (!r.is_object() || !r.contains("size") || !r["size"].is_number() || !r.contains("type") ||
        !r["type"].is_string())
      throw_input(loc, "expected an object with \"size\" and \"type\"");
    const std::string redop = r.contains("redop") && r["redop"].is_string() ? trim(r["redop"].get<std::string>()) : "";
    if (is_reduction_family(log.collective) && (redop.empty() || redop == "none"))
      throw_input(loc, "no reduction op, which a " + log.collective.substr(5) +
                           " test always writes: the file comes from another test (check its name)");
    // Out-of-place unless only in-place was measured (out_of_place: null).
    const nlohmann::json* placement = nullptr;
    for (const char* k : {"out_of_place", "in_place"})
      if (!placement && r.contains(k) && r[k].is_object()) placement = &r[k];
    if (!placement) throw_input(loc, "no \"out_of_place\" or \"in_place\" timing");
    const char* tkey = placement->contains("time") ? "time" : "cpu_time";
    if (!placement->contains(tkey) || !(*placement)[tkey].is_number())
      throw_input(loc, "the timing has no numeric \"time\"");
    const double time_us = (*placement)[tkey].get<double>();
    if (time_us < 0 || !std::isfinite(time_us)) throw_input(loc, "negative time");
    if (placement->contains("nwrong") && (*placement)["nwrong"].is_number() && (*placement)["nwrong"].get<double>() > 0)
      throw_input(loc, "nccl-tests reports wrong elements (validation failed); fix the run before calibrating from it");
    const double size = r["size"].get<double>();
    if (size < 0) throw_input(loc, "negative size");
    if (time_us <= 0) continue;
    Sample s = make_sample(log.collective, size, r["type"].get<std::string>(), time_us, run.iters);
    s.item.group = log.ranks;
    s.item.nodes = log.nodes;
    log.samples.push_back(s);
  }
  if (log.samples.empty()) throw_input(Location{.file = path}, "the nccl-tests output has no result rows");
  return log;
}

}  // namespace

NcclTestsLog import_nccl_tests(const std::string& path) {
  if (!std::filesystem::is_regular_file(path))
    throw_not_found(Location{.file = path}, "file not found (or not a regular file)");
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') return import_json(path);
  return import_text(path, text);
}

}  // namespace llmsim::calibrate
