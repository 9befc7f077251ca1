#pragma once
// The time of one iteration as an inference engine runs it: decode-only batches up to the engine's
// cuda_graph_max_batch replay a captured CUDA graph (no per-kernel host work, the graph-node floor per
// kernel); every other iteration (prefill or mixed work, larger batches, engines without graphs) runs
// its kernels as issued, from Python eager PyTorch at the host's dispatch rate or from a C++ runtime
// (EngineProfile::python_dispatch). One rule for `llmsim infer` and `llmsim serve`.
// With speculative decoding (InferSpec::speculative) a sequence's verify step (1 + k positions, its
// SequenceWork::draft_tokens = k) follows k steps of the drafter (speculative.h) over the same sequences, one
// draft token each; a batch of verify steps alone replays a graph as a decode batch does (vLLM V1 and
// TensorRT-LLM capture uniform speculative decode batches).
#include <memory>
#include <vector>

#include "llmsim/infer/iteration_cost.h"
#include "llmsim/run/engine_profile.h"

namespace llmsim::sim {

// The iteration options of `engine` when it replays a graph (`graph`) or issues kernels as it goes.
IterationOptions engine_iteration_options(const EngineProfile& engine, const hardware::SystemSpec& sys, bool graph);

class EngineIterationCost {
 public:
  EngineIterationCost(const model::ModelSpec& m, const hardware::SystemSpec& sys, const ParallelSpec& par,
                      const InferSpec& infer, const EngineProfile& engine);

  IterationCost iteration(const std::vector<SequenceWork>& batch) const;
  IterationCost uniform(std::int64_t batch, std::int64_t new_tokens, std::int64_t context) const;
  // Whether this batch replays a graph.
  bool replays_graph(const std::vector<SequenceWork>& batch) const;

  double kv_bytes_per_token() const { return eager_->kv_bytes_per_token(); }
  double state_bytes_per_sequence() const { return eager_->state_bytes_per_sequence(); }
  double weight_bytes_per_gpu() const { return eager_->weight_bytes_per_gpu(); }
  double adapter_bytes_per_gpu() const { return eager_->adapter_bytes_per_gpu(); }

 private:
  std::shared_ptr<const IterationCostModel> eager_, graph_;  // graph_: null when the engine never replays
  std::int64_t graph_max_batch_ = 0;
  // Speculative decoding: the drafter's model (kept alive for its cost models) and iteration cost.
  std::shared_ptr<const model::ModelSpec> drafter_model_;
  std::shared_ptr<const EngineIterationCost> drafter_;
};

}  // namespace llmsim::sim
