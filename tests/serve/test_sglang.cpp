// SGLang's scheduler in the serving simulator (sim/serve/admission_sglang.cpp): prefill batches first,
// the chunked prompt continued first, new-token-ratio admission and decode retraction, each schedule checked by
// hand with the tests' iteration cost (1 ms + 0.1 ms per token); the profile's device tiers and KV sizing.
#include <doctest/doctest.h>

#include "llmsim/core/units.h"
#include "llmsim/run/engine_profile.h"
#include "llmsim/serve/request_stream.h"
#include "llmsim/serve/serving_sim.h"
#include "memory/memory_test_util.h"
#include "serve/serving_test_util.h"

using namespace llmsim;
using llmsim::test::preset_model;
using llmsim::test::preset_system;
using llmsim::test::simple_cost;

namespace {

constexpr double ms = 1e-3;

sim::Request req(std::int64_t id, double at, std::int64_t in, std::int64_t out) {
  return sim::Request{.id = id, .arrival_s = at, .input_tokens = in, .output_tokens = out};
}

sim::ServingSetup sglang(std::int64_t kv_tokens, std::int64_t chunk) {
  sim::ServingSetup s;
  s.engine = sim::engine_profile(sim::Framework::Sglang);
  s.engine.max_batched_tokens = chunk;
  s.kv_capacity_tokens = kv_tokens;
  return s;
}

}  // namespace

TEST_CASE("sglang: a waiting prompt is prefilled in a batch of its own while the running batch waits") {
  // A(100 in, 3 out) at 0, B(50, 2) at 5 ms.
  //  it1 [0, 11.0]:     A prefill 100 -> A's first token
  //  it2 [11.0, 17.0]:  B prefill 50 (A does not decode: a prefill batch could be formed) -> B's first token
  //  it3 [17.0, 18.2]:  A, B decode -> B done
  //  it4 [18.2, 19.3]:  A decode -> A done
  // vLLM would mix B's prefill with A's decode in it2.
  const auto r = sim::run_serving({req(0, 0, 100, 3), req(1, 0.005, 50, 2)}, sglang(10000, 8192), simple_cost());
  REQUIRE(r.valid());
  CHECK(r.requests[0].ttft_s == doctest::Approx(11.0 * ms));
  CHECK(r.requests[0].e2e_s == doctest::Approx(19.3 * ms));
  CHECK(r.requests[1].ttft_s == doctest::Approx(12.0 * ms));
  CHECK(r.requests[1].e2e_s == doctest::Approx(13.2 * ms));
  CHECK(r.iterations == 4);

  const auto v = sim::run_serving(
      {req(0, 0, 100, 3), req(1, 0.005, 50, 2)},
      sim::ServingSetup{.engine = sim::engine_profile(sim::Framework::Vllm), .kv_capacity_tokens = 10000},
      simple_cost());
  REQUIRE(v.valid());
  CHECK(v.iterations == 3);  // B's prefill shares A's second iteration
}

TEST_CASE("sglang: a prompt over the chunk budget is truncated and its next chunk runs first") {
  // Chunk 128. A(300, 2) and B(20, 2) at 0.
  //  it1 [0, 13.8]:     A's first 128 tokens (B waits: the chunk budget is spent)
  //  it2 [13.8, 27.6]:  A's next 128
  //  it3 [27.6, 35.0]:  A's last 44 + B's 20 = 64 -> both first tokens
  //  it4 [35.0, 36.2]:  A, B decode -> both done
  const auto r = sim::run_serving({req(0, 0, 300, 2), req(1, 0, 20, 2)}, sglang(10000, 128), simple_cost());
  REQUIRE(r.valid());
  CHECK(r.requests[0].ttft_s == doctest::Approx(35.0 * ms));
  CHECK(r.requests[1].ttft_s == doctest::Approx(35.0 * ms));
  CHECK(r.requests[0].e2e_s == doctest::Approx(36.2 * ms));
  CHECK(r.requests[1].e2e_s == doctest::Approx(36.2 * ms));
  CHECK(r.iterations == 4);
}

