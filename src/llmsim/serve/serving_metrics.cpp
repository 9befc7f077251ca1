// What a finished serving run reports: per-request latencies, throughput with its interval, latency
// percentiles, batch and KV occupancy, SLO attainment.
#include "llmsim/core/stats.h"
#include "llmsim/serve/serving_des.h"

#include <algorithm>
#include <cmath>

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

}  // namespace llmsim::sim

namespace llmsim::sim::des {

void Des::summarize(ServingResult& res) {
  const auto n = static_cast<std::int64_t>(reqs_.size());
  // Per-request metrics.
  double first_arrival = kInf, last_finish = 0;
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
    m.e2e_s = q.finish - q.arrival;
    m.tpot_s = q.output > 1 ? (q.finish - q.first_token) / dbl(q.output - 1) : 0;
    m.preemptions = q.preemptions;
    m.cached_tokens = std::max<std::int64_t>(0, q.cached_tokens);
    m.meets_slo = (s_.slo_ttft_s <= 0 || m.ttft_s <= s_.slo_ttft_s) &&
                  (s_.slo_tpot_s <= 0 || q.output <= 1 || m.tpot_s <= s_.slo_tpot_s);
    first_arrival = std::min(first_arrival, q.arrival);
    last_finish = std::max(last_finish, q.finish);
    res.input_tokens += q.prompt;
    res.output_tokens += q.output;
    res.requests.push_back(m);
  }
  res.completed = n;
  res.duration_s = std::max(1e-12, last_finish - first_arrival);
  res.iterations = iterations_;
  res.spec_steps = spec_steps_;
  res.spec_tokens_emitted = spec_emitted_;
  res.preemptions = preemptions_;
  res.prefix_query_tokens = prefix_query_tokens_;
  res.prefix_hit_tokens = prefix_hit_tokens_;
  res.prefix_hit_rate = prefix_query_tokens_ > 0 ? dbl(prefix_hit_tokens_) / dbl(prefix_query_tokens_) : 0;
  res.time_ratio_low = sum_value_ > 0 ? sum_low_ / sum_value_ : 1;
  res.time_ratio_high = sum_value_ > 0 ? sum_high_ / sum_value_ : 1;
  const auto rate = [&](double amount) {
    return Interval{amount / res.duration_s, amount / (res.duration_s * res.time_ratio_high),
                    amount / (res.duration_s * res.time_ratio_low)};
  };
  res.requests_per_s = rate(dbl(n));
  res.input_tokens_per_s = rate(dbl(res.input_tokens));
  res.output_tokens_per_s = rate(dbl(res.output_tokens));
  const double g = dbl(std::max<std::int64_t>(1, res.gpus));
  res.output_tokens_per_s_per_gpu = res.output_tokens_per_s * (1.0 / g);
  res.requests_per_s_per_gpu = res.requests_per_s * (1.0 / g);

  const auto stats = [&](auto field, bool tpot) {
    std::vector<double> v;
    v.reserve(res.requests.size());
    for (const auto& m : res.requests)
      if (!tpot || m.output_tokens > 1) v.push_back(field(m));
    return latency_stats(std::move(v));
  };
  res.ttft = stats([](const RequestMetrics& m) { return m.ttft_s; }, false);
  res.tpot = stats([](const RequestMetrics& m) { return m.tpot_s; }, true);
  res.e2e = stats([](const RequestMetrics& m) { return m.e2e_s; }, false);
  res.queue = stats([](const RequestMetrics& m) { return m.queue_s; }, false);
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
  res.slo_given = s_.slo_ttft_s > 0 || s_.slo_tpot_s > 0;
  std::int64_t good = 0;
  for (const auto& m : res.requests) good += m.meets_slo ? 1 : 0;
  res.slo_fraction = dbl(good) / dbl(n);
  res.goodput_rps = dbl(good) / res.duration_s;
  res.trace = std::move(trace_);
}

}  // namespace llmsim::sim::des
