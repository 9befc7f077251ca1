#include "llmsim/report/chrome_trace.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>

#include <fmt/format.h>

namespace llmsim::sim {

namespace {
std::string escaped(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    o += c;
  }
  return o;
}

// Trace-event times are microseconds, written with nanosecond digits. Start and end are rounded to whole
// nanoseconds and the duration is their difference, so that a slice ending where the next one starts on
// its track ends exactly there (rounding start and duration apart left slices overlapping the next by 1 ns,
// which viewers then refuse to nest).
std::int64_t to_ns(double s) { return std::llround(s * 1e9); }
std::string microseconds(std::int64_t ns) {
  return fmt::format("{}{}.{:03}", ns < 0 ? "-" : "", std::abs(ns) / 1000, std::abs(ns) % 1000);
}

}  // namespace

void write_chrome_trace(std::ostream& out, const std::vector<TraceEvent>& events) {
  // Track ids in order of first appearance (the compute track of a stage first, then the others in the
  // order the schedule uses them), one process per stage.
  std::map<std::string, int> tid;
  std::map<int, bool> stages;
  for (const auto& e : events) {
    tid.try_emplace(e.track, static_cast<int>(tid.size()));
    stages[e.stage] = true;
  }
  out << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  bool first = true;
  auto sep = [&] {
    if (!first) out << ",\n";
    first = false;
  };
  for (const auto& [stage, unused] : stages) {
    sep();
    out << fmt::format(R"({{"name":"process_name","ph":"M","pid":{},"tid":0,"args":{{"name":"stage {}"}}}})", stage,
                       stage);
  }
  std::map<std::string, bool> named;
  for (const auto& e : events) {
    if (named[e.track]) continue;
    named[e.track] = true;
    sep();
    out << fmt::format(R"({{"name":"thread_name","ph":"M","pid":{},"tid":{},"args":{{"name":"{}"}}}})", e.stage,
                       tid[e.track], escaped(e.track));
  }
  for (const auto& e : events) {
    sep();
    const std::int64_t begin = to_ns(e.start_s), end = std::max(begin, to_ns(e.start_s + e.duration_s));
    out << fmt::format(R"({{"name":"{}","cat":"{}","ph":"X","pid":{},"tid":{},"ts":{},"dur":{}}})", escaped(e.name),
                       escaped(e.category), e.stage, tid[e.track], microseconds(begin), microseconds(end - begin));
  }
  out << "\n]}\n";
}

}  // namespace llmsim::sim
