// Prefix caching: the replica's block cache (references, LRU eviction tail first), hand-checked schedules of
// requests that share a prompt prefix, stream and trace inputs that carry prefixes, the engines' defaults,
// and the full model's TTFT with and without the cache.
#include <doctest/doctest.h>

#include "llmsim/core/version.h"
#include "llmsim/run/engine_profile.h"
#include "llmsim/serve/prefix_cache.h"
#include "llmsim/serve/request_stream.h"
#include "llmsim/serve/serving_sim.h"
#include "memory/memory_test_util.h"
#include "serve/serving_test_util.h"
#include "test_util.h"

using namespace llmsim;
using llmsim::test::error_of;
using llmsim::test::preset_model;
using llmsim::test::preset_system;
using llmsim::test::simple_cost;
using llmsim::test::write_temp;

namespace {

constexpr double ms = 1e-3;

sim::Request req(std::int64_t id, double at, std::int64_t in, std::int64_t out, std::int64_t key = -1,
                 std::int64_t prefix = 0) {
  return sim::Request{
      .id = id, .arrival_s = at, .input_tokens = in, .output_tokens = out, .prefix_key = key, .prefix_tokens = prefix};
}

// vLLM V1's scheduler with 16-token blocks and prefix caching as given.
sim::ServingSetup vllm_setup(bool caching, std::int64_t kv_tokens) {
  sim::ServingSetup s;
  s.engine = sim::engine_profile(sim::Framework::Vllm);
  s.engine.kv_block_tokens = 16;
  s.engine.prefix_caching = caching;
  s.kv_capacity_tokens = kv_tokens;
  return s;
}

}  // namespace

TEST_CASE("prefix cache: references, tail-first LRU eviction, duplicates refused") {
  sim::des::PrefixCache c;
  CHECK(c.attach(1, 4) == 0);  // nothing cached
  CHECK(c.insert(1, 0));
  CHECK(c.insert(1, 1));
  CHECK_FALSE(c.insert(1, 1));  // a second copy of the same block is not cached
  CHECK(c.insert(2, 0));
  CHECK(c.evictable() == 0);  // all referenced by the sequences that computed them
  c.release(1, 2);            // prefix 1's sequence ends: its two blocks become evictable
  c.release(2, 1);
  CHECK(c.evictable() == 3);
  CHECK(c.attach(2, 1) == 1);  // prefix 2 is referenced again: not evictable
  CHECK(c.evictable() == 2);
  // Oldest unreferenced first, and within a request its last block first: (1,1), then (1,0).
  CHECK(c.evict_one());
  CHECK_FALSE(c.contains(1, 1));
  CHECK(c.contains(1, 0));
  CHECK(c.attach(1, 2) == 1);     // the run of cached blocks stops at the evicted one
  CHECK(c.evict_one() == false);  // (1,0) and (2,0) are referenced
  CHECK(c.cached() == 2);
}

TEST_CASE("prefix caching: a later request computes only what its prefix leaves (hand-checked)") {
  // Blocks of 16. A (40 in, 2 out, prefix 7 of 32 tokens) at 0: it1 [0, 5.0] prefills 40 (1 + 4.0 ms) and caches
  // blocks 0-1 of prefix 7; it2 [5.0, 6.1] decodes. B (40, 1, prefix 7) at 10 ms finds both blocks: 8 tokens,
  // TTFT 1.8 ms. C (32, 1, prefix 7) at 20 ms: at least one prompt token is computed, so only block 0 is
  // taken (31 tokens would end inside block 1): 16 tokens, TTFT 2.6 ms. D (40, 1, prefix 8) at 30 ms: nothing
  // cached for its prefix, 5.0 ms.
  const std::vector<sim::Request> reqs{req(0, 0, 40, 2, 7, 32), req(1, 0.010, 40, 1, 7, 32),
                                       req(2, 0.020, 32, 1, 7, 32), req(3, 0.030, 40, 1, 8, 32)};
  const auto on = sim::run_serving(reqs, vllm_setup(true, 16 * 100), simple_cost());
  REQUIRE(on.valid());
  CHECK(on.prefix_caching);
  CHECK(on.requests[0].ttft_s == doctest::Approx(5.0 * ms));
  CHECK(on.requests[1].ttft_s == doctest::Approx(1.8 * ms));
  CHECK(on.requests[2].ttft_s == doctest::Approx(2.6 * ms));
  CHECK(on.requests[3].ttft_s == doctest::Approx(5.0 * ms));
  CHECK(on.requests[1].cached_tokens == 32);
  CHECK(on.requests[2].cached_tokens == 16);
  CHECK(on.requests[3].cached_tokens == 0);
  CHECK(on.prefix_query_tokens == 40 + 40 + 32 + 40);
  CHECK(on.prefix_hit_tokens == 32 + 16);
  CHECK(on.prefix_hit_rate == doctest::Approx(48.0 / 152.0));

  const auto off = sim::run_serving(reqs, vllm_setup(false, 16 * 100), simple_cost());
  REQUIRE(off.valid());
  CHECK_FALSE(off.prefix_caching);
  CHECK(off.requests[1].ttft_s == doctest::Approx(5.0 * ms));
  CHECK(off.requests[2].ttft_s == doctest::Approx(4.2 * ms));
  CHECK(off.prefix_hit_tokens == 0);
}

