#pragma once
// Activation memory of training, per layer and per pipeline stage: Korthikanti et al. 2022 (Table 2,
// Sec. 4) generalised to SwiGLU MLPs, GQA, RMSNorm, MoE, FlashAttention and context parallelism.
#include <cstdint>

#include "llmsim/model/model_spec.h"
#include "llmsim/model/op_checkpoint.h"
#include "llmsim/model/operators.h"
#include "llmsim/run/run_spec.h"

namespace llmsim::sim {

// What one layer keeps for backward, bytes per GPU, for one micro-batch.
struct LayerActivations {
  double replicated = 0;  // tensors every TP rank keeps whole (norm inputs, first-GEMM inputs, dropout masks)
  double split = 0;       // tensors split over TP ranks (already divided by tp)
  double quadratic = 0;   // the s^2 attention tensors (softmax, dropout) — already divided by tp
  double total() const { return replicated + split + quadratic; }
};

// Which projections' inputs a layer keeps for backward. Autograd keeps a matmul's input only for its weight's
// gradient (PyTorch derivatives.yaml: mm saves `self` only when mat2 requires grad), so under LoRA a frozen
// 16-bit projection's input is kept only when an adapter on it reads it (PEFT's lora_A(dropout(x))) or another
// operator keeps it anyway (FlashAttention its output, the activation function its input). Full training keeps
// every one; so did a bitsandbytes 4-bit base before 0.43.2 (MatMul4Bit saved its input A until PR #1270,
// 2024-07-16) and AutoGPTQ's QuantLinear, which QLoRA and LoRA on an int4 base run here.
struct KeptInputs {
  bool qkv = true;      // the QKV projections' input (the attention norm's output)
  bool out = true;      // the output projection's input (the attention's output; FlashAttention keeps it anyway)
  bool gate_up = true;  // the MLP's first GEMMs' input (the MLP norm's output)
  bool down = true;     // the down projection's input (act(gate) x up, or the activation's output)
};
// The rule for a training run: LoRA on a 16-bit base keeps its targeted projections' inputs only.
KeptInputs kept_projection_inputs(const RunSpec& run);

struct ActivationParams {
  std::int64_t micro_batch = 1;
  std::int64_t seq_len = 2048;
  std::int64_t tp = 1;
  std::int64_t cp = 1;
  bool sequence_parallel = false;
  bool flash_attn = true;
  double act_bytes = 2;  // bytes per activation element (bf16/fp16)
  // Bytes per element of the projection inputs kept for the weight gradients (the norms' outputs and the
  // down projection's input): act_bytes, or 1 where FP8 training keeps them in FP8
  // (FrameworkProfile::fp8_saves_gemm_inputs). 0: act_bytes.
  double gemm_input_bytes = 0;
  model::EagerGlue glue;  // what eager model code saves beyond the fused kernels' tensors (default: fused)
  // What selective recomputation keeps (the framework's policy, model/op_checkpoint.h).
  model::SelectivePolicy selective = model::SelectivePolicy::AttentionCore;
  KeptInputs kept;  // which projection inputs backward needs (all, unless LoRA freezes a 16-bit base)
};

// The activation parameters of a training run (the memory model's and the fast estimator's one source).
ActivationParams training_activation_params(const RunSpec& run);

// Everything a layer stores with no recomputation (sequence parallelism divides `replicated` by tp).
LayerActivations layer_activations(const model::ModelSpec& m, const ActivationParams& p, std::int64_t layer_index);

// Bytes one layer keeps between forward and backward under a recomputation policy:
// none = everything; selective = without the s^2 attention tensors (Korthikanti Sec. 5), or under the
// op-level policy (p.selective = AlternateMatmuls) the layer input and the saved op outputs;
// full = only the layer input (2sbh, divided by tp with sequence parallelism).
double stored_layer_bytes(const model::ModelSpec& m, const ActivationParams& p, std::int64_t layer_index,
                          Recompute policy);

// Bytes backward re-materialises for one layer while it recomputes: full = the layer's whole
// activations; op-level selective = what the layer would keep without recomputation minus what the
// policy saved (`stored`, the layer's stored_layer_bytes, which callers have already); otherwise nothing
// beyond the stored tensors.
double recompute_working_bytes(const model::ModelSpec& m, const ActivationParams& p, std::int64_t layer_index,
                               Recompute policy, double stored);

// Micro-batches whose activations a pipeline stage holds at its peak. 1F1B: stage i of pp holds
// min(pp - i, micro_batches) (Narayanan et al. 2021 Sec. 2.2.1); interleaving multiplies stage 0's
// activations by 1 + (pp-1)/(pp*vp) (Korthikanti et al. 2022 Sec. 4.2.3). GPipe runs every forward
// before the first backward, so every stage holds all micro_batches (Huang et al. 2019; Narayanan et al.
// 2021 Sec. 2.2.1: "GPipe ... requires stashing activations for all m microbatches"). Without a
// pipeline (pp 1) micro-batches run one after another whatever the schedule.
double in_flight_factor(std::int64_t stage, std::int64_t pp, std::int64_t vp, std::int64_t micro_batches,
                        PipelineSchedule schedule = PipelineSchedule::OneFOneB);

}  // namespace llmsim::sim
