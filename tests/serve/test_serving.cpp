// Serving simulator: hand-checked schedules with a hand-computable iteration cost (1 ms + 0.1 ms per
// token), request streams, trace files, and the full model on presets.
#include <doctest/doctest.h>

#include <cmath>

#include "llmsim/core/version.h"
#include "llmsim/infer/iteration_cost.h"
#include "llmsim/memory/memory_model.h"
#include "llmsim/run/engine_profile.h"
#include "llmsim/serve/request_stream.h"
#include "llmsim/serve/serving_sim.h"
#include "llmsim/serve/token_gaps.h"
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

sim::Request req(std::int64_t id, double at, std::int64_t in, std::int64_t out) {
  return sim::Request{.id = id, .arrival_s = at, .input_tokens = in, .output_tokens = out};
}

sim::ServingSetup setup_for(const sim::EngineProfile& e, std::int64_t kv_tokens) {
  sim::ServingSetup s;
  s.engine = e;
  s.kv_capacity_tokens = kv_tokens;
  return s;
}

constexpr double ms = 1e-3;

}  // namespace

TEST_CASE("vllm: chunked prefill, decodes first, FCFS admission within the token budget (hand-checked)") {
  sim::EngineProfile e = sim::engine_profile(sim::Framework::Vllm);
  e.max_batched_tokens = 128;
  // A(100 in, 3 out) and C(200, 1) at t = 0, B(50, 2) at 20 ms.
  //  it1 [0, 13.8]:     A prefill 100 + C chunk 28 = 128 tokens -> A's first token
  //  it2 [13.8, 27.6]:  A decode 1 + C chunk 127 = 128
  //  it3 [27.6, 38.2]:  A decode 1 + C last 45 + B prefill 50 = 96 -> A done, C's (only) token, B's first
  //  it4 [38.2, 39.3]:  B decode -> B done
  const std::vector<sim::Request> reqs{req(0, 0, 100, 3), req(1, 0, 200, 1), req(2, 0.020, 50, 2)};
  const auto r = sim::run_serving(reqs, setup_for(e, 10000), simple_cost());
  REQUIRE(r.valid());
  REQUIRE(r.requests.size() == 3);
  const auto& a = r.requests[0];
  const auto& c = r.requests[1];
  const auto& b = r.requests[2];
  CHECK(a.ttft_s == doctest::Approx(13.8 * ms));
  CHECK(a.e2e_s == doctest::Approx(38.2 * ms));
  CHECK(a.tpot_s == doctest::Approx((38.2 - 13.8) / 2 * ms));
  CHECK(c.ttft_s == doctest::Approx(38.2 * ms));
  CHECK(c.e2e_s == doctest::Approx(38.2 * ms));
  CHECK(c.queue_s == doctest::Approx(0));
  CHECK(b.queue_s == doctest::Approx(7.6 * ms));
  CHECK(b.ttft_s == doctest::Approx(18.2 * ms));
  CHECK(b.tpot_s == doctest::Approx(1.1 * ms));
  CHECK(b.e2e_s == doctest::Approx(19.3 * ms));
  CHECK(r.iterations == 4);
  CHECK(r.preemptions == 0);
  CHECK(r.duration_s == doctest::Approx(39.3 * ms));
  CHECK(r.output_tokens_per_s.value == doctest::Approx(6 / (39.3 * ms)));
  // Time-weighted batch: (2 x 13.8 + 2 x 13.8 + 3 x 10.6 + 1 x 1.1) / 39.3.
  CHECK(r.mean_batch == doctest::Approx((2 * 13.8 + 2 * 13.8 + 3 * 10.6 + 1.1) / 39.3));
}

TEST_CASE("vllm: without chunked prefill a prompt waits for a budget that holds it whole") {
  sim::EngineProfile e = sim::engine_profile(sim::Framework::Vllm);
  e.max_batched_tokens = 256;
  e.chunked_prefill = false;
  // it1: A(100) + B(100) = 200 (C(200) does not fit the remaining 56) -> 21 ms; it2: A, B decode + C 200 -> 21.2 ms.
  const std::vector<sim::Request> reqs{req(0, 0, 100, 2), req(1, 0, 100, 2), req(2, 0, 200, 1)};
  const auto r = sim::run_serving(reqs, setup_for(e, 10000), simple_cost());
  REQUIRE(r.valid());
  CHECK(r.requests[0].ttft_s == doctest::Approx(21 * ms));
  CHECK(r.requests[2].ttft_s == doctest::Approx(42.2 * ms));
  CHECK(r.requests[0].e2e_s == doctest::Approx(42.2 * ms));

  // A prompt over the budget can never run: an infeasible result, not a hang.
  const auto bad = sim::run_serving({req(0, 0, 300, 2)}, setup_for(e, 10000), simple_cost());
  REQUIRE_FALSE(bad.valid());
  CHECK(bad.problems[0].find("--chunked-prefill") != std::string::npos);
}

