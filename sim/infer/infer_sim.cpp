#include "llmsim/infer/infer_sim.h"

#include <fmt/format.h>

#include "llmsim/cost/compute_cost.h"
#include "llmsim/infer/engine_iteration.h"
#include "llmsim/run/engine_profile.h"
#include "llmsim/run/feasibility.h"

namespace llmsim::sim {

namespace {
double dbl(std::int64_t v) { return static_cast<double>(v); }
}  // namespace

InferResult simulate_inference(const model::ModelSpec& m, const hardware::SystemSpec& sys, const RunSpec& run_in) {
  RunSpec run = with_defaults(run_in);
  run.workload = Workload::Inference;
  InferResult r;
  r.memory = evaluate_memory(m, sys, run);
  r.problems = r.memory.problems;
  for (auto& w : inference_problems(m, sys, run)) r.problems.push_back(std::move(w));
  if (!r.problems.empty()) return r;

  const EngineProfile engine =
      released_profile(run.infer.framework, run.infer.engine_version, served_context(m.max_positions, run.infer));
  r.engine = engine.name;
  const EngineIterationCost model(m, sys, run.par, run.infer, engine);
  const auto& in = run.infer;
  r.replicas = run.par.gpus / (run.par.tp * run.par.pp);

  r.prefill = model.uniform(in.batch, in.input_len, 0);
  r.ttft_s = r.prefill.time_s;
  Interval decode;
  // Each decode step verifies up to `draft` draft tokens and emits E tokens per sequence on average
  // (expected_tokens_per_step; without speculation no draft and E = 1): the batch moves E positions a step,
  // its last step verifying only what is left to generate and counting for the tokens it has left to emit.
  const auto& spec = in.speculative;
  const std::int64_t draft = spec.on() ? spec.tokens : 0;
  const double per_step = spec.on() ? expected_tokens_per_step(spec.tokens, spec.acceptance) : 1.0;
  r.tokens_per_step = per_step;
  const double mid = static_cast<double>(std::max<std::int64_t>(1, in.output_len / 2));
  bool mid_set = false;
  for (double done = 1; done < static_cast<double>(in.output_len); done += per_step) {
    const auto at = static_cast<std::int64_t>(done);
    const std::int64_t k = std::min(draft, in.output_len - at - 1);
    const IterationCost step = model.iteration(
        std::vector<SequenceWork>(static_cast<std::size_t>(in.batch), SequenceWork{1 + k, in.input_len + at - 1, k}));
    const double share = std::min(per_step, static_cast<double>(in.output_len) - done) / per_step;
    decode += step.time_s * share;
    r.decode_steps_s.push_back(step.time_s.value * share);
    if (!mid_set && done + per_step > mid) {  // the step half-way through the output
      r.decode_mid = step;
      mid_set = true;
    }
  }
  if (in.output_len <= 1)
    r.decode_mid = model.iteration(
        std::vector<SequenceWork>(static_cast<std::size_t>(in.batch), SequenceWork{1 + draft, in.input_len, draft}));
  const double steps = dbl(std::max<std::int64_t>(1, in.output_len - 1));
  r.tpot_s = in.output_len > 1 ? decode * (1.0 / steps) : r.decode_mid.time_s;
  r.e2e_s = r.ttft_s + decode;
  const double out_tokens = dbl(in.batch) * dbl(in.output_len) * dbl(r.replicas);
  r.output_tokens_per_s = per_second(out_tokens, r.e2e_s);
  r.total_tokens_per_s = per_second(dbl(in.batch) * dbl(in.input_len + in.output_len) * dbl(r.replicas), r.e2e_s);
  r.prompt_tokens_per_s = per_second(dbl(in.batch) * dbl(in.input_len), r.ttft_s);
  r.generation_tokens_per_s = per_second(dbl(in.batch), r.tpot_s);
  return r;
}

}  // namespace llmsim::sim
