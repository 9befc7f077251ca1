#pragma once
// Framework behaviour that changes memory (and, with the training simulator, time), as small named
// profiles instead of conditionals scattered through the models. Every number cites its source in
// framework_profile.cpp.
#include <optional>
#include <string>

#include "llmsim/core/version.h"
#include "llmsim/model/op_checkpoint.h"
#include "llmsim/model/operators.h"
#include "llmsim/run/run_spec.h"

namespace llmsim::sim {

// ZeRO-Offload (optimizer states and the optimizer step on the host), as the framework moves gradients and
// parameters over PCIe. By default a 16-bit partition each way, from pinned memory.
struct OffloadCopies {
  double grad_bytes = 2;   // per element of the rank's gradient partition copied to the host once per step
  double param_bytes = 2;  // per element of the updated partition copied back after the host step
  // Gradients accumulate on the host between micro-batches: every later micro-batch copies the host sum
  // to the GPU, adds its own gradients there, and (before the last) copies the sum back, 16-bit both ways.
  bool accumulate_on_host = false;
  bool pinned = true;             // host gradient buffers page-locked unless the run says otherwise
  bool on_reduce_stream = false;  // the copies queue on the gradient reduction's stream (else on their own)
  // ZeRO-3: every micro-batch sends the reduced 16-bit partition to the host buffer and brings it back to the
  // GPU (where the next micro-batch adds to it); the boundary sends it once more through a host-side cast to
  // fp32, and the updated partition returns through a host-side cast to 16 bits. Both casts copy from or to
  // a temporary, pageable whatever the buffers are.
  bool zero3_round_trip = false;
};

struct FrameworkProfile {
  Framework framework;
  std::string name;
  // Bytes per trainable parameter, before ZeRO sharding.
  double weight_bytes = 2;  // working copy of the weights (bf16/fp16, or fp32 under plain AMP)
  double grad_bytes = 2;    // gradient buffer
  double master_bytes = 4;  // separate fp32 master copy held by the optimizer (0 = weights are fp32 already)
  // Bytes per element of the vocabulary logits kept on the last stage for the loss (per token x vocab/tp).
  double logits_bytes = 4;
  // Gradient communication buffers beyond the gradients themselves.
  double bucket_elements = 0;            // elements of a fixed-size reduce bucket (0 = none)
  bool bucket_copies_all_grads = false;  // DDP-style bucket buffers holding a second copy of all gradients
  // ZeRO-3 / FSDP: how many layers' full parameters are gathered at once (current + prefetched).
  double zero3_live_layers = 2;
  // The optimizer step's copy of the gradients under ZeRO 1-3 (bytes per parameter it covers, 0 = none):
  // DeepSpeed flattens a group's 16-bit gradients and casts them to fp32 for the fp32 master weights
  // (2 + 4 bytes live together), one parameter group (stages 1-2) or one sub-group of at most
  // step_sub_group_params parameters (stage 3, sub_group_size) at a time, after backward has freed the
  // activations.
  double step_grad_copy_bytes = 0;
  double step_sub_group_params = 0;  // 0 = the whole partition
  // How the framework's AdamW steps when a run does not say (TrainSpec::optimizer_impl).
  OptimizerImpl optimizer_impl = OptimizerImpl::Fused;
  // Inference: tokens per sequence for which the KV workspace is preallocated (0 = exactly what is used).
  double kv_prealloc_tokens = 0;
  // Inference: whether the prompt's logits are materialised for every position (HF generate) or only the
  // last, and from which release on only the last (nullopt: the profile's rule holds for every release).
  bool full_prefill_logits = false;
  std::optional<Version> last_logits_from;
  std::string source;  // citations for the numbers above