TEST_CASE("vllm: when KV blocks run out the newest running request is preempted and recomputed") {
  sim::EngineProfile e = sim::engine_profile(sim::Framework::Vllm);
  e.max_batched_tokens = 2048;
  // 4 blocks of 16 tokens. A and B (30 in, 10 out) prefill together (2 blocks each); at their 33rd token A
  // needs a third block: B (the newest) is preempted. A finishes alone; B then recomputes its 33 tokens.
  //  it1 7.0 | it2 8.2 | it3 9.4 | it4 (B preempted) 10.5 | A alone to gen 10: 17.1 | B recompute 33 -> 21.4 |
  //  B decodes 6 x 1.1 -> 28.0
  const std::vector<sim::Request> reqs{req(0, 0, 30, 10), req(1, 0, 30, 10)};
  const auto r = sim::run_serving(reqs, setup_for(e, 64), simple_cost());
  REQUIRE(r.valid());
  CHECK(r.preemptions == 1);
  CHECK(r.requests[0].preemptions == 0);
  CHECK(r.requests[1].preemptions == 1);
  CHECK(r.requests[0].e2e_s == doctest::Approx(17.1 * ms));
  CHECK(r.requests[1].ttft_s == doctest::Approx(7.0 * ms));
  CHECK(r.requests[1].e2e_s == doctest::Approx(28.0 * ms));
  CHECK(r.kv_peak_utilization == doctest::Approx(1.0));

  // A request that cannot fit even alone is infeasible.
  const auto bad = sim::run_serving({req(0, 0, 60, 10)}, setup_for(e, 64), simple_cost());
  REQUIRE_FALSE(bad.valid());
  CHECK(bad.problems[0].find("cannot fit the KV cache") != std::string::npos);
}

TEST_CASE("vllm V0: prompts are admitted by their own blocks, and a sequence out of blocks preempts the newest") {
  // 6 blocks of 16 tokens; A and B (32 + 40 tokens each) at t = 0. TGI's rule reserves 5 blocks each (72
  // tokens): only A is admitted, B waits for A to finish. vLLM V0 needs only the 2 prompt blocks of each (the
  // watermark, int(0.01 x 6) = 0 blocks, keeps none back): both are prefilled together, it1 [0, 7.4 ms]
  // (1 + 6.4 ms), both first tokens. Each decode step adds a token; after 16 steps (computed 48 of 3 blocks
  // each) A needs a 4th block, none is free: B, the newest, is preempted and later recomputed.
  const std::vector<sim::Request> reqs{req(0, 0, 32, 40), req(1, 0, 32, 40)};
  sim::EngineProfile v0 = sim::released_profile(sim::Framework::Vllm, Version{0, 5, 4});
  v0.iteration_overhead_s = 0;
  v0.iteration_overhead_per_seq_s = 0;
  v0.kv_block_tokens = 16;
  const auto r = sim::run_serving(reqs, setup_for(v0, 96), simple_cost());
  REQUIRE(r.valid());
  CHECK(r.requests[0].ttft_s == doctest::Approx(7.4 * ms));
  CHECK(r.requests[1].ttft_s == doctest::Approx(7.4 * ms));
  CHECK(r.preemptions >= 1);
  CHECK(r.requests[1].preemptions >= 1);
  CHECK(r.requests[0].preemptions == 0);
  CHECK(r.completed == 2);

  sim::EngineProfile tgi = sim::engine_profile(sim::Framework::Tgi);
  tgi.kv_block_tokens = 16;
  const auto t = sim::run_serving(reqs, setup_for(tgi, 96), simple_cost());
  REQUIRE(t.valid());
  CHECK(t.preemptions == 0);
  CHECK(t.requests[1].ttft_s > t.requests[0].e2e_s);  // B starts after A's reservation is released
}

TEST_CASE("vLLM V0 multi-step: a request arriving during a decode run waits for its end") {
  // A (10 in, 20 out) at t = 0, B (10 in, 5 out) at 2.5 ms; 1 ms + 0.1 ms per token, no host work.
  //  it1 [0, 2.0]: A's prefill (10 tokens) -> A's first token. The scheduler at 2.0 sees no one waiting.
  //  One step per call: it2 [2.0, 3.1] decodes A; at 3.1 B is waiting -> it3 [3.1, 5.1] B's prefill:
  //  B's TTFT 5.1 - 2.5 = 2.6 ms.
  //  Four steps per call (LLMEngine.step skips the scheduler while the run has steps left): A's decode run
  //  [2.0, 6.4] (4 x 1.1 ms), then B's prefill [6.4, 8.4]: TTFT 8.4 - 2.5 = 5.9 ms.
  const std::vector<sim::Request> reqs{req(0, 0, 10, 20), req(1, 0.0025, 10, 5)};
  sim::EngineProfile v0 = sim::released_profile(sim::Framework::Vllm, Version{0, 6, 0});
  v0.iteration_overhead_s = 0;
  REQUIRE(v0.multi_step_scheduling);
  const auto one = sim::run_serving(reqs, setup_for(v0, 10000), simple_cost());
  REQUIRE(one.valid());
  CHECK(one.requests[1].ttft_s == doctest::Approx(2.6 * ms));
  v0.scheduler_steps = 4;
  const auto four = sim::run_serving(reqs, setup_for(v0, 10000), simple_cost());
  REQUIRE(four.valid());
  CHECK(four.requests[0].ttft_s == doctest::Approx(2.0 * ms));
  CHECK(four.requests[1].ttft_s == doctest::Approx(5.9 * ms));
  CHECK(four.completed == 2);
  // The rule: multi-step is V0's (V1, LMDeploy and a chunked V0 are refused, naming the flag).
  CHECK_FALSE(sim::scheduler_steps_problem(v0).has_value());
  sim::EngineProfile v1 = sim::engine_profile(sim::Framework::Vllm);
  v1.scheduler_steps = 10;
  REQUIRE(sim::scheduler_steps_problem(v1).has_value());
  CHECK(sim::scheduler_steps_problem(v1)->find("10 scheduler steps: multi-step scheduling is vLLM's V0 engine's") !=
        std::string::npos);
  sim::EngineProfile lmd = sim::engine_profile(sim::Framework::LmDeploy);
  lmd.scheduler_steps = 2;
  CHECK(sim::scheduler_steps_problem(lmd).has_value());
  v0.chunked_prefill = true;
  CHECK(sim::scheduler_steps_problem(v0).has_value());
}

