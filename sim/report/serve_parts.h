#pragma once
// Parts of the serve document that show a serving simulation's course rather than its totals
// (serve --timeline, drawn by the HTML report): the whole distribution of each request latency and the
// engine's batch, KV-cache use and queue over time.
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmsim/serve/serving_sim.h"

namespace llmsim::report {

// The quantiles 0, 1, ..., 100 % of each request latency, by the percentile rule of the summary's
// p50/p90/p99 (llmsim::quantile_sorted): [{"quantile", "ttft_s", "tpot_s", "e2e_s", "queue_s"}], 101 rows;
// TPOT over the requests with more than one output token (as the summary); empty without requests.
nlohmann::json latency_quantiles(const std::vector<sim::RequestMetrics>& requests);

// The run in `bins` equal slices of time from the first arrival to the last completion (needs the
// iteration trace): [{"start_s", "end_s", "batch", "kv_utilization", "waiting", "running"}]. `batch` is
// the mean sequences of the iterations in the slice, weighted by their time in it, and `kv_utilization`
// the mean share of a replica's KV capacity they held, so that both average to the summary's mean_batch
// and kv_utilization over the run; `waiting` and `running` count requests at the slice's middle (arrived
// and not yet scheduled; scheduled and not finished). Empty without a trace.
nlohmann::json serve_timeline(const sim::ServingResult& r, std::int64_t bins);

}  // namespace llmsim::report
