#include "llmsim/report/chrome_trace.h"

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
}  // namespace

void write_chrome_trace(std::ostream& out, const std::vector<TraceEvent>& events) {
  // Track ids in order of first appearance, per stage.
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
    out << fmt::format(R"({{"name":"process_name","ph":"M","pid":{},"args":{{"name":"stage {}"}}}})", stage, stage);
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
    // Trace-event times are microseconds.
    out << fmt::format(R"({{"name":"{}","cat":"{}","ph":"X","pid":{},"tid":{},"ts":{:.3f},"dur":{:.3f}}})",
                       escaped(e.name), escaped(e.category), e.stage, tid[e.track], e.start_s * 1e6,
                       e.duration_s * 1e6);
  }
  out << "\n]}\n";
}

}  // namespace llmsim::sim