TEST_CASE("static batching: padded batch, prefill then decode until the longest output, then the next batch") {
  sim::EngineProfile e = sim::static_engine_profile();
  e.max_num_seqs = 2;
  // Batch 1 = A(100, 3), B(50, 1) padded to 100: prefill 200 tokens 21 ms, two decodes of 2 -> 23.4 ms,
  // both returned then. Batch 2 = C(200, 2): prefill 21 ms -> 44.4, one decode -> 45.5.
  const std::vector<sim::Request> reqs{req(0, 0, 100, 3), req(1, 0, 50, 1), req(2, 0, 200, 2)};
  const auto r = sim::run_serving(reqs, setup_for(e, 100000), simple_cost());
  REQUIRE(r.valid());
  CHECK(r.requests[0].ttft_s == doctest::Approx(21 * ms));
  CHECK(r.requests[0].e2e_s == doctest::Approx(23.4 * ms));
  CHECK(r.requests[0].tpot_s == doctest::Approx(1.2 * ms));
  CHECK(r.requests[1].ttft_s == doctest::Approx(21 * ms));
  CHECK(r.requests[1].e2e_s == doctest::Approx(23.4 * ms));
  CHECK(r.requests[2].queue_s == doctest::Approx(23.4 * ms));
  CHECK(r.requests[2].ttft_s == doctest::Approx(44.4 * ms));
  CHECK(r.requests[2].e2e_s == doctest::Approx(45.5 * ms));
  CHECK(r.iterations == 5);

  // The KV cache bounds the batch: 2 x (100 + 3) tokens do not fit 205, so A runs alone.
  const auto small = sim::run_serving(reqs, setup_for(e, 205), simple_cost());
  REQUIRE(small.valid());
  CHECK(small.requests[0].e2e_s == doctest::Approx((11 + 1.1 + 1.1) * ms));
}

TEST_CASE("tgi: a waiting request pauses the running batch for its own prefill when waiting/running >= ratio") {
  const sim::EngineProfile e = sim::engine_profile(sim::Framework::Tgi);
  // A(10, 5) at 0: prefill 2 ms. B(10, 2) arrives at 0.5 ms; at 2 ms floor(1 x 1.2) = 1 <= 1 waiting: B is
  // prefilled alone (A paused) -> 4 ms; then A+B decode -> 5.2 (B done), A alone 6.3, 7.4, 8.5.
  const std::vector<sim::Request> reqs{req(0, 0, 10, 5), req(1, 0.0005, 10, 2)};
  const auto r = sim::run_serving(reqs, setup_for(e, 10000), simple_cost());
  REQUIRE(r.valid());
  CHECK(r.requests[1].ttft_s == doctest::Approx(3.5 * ms));
  CHECK(r.requests[1].e2e_s == doctest::Approx(4.7 * ms));
  CHECK(r.requests[0].e2e_s == doctest::Approx(8.5 * ms));
  CHECK(r.preemptions == 0);
}

TEST_CASE("every engine completes a mixed stream; reserving engines never preempt") {
  sim::StreamSpec spec;
  spec.kind = sim::ArrivalKind::Poisson;
  spec.requests = 300;
  spec.rate = 40;
  spec.input = sim::parse_length_dist("uniform:20-400", "--input-dist");
  spec.output = sim::parse_length_dist("lognormal:60,40", "--output-dist");
  spec.seed = 7;
  const auto reqs = sim::generate_requests(spec);
  for (const auto f : {sim::Framework::Hf, sim::Framework::Vllm, sim::Framework::Tgi, sim::Framework::LightLlm,
                       sim::Framework::TrtLlm, sim::Framework::FasterTransformer}) {
    CAPTURE(sim::name_of(f));
    const auto r = sim::run_serving(reqs, setup_for(sim::engine_profile(f), 6000), simple_cost());
    REQUIRE(r.valid());
    CHECK(r.completed == 300);
    CHECK(r.kv_peak_utilization <= 1.0 + 1e-12);
    for (const auto& m : r.requests) {
      CHECK(m.ttft_s >= m.queue_s);
      CHECK(m.e2e_s >= m.ttft_s);
    }
    if (f == sim::Framework::Tgi || f == sim::Framework::TrtLlm || f == sim::Framework::LightLlm ||
        f == sim::Framework::FasterTransformer)
      CHECK(r.preemptions == 0);
  }
}

TEST_CASE("closed loop: a client sends its next request when the previous one completes") {
  sim::EngineProfile e = sim::engine_profile(sim::Framework::Vllm);
  sim::ServingSetup s = setup_for(e, 10000);
  s.closed_loop = true;
  s.concurrency = 1;
  // One client: prefill 10 (2 ms) + 1 decode (1.1 ms) per request, back to back.
  const std::vector<sim::Request> reqs{req(0, 0, 10, 2), req(1, 0, 10, 2), req(2, 0, 10, 2)};
  const auto r = sim::run_serving(reqs, s, simple_cost());
  REQUIRE(r.valid());
  CHECK(r.requests[1].arrival_s == doctest::Approx(3.1 * ms));
  CHECK(r.requests[2].finish_s == doctest::Approx(9.3 * ms));
  CHECK(r.requests[2].queue_s == doctest::Approx(0));
}

