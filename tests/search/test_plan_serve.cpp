// Serving capacity planning: the replica count found is the smallest that meets the SLOs.
#include <doctest/doctest.h>

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