TEST_CASE("prefix caching: a conversation's next turn finds the previous reply cached too (hand-checked)") {
  // Turn 1: 40 prompt + 10 reply tokens, sharing all 50 with turn 2; the KV of 40 + 9 tokens is computed (the
  // last reply token is sampled, never fed back), so 3 whole blocks (48 tokens) are cached, 2 of them past
  // the prompt's. Turn 2 (60 tokens) computes 12: TTFT 1 + 1.2 ms.
  const auto r =
      sim::run_serving({req(0, 0, 40, 10, 4, 50), req(1, 0.100, 60, 1, 4, 50)}, vllm_setup(true, 1600), simple_cost());
  REQUIRE(r.valid());
  CHECK(r.requests[1].cached_tokens == 48);
  CHECK(r.requests[1].ttft_s == doctest::Approx(2.2 * ms));
}

TEST_CASE("prefix caching: a blank block is taken before a cached one, and a cached one before failing") {
  // 4 blocks of 16. A (40, 1, prefix 1 of 32) at 0 holds 3 blocks, caches 2 and ends: 2 free, 2 cached.
  // E (60, 1, no prefix) at 10 ms needs 4 blocks: the 2 free and both cached ones, evicted. F (40, 1,
  // prefix 1) at 20 ms then finds nothing: 5.0 ms. Without E, F finds both blocks: 1.8 ms.
  const auto with_e = sim::run_serving({req(0, 0, 40, 1, 1, 32), req(1, 0.010, 60, 1), req(2, 0.020, 40, 1, 1, 32)},
                                       vllm_setup(true, 64), simple_cost());
  REQUIRE(with_e.valid());
  CHECK(with_e.requests[1].ttft_s == doctest::Approx(7.0 * ms));
  CHECK(with_e.requests[2].ttft_s == doctest::Approx(5.0 * ms));
  CHECK(with_e.requests[2].cached_tokens == 0);
  const auto without =
      sim::run_serving({req(0, 0, 40, 1, 1, 32), req(1, 0.020, 40, 1, 1, 32)}, vllm_setup(true, 64), simple_cost());
  REQUIRE(without.valid());
  CHECK(without.requests[1].ttft_s == doctest::Approx(1.8 * ms));

  // Two prefixes cached, 1 older than 2: a request needing one more block than is free evicts prefix 1's
  // last block (the least recently used, tail first), so prefix 2 is still found whole.
  const auto lru = sim::run_serving({req(0, 0, 33, 1, 1, 32), req(1, 0.010, 33, 1, 2, 32), req(2, 0.020, 48, 1),
                                     req(3, 0.030, 40, 1, 2, 32), req(4, 0.040, 40, 1, 1, 32)},
                                    vllm_setup(true, 16 * 6), simple_cost());
  REQUIRE(lru.valid());
  // After A and B: 4 cached blocks, 2 free of 6. C (48 tokens, 3 blocks) takes the 2 free and evicts (1,1).
  CHECK(lru.requests[3].cached_tokens == 32);
  CHECK(lru.requests[4].cached_tokens == 16);
}