TEST_CASE("replicas get requests round-robin; SLO goodput counts requests meeting both bounds") {
  sim::EngineProfile e = sim::engine_profile(sim::Framework::Vllm);
  sim::ServingSetup s = setup_for(e, 10000);
  s.replicas = 2;
  s.slo_ttft_s = 2.5 * ms;
  // Requests 0 and 2 go to replica 0 (prefilled together, 3 ms), 1 to replica 1 (2 ms).
  const std::vector<sim::Request> reqs{req(0, 0, 10, 1), req(1, 0, 10, 1), req(2, 0, 10, 1)};
  const auto r = sim::run_serving(reqs, s, simple_cost());
  REQUIRE(r.valid());
  CHECK(r.requests[0].replica == 0);
  CHECK(r.requests[1].replica == 1);
  CHECK(r.requests[2].replica == 0);
  CHECK(r.requests[1].ttft_s == doctest::Approx(2 * ms));
  CHECK(r.requests[2].ttft_s == doctest::Approx(3 * ms));
  CHECK(r.slo_fraction == doctest::Approx(1.0 / 3));
  CHECK(r.goodput_rps == doctest::Approx(1 / (3 * ms)));
}

TEST_CASE("request streams: seeds reproduce, distributions have their means") {
  sim::StreamSpec spec;
  spec.kind = sim::ArrivalKind::Poisson;
  spec.requests = 20000;
  spec.rate = 10;
  spec.input = sim::parse_length_dist("lognormal:512,256", "--input-dist");
  spec.output = sim::parse_length_dist("uniform:100-900", "--output-dist");
  spec.seed = 42;
  const auto a = sim::generate_requests(spec);
  const auto b = sim::generate_requests(spec);
  REQUIRE(a.size() == 20000);
  bool same = true;
  for (std::size_t i = 0; i < a.size(); ++i)
    same = same && a[i].arrival_s == b[i].arrival_s && a[i].input_tokens == b[i].input_tokens &&
           a[i].output_tokens == b[i].output_tokens;
  CHECK(same);
  spec.seed = 43;
  const auto c = sim::generate_requests(spec);
  CHECK(c[5].input_tokens + c[6].input_tokens + c[7].input_tokens !=
        a[5].input_tokens + a[6].input_tokens + a[7].input_tokens);

  double in = 0, out = 0, in2 = 0;
  std::int64_t out_min = 1 << 30, out_max = 0;
  for (const auto& r : a) {
    in += static_cast<double>(r.input_tokens);
    in2 += static_cast<double>(r.input_tokens) * static_cast<double>(r.input_tokens);
    out += static_cast<double>(r.output_tokens);
    out_min = std::min(out_min, r.output_tokens);
    out_max = std::max(out_max, r.output_tokens);
  }
  const double n = static_cast<double>(a.size());
  CHECK(in / n == doctest::Approx(512).epsilon(0.02));
  CHECK(std::sqrt(in2 / n - (in / n) * (in / n)) == doctest::Approx(256).epsilon(0.05));
  CHECK(out / n == doctest::Approx(500).epsilon(0.02));
  CHECK(out_min >= 100);
  CHECK(out_max <= 900);
  // Poisson at 10/s: mean gap 0.1 s.
  CHECK(a.back().arrival_s / (n - 1) == doctest::Approx(0.1).epsilon(0.02));

  // The transforms are our own, so the first draws are fixed numbers on every platform.
  sim::Rng rng(1);
  const double u = rng.uniform();
  CHECK(u == doctest::Approx(static_cast<double>(std::mt19937_64(1)() >> 11) * 0x1.0p-53));

  spec.kind = sim::ArrivalKind::Constant;
  spec.requests = 3;
  const auto k = sim::generate_requests(spec);
  CHECK(k[2].arrival_s == doctest::Approx(0.2));
}

TEST_CASE("length distribution flags: forms and errors") {
  CHECK(sim::parse_length_dist("512", "--input-dist").kind == sim::LengthKind::Fixed);
  const auto u = sim::parse_length_dist("uniform:10-20", "--input-dist");
  CHECK(u.a == 10);
  CHECK(u.b == 20);
  const auto e1 = error_of([] { sim::parse_length_dist("uniform:20-10", "--input-dist"); });
  CHECK(e1.kind() == ErrorKind::Usage);
  CHECK(std::string(e1.what()).find("MIN <= MAX") != std::string::npos);
  const auto e2 = error_of([] { sim::parse_length_dist("gauss:5,1", "--output-dist"); });
  CHECK(std::string(e2.what()).find("--output-dist") != std::string::npos);
  CHECK(error_of([] { sim::parse_length_dist("lognormal:abc,1", "--x"); }).kind() == ErrorKind::Usage);
  // Non-finite numbers break the length rule; they are not names of length samples.
  for (const char* bad : {"nan", "inf", "-inf", "1e400"})
    CHECK(error_of([&] { sim::parse_length_dist(bad, "--input-dist"); }).kind() == ErrorKind::Usage);
}