  // --- Time (training simulator). Each field is a documented framework default, cited in the .cpp.
  bool grad_sync_overlap = true;          // data-parallel gradient reduction overlapped with backward
  bool sharded_grad_sync_overlap = true;  // … under ZeRO-2 (gradients sharded); ZeRO-3 always overlaps
  double grad_bucket_elements = 0;        // gradient elements per reduction bucket (0 = one per layer/unit)
  double grad_reduce_bytes = 2;           // bytes per gradient element on the wire
  bool zero3_overlap = true;              // ZeRO-3/FSDP parameter gathers prefetched ahead of compute
  OffloadCopies offload;                  // ZeRO-Offload traffic (the default: 16-bit, pinned, own stream)
  // DeepSpeed's ZeRO hooks run Python on the host critical path (Efficiency::deepspeed_hook_s): under
  // stage 3 every module with parameters is fetched before and released after each forward, recomputed
  // forward and backward (parameter_offload.py pre/post sub-module hooks -> PartitionedParameterCoordinator
  // fetch_sub_module / release_sub_module), and every trainable parameter's gradient passes a hook in
  // backward under stages 1-3 (stage_1_and_2.py reduce_ready_partitions_and_remove_grads, stage3.py
  // reduce_partition_and_remove_grads).
  bool zero_hooks = false;
  // How a micro-batch's parameter gradients join the accumulated ones, as kernels on the host critical path:
  // MainGradHook: Megatron-LM's DistributedDataParallel backward post-hook adds each parameter's .grad into its
  // fp32 main_grad (param.main_grad.add_(param.grad.data)) every micro-batch, except the GEMM weights whose wgrad
  // GEMM accumulated into main_grad itself (gradient_accumulation_fusion, on by default): one add per bias and
  // norm tensor. AccumulateGrad: plain PyTorch autograd adds a new gradient onto the existing .grad of every
  // trainable tensor on the micro-batches after the first (the first steals it): one add per tensor there.
  // None: counted elsewhere (DeepSpeed's ZeRO hooks copy each gradient into a bucket) or not modelled.
  enum class GradAccumulation { None, MainGradHook, AccumulateGrad };
  GradAccumulation grad_accumulation = GradAccumulation::None;
  // A data-parallel reduction that is not overlapped runs after the whole pipeline schedule of the step
  // (Megatron: finalize_model_grads -> finish_grad_sync once forward_backward_func returns) instead of
  // in the backward hooks as each bucket fills (DeepSpeed ZeRO-1/2 with overlap_comm false).
  bool blocking_reduce_after_schedule = false;
  // Memory-bound glue of the model code this framework runs (RMSNorm kernel count, RoPE kernels, AMP
  // casts, …; model/operators.h). Default: fused kernels (Megatron-LM / Transformer Engine).
  model::EagerGlue glue;
  // What `recompute selective` keeps and reruns (model/op_checkpoint.h): Megatron's core
  // attention recomputation, or torchtitan's op-level policy for the PyTorch-native FSDP stack.
  model::SelectivePolicy selective = model::SelectivePolicy::AttentionCore;
  // FP8 training keeps the FP8 copies of the GEMM inputs that backward's weight gradients read (1 byte per
  // element) instead of 16-bit ones: Transformer Engine's LayerNormLinear / LayerNormMLP save ln_out and the
  // activation's output as FP8 (the fc1 output stays 16-bit for the activation's backward).
  bool fp8_saves_gemm_inputs = false;
  // Gradients are allocated during backward and freed after the step (PyTorch >= 2.0
  // zero_grad(set_to_none=True)), not held in persistent buffers: with one micro-batch per step the
  // gradient and the activation memory peaks do not coincide.
  bool grads_transient = false;
  // Optimizer precision recipes the framework offers beyond mixed precision with fp32 master weights:
  // pure 16-bit training (no master copy) and stepping each parameter inside backward.
  bool pure_16bit = false;
  bool optimizer_in_backward = false;
  std::string time_source;  // citations for the time fields
};

const FrameworkProfile& framework_profile(Framework f);

// Whether the data-parallel gradient reduction blocks the compute stream (not overlapped with
// backward) at this ZeRO stage: the profile's default, its ZeRO-2 setting, never under ZeRO-3 (every
// framework prefetches and reduce-scatters per layer there). The step graph and the fast estimate
// both ask this.
// `overlap` is the run's explicit setting (TrainSpec::overlap_grad_reduce), if any.
bool grad_reduce_on_compute_stream(const FrameworkProfile& fw, int zero_stage, std::optional<bool> overlap = {});

// Whether that blocking reduction waits for the end of the step's pipeline schedule, on every stage at
// once (the profile's blocking_reduce_after_schedule, for the once-per-step reduction of ZeRO-0/1),
// instead of running in backward as the last micro-batch fills each bucket. The step graph and the fast
// estimate both ask this.
bool grad_reduce_after_schedule(const FrameworkProfile& fw, int zero_stage, std::optional<bool> overlap = {});

// The glue a training run executes: the profile's, without the AMP part when the weights are stored in
// the compute dtype (LoRA/QLoRA, whose base is loaded in its 16-bit or quantized dtype; pure 16-bit
// training without a master copy, a model loaded in bf16): the residual stream is then 16-bit and
// autocast casts nothing. And without the fp32 logits copy under a fused cross-entropy.
model::EagerGlue training_glue(const FrameworkProfile& fw, const TrainSpec& train);

// Bytes per logit element held for the loss: the profile's, or with a fused cross-entropy at most the
// 16-bit logits and their 16-bit gradient (2 + 2; the kernel upcasts inside registers).
double loss_logits_bytes(const FrameworkProfile& fw, const TrainSpec& train);

// Whether the prefill of `release` materialises the logits of every prompt position (and upcasts them
// to fp32) or only of the last: Hugging Face generate() before transformers 4.45.0 did the former, from
// 4.45.0 it passes num_logits_to_keep=1 (huggingface/transformers PR #31292). An unstated release runs
// as the current one.
bool full_prefill_logits(const FrameworkProfile& fw, const std::optional<Version>& release);

// The memory-bound glue of Hugging Face transformers' Llama-family modelling code in eager PyTorch;
// `amp`: run under torch.autocast over fp32 weights (fp32 residual stream, per-call casts).
model::EagerGlue hf_model_code_glue(bool amp);

}  // namespace llmsim::sim
