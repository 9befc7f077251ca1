#include "llmsim/report/train_parts.h"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>

#include "llmsim/report/report.h"

namespace llmsim::report {

nlohmann::json memory_items(const std::vector<sim::MemoryItem>& items) {
  auto a = nlohmann::json::array();
  for (const auto& i : items) a.push_back({{"name", i.name}, {"bytes", figure(i.bytes, "B")}, {"note", i.note}});
  return a;
}

nlohmann::json train_totals(const sim::TrainResult& r) {
  return {{"steps", r.total_steps},
          {"time_s", figure(r.total_time_s, "s")},
          {"cost", r.total_cost},
          {"energy_J", figure(r.total_energy_J, "J")}};
}

namespace {
std::string stream_of(const std::string& track) {
  const auto dot = track.find('.');
  return dot == std::string::npos ? track : track.substr(dot + 1);
}
}  // namespace

nlohmann::json schedule_spans(const std::vector<sim::TraceEvent>& trace, double merge_gap_s) {
  struct Span {
    std::string phase;
    double start = 0, end = 0;
  };
  std::map<std::pair<int, std::string>, std::vector<const sim::TraceEvent*>> by_stream;
  for (const auto& e : trace) by_stream[{e.stage, stream_of(e.track)}].push_back(&e);
  auto out = nlohmann::json::array();
  for (auto& [key, events] : by_stream) {
    std::stable_sort(events.begin(), events.end(),
                     [](const sim::TraceEvent* a, const sim::TraceEvent* b) { return a->start_s < b->start_s; });
    std::vector<Span> spans;
    for (const auto* e : events) {
      const double end = e->start_s + e->duration_s;
      if (!spans.empty() && spans.back().phase == e->category && e->start_s - spans.back().end <= merge_gap_s)
        spans.back().end = std::max(spans.back().end, end);
      else
        spans.push_back({e->category, e->start_s, end});
    }
    for (const auto& s : spans)
      out.push_back(
          {{"stage", key.first}, {"stream", key.second}, {"phase", s.phase}, {"start_s", s.start}, {"end_s", s.end}});
  }
  return out;
}

nlohmann::json memory_timeline(const std::vector<sim::TrainResult::MemoryPoint>& points, std::int64_t stage) {
  auto out = nlohmann::json::array();
  for (const auto& p : points) out.push_back({{"stage", stage}, {"time_s", p.time_s}, {"gpu_bytes", p.bytes}});
  return out;
}

}  // namespace llmsim::report