TEST_CASE("trace files: rows, sorting, and errors naming file:line, column and value") {
  const auto ok =
      write_temp("trace-ok.csv", "arrival_s,input_tokens,output_tokens\n0.5,100,20\n# comment\n0.1,50,10\n\n");
  const auto t = sim::read_trace_csv(ok);
  REQUIRE(t.requests.size() == 2);
  CHECK_FALSE(t.was_sorted);
  CHECK(t.note.find("sorted") != std::string::npos);
  CHECK(t.requests[0].arrival_s == doctest::Approx(0.1));
  CHECK(t.requests[0].id == 0);
  CHECK(t.requests[1].input_tokens == 100);

  const auto bad_num = write_temp("trace-num.csv", "arrival_s,input_tokens,output_tokens\n0,100,20\n1.0,12x,5\n");
  const auto e1 = error_of([&] { sim::read_trace_csv(bad_num); });
  CHECK(e1.kind() == ErrorKind::Input);
  CHECK(std::string(e1.what()).find("trace-num.csv:3:5") != std::string::npos);
  CHECK(std::string(e1.what()).find("input_tokens = '12x'") != std::string::npos);

  const auto neg = write_temp("trace-neg.csv", "arrival_s,input_tokens,output_tokens\n-1,100,20\n");
  CHECK(std::string(error_of([&] { sim::read_trace_csv(neg); }).what()).find("trace-neg.csv:2:1") != std::string::npos);
  const auto zero = write_temp("trace-zero.csv", "arrival_s,input_tokens,output_tokens\n1,100,0\n");
  CHECK(std::string(error_of([&] { sim::read_trace_csv(zero); }).what()).find("output_tokens = '0'") !=
        std::string::npos);
  const auto header = write_temp("trace-hdr.csv", "t,in,out\n1,2,3\n");
  CHECK(std::string(error_of([&] { sim::read_trace_csv(header); }).what()).find("trace-hdr.csv:1") !=
        std::string::npos);
  const auto fields = write_temp("trace-fields.csv", "arrival_s,input_tokens,output_tokens\n1,2\n");
  CHECK(std::string(error_of([&] { sim::read_trace_csv(fields); }).what()).find("expected 3 fields") !=
        std::string::npos);
  CHECK(error_of([] { sim::read_trace_csv("/nonexistent/trace.csv"); }).kind() == ErrorKind::NotFound);
}

TEST_CASE("full model: llama2-7b on an A800 under vLLM — KV sizing, throughput, static is slower") {
  const auto m = preset_model("llama2-7b");
  const auto sys = preset_system("a800-nvlink");
  sim::RunSpec run;
  run.workload = sim::Workload::Inference;
  run.infer.framework = sim::Framework::Vllm;
  sim::StreamSpec spec;
  spec.kind = sim::ArrivalKind::Burst;
  spec.requests = 400;
  spec.input = sim::parse_length_dist("512", "--input-len");
  spec.output = sim::parse_length_dist("128", "--output-len");
  const auto reqs = sim::generate_requests(spec);

  sim::ServingConfig cfg;
  cfg.engine = sim::serving_profile(sim::Framework::Vllm, sys);
  CHECK(cfg.engine.max_batched_tokens == 8192);  // 80 GiB, not an A100: vLLM's large-GPU defaults
  const auto v = sim::simulate_serving(m, sys, run, cfg, reqs);
  REQUIRE(v.valid());
  // 0.9 x 80 GiB - 12.55 GiB weights - workspace - context, at 0.5 MiB per token: ~110k tokens.
  CHECK(v.kv_bytes_per_token == doctest::Approx(524288));
  CHECK(v.kv_capacity_tokens > 100000);
  CHECK(v.kv_capacity_tokens < 125000);
  CHECK(v.kv_capacity_tokens % 16 == 0);
  CHECK(v.completed == 400);
  CHECK(v.time_ratio_low < 1);
  CHECK(v.time_ratio_high > 1);
  CHECK(v.output_tokens_per_s.low < v.output_tokens_per_s.value);
  CHECK(v.output_tokens_per_s.high > v.output_tokens_per_s.value);
  CHECK(v.mean_batch > 100);

  run.infer.framework = sim::Framework::Hf;
  cfg.engine = sim::serving_profile(sim::Framework::Hf, sys);
  const auto s = sim::simulate_serving(m, sys, run, cfg, reqs);
  REQUIRE(s.valid());
  CHECK(s.output_tokens_per_s.value < v.output_tokens_per_s.value);

  // Two GPUs at tp 1: two replicas, about twice the throughput.
  run.infer.framework = sim::Framework::Vllm;
  run.par.gpus = 2;
  cfg.engine = sim::serving_profile(sim::Framework::Vllm, sys);
  const auto two = sim::simulate_serving(m, sys, run, cfg, reqs);
  REQUIRE(two.valid());
  CHECK(two.replicas == 2);
  CHECK(two.output_tokens_per_s.value > 1.5 * v.output_tokens_per_s.value);
}

