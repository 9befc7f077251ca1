// What a finished serving run reports: per-request latencies, throughput with its interval, latency
// percentiles, batch and KV occupancy, SLO attainment.
#include "llmsim/core/stats.h"
#include "llmsim/serve/serving_des.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace llmsim::sim {

LatencyStats latency_stats(std::vector<double> v) {
  LatencyStats st;
  if (v.empty()) return st;
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (const double x : v) sum += x;
  st.mean = sum / static_cast<double>(v.size());
  st.p50 = quantile_sorted(v, 0.5);
  st.p90 = quantile_sorted(v, 0.9);
  st.p99 = quantile_sorted(v, 0.99);
  st.max = v.back();
  return st;
}

void summarize_requests(ServingResult& res, double slo_ttft_s, double slo_tpot_s) {
  double first_arrival = std::numeric_limits<double>::infinity(), last_finish = 0;
  std::int64_t good = 0;
  res.input_tokens = res.output_tokens = 0;
  std::vector<double> ttft, tpot, e2e, queue;
  for (auto& m : res.requests) {
    m.e2e_s = m.finish_s - m.arrival_s;
    m.tpot_s = m.output_tokens > 1 ? (m.finish_s - m.first_token_s) / static_cast<double>(m.output_tokens - 1) : 0;
    m.meets_slo = (slo_ttft_s <= 0 || m.ttft_s <= slo_ttft_s) &&
                  (slo_tpot_s <= 0 || m.output_tokens <= 1 || m.tpot_s <= slo_tpot_s);
    good += m.meets_slo ? 1 : 0;
    first_arrival = std::min(first_arrival, m.arrival_s);
    last_finish = std::max(last_finish, m.finish_s);
    res.input_tokens += m.input_tokens;
    res.output_tokens += m.output_tokens;
    ttft.push_back(m.ttft_s);
    if (m.output_tokens > 1) tpot.push_back(m.tpot_s);  // a single-token reply has no time per output token
    e2e.push_back(m.e2e_s);
    queue.push_back(m.queue_s);
  }
  const auto n = static_cast<double>(res.requests.size());
  res.completed = static_cast<std::int64_t>(res.requests.size());
  res.duration_s = std::max(1e-12, last_finish - first_arrival);
  const auto rate = [&](double amount) {
    return Interval{amount / res.duration_s, amount / (res.duration_s * res.time_ratio_high),
                    amount / (res.duration_s * res.time_ratio_low)};
  };
  res.requests_per_s = rate(n);
  res.input_tokens_per_s = rate(static_cast<double>(res.input_tokens));
  res.output_tokens_per_s = rate(static_cast<double>(res.output_tokens));
  const double g = static_cast<double>(std::max<std::int64_t>(1, res.gpus));
  res.output_tokens_per_s_per_gpu = res.output_tokens_per_s * (1.0 / g);
  res.requests_per_s_per_gpu = res.requests_per_s * (1.0 / g);
  res.ttft = latency_stats(std::move(ttft));
  res.tpot = latency_stats(std::move(tpot));
  res.e2e = latency_stats(std::move(e2e));
  res.queue = latency_stats(std::move(queue));
  res.slo_given = slo_ttft_s > 0 || slo_tpot_s > 0;
  res.slo_fraction = n > 0 ? static_cast<double>(good) / n : 0;
  res.goodput_rps = static_cast<double>(good) / res.duration_s;
}

}  // namespace llmsim::sim

namespace llmsim::sim::des {

void Des::summarize(ServingResult& res) {
  // Per-request times; summarize_requests derives the rest.
  res.requests.reserve(reqs_.size());
  for (std::size_t i = 0; i < reqs_.size(); ++i) {
    const Seq& q = seqs_[i];
    RequestMetrics m;
    m.id = reqs_[i].id;
    m.replica = q.replica;
    m.input_tokens = q.prompt;
    m.output_tokens = q.output;
    m.arrival_s = q.arrival;
    m.scheduled_s = q.scheduled;
    m.first_token_s = q.first_token;
    m.finish_s = q.finish;
    m.queue_s = q.scheduled - q.arrival;
    m.ttft_s = q.first_token - q.arrival;
    m.preemptions = q.preemptions;
    m.cached_tokens = std::max<std::int64_t>(0, q.cached_tokens);
    res.requests.push_back(m);
  }
  res.iterations = iterations_;
  res.spec_steps = spec_steps_;
  res.spec_tokens_emitted = spec_emitted_;
  res.adapter_loads = adapter_loads_;
  res.adapter_load_s = adapter_wait_s_;
  res.preemptions = preemptions_;
  res.prefix_query_tokens = prefix_query_tokens_;
  res.prefix_hit_tokens = prefix_hit_tokens_;
  res.prefix_hit_rate = prefix_query_tokens_ > 0 ? dbl(prefix_hit_tokens_) / dbl(prefix_query_tokens_) : 0;
  res.time_ratio_low = sum_value_ > 0 ? sum_low_ / sum_value_ : 1;
  res.time_ratio_high = sum_value_ > 0 ? sum_high_ / sum_value_ : 1;
  summarize_requests(res, s_.slo_ttft_s, s_.slo_tpot_s);
  res.itl.mean = gaps_.mean();
  res.itl.p50 = gaps_.percentile(0.5);
  res.itl.p90 = gaps_.percentile(0.9);
  res.itl.p99 = gaps_.percentile(0.99);
  res.itl.max = gaps_.max();
  if (busy_s_ > 0) {
    res.mean_batch = seqs_s_ / busy_s_;
    res.mean_batch_tokens = tokens_s_ / busy_s_;
    res.kv_utilization = kv_s_ / busy_s_;
  }
  res.kv_peak_utilization = kv_peak_;
  res.busy_fraction = busy_s_ / (dbl(static_cast<std::int64_t>(reps_.size())) * res.duration_s);
  res.trace = std::move(trace_);
}

}  // namespace llmsim::sim::des
