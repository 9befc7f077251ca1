#include "llmsim/infer/engine_iteration.h"

#include <algorithm>

#include "llmsim/cost/host_dispatch.h"
#include "llmsim/infer/speculative.h"

namespace llmsim::sim {

IterationOptions engine_iteration_options(const EngineProfile& engine, const hardware::SystemSpec& sys, bool graph) {
  IterationOptions o;
  o.overhead_s = engine.iteration_overhead_s;
  o.overhead_per_seq_s = engine.iteration_overhead_per_seq_s;
  o.glue = engine.glue;
  o.decode_split_kv = engine.decode_split_kv;
  o.decode_kv_per_query_head = engine.decode_kv_per_query_head;
  o.fp16_accumulate = engine.fp16_accumulate;
  o.host_layer_upload_min_tokens = engine.host_layer_upload_min_tokens;
  o.upload_chunk_tokens = engine.max_batched_tokens;
  o.embedding_on_host = engine.host_layers;
  o.kv_copy_passes = engine.kv_copy_passes;
  o.repeat_kv_for_flash = engine.repeat_kv_for_flash;
  o.all_prompt_logits = engine.all_prompt_logits;
  o.int8_dequantize_to_16bit = engine.int8_dequantize_to_16bit;
  // A graph is replayed by one launch (no host work per kernel); otherwise Python issues each kernel, or a
  // C++ runtime at the launch floor the kernel cost already charges.
  if (graph)
    o.kernel_floor_s = kCudaGraphKernelFloor_s;
  else if (engine.python_dispatch) {
    o.host_dispatch = host_dispatch_band(sys.efficiency);
    o.collective_host = collective_host_band(sys.efficiency);
  }
  return o;
}

EngineIterationCost::EngineIterationCost(const model::ModelSpec& m, const hardware::SystemSpec& sys,
                                         const ParallelSpec& par, const InferSpec& infer, const EngineProfile& engine)
    : eager_(std::make_shared<IterationCostModel>(m, sys, par, infer, engine_iteration_options(engine, sys, false))),
      graph_max_batch_(engine.cuda_graphs ? engine.cuda_graph_max_batch : 0) {
  if (graph_max_batch_ > 0)
    graph_ = std::make_shared<IterationCostModel>(m, sys, par, infer, engine_iteration_options(engine, sys, true));
  if (infer.speculative.on()) {
    drafter_model_ = std::make_shared<const model::ModelSpec>(drafter_model(m, infer.speculative));
    InferSpec plain = infer;
    plain.speculative = {};
    // The drafter runs inside the engine's step (vLLM's and TensorRT-LLM's model runners propose the drafts
    // on the GPU between scheduling and verification): its forward passes, without the per-iteration
    // scheduling, sampling and detokenising work the step already pays once.
    EngineProfile inside = engine;
    inside.iteration_overhead_s = 0;
    inside.iteration_overhead_per_seq_s = 0;
    drafter_ = std::make_shared<const EngineIterationCost>(*drafter_model_, sys, par, plain, inside);
  }
}

bool EngineIterationCost::replays_graph(const std::vector<SequenceWork>& batch) const {
  if (!graph_ || batch.empty() || static_cast<std::int64_t>(batch.size()) > graph_max_batch_) return false;
  for (const auto& s : batch)
    if (s.new_tokens != 1 + s.draft_tokens || s.context <= 0) return false;  // decode (or verify) steps only
  return true;
}

IterationCost EngineIterationCost::iteration(const std::vector<SequenceWork>& batch) const {
  IterationCost c = replays_graph(batch) ? graph_->iteration(batch) : eager_->iteration(batch);
  if (!drafter_) return c;
  // The drafter proposes each sequence's draft tokens one step after another before the verify pass.
  std::int64_t steps = 0;
  for (const auto& w : batch) steps = std::max(steps, w.draft_tokens);
  std::vector<SequenceWork> draft;
  for (std::int64_t j = 0; j < steps; ++j) {
    draft.clear();
    for (const auto& w : batch)
      if (w.draft_tokens > j) draft.push_back({1, w.context + j, 0});
    c += drafter_->iteration(draft);
  }
  return c;
}

IterationCost EngineIterationCost::uniform(std::int64_t batch, std::int64_t new_tokens, std::int64_t context) const {
  return iteration(std::vector<SequenceWork>(static_cast<std::size_t>(std::max<std::int64_t>(0, batch)),
                                             SequenceWork{new_tokens, context}));
}

}  // namespace llmsim::sim