TEST_CASE("lmdeploy: TurboMind's profile, its release rules and its KV cache sizing (InternLM/lmdeploy)") {
  using sim::Framework;
  const auto v = [](const char* s) { return parse_version(s); };
  // Current (@1263d5cd, v0.16): 0.8 of the free memory, 64-token blocks, 8192-token budget, a chunked
  // prefill, KV grown as needed (no reservation), a C++ loop without CUDA graphs.
  const auto& cur = sim::engine_profile(Framework::LmDeploy);
  CHECK(cur.name == "lmdeploy");
  CHECK(cur.gpu_memory_utilization == 0.8);
  CHECK(cur.utilization_of_free_memory);
  CHECK_FALSE(cur.kv_share_of_device);
  CHECK(cur.kv_block_tokens == 64);
  CHECK(cur.max_batched_tokens == 8192);
  CHECK(cur.chunked_prefill);
  CHECK_FALSE(cur.reserve_full_output);
  CHECK_FALSE(cur.cuda_graphs);
  CHECK_FALSE(cur.python_dispatch);
  // v0.1.0 / v0.2.0: 0.5 of the whole device, 128-token blocks, a budget of session_len (the template's
  // context + 8: 4096 + 8 for Llama-2), config.ini's max_batch_size 64.
  const auto old = sim::released_profile(Framework::LmDeploy, v("0.2.0"), 4096);
  CHECK(old.kv_share_of_device);
  CHECK(old.gpu_memory_utilization == 0.5);
  CHECK(old.kv_block_tokens == 128);
  CHECK(old.max_batched_tokens == 4104);
  CHECK(old.max_num_seqs == 64);
  const auto v022 = sim::released_profile(Framework::LmDeploy, v("0.2.2"), 4096);
  CHECK_FALSE(v022.kv_share_of_device);
  CHECK(v022.utilization_of_free_memory);
  CHECK(v022.max_batched_tokens == 4104);
  CHECK(sim::released_profile(Framework::LmDeploy, v("0.2.5"), 4096).max_batched_tokens == 8192);
  CHECK(sim::released_profile(Framework::LmDeploy, v("0.2.6"), 4096).kv_block_tokens == 128);
  CHECK(sim::released_profile(Framework::LmDeploy, v("0.3.0"), 4096).kv_block_tokens == 64);
  CHECK(sim::released_profile(Framework::LmDeploy, v("0.2.4"), 4096).max_num_seqs == 128);
  // max_batch_size by device name (lmdeploy/utils.py get_max_batch_size), from 0.6.0; 0.10.0 raised it.
  const auto a100 = preset_system("dgx-a100-80gb");
  const auto h100 = preset_system("dgx-h100");
  CHECK(sim::serving_profile(Framework::LmDeploy, a100).max_num_seqs == 384);
  CHECK(sim::serving_profile(Framework::LmDeploy, h100).max_num_seqs == 1024);
  CHECK(sim::serving_profile(Framework::LmDeploy, a100, v("0.6.0")).max_num_seqs == 256);
  CHECK(sim::serving_profile(Framework::LmDeploy, h100, v("0.9.0")).max_num_seqs == 512);
  CHECK(sim::serving_profile(Framework::LmDeploy, preset_system("l40s-pcie")).max_num_seqs == 128);
  CHECK(sim::serving_profile(Framework::LmDeploy, a100, v("0.2.0")).max_num_seqs == 64);

  // KV sizing on one A100-80GB, llama2-7b (0.5 MiB of KV per token): 0.5 x 80 GiB = 40 GiB = 81,920 tokens
  // whatever the 12.55 GiB of weights take; 1,000 configured blocks of 128 tokens = 128,000 tokens.
  const auto m = preset_model("llama2-7b");
  sim::RunSpec run;
  run.workload = sim::Workload::Inference;
  run.infer.framework = Framework::LmDeploy;
  sim::StreamSpec spec;
  spec.requests = 8;
  const auto reqs = sim::generate_requests(spec);
  sim::ServingConfig cfg;
  cfg.engine = sim::serving_profile(Framework::LmDeploy, a100, v("0.1.0"), 4096);
  const auto share = sim::simulate_serving(m, a100, run, cfg, reqs);
  REQUIRE(share.valid());
  CHECK(share.kv_capacity_tokens == 81920);
  cfg.engine.kv_cache_blocks = 1000;
  const auto blocks = sim::simulate_serving(m, a100, run, cfg, reqs);
  REQUIRE(blocks.valid());
  CHECK(blocks.kv_capacity_tokens == 128000);
  // 4,000 blocks (512,000 tokens, 250 GiB) cannot sit beside the weights: infeasible with the reason.
  cfg.engine.kv_cache_blocks = 4000;
  const auto too_many = sim::simulate_serving(m, a100, run, cfg, reqs);
  REQUIRE_FALSE(too_many.valid());
  CHECK(too_many.problems.front().find("4000 blocks of 128 tokens") != std::string::npos);
  // A share of the device that leaves the weights no room: llama2-70b at TP1 (128 GiB of weights).
  cfg.engine.kv_cache_blocks = 0;
  const auto big = sim::simulate_serving(preset_model("llama2-70b"), a100, run, cfg, reqs);
  REQUIRE_FALSE(big.valid());
  CHECK(big.problems.front().find("0.50 of the device") != std::string::npos);
}

TEST_CASE("full model: requests beyond the context are rejected and the rest served; no room for KV is infeasible") {
  const auto m = preset_model("llama2-7b");
  sim::RunSpec run;
  sim::ServingConfig cfg;
  cfg.engine = sim::engine_profile(sim::Framework::Vllm);
  const auto sys = preset_system("a800-nvlink");
  // One request of 4,200 tokens among three: the engine rejects it (4,096-token context) and serves two.
  const auto mixed =
      sim::simulate_serving(m, sys, run, cfg, {req(0, 0, 100, 10), req(1, 0.01, 4000, 200), req(2, 0.02, 100, 10)});
  REQUIRE(mixed.valid());
  CHECK(mixed.completed == 2);
  CHECK(mixed.rejected == 1);
  bool named = false;
  for (const auto& n : mixed.notes) named = named || n.find("request 1, 4000 + 200 tokens") != std::string::npos;
  CHECK(named);
  // Every request too long: nothing to serve, infeasible with the reason.
  const auto none = sim::simulate_serving(m, sys, run, cfg, {req(0, 0, 4000, 200)});
  REQUIRE_FALSE(none.valid());
  CHECK(none.problems.back().find("maximum context of 4096") != std::string::npos);

  const auto big = preset_model("llama2-70b");
  const auto r = sim::simulate_serving(big, sys, run, cfg, {req(0, 0, 100, 10)});
  REQUIRE_FALSE(r.valid());
  CHECK(r.problems[0].find("no memory left for the KV cache") != std::string::npos);
}