TEST_CASE("prefix caching: requests admitted together compute their prefix each; blocks balance under preemption") {
  // Two requests with the same prefix in the first iteration: neither is cached yet, both compute it all.
  const auto together =
      sim::run_serving({req(0, 0, 64, 4, 3, 48), req(1, 0, 64, 4, 3, 48)}, vllm_setup(true, 1600), simple_cost());
  REQUIRE(together.valid());
  CHECK(together.prefix_hit_tokens == 0);
  CHECK(together.requests[0].ttft_s == doctest::Approx(together.requests[1].ttft_s));

  // A cache too small for the load: preemptions free sequences' own blocks and drop their references; run()
  // checks at the end that every block is free or cached, and every request completes.
  std::vector<sim::Request> many;
  for (std::int64_t i = 0; i < 40; ++i) many.push_back(req(i, 0.001 * static_cast<double>(i), 80, 60, i % 3, 64));
  sim::ServingSetup s = vllm_setup(true, 16 * 40);
  s.engine.max_batched_tokens = 256;
  const auto r = sim::run_serving(many, s, simple_cost());
  REQUIRE(r.valid());
  CHECK(r.completed == 40);
  CHECK(r.preemptions > 0);
  CHECK(r.prefix_hit_tokens > 0);
}

TEST_CASE("prefix caching: not modelled where KV blocks are reused cyclically or prefill runs apart") {
  const std::vector<sim::Request> reqs{req(0, 0, 40, 1, 7, 32), req(1, 0.010, 40, 1, 7, 32)};
  sim::ServingSetup windowed = vllm_setup(true, 1600);
  windowed.kv_window = sim::KvWindow{.window = 32, .windowed = 1, .layers = 1};
  const auto w = sim::run_serving(reqs, windowed, simple_cost());
  REQUIRE(w.valid());
  CHECK_FALSE(w.prefix_caching);
  CHECK(w.prefix_hit_tokens == 0);
  REQUIRE(w.notes.size() == 1);
  CHECK(w.notes[0].find("cyclically") != std::string::npos);

  sim::ServingSetup tgi = vllm_setup(true, 1600);
  tgi.engine = sim::engine_profile(sim::Framework::Tgi);
  tgi.engine.prefix_caching = true;
  const auto t = sim::run_serving(reqs, tgi, simple_cost());
  REQUIRE(t.valid());
  CHECK_FALSE(t.prefix_caching);
  CHECK(t.notes.size() == 1);
}

TEST_CASE("prefix caching: the engines' defaults (vLLM V1 on, V0 off, TensorRT-LLM on, TurboMind off)") {
  CHECK(sim::engine_profile(sim::Framework::Vllm).prefix_caching);
  CHECK_FALSE(sim::released_profile(sim::Framework::Vllm, Version{0, 6, 3}).prefix_caching);
  CHECK(sim::released_profile(sim::Framework::Vllm, Version{0, 8, 0}).prefix_caching);
  CHECK(sim::engine_profile(sim::Framework::TrtLlm).prefix_caching);
  CHECK_FALSE(sim::engine_profile(sim::Framework::LmDeploy).prefix_caching);
  CHECK_FALSE(sim::engine_profile(sim::Framework::Tgi).prefix_caching);
  CHECK_FALSE(sim::engine_profile(sim::Framework::LightLlm).prefix_caching);
  CHECK_FALSE(sim::static_engine_profile().prefix_caching);
}

