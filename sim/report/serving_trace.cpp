#include "llmsim/report/serving_trace.h"

#include <cmath>
#include <cstdint>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace llmsim::sim {

std::size_t write_serving_trace(std::ostream& out, const ServingResult& r) {
  nlohmann::json events = nlohmann::json::array();
  // Microseconds with whole nanoseconds: start and end are rounded apart and the duration is their
  // difference, so that back-to-back iterations meet exactly (no slice overlaps the next by a rounding).
  const auto ns = [](double s) { return std::llround(s * 1e9); };
  const auto us = [&](double s) { return static_cast<double>(ns(s)) / 1e3; };
  const auto dur_us = [&](double a, double b) { return static_cast<double>(ns(b) - ns(a)) / 1e3; };
  for (std::int64_t i = 0; i < r.replicas; ++i) {
    events.push_back({{"ph", "M"},
                      {"name", "process_name"},
                      {"pid", i},
                      {"tid", 0},
                      {"args", {{"name", fmt::format("replica {}", i)}}}});
    events.push_back(
        {{"ph", "M"}, {"name", "thread_name"}, {"pid", i}, {"tid", 0}, {"args", {{"name", "iterations"}}}});
    events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", i}, {"tid", 1}, {"args", {{"name", "requests"}}}});
  }
  for (const auto& it : r.trace) {
    const char* kind = it.prefill_tokens > 0 ? (it.decode_tokens > 0 ? "mixed" : "prefill") : "decode";
    events.push_back({{"ph", "X"},
                      {"name", kind},
                      {"cat", "iteration"},
                      {"pid", it.replica},
                      {"tid", 0},
                      {"ts", us(it.start_s)},
                      {"dur", dur_us(it.start_s, it.end_s)},
                      {"args",
                       {{"sequences", it.sequences},
                        {"prefill_tokens", it.prefill_tokens},
                        {"decode_tokens", it.decode_tokens},
                        {"kv_tokens", it.kv_tokens}}}});
    events.push_back({{"ph", "C"},
                      {"name", "engine"},
                      {"pid", it.replica},
                      {"ts", us(it.start_s)},
                      {"args", {{"batch", it.sequences}, {"kv_tokens", it.kv_tokens}}}});
  }
  // Request lifetimes as async slices: queued -> prefill (to the first token) -> decode.
  for (const auto& q : r.requests) {
    const auto span = [&](const char* name, double a, double b) {
      const nlohmann::json common = {{"cat", "request"}, {"name", name}, {"id", q.id}, {"pid", q.replica}, {"tid", 1}};
      nlohmann::json begin = common, end = common;
      begin["ph"] = "b";
      begin["ts"] = us(a);
      end["ph"] = "e";
      end["ts"] = us(b);
      events.push_back(begin);
      events.push_back(end);
    };
    span(fmt::format("request {}", q.id).c_str(), q.arrival_s, q.finish_s);
    span("queued", q.arrival_s, q.scheduled_s);
    span("prefill", q.scheduled_s, q.first_token_s);
    if (q.finish_s > q.first_token_s) span("decode", q.first_token_s, q.finish_s);
  }
  out << nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump() << "\n";
  return events.size();
}

}  // namespace llmsim::sim