TEST_CASE("inter-token latency is over tokens, TPOT over requests (hand-checked)") {
  // Two requests at t = 0, prompts of 10, replies of 2 and 5 tokens; 1 ms + 0.1 ms per token per iteration.
  // Iteration 1 prefills both (20 tokens, 3 ms): first tokens at 3 ms. Decodes of both: 1.2 ms (4.2 ms:
  // request 0 done). Request 1 alone: 1.1 ms each (5.3, 6.4, 7.5 ms). Gaps: 1.2 | 1.2, 1.1, 1.1, 1.1.
  auto e = sim::engine_profile(sim::Framework::Vllm);
  e.max_batched_tokens = 8192;
  e.chunked_prefill = true;
  const auto r = sim::run_serving({req(0, 0, 10, 2), req(1, 0, 10, 5)}, setup_for(e, 100000), simple_cost());
  REQUIRE(r.completed == 2);
  CHECK(r.requests[1].e2e_s == doctest::Approx(7.5 * ms));
  CHECK(r.itl.mean == doctest::Approx(5.7 / 5 * ms));               // token-weighted
  CHECK(r.tpot.mean == doctest::Approx((1.2 + 4.5 / 4) / 2 * ms));  // request-weighted: 1.1625 ms
  CHECK(r.itl.p50 == doctest::Approx(1.1 * ms).epsilon(0.025));     // histogram percentile, within a bin
  CHECK(r.itl.max == doctest::Approx(1.2 * ms));
  // Equal requests: the two means agree.
  const auto same = sim::run_serving({req(0, 0, 10, 4), req(1, 0, 10, 4)}, setup_for(e, 100000), simple_cost());
  CHECK(same.itl.mean == doctest::Approx(same.tpot.mean));
}

TEST_CASE("token gaps: exact mean, percentiles within one histogram bin") {
  sim::TokenGaps g;
  CHECK(g.percentile(0.5) == 0);
  for (int i = 1; i <= 1000; ++i) g.add(i * 1e-3);  // 1 ms .. 1 s
  CHECK(g.count() == 1000);
  CHECK(g.mean() == doctest::Approx(0.5005));
  CHECK(g.max() == doctest::Approx(1.0));
  CHECK(g.percentile(0.5) == doctest::Approx(0.5).epsilon(0.025));
  CHECK(g.percentile(0.99) == doctest::Approx(0.99).epsilon(0.025));
  CHECK(g.percentile(1.0) <= 1.0);
  g.add(0);  // a zero gap lands in the first bin
  CHECK(g.count() == 1001);
}

TEST_CASE("max_model_len: the engine's served context refuses longer requests and sizes vLLM V0's budget") {
  sim::InferSpec in;
  CHECK(sim::served_context(4096, in) == 4096);  // unset: the model's
  in.max_model_len = 2000;
  CHECK(sim::served_context(4096, in) == 2000);
  CHECK(sim::served_context(1024, in) == 1024);  // never beyond the model's
  CHECK(sim::served_context(0, in) == 2000);     // a model without a limit
  CHECK(sim::context_is_engines(4096, in));      // messages name whose limit refused a request
  CHECK(sim::context_is_engines(0, in));
  CHECK_FALSE(sim::context_is_engines(1024, in));
  const auto v0 = sim::released_profile(sim::Framework::Vllm, Version{0, 5, 4}, sim::served_context(131072, in));
  CHECK(v0.max_batched_tokens == 2048);  // max(max_model_len, 2048)

  const auto m = preset_model("llama2-7b");
  const auto sys = preset_system("a800-nvlink");
  sim::RunSpec run;
  run.infer.max_model_len = 2000;
  sim::ServingConfig cfg;
  cfg.engine = sim::engine_profile(sim::Framework::Vllm);
  const auto r = sim::simulate_serving(m, sys, run, cfg, {req(0, 0, 100, 10), req(1, 0.01, 1500, 600)});
  REQUIRE(r.valid());
  CHECK(r.completed == 1);
  CHECK(r.rejected == 1);
  bool named = false;
  for (const auto& n : r.notes) named = named || n.find("the engine's maximum context of 2000") != std::string::npos;
  CHECK(named);
  run.infer.max_model_len = 0;  // the model's 4,096: both served
  CHECK(sim::simulate_serving(m, sys, run, cfg, {req(0, 0, 100, 10), req(1, 0.01, 1500, 600)}).completed == 2);
}

