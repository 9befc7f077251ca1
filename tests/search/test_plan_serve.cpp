// Serving capacity planning: the replica count found is the smallest that meets the SLOs.
#include <doctest/doctest.h>

#include <algorithm>

#include "llmsim/search/plan_serve.h"
#include "memory/memory_test_util.h"

using namespace llmsim;

TEST_CASE("plan serve finds the fewest replicas that meet the SLOs") {
  const auto m = test::preset_model("llama2-7b");
  const std::vector<hardware::SystemSpec> systems = {test::preset_system("rtx4090-pcie")};
  sim::ServePlanSpec spec;
  spec.rate = 12;
  spec.slo_ttft_p99_s = 1.0;
  spec.slo_tpot_p99_s = 0.1;
  spec.engines = {sim::Framework::Vllm};
  spec.tps = {1};
  spec.requests_per_replica = 200;
  const auto plan = sim::plan_serving(m, systems, spec);
  REQUIRE(plan.found());
  const auto& best = plan.candidates.front();
  CHECK(best.ttft_p99_s <= 1.0);
  CHECK(best.tpot_p99_s <= 0.1);
  CHECK(best.gpus == best.replicas);
  REQUIRE(best.replicas > 1);
  // One replica fewer misses: plan again with that many GPUs at most.
  spec.max_gpus = best.replicas - 1;
  const auto fewer = sim::plan_serving(m, systems, spec);
  CHECK_FALSE(fewer.found());
  CHECK(fewer.candidates.front().why.find("misses the SLOs") != std::string::npos);
  // Deterministic: the same spec gives the same answer.
  spec.max_gpus = 64;
  CHECK(sim::plan_serving(m, systems, spec).candidates.front().replicas == best.replicas);
}

TEST_CASE("plan serve reports a model that cannot be served at all") {
  const auto m = test::preset_model("llama2-70b");
  sim::ServePlanSpec spec;
  spec.engines = {sim::Framework::Vllm};
  spec.tps = {1};
  const auto plan = sim::plan_serving(m, {test::preset_system("rtx4090-pcie")}, spec);
  REQUIRE_FALSE(plan.found());
  CHECK(!plan.candidates.front().why.empty());
}

TEST_CASE("plan serve: each disaggregated pool takes its own tensor-parallel size") {
  const auto m = test::preset_model("llama3-8b");
  const std::vector<hardware::SystemSpec> systems = {test::preset_system("dgx-h100")};
  sim::ServePlanSpec spec;
  spec.rate = 4;
  spec.slo_ttft_p99_s = 2.0;
  spec.slo_tpot_p99_s = 0.1;
  spec.engines = {sim::Framework::Vllm};
  spec.tps = {1, 2};
  spec.requests_per_replica = 100;
  spec.pd_ratios = {{1, 1}};
  const auto plan = sim::plan_serving(m, systems, spec);
  // Two aggregated candidates and, for each prefill TP, one layout per decode TP: 1/1, 1/2, 2/1, 2/2.
  std::vector<std::pair<std::int64_t, std::int64_t>> pools;
  for (const auto& c : plan.candidates) {
    if (c.prefill_replicas == 0) {
      CHECK(c.decode_tp == 0);
      continue;
    }
    pools.emplace_back(c.tp, c.decode_tp);
    REQUIRE(c.feasible);
    // GPUs: n prefill replicas of tp and n decode replicas of decode_tp.
    CHECK(c.gpus == c.prefill_replicas * c.tp + c.decode_replicas * c.decode_tp);
  }
  std::sort(pools.begin(), pools.end());
  CHECK(pools == std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 1}, {1, 2}, {2, 1}, {2, 2}});
}
