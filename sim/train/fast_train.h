#pragma once
// Closed-form estimate of one training step, for searching large configuration spaces: the same
// per-layer costs as the step simulator (sim::layer_cost), cached across configurations, combined with
// a pipeline formula instead of building and list-scheduling the step graph. Roughly 1,000x faster
// than simulate_training; docs/search.md gives the formula and its measured agreement with the full
// simulator. Also an exact, allocation-free re-statement of the memory model's training peak
// (sim::evaluate_memory), so that a search can prune configurations that do not fit.
//
// An evaluator is not thread-safe (it owns a cache); a search uses one per worker thread.
#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "llmsim/cost/comm_cost.h"
#include "llmsim/cost/compute_cost.h"
#include "llmsim/hardware/system_spec.h"
#include "llmsim/model/model_spec.h"
#include "llmsim/run/run_spec.h"

namespace llmsim::sim {

// The memory model's training verdict (gpu_bytes and host_bytes equal evaluate_memory's to rounding).
struct FastMemory {
  double gpu_bytes = 0;   // peak stage, per GPU
  double host_bytes = 0;  // per node (offload)
  double gpu_capacity_bytes = 0;
  double host_capacity_bytes = 0;
  std::int64_t peak_stage = 0;
  bool gpu_fits() const { return gpu_bytes <= gpu_capacity_bytes; }
  bool host_fits() const { return host_bytes <= host_capacity_bytes; }
  bool fits() const { return gpu_fits() && host_fits(); }
};

// The estimate of one step (best estimate only; the search re-runs its finalists through
// simulate_training for intervals and breakdowns). The phase split is on the stage that ends last and
// sums to step_time_s.
struct FastTrainEstimate {
  double step_time_s = 0;
  std::int64_t micro_batches = 0;  // per data-parallel rank
  double tokens_per_step = 0;
  double tokens_per_s = 0;
  int critical_stage = 0;
  double compute_s = 0;       // forward + backward + recompute on the critical stage
  double bubble_s = 0;        // pipeline fill and drain (and waiting on slower stages)
  double exposed_comm_s = 0;  // blocking TP/DP collectives and DP/ZeRO communication not hidden
  double optimizer_s = 0;     // GPU optimizer step
  double offload_s = 0;       // PCIe copies and CPU Adam not hidden
};

class FastTrainEvaluator {
 public:
  FastTrainEvaluator(const model::ModelSpec& m, const hardware::SystemSpec& sys);
  // It keeps references to both: a temporary would dangle (refused at compile time).
  FastTrainEvaluator(model::ModelSpec&&, const hardware::SystemSpec&) = delete;
  FastTrainEvaluator(const model::ModelSpec&, hardware::SystemSpec&&) = delete;

  // `run` must have with_defaults applied and be free of structural_problems and training_problems.
  FastTrainEstimate estimate(const RunSpec& run);
  FastMemory memory(const RunSpec& run);

  std::size_t cached_layer_costs() const { return cache_.size(); }
  const model::ModelSpec& model() const { return m_; }
  const hardware::SystemSpec& system() const { return sys_; }

 private:
  // Best-estimate costs of one micro-batch through one layer (or the embedding / head).
  struct Cost {
    double fwd = 0, bwd = 0, recompute = 0;                 // seconds on the compute stream
    double fwd_comm = 0, bwd_comm = 0, recompute_comm = 0;  // blocking collectives inside them
    double params = 0, trainable = 0;                       // per GPU after TP/EP sharding, before ZeRO
    double gather_bytes = 0;                                // one ZeRO-3 all-gather of them (LayerCost)
  };
  struct Costs {
    Cost embed, head, dense, moe;
  };
  // The layers of one kind (MoE or dense) by token mixer: the first layer of each mixer (attention, Gated
  // DeltaNet) among them and its share of them; empty when the model has no layer of that kind.
  std::vector<std::pair<std::int64_t, double>> layer_mix(bool moe) const;
  // Collective time a + b * bytes over one group (every collective model is affine in the bytes).
  struct Affine {
    double a = 0, b = 0;
    double operator()(double bytes) const { return bytes > 0 ? a + b * bytes : 0.0; }
  };

  // The estimate's steps (fast_train.cpp): the run's derived settings, each layer's passes, each
  // stage's sums, the pipeline's compute span, and each stage's end with its step tail.
  struct Step;
  struct LayerPass;
  struct LayerPasses;
  struct StageSum;
  Step step_of(const RunSpec& run);
  LayerPass layer_pass(const Step& step, const Cost& k) const;
  void chunk_buckets(const Step& step, const LayerPasses& P, std::int64_t first, std::int64_t count, bool has_e,
                     bool has_h, std::int64_t ch, double& b, double& dp_free, double& pcie_free, StageSum& S) const;
  void stage_sum(const Step& step, const LayerPasses& P, std::int64_t s, StageSum& S) const;
  static double pipeline_span(const Step& step, const std::vector<StageSum>& st);
  FastTrainEstimate stage_ends(const Step& step, const std::vector<StageSum>& st, double span) const;

  const Costs& costs(const RunSpec& run);
  void check_fixed_part(const RunSpec& run);
  Affine affine(model::Collective kind, const CommGroup& g) const;

  const model::ModelSpec& m_;
  const hardware::SystemSpec& sys_;
  ComputeCost compute_;
  CommCost comm_;
  std::unordered_map<std::uint64_t, Costs> cache_;
  // A pipeline stage's parameters (the memory model's sim::stage_params), LoRA adapters and layer kinds per
  // (pp, tp, ep): what memory() would otherwise count layer by layer for every configuration of a search.
  // The LoRA settings are part of the fixed run settings (a change clears the cache).
  struct StageParams {
    double linear = 0, other = 0, largest_layer = 0, lora = 0;
    // Layers of each kind (layer_kind: dense or MoE, attention or Gated DeltaNet).
    std::array<std::int64_t, 4> kind_layers{};
  };
  // A layer's kind for the memory sums: MoE or dense, plus 2 for a Gated DeltaNet mixer.
  std::size_t layer_kind(std::int64_t layer) const {
    return (m_.is_moe_layer(layer) ? 1U : 0U) + (m_.is_linear_attention_layer(layer) ? 2U : 0U);
  }
  const std::vector<StageParams>& stage_params(std::int64_t pp, std::int64_t tp, std::int64_t ep, std::int64_t vp,
                                               const TrainSpec& t);
  std::unordered_map<std::uint64_t, std::vector<StageParams>> stage_params_cache_;
  // The run settings every cached cost shares (a change clears the cache).
  bool have_fixed_ = false;
  Workload workload_ = Workload::Pretrain;
  std::int64_t seq_len_ = 0;
  FinetuneKind finetune_ = FinetuneKind::Full;
  std::int64_t lora_rank_ = 0;
  std::vector<std::string> lora_targets_;
  model::WeightQuant base_quant_ = model::WeightQuant::None;
  AttentionKernel attn_kernel_ = AttentionKernel::Fa2;
  bool fused_loss_ = false;
  double expert_imbalance_ = 1;
};

}  // namespace llmsim::sim
