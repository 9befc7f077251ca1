// Speculative decoding in the serving event loop (serving_des.cpp, admission_mixed.cpp): decode steps verify
// their draft tokens and keep the accepted ones, checked by hand with the 1 ms + 0.1 ms per token cost.
#include <doctest/doctest.h>

#include "llmsim/run/engine_profile.h"
#include "llmsim/serve/serving_sim.h"
#include "serving_test_util.h"

using namespace llmsim;
using llmsim::test::simple_cost;

namespace {
constexpr double ms = 1e-3;

sim::ServingSetup setup(sim::Framework engine, std::int64_t k, double alpha) {
  sim::ServingSetup s;
  s.engine = sim::engine_profile(engine);
  s.engine.kv_block_tokens = 16;
  s.kv_capacity_tokens = 16 * 100;
  s.spec_tokens = k;
  s.spec_acceptance = alpha;
  return s;
}
const std::vector<sim::Request> one{{.id = 0, .arrival_s = 0, .input_tokens = 40, .output_tokens = 9}};
}  // namespace

TEST_CASE("every draft accepted: each step emits k + 1 tokens (hand-checked)") {
  // Prefill of 40 tokens: 1 + 4.0 = 5.0 ms, the first token. Then two verify steps of 1 + 3 positions
  // (1.4 ms each) emit 4 tokens each: tokens 2-5 at 6.4 ms, 6-9 at 7.8 ms.
  const auto r = sim::run_serving(one, setup(sim::Framework::Vllm, 3, 1.0), simple_cost());
  REQUIRE(r.valid());
  CHECK(r.requests[0].ttft_s == doctest::Approx(5.0 * ms));
  CHECK(r.requests[0].e2e_s == doctest::Approx(7.8 * ms));
  CHECK(r.requests[0].tpot_s == doctest::Approx(2.8 * ms / 8));
  CHECK(r.spec_steps == 2);
  CHECK(r.spec_tokens_emitted == 8);
  CHECK(r.output_tokens == 9);
}

TEST_CASE("no draft accepted: a token a step, the drafts shrinking to what is left to generate") {
  // After the 5.0 ms prefill, eight steps each emit one token: five verify 3 drafts (1.4 ms), then 2 (1.3 ms),
  // 1 (1.2 ms) and none for the last token (1.1 ms): 5.0 + 7.0 + 1.3 + 1.2 + 1.1 = 15.6 ms.
  const auto r = sim::run_serving(one, setup(sim::Framework::Vllm, 3, 0.0), simple_cost());
  REQUIRE(r.valid());
  CHECK(r.requests[0].e2e_s == doctest::Approx(15.6 * ms));
  CHECK(r.spec_steps == 7);
  CHECK(r.spec_tokens_emitted == 7);
}

TEST_CASE("accepted drafts follow the acceptance rate; engines that prefill apart are refused") {
  std::vector<sim::Request> many;
  for (std::int64_t i = 0; i < 200; ++i)
    many.push_back({.id = i, .arrival_s = 0.01 * static_cast<double>(i), .input_tokens = 64, .output_tokens = 101});
  const auto r = sim::run_serving(many, setup(sim::Framework::Vllm, 4, 0.7), simple_cost());
  REQUIRE(r.valid());
  const double per_step = static_cast<double>(r.spec_tokens_emitted) / static_cast<double>(r.spec_steps);
  // E = (1 - 0.7^5) / 0.3 = 2.77; steps near a reply's end verify fewer drafts, so a little less.
  CHECK(per_step == doctest::Approx(sim::expected_tokens_per_step(4, 0.7)).epsilon(0.05));
  CHECK(r.output_tokens == 200 * 101);
  const auto tgi = sim::run_serving(many, setup(sim::Framework::Tgi, 4, 0.7), simple_cost());
  REQUIRE_FALSE(tgi.valid());
  CHECK(tgi.problems[0].find("speculative decoding is modelled for engines that mix prefill and decode") !=
        std::string::npos);
}