TEST_CASE("sglang without chunked prefill: a prompt over the budget runs whole, alone in its batch") {
  // Budget 128, chunking off. A(300, 2) and B(20, 2) at 0: A alone [0, 31.0] (1 + 30.0 ms), then B's prefill
  // [31.0, 34.0] while A waits, then both decode [34.0, 35.2].
  auto s = sglang(10000, 128);
  s.engine.chunked_prefill = false;
  const auto r = sim::run_serving({req(0, 0, 300, 2), req(1, 0, 20, 2)}, s, simple_cost());
  REQUIRE(r.valid());
  CHECK(r.requests[0].ttft_s == doctest::Approx(31.0 * ms));
  CHECK(r.requests[1].ttft_s == doctest::Approx(34.0 * ms));
  CHECK(r.requests[0].e2e_s == doctest::Approx(35.2 * ms));
}

TEST_CASE("sglang: admission reserves the new request's whole output and the running ones' at the ratio") {
  // 120 KV tokens; A(50, 20) and B(50, 20) at 0. A: 50 + 20 = 70 < 120, admitted. B: 120 free and allocated -
  // 70 reserved = 50 <= 70: not admitted. While A decodes, B needs 70 < (71 - g) - (20 - g) x ratio, which no
  // g meets: B waits for A (vLLM would prefill both and preempt one). A: prefill [0, 6.0], 19 decodes of
  // 1.1 ms -> 26.9; B: prefill [26.9, 32.9], 19 decodes -> 53.8.
  const auto r = sim::run_serving({req(0, 0, 50, 20), req(1, 0, 50, 20)}, sglang(120, 8192), simple_cost());
  REQUIRE(r.valid());
  CHECK(r.preemptions == 0);
  CHECK(r.requests[0].ttft_s == doctest::Approx(6.0 * ms));
  CHECK(r.requests[0].e2e_s == doctest::Approx(26.9 * ms));
  CHECK(r.requests[1].ttft_s == doctest::Approx(32.9 * ms));
  CHECK(r.requests[1].e2e_s == doctest::Approx(53.8 * ms));
}

TEST_CASE("sglang: a decode without room retracts the fewest-output requests, which are recomputed later") {
  // 100 KV tokens; five requests of (5 in, 20 out) at 0.
  //  it1 [0, 2.5]:   A1-A3 prefill (25 each: 100 - 25k > 25 for k <= 2; A4 meets 25 < 25? no)
  //  it2 [2.5, 4.0]: A4 (85 free - 3 x 19 x 0.7 = 45.1 > 25); A5 not (85 - 64.9 = 20.1)
  //  it3 [4.0, 5.5]: A5 (80 free - 4 x 19 x 0.7 = 26.8 > 25)
  //  15 decodes of 5 tokens, 1.5 ms each -> 28.0: 100 tokens held, all at 16 generated.
  //  At 28.0 no slot: retract A5 (20 free < 20 x 4), A4 (40 < 60), A3 (60 >= 40: stop); ratio (32 + 40) / 40
  //  -> 1.0; A1, A2 decode [28.0, 29.2].
  //  [29.2, 34.4]: A5, A4 recompute 21 tokens each (58 free - 6 = 52 > 25; then 58 - 56 + 25 ... = 27 > 25;
  //  A3: 2 < 25 not).
  //  Three decodes of four [34.4, 38.6] -> A1, A2, A4, A5 done at 38.6 (A3 is refused each time: 4 < 25).
  //  A3: recompute 21 [38.6, 41.7], three decodes -> 45.0.
  std::vector<sim::Request> reqs;
  for (int i = 0; i < 5; ++i) reqs.push_back(req(i, 0, 5, 20));
  const auto r = sim::run_serving(reqs, sglang(100, 8192), simple_cost());
  REQUIRE(r.valid());
  CHECK(r.preemptions == 3);
  CHECK(r.requests[0].preemptions == 0);
  CHECK(r.requests[2].preemptions == 1);
  CHECK(r.requests[4].preemptions == 1);
  CHECK(r.requests[0].ttft_s == doctest::Approx(2.5 * ms));
  CHECK(r.requests[3].ttft_s == doctest::Approx(4.0 * ms));
  CHECK(r.requests[4].ttft_s == doctest::Approx(5.5 * ms));
  CHECK(r.requests[0].e2e_s == doctest::Approx(38.6 * ms));
  CHECK(r.requests[3].e2e_s == doctest::Approx(38.6 * ms));
  CHECK(r.requests[4].e2e_s == doctest::Approx(38.6 * ms));
  CHECK(r.requests[2].e2e_s == doctest::Approx(45.0 * ms));
  CHECK(r.kv_peak_utilization == doctest::Approx(1.0));
}

