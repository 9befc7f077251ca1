#include "llmsim/report/serve_parts.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "llmsim/core/stats.h"

namespace llmsim::report {

nlohmann::json latency_quantiles(const std::vector<sim::RequestMetrics>& requests) {
  auto rows = nlohmann::json::array();
  if (requests.empty()) return rows;
  std::vector<double> ttft, tpot, e2e, queue;
  for (const auto& m : requests) {
    ttft.push_back(m.ttft_s);
    if (m.output_tokens > 1) tpot.push_back(m.tpot_s);
    e2e.push_back(m.e2e_s);
    queue.push_back(m.queue_s);
  }
  for (auto* v : {&ttft, &tpot, &e2e, &queue}) std::sort(v->begin(), v->end());
  for (int pct = 0; pct <= 100; ++pct) {
    const double q = pct / 100.0;
    nlohmann::json row = {{"quantile", q},
                          {"ttft_s", quantile_sorted(ttft, q)},
                          {"e2e_s", quantile_sorted(e2e, q)},
                          {"queue_s", quantile_sorted(queue, q)}};
    row["tpot_s"] = tpot.empty() ? nlohmann::json(nullptr) : nlohmann::json(quantile_sorted(tpot, q));
    rows.push_back(row);
  }
  return rows;
}

nlohmann::json serve_timeline(const sim::ServingResult& r, std::int64_t bins) {
  auto rows = nlohmann::json::array();
  if (r.trace.empty() || r.requests.empty() || bins < 1) return rows;
  double t0 = std::numeric_limits<double>::infinity();
  for (const auto& m : r.requests) t0 = std::min(t0, m.arrival_s);
  const double span = std::max(r.duration_s, 1e-12);
  const double width = span / static_cast<double>(bins);
  const auto n = static_cast<std::size_t>(bins);
  std::vector<double> busy(n, 0.0), seqs(n, 0.0), kv(n, 0.0);
  const double capacity = static_cast<double>(std::max<std::int64_t>(1, r.kv_capacity_tokens));
  for (const auto& it : r.trace) {
    // The slices the iteration overlaps, each given the time it spent there.
    const double a = it.start_s - t0, b = it.end_s - t0;
    auto first = static_cast<std::int64_t>(std::floor(a / width));
    auto last = static_cast<std::int64_t>(std::floor(b / width));
    first = std::clamp<std::int64_t>(first, 0, bins - 1);
    last = std::clamp<std::int64_t>(last, 0, bins - 1);
    for (std::int64_t k = first; k <= last; ++k) {
      const double lo = std::max(a, static_cast<double>(k) * width);
      const double hi = std::min(b, static_cast<double>(k + 1) * width);
      const double d = std::max(0.0, hi - lo);
      const auto i = static_cast<std::size_t>(k);
      busy[i] += d;
      seqs[i] += d * static_cast<double>(it.sequences);
      kv[i] += d * static_cast<double>(it.kv_tokens) / capacity;
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    const double start = static_cast<double>(i) * width, mid = start + width / 2;
    std::int64_t waiting = 0, running = 0;
    for (const auto& m : r.requests) {
      const double arrival = m.arrival_s - t0, scheduled = m.scheduled_s - t0, finish = m.finish_s - t0;
      if (arrival <= mid && mid < scheduled) ++waiting;
      if (scheduled <= mid && mid < finish) ++running;
    }
    rows.push_back({{"start_s", start},
                    {"end_s", start + width},
                    {"batch", busy[i] > 0 ? seqs[i] / busy[i] : 0.0},
                    {"kv_utilization", busy[i] > 0 ? kv[i] / busy[i] : 0.0},
                    {"waiting", waiting},
                    {"running", running}});
  }
  return rows;
}

}  // namespace llmsim::report
