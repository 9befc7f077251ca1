#pragma once
// Per-GPU peak memory with a breakdown (and host memory under offload) for training, fine-tuning and
// inference. Evaluates specs; never reads files. A configuration that cannot run is a result that says
// why (structural problems, or not fitting), not an exception.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "llmsim/hardware/system_spec.h"
#include "llmsim/model/model_spec.h"
#include "llmsim/run/framework_profile.h"
#include "llmsim/run/run_spec.h"

namespace llmsim::sim {

// What a memory item holds. Decisions read the kind; its name (name_of) is the stable id that the
// tables, JSON and CSV show.
enum class MemoryKind {
  Weights,
  FrozenWeights,
  AdapterWeights,
  Gradients,
  OptimizerStates,
  OffloadedOptimizer,
  OffloadedGradients,
  OffloadedWeights,
  Zero3GatheredParams,
  CommBuckets,
  Activations,
  RecomputeWorkingSet,
  LogitsAndLoss,
  AmpWeightCopies,
  GradientOverlap,
  OptimizerStepCopy,
  KvCache,
  RecurrentState,  // linear-attention layers' per-sequence state (Gated DeltaNet), in place of their KV
  Workspace,
  CudaContext,
  AllocatorReserve,
};
std::string_view name_of(MemoryKind k);  // "weights", "frozen_weights", …, "allocator_reserve"

struct MemoryItem {
  MemoryKind kind = MemoryKind::Weights;
  std::string name;  // name_of(kind): "weights", "optimizer_states", "activations", …
  double bytes = 0;  // bytes per GPU (or per node for host items)
  std::string note;  // how it was counted
};

struct MemoryResult {
  std::vector<std::string> problems;  // structural reasons the run is impossible (empty = valid)

  std::vector<MemoryItem> gpu;    // breakdown of the peak GPU
  double gpu_bytes = 0;           // sum of `gpu`
  double gpu_capacity_bytes = 0;  // device memory of one GPU
  std::int64_t peak_stage = 0;    // pipeline stage with the largest footprint

  std::vector<MemoryItem> host;  // host memory needed per node (offload, pinned buffers)
  double host_bytes = 0;
  double host_capacity_bytes = 0;

  // Parameter figures behind the breakdown.
  std::int64_t params_total = 0;      // whole model
  std::int64_t params_trainable = 0;  // whole model (LoRA: adapters only)
  double params_per_gpu = 0;          // parameters resident on the peak GPU (before ZeRO sharding)

  // Inference only.
  double kv_bytes_per_token = 0;  // per GPU, all its layers
  std::int64_t max_batch = 0;     // largest batch at the run's input+output length that fits
  std::int64_t max_tokens = 0;    // largest number of KV tokens that fits at the run's batch workspace

  bool valid() const { return problems.empty(); }
  bool gpu_fits() const { return gpu_bytes <= gpu_capacity_bytes; }
  bool host_fits() const { return host_bytes <= host_capacity_bytes; }
  bool fits() const { return valid() && gpu_fits() && host_fits(); }
};

// Parameters one GPU of pipeline stage `stage` (of par.pp; stage_layout.h) holds before ZeRO sharding, split
// into the parts that LoRA/QLoRA and weight quantization treat differently: the memory model's and the fast
// estimator's one count (TP divides the projections, EP the experts, replicated KV heads stay whole).
struct StageParams {
  double linear = 0;         // inside linear projections (quantizable, LoRA-frozen)
  double other = 0;          // norms, embeddings, LM head (kept in 16-bit)
  double largest_layer = 0;  // the biggest layer of the stage (ZeRO-3 gathers whole layers)
  double total() const { return linear + other; }
};
StageParams stage_params(const model::ModelSpec& m, const ParallelSpec& par, std::int64_t stage);
// LoRA adapter parameters one GPU holds for layers [first, first + count) (sim/run/lora_adapters.h).
double lora_params(const model::ModelSpec& m, const ParallelSpec& par, std::int64_t first, std::int64_t count,
                   const TrainSpec& t);

// What PyTorch's caching allocator holds beyond `tensors` bytes of live tensors at the peak (reserved minus
// allocated: block rounding and cached blocks that cannot be reused), allocator_reserve_fraction of them (an
// engineering default until measured, system [runtime] table), and its breakdown note. It grows with what the
// allocator serves, not with the device's size: until 2026-12-03 it was a fraction of device memory.
double allocator_reserve_bytes(const hardware::SystemSpec& sys, double tensors);
std::string allocator_reserve_note(const hardware::SystemSpec& sys, double tensors);

// What a measured peak memory counts (the measured-run schema's memory_measure): device memory in use
// (nvidia-smi: the CUDA context and what the caching allocator holds included), the caching allocator's
// reserve (torch.cuda.max_memory_reserved: no CUDA context), or live tensors only
// (torch.cuda.max_memory_allocated: neither the context nor the allocator's unused reserve).
enum class MemoryMeasure { Device, Reserved, Allocated };
std::string_view name_of(MemoryMeasure v);
std::vector<std::string> memory_measure_names();
bool parse_name(std::string_view s, MemoryMeasure& out);

// The peak GPU bytes of `m` as a measurement of that kind would see them.
double peak_gpu_bytes_as(const MemoryResult& m, MemoryMeasure measure);

// Training / fine-tuning (run.workload Pretrain or Finetune) or inference, dispatched on the workload.
MemoryResult evaluate_memory(const model::ModelSpec& m, const hardware::SystemSpec& sys, const RunSpec& run);

// The same for one pipeline stage (0-based) instead of the peak stage.
MemoryResult evaluate_stage_memory(const model::ModelSpec& m, const hardware::SystemSpec& sys, const RunSpec& run,
                                   std::int64_t stage);

// Training terms shared with the fast estimator (sim/train/fast_train.cpp), bytes per GPU:
// autocast's 16-bit copies of `params` fp32 weights, held from forward to backward (0 unless `glue` casts weights);
double amp_weight_copy_bytes(const model::EagerGlue& glue, double act_bytes, double params);
// what the gradients share with the activations, logits and weight copies freed in backward (`freed`), when
// the framework allocates gradients in backward (grads_transient) and nothing keeps them across micro-batches
// (ZeRO-0, one micro-batch per step, no pipeline); 0 otherwise. The memory model lists it as a negative item.
double gradient_overlap_bytes(const FrameworkProfile& fw, const RunSpec& run, std::int64_t micro_batches,
                              double gradients, double freed);
// the optimizer step's copy of the gradients of `partition` trainable parameters per GPU
// (FrameworkProfile::step_grad_copy_bytes: ZeRO 1-3 without optimizer offload), before what backward freed.
double optimizer_step_copy_bytes(const FrameworkProfile& fw, const RunSpec& run, double partition);
// AdamW's transient sqrt(v) during the step, per GPU, before what backward freed (TrainSpec::optimizer_impl,
// else the framework's): foreach allocates a copy of the v of every parameter of a device/dtype group
// (torch/optim/adamw.py _multi_tensor_adamw: exp_avg_sq_sqrt = torch._foreach_sqrt(device_exp_avg_sqs)),
// for-loop one tensor's at a time (_single_tensor_adamw: denom = exp_avg_sq.sqrt() / ...; a step inside
// backward also goes tensor by tensor), fused none. `partition`: the trainable parameters the GPU steps;
// `largest_tensor`: its largest one; `v_bytes`: the element size of v. 0 for 8-bit Adam, SGD and offload.
double adam_sqrt_copy_bytes(const FrameworkProfile& fw, const RunSpec& run, double partition, double largest_tensor,
                            double v_bytes);

}  // namespace llmsim::sim