TEST_CASE("sglang: device tiers of server_args.py and the static memory share") {
  using sim::Framework;
  const auto h100 = preset_system("dgx-h100");
  const auto p1 = sim::serving_profile(Framework::Sglang, h100);
  CHECK(p1.prefill_first);
  CHECK(p1.kv_block_tokens == 1);
  CHECK(p1.prefix_caching);
  CHECK(p1.max_batched_tokens == 8192);
  CHECK(p1.cuda_graph_max_batch == 256);
  CHECK(sim::serving_profile(Framework::Sglang, h100, {}, 0, 4).cuda_graph_max_batch == 512);
  CHECK(sim::serving_profile(Framework::Sglang, preset_system("dgx-a100-40gb")).max_batched_tokens == 4096);
  CHECK(sim::serving_profile(Framework::Sglang, preset_system("dgx-a100-40gb")).cuda_graph_max_batch == 32);
  CHECK(sim::serving_profile(Framework::Sglang, preset_system("rtx4090-pcie")).max_batched_tokens == 2048);
  CHECK(sim::serving_profile(Framework::Sglang, preset_system("rtx4090-pcie")).cuda_graph_max_batch == 24);
  CHECK(sim::serving_profile(Framework::Sglang, preset_system("hgx-b200")).max_batched_tokens == 16384);
  // mem_fraction_static: H100 (79.647 GiB), tp 1: (79.647 - 9.5 - 0.5) / 79.647 = 0.8745 -> 0.874 (3 decimals);
  // H200 (140.401 GiB), tp 2: (140.401 - 12 - 1) / 140.401 = 0.9074 -> 0.907.
  CHECK(sim::static_memory_fraction(p1, h100.gpu.memory_bytes, 1) == doctest::Approx(0.874));
  const auto h200 = preset_system("hgx-h200");
  CHECK(sim::static_memory_fraction(sim::serving_profile(Framework::Sglang, h200), h200.gpu.memory_bytes, 2) ==
        doctest::Approx(0.907));
  CHECK(sim::static_memory_fraction(sim::engine_profile(Framework::Vllm), h100.gpu.memory_bytes, 1) == 0);
  // --mem-fraction-static as given replaces the tier's reserve.
  auto given = p1;
  given.static_fraction = 0.8;
  CHECK(sim::static_memory_fraction(given, h100.gpu.memory_bytes, 8) == 0.8);
}

TEST_CASE("sglang full model: KV from the static share, the request pool, and prefill-first against vLLM") {
  const auto m = preset_model("llama3-8b");
  const auto sys = preset_system("dgx-h100");
  sim::RunSpec run;
  run.workload = sim::Workload::Inference;
  run.infer.framework = sim::Framework::Sglang;
  sim::StreamSpec spec;
  spec.kind = sim::ArrivalKind::Poisson;
  spec.rate = 30;
  spec.requests = 600;
  spec.input = sim::parse_length_dist("512", "--input-len");
  spec.output = sim::parse_length_dist("256", "--output-len");
  const auto reqs = sim::generate_requests(spec);

  sim::ServingConfig cfg;
  cfg.engine = sim::serving_profile(sim::Framework::Sglang, sys);
  const auto s = sim::simulate_serving(m, sys, run, cfg, reqs);
  REQUIRE(s.valid());
  // 0.874 x 79.647 GiB - weights - CUDA context, over 128 KiB per token (32 layers x 8 KV heads x 128 x 2 x 2 B).
  CHECK(s.kv_bytes_per_token == doctest::Approx(131072));
  const double budget = 0.874 * sys.gpu.memory_bytes - s.weight_bytes - s.runtime_bytes;
  CHECK(s.kv_budget_bytes == doctest::Approx(budget));
  CHECK(s.kv_capacity_tokens == static_cast<std::int64_t>(budget / 131072));
  // The request pool: clamp(tokens / 8192 x 512, 2048, 4096) = 4096 (Llama 3's 8192-token context).
  CHECK(s.profile.max_num_seqs == 4096);
  CHECK(s.completed == 600);

  // Against vLLM at the same load: a new prompt does not wait behind a mixed batch's decodes (shorter TTFT),
  // and the decodes wait for every prefill batch (a longer inter-token tail).
  run.infer.framework = sim::Framework::Vllm;
  cfg.engine = sim::serving_profile(sim::Framework::Vllm, sys);
  const auto v = sim::simulate_serving(m, sys, run, cfg, reqs);
  REQUIRE(v.valid());
  CHECK(s.ttft.mean < v.ttft.mean);
  CHECK(s.itl.p99 > v.itl.p99);
}
