#pragma once
// Fixed-batch inference (the static engine: HF generate, FasterTransformer, TensorRT-LLM sessions):
// the whole batch is prefilled in one iteration, then decoded one token per iteration until every
// sequence has its output_len tokens. Evaluates specs; an impossible configuration is a result.
#include <string>
#include <vector>

#include "llmsim/core/interval.h"
#include "llmsim/hardware/system_spec.h"
#include "llmsim/infer/iteration_cost.h"
#include "llmsim/memory/memory_model.h"
#include "llmsim/model/model_spec.h"
#include "llmsim/run/run_spec.h"

namespace llmsim::sim {

struct InferResult {
  std::vector<std::string> problems;
  MemoryResult memory;
  std::string engine;
  std::int64_t replicas = 1;     // gpus / (tp * pp), each running the same batch
  Interval ttft_s;               // prefill of the batch (time to first token)
  Interval tpot_s;               // time per output token after the first (a decode iteration / tokens_per_step)
  Interval e2e_s;                // prefill + every decode iteration
  Interval output_tokens_per_s;  // all replicas
  Interval total_tokens_per_s;   // prompt + output tokens, all replicas
  // The two rates llama-bench reports (pp, tg) and local engines print, per replica: prompt tokens per second
  // of the prefill (batch x input_len / TTFT) and output tokens per second of decoding (batch / TPOT).
  Interval prompt_tokens_per_s;
  Interval generation_tokens_per_s;
  IterationCost prefill;               // the prefill iteration
  IterationCost decode_mid;            // the decode iteration half-way through the output
  std::vector<double> decode_steps_s;  // every decode iteration in order (best estimate, seconds), for traces
  double tokens_per_step = 1;          // tokens a decode iteration emits per sequence (speculative decoding: E)
  bool valid() const { return problems.empty(); }
};

InferResult simulate_inference(const model::ModelSpec& m, const hardware::SystemSpec& sys, const RunSpec& run);

}  // namespace llmsim::sim