TEST_CASE("request streams and traces carry shared prefixes") {
  sim::StreamSpec spec;
  spec.requests = 7;
  spec.input = sim::LengthDist{sim::LengthKind::Uniform, 10, 20};
  spec.shared_prefix_tokens = 100;
  spec.prefix_groups = 3;
  sim::StreamSpec plain = spec;
  plain.shared_prefix_tokens = 0;
  const auto a = sim::generate_requests(spec);
  const auto b = sim::generate_requests(plain);
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].prefix_key == static_cast<std::int64_t>(i) % 3);
    CHECK(a[i].prefix_tokens == 100);
    CHECK(a[i].input_tokens == b[i].input_tokens + 100);  // the same draws, after the prefix
    CHECK(b[i].prefix_key == -1);
  }

  const auto path = write_temp("prefix-trace.csv",
                               "arrival_s,input_tokens,output_tokens,prefix_key,prefix_tokens\n"
                               "0,300,10,5,256\n0.5,200,10,5,0\n1,50,5,9,50\n");
  const auto tf = sim::read_trace_csv(path);
  REQUIRE(tf.requests.size() == 3);
  CHECK(tf.requests[0].prefix_key == 5);
  CHECK(tf.requests[0].prefix_tokens == 256);
  CHECK(tf.requests[2].prefix_tokens == 50);

  const auto over = write_temp("prefix-trace-over.csv",
                               "arrival_s,input_tokens,output_tokens,prefix_key,prefix_tokens\n0,300,10,5,256\n"
                               "1,100,10,5,111\n");
  const std::string e = error_of([&] { sim::read_trace_csv(over); }).what();
  CHECK(error_of([&] { sim::read_trace_csv(over); }).kind() == ErrorKind::Input);
  CHECK(e.find("prefix-trace-over.csv:3:") != std::string::npos);
  CHECK(e.find("prefix_tokens = '111': must be a whole number from 0 to input_tokens + output_tokens (110)") !=
        std::string::npos);
  const auto key = write_temp("prefix-trace-key.csv",
                              "arrival_s,input_tokens,output_tokens,prefix_key,prefix_tokens\n0,300,10,-2,5\n");
  CHECK(std::string(error_of([&] { sim::read_trace_csv(key); }).what()).find("prefix_key = '-2'") != std::string::npos);
  const auto four = write_temp("prefix-trace-four.csv", "arrival_s,input_tokens,output_tokens,prefix_key\n0,3,1,2\n");
  CHECK(std::string(error_of([&] { sim::read_trace_csv(four); }).what())
            .find("optionally followed by ',prefix_key,prefix_tokens'") != std::string::npos);
  const auto short_row =
      write_temp("prefix-trace-short.csv", "arrival_s,input_tokens,output_tokens,prefix_key,prefix_tokens\n0,3,1\n");
  CHECK(std::string(error_of([&] { sim::read_trace_csv(short_row); }).what()).find("expected 5 fields") !=
        std::string::npos);
}

TEST_CASE("full model: a shared system prompt cuts vLLM's TTFT when cached (llama3-8b, one H100)") {
  const auto m = preset_model("llama3-8b");
  const auto sys = preset_system("dgx-h100");
  sim::RunSpec run;
  run.workload = sim::Workload::Inference;
  run.infer.framework = sim::Framework::Vllm;
  run.infer.input_len = 2048 + 128;
  run.infer.output_len = 64;
  run = sim::with_defaults(run);
  sim::StreamSpec spec;
  spec.kind = sim::ArrivalKind::Poisson;
  spec.rate = 4;
  spec.requests = 200;
  spec.input = sim::LengthDist{sim::LengthKind::Fixed, 128, 0};
  spec.output = sim::LengthDist{sim::LengthKind::Fixed, 64, 0};
  spec.shared_prefix_tokens = 2048;
  spec.prefix_groups = 2;
  const auto reqs = sim::generate_requests(spec);
  sim::ServingConfig cfg;
  cfg.engine = sim::serving_profile(sim::Framework::Vllm, sys);
  const auto on = sim::simulate_serving(m, sys, run, cfg, reqs);
  cfg.engine.prefix_caching = false;
  const auto off = sim::simulate_serving(m, sys, run, cfg, reqs);
  REQUIRE(on.valid());
  REQUIRE(off.valid());
  // Two misses, then every prompt finds its 2048 tokens (128 blocks) cached: 198 x 2048 of 200 x 2176.
  CHECK(on.prefix_hit_tokens == 198 * 2048);
  CHECK(on.prefix_hit_rate == doctest::Approx(198.0 * 2048 / (200.0 * 2176)));
  // Prefill of 128 instead of 2176 tokens: the median TTFT falls several-fold.
  CHECK(on.ttft.p50 < off.ttft.p50 / 2.5);
  CHECK(on.output_tokens == off.output_tokens);
}
