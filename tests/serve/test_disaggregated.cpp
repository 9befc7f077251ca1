// Disaggregated serving (serving_disagg.h): a decode pool's requests arrive with their prompt's KV, and a
// request's course through both pools, checked by hand and against the pools' own runs.
#include <doctest/doctest.h>

#include "llmsim/run/engine_profile.h"
#include "llmsim/serve/serving_disagg.h"
#include "llmsim/serve/serving_sim.h"
#include "memory/memory_test_util.h"
#include "serving_test_util.h"

using namespace llmsim;
using llmsim::test::preset_model;
using llmsim::test::preset_system;
using llmsim::test::simple_cost;

namespace {
sim::RunSpec vllm_inference() {
  sim::RunSpec run;
  run.workload = sim::Workload::Inference;
  run.infer.framework = sim::Framework::Vllm;
  return run;
}
sim::ServingConfig vllm_config() {
  sim::ServingConfig cfg;
  cfg.engine = sim::engine_profile(sim::Framework::Vllm);
  return cfg;
}
}  // namespace

TEST_CASE("a request whose prompt's KV arrived decodes at once (hand-checked)") {
  // 40 prompt tokens already computed elsewhere, its first token sampled there; 3 to generate. Two decode
  // steps of one token (1.1 ms each) sample tokens 2 and 3: done at 2.2 ms, nothing prefilled here.
  sim::ServingSetup s;
  s.engine = sim::engine_profile(sim::Framework::Vllm);
  s.engine.kv_block_tokens = 16;
  s.kv_capacity_tokens = 16 * 100;
  const std::vector<sim::Request> reqs{
      {.id = 0, .arrival_s = 0, .input_tokens = 40, .output_tokens = 3, .kv_ready_tokens = 40, .generated_tokens = 1}};
  const auto r = sim::run_serving(reqs, s, simple_cost());
  REQUIRE(r.valid());
  CHECK(r.iterations == 2);
  CHECK(r.requests[0].finish_s == doctest::Approx(2.2e-3));
  CHECK(r.requests[0].first_token_s == doctest::Approx(1.1e-3));  // the pool's first: the request's second token
}

TEST_CASE("disaggregated: TTFT from the prefill pool, the KV transfer, the rest from the decode pool") {
  const auto m = preset_model("llama3-8b");
  const auto sys = preset_system("dgx-h100");
  const sim::RunSpec run = vllm_inference();
  sim::ServingConfig cfg = vllm_config();
  std::vector<sim::Request> reqs;
  for (std::int64_t i = 0; i < 40; ++i)
    reqs.push_back({.id = i,
                    .arrival_s = 0.05 * static_cast<double>(i),
                    .input_tokens = 1000,
                    .output_tokens = i % 5 == 0 ? 1 : 64});  // every fifth reply is its first token only
  const sim::DisaggregatedPools pools{.prefill_replicas = 1, .prefill_tp = 1, .decode_replicas = 1, .decode_tp = 1};
  const auto pd = sim::simulate_disaggregated(m, sys, run, cfg, pools, reqs);
  REQUIRE(pd.valid());
  // Inside one H100 node the KV crosses NVLink: 1000 tokens x 128 KiB (32 layers x 8 KV heads x 128 x 2 x 2 B).
  CHECK(pd.link_Bps == doctest::Approx(sys.node.fabric_bandwidth_Bps));
  CHECK(pd.kv_bytes_mean == doctest::Approx(1000.0 * 131072.0));
  CHECK(pd.transfer_s_mean == doctest::Approx(1000.0 * 131072.0 / sys.node.fabric_bandwidth_Bps));
  REQUIRE(pd.whole.requests.size() == 40);
  CHECK(pd.decode.requests.size() == 32);  // the single-token replies end in the prefill pool
  for (const auto& w : pd.whole.requests) {
    const auto& p = pd.prefill.requests[static_cast<std::size_t>(w.id)];
    CHECK(w.ttft_s == doctest::Approx(p.ttft_s));
    CHECK(w.e2e_s == doctest::Approx(w.finish_s - w.arrival_s));
    if (w.output_tokens > 1) {
      CHECK(w.finish_s > p.first_token_s + pd.transfer_s_mean);
      CHECK(w.tpot_s == doctest::Approx((w.finish_s - w.first_token_s) / 63.0));
    } else {
      CHECK(w.finish_s == doctest::Approx(p.finish_s));
    }
  }
  CHECK(pd.whole.gpus == 2);
  CHECK(pd.whole.output_tokens == 8 * 1 + 32 * 64);
  // Closed loops are refused: the pools are simulated one after the other.
  cfg.closed_loop = true;
  cfg.concurrency = 4;
  const auto closed = sim::simulate_disaggregated(m, sys, run, cfg, pools, reqs);
  REQUIRE_FALSE(closed.valid());
  CHECK(closed.whole.problems[0].find("open-loop") != std::string::npos);
}

TEST_CASE("disaggregated pools beyond one fast domain move the KV over the NICs") {
  const auto m = preset_model("llama3-8b");
  const auto sys = preset_system("dgx-h100");
  const sim::RunSpec run = vllm_inference();
  sim::ServingConfig cfg = vllm_config();
  const std::vector<sim::Request> reqs{{.id = 0, .arrival_s = 0, .input_tokens = 512, .output_tokens = 8}};
  const auto pd = sim::simulate_disaggregated(
      m, sys, run, cfg, {.prefill_replicas = 8, .prefill_tp = 1, .decode_replicas = 4, .decode_tp = 2}, reqs);
  REQUIRE(pd.valid());
  CHECK(pd.link_Bps == doctest::Approx(hardware::nic_share_per_gpu_Bps(sys)));  // min(tp) = 1 GPU sends
  CHECK(pd.link.find("scale-out") != std::string::npos);
}
