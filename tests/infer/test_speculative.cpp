// Speculative decoding's cost (infer/speculative.h, EngineIterationCost) and the fixed-batch simulator's
// tokens per step (Leviathan et al. 2023, Eq. 1), against values derived by hand.
#include <doctest/doctest.h>

#include "llmsim/infer/engine_iteration.h"
#include "llmsim/infer/infer_sim.h"
#include "llmsim/infer/speculative.h"
#include "llmsim/run/engine_profile.h"
#include "llmsim/run/feasibility.h"
#include "memory/memory_test_util.h"

using namespace llmsim;
using llmsim::test::preset_model;
using llmsim::test::preset_system;

TEST_CASE("expected tokens per verify step: (1 - a^(k+1)) / (1 - a)") {
  CHECK(sim::expected_tokens_per_step(4, 0.8) == doctest::Approx((1 - 0.32768) / 0.2));  // 3.3616
  CHECK(sim::expected_tokens_per_step(3, 0.0) == doctest::Approx(1.0));                  // only the target's own
  CHECK(sim::expected_tokens_per_step(3, 1.0) == doctest::Approx(4.0));                  // every draft kept
  CHECK(sim::expected_tokens_per_step(1, 0.85) == doctest::Approx(1.85));                // DeepSeek-V3's MTP
  CHECK(sim::expected_tokens_per_step(0, 0.9) == doctest::Approx(1.0));
}

TEST_CASE("the drafter: an EAGLE head is one dense layer of the target, an MTP module one layer as its last") {
  const auto llama = preset_model("llama3-8b");
  sim::SpeculativeSpec eagle{.method = sim::SpecMethod::Eagle, .tokens = 3, .acceptance = 0.7};
  const auto head = sim::drafter_model(llama, eagle);
  CHECK(head.num_layers == 1);
  CHECK(head.hidden == llama.hidden);
  CHECK(head.vocab == llama.vocab);  // the target's LM head
  CHECK(head.ffn_hidden == llama.ffn_hidden);
  const auto mixtral = preset_model("mixtral-8x7b");
  const auto moe_head = sim::drafter_model(mixtral, eagle);
  CHECK_FALSE(moe_head.moe.enabled());
  CHECK(moe_head.ffn_hidden == mixtral.moe.expert_ffn);
  sim::SpeculativeSpec mtp{.method = sim::SpecMethod::Mtp, .tokens = 1, .acceptance = 0.85};
  const auto module = sim::drafter_model(mixtral, mtp);
  CHECK(module.num_layers == 1);
  CHECK(module.is_moe_layer(0));
  // MTP needs the model's own module; a draft model must share the tokenizer.
  CHECK_FALSE(sim::speculative_problems(llama, mtp).empty());
  sim::SpeculativeSpec draft{.method = sim::SpecMethod::Draft, .tokens = 4, .acceptance = 0.6};
  draft.draft = std::make_shared<const model::ModelSpec>(preset_model("llama2-7b"));
  const auto why = sim::speculative_problems(llama, draft);
  REQUIRE(why.size() == 1);
  CHECK(why[0].find("share the target's tokenizer") != std::string::npos);
  CHECK(sim::speculative_problems(llama, {.method = sim::SpecMethod::Eagle}).size() == 2);  // no k, no alpha
}