TEST_CASE("a sliding window over every layer caps a sequence's KV blocks (vLLM block_sliding_window)") {
  // Two requests of 6,000 + 10 tokens, a cache of 8,192 tokens in blocks of 16. Holding every token (376
  // blocks each of 512) they cannot run together: the newer is preempted and recomputed. With a 4,096
  // window each holds at most 256 blocks: both fit, nothing is preempted, and they finish sooner.
  auto e = sim::engine_profile(sim::Framework::Vllm);
  const std::vector<sim::Request> reqs{req(0, 0, 6000, 10), req(1, 0, 6000, 10)};
  auto full_setup = setup_for(e, 8192);
  const auto full = sim::run_serving(reqs, full_setup, simple_cost());
  auto windowed_setup = setup_for(e, 8192);
  windowed_setup.kv_window = sim::KvWindow{.window = 4096, .windowed = 32, .layers = 32};
  const auto windowed = sim::run_serving(reqs, windowed_setup, simple_cost());
  REQUIRE(full.completed == 2);
  REQUIRE(windowed.completed == 2);
  CHECK(windowed.preemptions == 0);
  CHECK(windowed.duration_s < full.duration_s);
  CHECK(windowed.kv_peak_utilization <= 1.0);
  // A request that alone needs more than the cache is refused without the window, served with it.
  const std::vector<sim::Request> big{req(0, 0, 9000, 10)};
  CHECK_FALSE(sim::run_serving(big, full_setup, simple_cost()).valid());
  CHECK(sim::run_serving(big, windowed_setup, simple_cost()).completed == 1);
  // The profiles that honour it: vLLM and TensorRT-LLM; TGI keeps every token.
  CHECK(sim::engine_profile(sim::Framework::TrtLlm).sliding_window_kv);
  CHECK_FALSE(sim::engine_profile(sim::Framework::Tgi).sliding_window_kv);
}

TEST_CASE("memory, infer and serve count an inference model's weights by one rule") {
  // model::inference_weight_bytes: projections in their weight format (unquantized: the activation dtype,
  // bf16 under --precision fp8), the embeddings, LM head and norms in the activation dtype. Llama-3-8B has
  // 6.98e9 projection and 1.05e9 other parameters.
  const auto m = llmsim::test::preset_model("llama3-8b");
  const auto sys = llmsim::test::preset_system("hgx-h200");
  const auto reqs = sim::generate_requests([] {
    sim::StreamSpec spec;
    spec.kind = sim::ArrivalKind::Burst;
    spec.requests = 8;
    spec.input = sim::parse_length_dist("128", "--input-len");
    spec.output = sim::parse_length_dist("16", "--output-len");
    return spec;
  }());
  const auto weights_of = [&](DType precision, llmsim::model::WeightQuant q) {
    sim::RunSpec run;
    run.workload = sim::Workload::Inference;
    run.infer.framework = sim::Framework::Vllm;
    run.infer.precision = precision;
    run.infer.weight_quant = q;
    run.infer.batch = 1;
    run.infer.input_len = 128;
    run.infer.output_len = 16;
    double memory = 0;
    for (const auto& i : sim::evaluate_memory(m, sys, run).gpu)
      if (i.kind == sim::MemoryKind::Weights) memory += i.bytes;
    const double infer = sim::IterationCostModel(m, sys, run.par, run.infer).weight_bytes_per_gpu();
    sim::ServingConfig cfg;
    cfg.engine = sim::serving_profile(sim::Framework::Vllm, sys);
    const auto served = sim::simulate_serving(m, sys, run, cfg, reqs);
    REQUIRE(served.valid());
    CHECK(memory == doctest::Approx(infer));
    CHECK(served.weight_bytes == doctest::Approx(infer));
    return memory;
  };
  const double bf16 = weights_of(DType::BF16, llmsim::model::WeightQuant::None);
  CHECK(bf16 == doctest::Approx(2.0 * 8.03e9).epsilon(0.01));
  // --precision fp8 alone changes no weight: FP8 weights are a weight format (it was 1 B for every weight in
  // memory and 2 B in serve before 2026-12-06).
  CHECK(weights_of(DType::FP8, llmsim::model::WeightQuant::None) == doctest::Approx(bf16));
  const double fp8 = weights_of(DType::BF16, llmsim::model::WeightQuant::Fp8);
  CHECK(fp8 == doctest::Approx(1.0 * 6.98e9 + 2.0 * 1.05e9).epsilon(0.01));
  CHECK(weights_of(DType::FP8, llmsim::model::WeightQuant::Fp8) == doctest::Approx(fp8));
}

TEST_CASE("memory and the iteration cost count multi-head latent attention's replicated down projections alike") {
  // DeepSeek's q_a_proj and kv_a_proj_with_mqa are replicated on every TP rank (their outputs are latents): at
  // TP8 a rank holds all of them, (7168 x (1536 + 512 + 64)) x 61 layers = 923.5e6 parameters, not an eighth.
  const auto m = llmsim::test::preset_model(std::string(LLMSIM_TEST_DATA_DIR) + "/models/deepseek-r1/config.json");
  const auto sys = llmsim::test::preset_system("hgx-h200");
  sim::RunSpec run;
  run.workload = sim::Workload::Inference;
  run.par.gpus = 8;
  run.par.tp = 8;
  run.infer.framework = sim::Framework::Sglang;
  run.infer.weight_quant = llmsim::model::WeightQuant::Fp8;
  run.infer.batch = 1;
  run.infer.input_len = 128;
  run.infer.output_len = 16;
  run = sim::with_defaults(run);
  double memory = 0;
  for (const auto& i : sim::evaluate_memory(m, sys, run).gpu)
    if (i.kind == sim::MemoryKind::Weights) memory += i.bytes;
  CHECK(memory == doctest::Approx(sim::IterationCostModel(m, sys, run.par, run.infer).weight_bytes_per_gpu()));
  CHECK(llmsim::model::replicated_mla_params(m, 8) == doctest::Approx(7168.0 * (1536 + 512 + 64) * 7 / 8));
  CHECK(llmsim::model::replicated_mla_params(m, 1) == 0);
}
