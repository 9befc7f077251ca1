// The serve document's distributions and timeline (serve_parts.h), on a run small enough to follow by hand.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "llmsim/report/serve_parts.h"

namespace report = llmsim::report;
namespace sim = llmsim::sim;

namespace {
// Two requests on one replica of 1000 KV tokens over 4 s: r0 arrives at 0 and runs to 4; r1 arrives at 1,
// waits to 2 and runs to 4. Iterations: [0, 2] with one sequence holding 100 KV tokens, [2, 4] with two
// holding 300.
sim::ServingResult small_run() {
  sim::ServingResult r;
  r.kv_capacity_tokens = 1000;
  r.duration_s = 4;
  sim::RequestMetrics r0{.id = 0, .output_tokens = 5, .arrival_s = 0, .scheduled_s = 0, .finish_s = 4};
  r0.ttft_s = 1;
  r0.tpot_s = 0.5;
  r0.e2e_s = 4;
  sim::RequestMetrics r1{.id = 1, .output_tokens = 1, .arrival_s = 1, .scheduled_s = 2, .finish_s = 4};
  r1.ttft_s = 3;
  r1.queue_s = 1;
  r1.e2e_s = 3;
  r.requests = {r0, r1};
  r.trace = {{.start_s = 0, .end_s = 2, .sequences = 1, .kv_tokens = 100},
             {.start_s = 2, .end_s = 4, .sequences = 2, .kv_tokens = 300}};
  return r;
}
}  // namespace

TEST_CASE("timeline: time-weighted batch and KV use per slice, requests waiting and running at its middle") {
  const nlohmann::json t = report::serve_timeline(small_run(), 2);
  REQUIRE(t.size() == 2);
  CHECK(t[0]["start_s"].get<double>() == doctest::Approx(0));
  CHECK(t[0]["end_s"].get<double>() == doctest::Approx(2));
  CHECK(t[0]["batch"].get<double>() == doctest::Approx(1));
  CHECK(t[0]["kv_utilization"].get<double>() == doctest::Approx(0.1));
  CHECK(t[0]["running"] == 1);  // at 1 s: r0 runs, r1 has just arrived
  CHECK(t[0]["waiting"] == 1);
  CHECK(t[1]["batch"].get<double>() == doctest::Approx(2));
  CHECK(t[1]["kv_utilization"].get<double>() == doctest::Approx(0.3));
  CHECK(t[1]["running"] == 2);
  CHECK(t[1]["waiting"] == 0);
  // Three slices of 4/3 s: the middle one holds 2/3 s of each iteration, so its means are halfway.
  const nlohmann::json t3 = report::serve_timeline(small_run(), 3);
  REQUIRE(t3.size() == 3);
  CHECK(t3[1]["batch"].get<double>() == doctest::Approx(1.5));
  CHECK(t3[1]["kv_utilization"].get<double>() == doctest::Approx(0.2));
  // Nothing to show without the iteration trace.
  sim::ServingResult untraced = small_run();
  untraced.trace.clear();
  CHECK(report::serve_timeline(untraced, 10).empty());
}

TEST_CASE("latency quantiles: 101 rows by the summary's interpolation; TPOT only over multi-token replies") {
  const nlohmann::json q = report::latency_quantiles(small_run().requests);
  REQUIRE(q.size() == 101);
  CHECK(q[0]["quantile"].get<double>() == doctest::Approx(0));
  CHECK(q[0]["ttft_s"].get<double>() == doctest::Approx(1));
  CHECK(q[50]["ttft_s"].get<double>() == doctest::Approx(2));  // halfway between 1 and 3
  CHECK(q[100]["ttft_s"].get<double>() == doctest::Approx(3));
  CHECK(q[25]["e2e_s"].get<double>() == doctest::Approx(3.25));
  CHECK(q[50]["tpot_s"].get<double>() == doctest::Approx(0.5));  // r1's single token has no TPOT
  CHECK(report::latency_quantiles({}).empty());
}