TEST_CASE("a verify step costs the target over 1 + k positions plus k drafter steps, one token each") {
  const auto m = preset_model("llama3-8b");
  const auto sys = preset_system("dgx-h100");
  const auto engine = sim::engine_profile(sim::Framework::Vllm);
  sim::ParallelSpec par;
  sim::InferSpec plain;
  sim::InferSpec spec = plain;
  spec.speculative = {.method = sim::SpecMethod::Eagle, .tokens = 2, .acceptance = 0.7};
  const sim::EngineIterationCost with(m, sys, par, spec, engine);
  const sim::EngineIterationCost target(m, sys, par, plain, engine);
  const auto head = sim::drafter_model(m, spec.speculative);
  auto inside = engine;  // the drafter runs inside the engine's step: no scheduling overhead of its own
  inside.iteration_overhead_s = 0;
  inside.iteration_overhead_per_seq_s = 0;
  const sim::EngineIterationCost drafter(head, sys, par, plain, inside);
  const std::vector<sim::SequenceWork> verify(4, sim::SequenceWork{3, 1000, 2});
  const double expected = target.iteration(std::vector<sim::SequenceWork>(4, {3, 1000, 2})).time_s.value +
                          drafter.iteration(std::vector<sim::SequenceWork>(4, {1, 1000, 0})).time_s.value +
                          drafter.iteration(std::vector<sim::SequenceWork>(4, {1, 1001, 0})).time_s.value;
  CHECK(with.iteration(verify).time_s.value == doctest::Approx(expected));
  // A verify-only batch replays a graph as a decode batch does; a prefill chunk does not.
  CHECK(with.replays_graph(verify));
  CHECK_FALSE(with.replays_graph({{3, 1000, 0}}));
  // Work without draft tokens (a prefill) costs what it costs without speculation.
  CHECK(with.iteration({{512, 0, 0}}).time_s.value == doctest::Approx(target.iteration({{512, 0, 0}}).time_s.value));
}

TEST_CASE("infer: speculation pays at high acceptance, costs at none, and emits E tokens a step") {
  const auto m = preset_model("llama3-8b");
  const auto sys = preset_system("dgx-h100");
  sim::RunSpec run;
  run.workload = sim::Workload::Inference;
  run.infer.framework = sim::Framework::Vllm;
  run.infer.batch = 1;
  run.infer.input_len = 512;
  run.infer.output_len = 257;
  const auto plain = sim::simulate_inference(m, sys, run);
  REQUIRE(plain.valid());
  run.infer.speculative = {.method = sim::SpecMethod::Eagle, .tokens = 4, .acceptance = 0.8};
  const auto fast = sim::simulate_inference(m, sys, run);
  REQUIRE(fast.valid());
  CHECK(fast.tokens_per_step == doctest::Approx(3.3616));
  CHECK(fast.tpot_s.value < plain.tpot_s.value / 1.5);
  // TPOT is a step's time over the tokens it emits: the step at mid-output over E, within the context's drift.
  CHECK(fast.tpot_s.value == doctest::Approx(fast.decode_mid.time_s.value / 3.3616).epsilon(0.03));
  run.infer.speculative.acceptance = 0;
  const auto none = sim::simulate_inference(m, sys, run);
  CHECK(none.tokens_per_step == doctest::Approx(1.0));
  CHECK(none.tpot_s.value > plain.tpot_s.value);  // every step pays the drafter and a wider verify for one token
  CHECK(none.ttft_s.value == doctest::Approx(plain.ttft_s.value));  // the prefill is not speculative
}

TEST_CASE("expert imbalance: the busiest expert-parallel rank's tokens set the iteration; no effect without EP") {
  const auto m = preset_model("mixtral-8x7b");
  const auto sys = preset_system("dgx-h100");
  sim::ParallelSpec par;
  par.tp = 1;
  par.ep = 8;
  par.gpus = 8;
  const sim::InferSpec in;
  sim::ParallelSpec skewed_par = par;
  skewed_par.expert_imbalance = 2.0;
  const sim::IterationCostModel a(m, sys, par, in), b(m, sys, skewed_par, in);
  const auto prefill_a = a.uniform(8, 512, 0), prefill_b = b.uniform(8, 512, 0);
  // The routed tokens double on the busiest rank: its expert GEMMs take nearly twice as long at 4k tokens
  // (compute-bound), and so do the dispatch / combine bytes; attention and dense layers are unchanged.
  CHECK(prefill_b.linear_s.value > 1.5 * prefill_a.linear_s.value);
  CHECK(prefill_b.comm_s.value > 1.5 * prefill_a.comm_s.value);
  CHECK(prefill_b.attention_s.value == doctest::Approx(prefill_a.attention_s.value));
  // Without expert parallelism every rank holds every expert: the imbalance among experts does not wait.
  par.ep = 1;
  skewed_par.ep = 1;
  const sim::IterationCostModel c(m, sys, par, in), d(m, sys, skewed_par, in);
  CHECK(d.uniform(8, 512, 0).time_s.value == doctest::Approx(c.uniform(8, 512, 0).time_s.value));
}
