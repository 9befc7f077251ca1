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

#include "llmsim/calibrate/nccl_tests_format.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "llmsim/core/error.h"
#include "llmsim/core/json_reader.h"
#include "llmsim/core/strings.h"

namespace llmsim::calibrate {

namespace {

using namespace nccl_format;  // NOLINT(google-build-using-namespace): this reader's helpers

// --- text ------------------------------------------------------------------------------------------------

// What the reader has gathered so far from one nccl-tests output.
struct ImportRow {
  int line;
  Sample sample;
  std::string redop;
  long long size = 0, count = 0;  // as printed
  std::string type;
  double algbw = 0, busbw = 0;  // GB/s, out of place
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
      if (tok[i] == "nThread") st.run.nthread = log_count(*v, kMaxThreadsOrGpus, loc, "nThread");
      if (tok[i] == "nGpus") st.run.ngpus = log_count(*v, kMaxThreadsOrGpus, loc, "nGpus");
      if (tok[i] == "iters:" && (i == 0 || (tok[i - 1] != "warmup" && tok[i - 1] != "agg")))
        st.run.iters = log_count(*v, std::numeric_limits<int>::max(), loc, "iters");
    }
    return;
  }
  if (tok[0] == "Rank" && tok.size() >= 2 && parse_int(tok[1])) {
    // "Rank  3 Group  0 Pid ..." (no Group in old versions)
    int group = 0;
    if (tok.size() >= 4 && tok[2] == "Group")
      if (const auto g = parse_int(tok[3])) group = log_count(*g, kMaxLogRanks, loc, "Group");
    st.run.add_ranks(group, 1, loc);
    if (const std::string host = host_of_rank_line(tok); !host.empty()) st.run.hosts_per_group[group].insert(host);
    if (const std::string gpu = gpu_of_rank_line(tok); !gpu.empty()) st.run.gpu_names.insert(gpu);
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
  ImportRow row{
      loc.line, make_sample("", static_cast<double>(*size), tok[2], *time_us, run.iters), redop, *size, *count, tok[2]};
  row.algbw = *parse_double(tok[j + 1]);
  row.busbw = *parse_double(tok[j + 2]);
  return row;
}

// Bytes of an nccl-tests type name (ncclDataType_t as the tests print it); 0 when unknown.
int type_bytes(const std::string& t) {
  if (t == "int8" || t == "uint8" || t == "char" || t == "f8e4m3" || t == "f8e5m2") return 1;
  if (t == "half" || t == "bfloat16" || t == "float16" || t == "bf16") return 2;
  if (t == "float" || t == "int32" || t == "uint32" || t == "int" || t == "float32") return 4;
  if (t == "double" || t == "int64" || t == "uint64" || t == "float64") return 8;
  return 0;
}

// size / (count x type size), the one ratio every row that prints a count agrees on: nccl-tests prints
// the whole buffer as size, and as count the elements of the whole buffer (all_reduce: 1) or of one
// rank's share (all_gather, reduce_scatter: the ranks). 0 when no row tells (zero-byte rows print count
// 0) or two rows disagree.
long long size_per_count(const std::vector<ImportRow>& rows) {
  long long ratio = 0;
  for (const ImportRow& r : rows) {
    const int b = type_bytes(r.type);
    if (b == 0 || r.count <= 0) continue;
    // A count beyond any real buffer (a paste's garbage) would overflow count x type size: no ratio then.
    long long per = 0;
    if (__builtin_mul_overflow(r.count, static_cast<long long>(b), &per)) return 0;
    if (r.size % per != 0) return 0;
    if (ratio != 0 && r.size / per != ratio) return 0;
    ratio = r.size / per;
  }
  return ratio;
}

// The ranks an all_gather or reduce_scatter table gives (size_per_count); 0 for other collectives.
int ranks_from_sizes(const std::string& family, const std::vector<ImportRow>& rows) {
  if (family != "nccl_all_gather" && family != "nccl_reduce_scatter") return 0;
  // No nccl-tests run has more ranks than an int holds; a larger ratio is not a rank count.
  const long long ratio = size_per_count(rows);
  return ratio <= std::numeric_limits<int>::max() ? static_cast<int>(ratio) : 0;
}

// The ranks the bus / algorithm bandwidth ratio gives (nccl-tests doc/PERFORMANCE.md: busbw = algbw x
// 2(n-1)/n for all_reduce, x (n-1)/n for all_gather, reduce_scatter and alltoall), from the rows of at
// least 1 GB/s, whose two printed decimals make the ratio exact enough; 0 when no row tells or the rows
// disagree.
int ranks_from_bandwidths(const std::string& family, const std::vector<ImportRow>& rows) {
  const bool gather_like =
      family == "nccl_all_gather" || family == "nccl_reduce_scatter" || family == "nccl_all_to_all";
  const double factor = family == "nccl_all_reduce" ? 2.0 : gather_like ? 1.0 : 0.0;
  if (factor == 0) return 0;
  int ranks = 0;
  for (const ImportRow& r : rows) {
    if (r.algbw < 1.0 || r.busbw <= 0) continue;
    const double left = factor - r.busbw / r.algbw;  // factor / n
    if (left <= 0) return 0;
    const double n = factor / left;
    const double rounded = std::round(n);
    if (rounded < 2 || std::abs(n - rounded) > 0.25) return 0;
    if (ranks != 0 && static_cast<int>(rounded) != ranks) return 0;
    ranks = static_cast<int>(rounded);
  }
  return ranks;
}

// The reduction collective the rows show, when every row has a reduction op: all_reduce where size =
// count x type size, reduce_scatter where size is the same multiple n > 1 of it (size_per_count). ""
// when the rows have no reduction op or do not agree.
std::string reduction_from_rows(const std::vector<ImportRow>& rows) {
  static const std::set<std::string> ops = {"sum", "prod", "max", "min", "avg"};
  for (const ImportRow& r : rows)
    if (!ops.count(r.redop)) return {};
  const long long ratio = size_per_count(rows);
  if (ratio == 1) return "all_reduce";
  return ratio > 1 ? "reduce_scatter" : "";
}

NcclTestsLog import_text(const std::string& path, const std::string& text, const NcclTestsOverrides& overrides) {
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
      // Not a result row: NCCL INFO/WARN output, the launch command, an error message… or a header line
      // whose '#' a copy dropped (dstack prints the table that way): read it as the comment it was.
      for (const Binary* b : binaries_in(t)) st.named.insert(b->name);
      if (!all_digits(tok[0])) read_comment_line(st, "#" + t, loc);
      continue;
    }
    if (auto row = read_result_row(st.columns, st.run, tok, loc)) st.rows.push_back(std::move(*row));
  }

  if (st.columns.empty())
    throw_input(Location{.file = path},
                "not an nccl-tests output: no '#  size  count  type … time  algbw  busbw' column header");
  if (st.rows.empty()) throw_input(Location{.file = path}, "the nccl-tests output has no result rows");

  NcclTestsLog log;
  std::string named = st.starting;
  std::set<std::string> in_log = st.named;
  if (!overrides.collective.empty()) {
    named = overrides.collective;
    in_log.clear();
    log.derived.push_back(fmt::format("{}_perf from --collective", named));
  } else if (named.empty() && in_log.empty()) {
    // The log names no binary: what its rows show decides, over a file name that says otherwise.
    if (const std::string shown = reduction_from_rows(st.rows); !shown.empty()) {
      std::vector<const Binary*> all;
      const Binary* by_name = binary_from_filename(path, all);
      if (by_name && shown != by_name->name)
        log.derived.push_back(
            fmt::format("{}_perf from its rows (a reduction op, size {} count x type size), not "
                        "{}_perf as the file name says",
                        shown, shown == "all_reduce" ? "=" : "= n x", by_name->name));
      named = shown;
    }
  }
  log.collective = choose_family(path, named, in_log);
  log.ranks = st.run.ranks();
  log.nodes = st.run.nodes();
  log.gpus.assign(st.run.gpu_names.begin(), st.run.gpu_names.end());
  if (st.run.ranks_per_group.empty()) {
    // No '#  Rank' lines: 'nThread x nGpus' counts one process's GPUs (an MPI run of one GPU per process
    // prints 'nGpus 1'), so what the table itself gives wins when it is more.
    const int by_size = ranks_from_sizes(log.collective, st.rows);
    const int by_bw = ranks_from_bandwidths(log.collective, st.rows);
    const int derived = by_size > 0 ? by_size : by_bw;
    if (derived > log.ranks) {
      const std::string how = by_size > 0 ? "size / (count x type size)" : "busbw / algbw";
      log.derived.push_back(
          log.ranks > 0
              ? fmt::format("{} ranks from {} (the log's nThread x nGpus = {} is one process's share under MPI)",
                            derived, how, log.ranks)
              : fmt::format("{} ranks from {}", derived, how));
      log.ranks = derived;
    }
  }
  if (overrides.ranks > 0) {
    log.derived.push_back(log.ranks > 0 && log.ranks != overrides.ranks
                              ? fmt::format("{} ranks from --ranks (the log gives {})", overrides.ranks, log.ranks)
                              : fmt::format("{} ranks from --ranks", overrides.ranks));
    log.ranks = overrides.ranks;
  }
  if (overrides.nodes > 0) {
    log.derived.push_back(fmt::format("{} node(s) from --nodes", overrides.nodes));
    log.nodes = overrides.nodes;
  }
  if (log.ranks <= 0)
    throw_input(Location{.file = path},
                "cannot tell how many GPUs ran: the log lacks both the '#  Rank …' lines and the "
                "'# nThread … nGpus …' line, and its table does not give them (only all_gather and "
                "reduce_scatter tables do); give --ranks N (and --nodes M)");
  if (log.ranks == 1)
    throw_input(Location{.file = path},
                "the log gives 1 rank (nThread x nGpus, no '#  Rank' lines), over which a collective moves "
                "nothing; an MPI run prints one process's share there: give --ranks N");
  if (log.nodes > log.ranks)
    throw_input(Location{.file = path},
                fmt::format("{} nodes for {} ranks: every node runs at least one rank", log.nodes, log.ranks));
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

}  // namespace

// The JSON form (nccl-tests -J): nccl_tests_json.cpp.
NcclTestsLog import_json(const std::string& path);

NcclTestsLog import_nccl_tests(const std::string& path, const NcclTestsOverrides& overrides) {
  if (!std::filesystem::is_regular_file(path))
    throw_not_found(Location{.file = path}, "file not found (or not a regular file)");
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') {
    NcclTestsLog log = import_json(path);
    if (overrides.ranks > 0 || overrides.nodes > 0)
      throw_usage("--ranks", "the JSON output states its ranks and hosts; --ranks and --nodes are for text pastes");
    return log;
  }
  return import_text(path, text, overrides);
}

}  // namespace llmsim::calibrate
