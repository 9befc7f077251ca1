#include "llmsim/run/framework_profile.h"

#include <algorithm>
#include <array>

namespace llmsim::sim {

model::EagerGlue training_glue(const FrameworkProfile& fw, const TrainSpec& train) {
  model::EagerGlue g = fw.glue;
  if (train.finetune != FinetuneKind::Full || !train.master_weights) {
    g.residual_bytes = 0;
    g.cast_projection_inputs = false;
    g.weight_cast_bytes = 0;
  }
  if (train.fused_loss) g.fp32_loss_upcast = false;
  return g;
}

double loss_logits_bytes(const FrameworkProfile& fw, const TrainSpec& train) {
  // flash-attn's CrossEntropyLoss (flash_attn/losses/cross_entropy.py) saves the input logits and a
  // per-row log-sum-exp for backward and returns a gradient of the logits' dtype.
  constexpr double kFused = 2 + 2;
  return train.fused_loss ? std::min(fw.logits_bytes, kFused) : fw.logits_bytes;
}

bool full_prefill_logits(const FrameworkProfile& fw, const std::optional<Version>& release) {
  if (!fw.full_prefill_logits) return false;
  return !fw.last_logits_from || (release && *release < *fw.last_logits_from);
}

model::EagerGlue hf_model_code_glue(bool amp) {
  model::EagerGlue g;
  // transformers' Llama-family modelling code (modeling_llama.py and the models copied from it):
  // LlamaRMSNorm.forward = to fp32, pow, mean, add + rsqrt, mul, to input dtype and mul by weight;
  // apply_rotary_pos_emb = q * cos + rotate_half(q) * sin with rotate_half = cat(-x2, x1);
  // LlamaMLP = down_proj(act_fn(gate_proj(x)) * up_proj(x)); the SDPA/eager attention functions return
  // attn_output.transpose(1, 2).contiguous(); ForCausalLMLoss upcasts the logits with logits.float().
  g.rmsnorm_kernels = 6;
  g.rope_kernels = 5;
  g.attn_output_copy = true;
  g.split_gated_activation = true;
  g.reference_projections = true;  // LlamaAttention q_proj, k_proj, v_proj; LlamaMLP gate_proj, up_proj
  g.eager_softmax_chain = true;    // eager_attention_forward: matmul * scaling + mask, softmax(dtype=fp32).to(dtype)
  g.fp32_loss_upcast = true;
  if (amp) {
    // torch.autocast over fp32 weights (HF Trainer bf16=True / fp16=True): the embedding output, the
    // residual stream and the RMSNorm outputs stay fp32 (fp32 weight times fp32 tensor); every linear
    // casts its input and its weight to the 16-bit dtype on each call (autocast's weight cache lasts one
    // forward), and backward casts the gradients back (PyTorch AMP docs, "Autocast Op Reference").
    g.residual_bytes = 4;
    g.cast_projection_inputs = true;
    g.weight_cast_bytes = 4;
  }
  return g;
}

bool grad_reduce_on_compute_stream(const FrameworkProfile& fw, int zero_stage, std::optional<bool> overlap) {
  if (zero_stage >= 3) return false;
  if (overlap) return !*overlap;
  return zero_stage == 2 ? !fw.sharded_grad_sync_overlap : !fw.grad_sync_overlap;
}

bool grad_reduce_after_schedule(const FrameworkProfile& fw, int zero_stage, std::optional<bool> overlap) {
  return fw.blocking_reduce_after_schedule && zero_stage <= 1 && grad_reduce_on_compute_stream(fw, zero_stage, overlap);
}

namespace {
// Megatron-LM: bf16 params, fp32 main_grad buffer (accumulate_allreduce_grads_in_fp32), fp32 master
// params + Adam m, v in the optimizer = 18 bytes/param; this reproduces Korthikanti et al. 2022 Fig. 1
// (45.56 GiB for 175B at TP8 PP8). The distributed optimizer (ZeRO-1) shards the 12 optimizer bytes
// (Megatron-LM docs/distrib_optimizer.md). Vocab-parallel cross entropy keeps 4 bytes per logit
// (Korthikanti et al. 2022 Sec. 4.3: "4sbv/t"). Gradients live in one contiguous buffer: no buckets.
FrameworkProfile megatron() {
  FrameworkProfile p{.framework = Framework::Megatron, .name = "megatron"};
  p.weight_bytes = 2;
  p.grad_bytes = 4;
  p.master_bytes = 4;
  p.logits_bytes = 4;
  // Time: gradients are all-reduced (or reduce-scattered with the distributed optimizer) after the
  // backward pass unless --overlap-grad-reduce is given (off by default in megatron/training/arguments.py;
  // older Megatron had no overlap); DDP buckets hold max(40M, 1M x dp) parameters
  // (megatron/core/distributed: bucket_size); norms are apex/TE fused kernels.
  p.grad_sync_overlap = false;
  // ZeRO-2/3 are Megatron-FSDP (use_megatron_fsdp with data_parallel_sharding_strategy optim_grads /
  // optim_grads_params, Megatron Core >= 0.12; compatible with TP, PP, CP and EP per the Megatron-Bridge
  // docs megatron-fsdp.md), which overlaps the gradient reduce-scatter and the parameter all-gather
  // by default for those strategies (megatron_fsdp.py).
  p.sharded_grad_sync_overlap = true;
  // Adam is apex's or Transformer Engine's FusedAdam (megatron/core/optimizer/__init__.py imports it as
  // Adam): one multi-tensor kernel updates in place.
  p.optimizer_impl = OptimizerImpl::Fused;
  p.grad_bucket_elements = 4e7;
  p.grad_reduce_bytes = 4;  // fp32 main_grad buffers are all-reduced (accumulate_allreduce_grads_in_fp32)
  // Without --overlap-grad-reduce the backward post-hook only accumulates into main_grad
  // (megatron/core/distributed/distributed_data_parallel.py _make_backward_post_hook registers a bucket
  // as ready only with overlap_grad_reduce); the all-reduce / reduce-scatter runs synchronously in
  // finish_grad_sync, which finalize_model_grads calls after the pipeline schedule, on every stage at once.
  p.blocking_reduce_after_schedule = true;
  // megatron/core/distributed/distributed_data_parallel.py _make_backward_post_hook: param.main_grad.add_(
  // param.grad.data) for every parameter whose grad the fused wgrad GEMM did not add (--no-gradient-accumulation-
  // fusion turns the fusion off; it is on by default).
  p.grad_accumulation = FrameworkProfile::GradAccumulation::MainGradHook;
  p.glue = {};  // Megatron-LM fused kernels (apex/TE RMSNorm and RoPE, fused SwiGLU, bf16 residual)
  // --fp8-format runs the layers as Transformer Engine modules under fp8_autocast: TE @0004dbd0
  // transformer_engine/pytorch/module/layernorm_mlp.py _LayerNormMLP.forward normalises into FP8
  // (_apply_normalization(..., fp8 and not return_layernorm_output, ...)), writes the activation's output as
  // the FP8 GEMM2 input, and save_for_backward(inputmat, ..., ln_out, fc1_out, gelu_out, ...) keeps those FP8
  // tensors (layernorm_linear.py likewise its ln_out); backward transposes them for the FP8 wgrad GEMMs.
  p.fp8_saves_gemm_inputs = true;
  p.time_source =
      "Megatron-LM arguments.py (--overlap-grad-reduce off by default), core/distributed bucket_size, "
      "apex/TE fused norms";
  p.source =
      "Megatron-LM distrib_optimizer.md (bf16 param 2 + fp32 grad 4 + fp32 master/m/v 12 bytes); "
      "Korthikanti et al. 2022 Sec. 4.3 (4sbv/t logits)";
  return p;
}

// DeepSpeed ZeRO: fp16/bf16 params and grads, fp32 master + m + v (K = 12) = 16 bytes/param
// (Rajbhandari et al. 2020 Sec. 3.1). ZeRO-1/2 reduce gradients through an ipg bucket of
// reduce_bucket_size = 5e8 elements (DeepSpeed config default). ZeRO-3 keeps at most the current and
// the prefetched layer gathered (stage3_prefetch_bucket_size 5e7 / max_live_parameters 1e9 bound it).
// Models come from Hugging Face transformers: the loss upcasts bf16 logits to fp32 (2 + 4 bytes) and
// keeps an fp32 gradient of the same size (4 bytes). DeepSpeed-Inference preallocates its KV workspace
// for max_out_tokens = 1024 tokens per sequence (DeepSpeed inference config default).
FrameworkProfile deepspeed() {
  FrameworkProfile p{.framework = Framework::DeepSpeed, .name = "deepspeed"};
  p.weight_bytes = 2;
  p.grad_bytes = 2;
  p.master_bytes = 4;
  p.logits_bytes = 10;
  p.bucket_elements = 5e8;
  p.zero3_live_layers = 2;
  // The step's gradient copy: stage_1_and_2.py step() and stage3.py _prepare_fp32_grad_for_sub_group both
  // run `flatten(averaged_gradients[i]).to(fp32)`; stage 3 steps sub-groups of sub_group_size (config
  // default 1e9) parameters.
  p.step_grad_copy_bytes = 2 + 4;
  p.step_sub_group_params = 1e9;
  // Adam / AdamW in the config run as DeepSpeed's FusedAdam (ops/adam/fused_adam.py, multi_tensor_apply in
  // place; DeepSpeedCPUAdam under offload).
  p.optimizer_impl = OptimizerImpl::Fused;
  p.kv_prealloc_tokens = 1024;
  // Time: ZeRO-1/2 reduce in reduce_bucket_size (5e8) buckets; overlap_comm defaults to false for
  // stages 1/2 (the reduction blocks the backward) and true for stage 3 (DeepSpeed config docs), where
  // parameters are prefetched. Models are Hugging Face modules: LlamaRMSNorm.forward runs as ~6
  // kernels (to fp32, pow, mean, add+rsqrt, mul, to bf16 + mul by weight), each over the tensor.
  p.grad_sync_overlap = false;
  p.sharded_grad_sync_overlap = false;  // overlap_comm defaults to false for stage 2 as for stage 1
  p.grad_bucket_elements = 5e8;
  p.grad_reduce_bytes = 2;  // gradients reduced in the 16-bit training dtype
  p.zero3_overlap = true;
  // ZeRO-Offload under stages 1-2 (runtime/zero/stage_1_and_2.py @v0.14.2). At the boundary every gradient
  // is cast to fp32 on the GPU and copied into the host's fp32 gradient partition
  // (async_inplace_copy_grad_to_fp32_buffer_from_gpu: src_tensor.float(), copy_); after CPU Adam the fp32
  // partition comes back whole and is cast on the GPU (step: fp32_partition.to(device)). With gradient
  // accumulation each micro-batch round-trips the host sum through a GPU buffer in the 16-bit dtype
  // (async_accumulate_grad_in_cpu_via_gpu). Those host gradient buffers are pinned only with
  // offload_optimizer.pin_memory, false by default (zero/offload_config.py); the fp32 partition itself is
  // always pinned. The copies run on the current stream unless overlap_comm (reduce_ipg_grads: "copy_grad_stream
  // is disabled because of race with reduce").
  // Under stage 3 (runtime/zero/stage3.py @v0.14.2, partition_grads) the gradient buffer lives on the host:
  // micro-batch 0 copies the partition into it and back (grad_buffer.copy_, then .to(device) "to speed up the
  // next few operations"), later ones bring it to the GPU, add and copy it out; at the boundary the 16-bit
  // sum goes to the fp32 gradient with a blocking copy_, which PyTorch converts on the host
  // (aten/src/ATen/native/cuda/Copy.cu: "for blocking transfers conversions are performed on CPU"), and
  // _reassign_or_swap_out_partitioned_parameters copies the fp32 partition into the 16-bit one the same way.
  p.offload = {.grad_bytes = 4,
               .param_bytes = 4,
               .accumulate_on_host = true,
               .pinned = false,
               .on_reduce_stream = true,
               .zero3_round_trip = true};
  p.zero_hooks = true;
  p.glue = hf_model_code_glue(false);
  p.time_source =
      "DeepSpeed config docs (reduce_bucket_size 5e8, overlap_comm false for stage 1/2, true for 3); "
      "HF transformers LlamaRMSNorm.forward (kernel count); runtime/zero/stage_1_and_2.py, "
      "stage3.py and zero/offload_config.py @v0.14.2 (ZeRO-Offload copies)";
  p.source =
      "Rajbhandari et al. 2020 Sec. 3.1 (2+2+12 bytes/param); DeepSpeed config docs (reduce_bucket_size "
      "5e8, stage3 prefetch/live parameters; inference max_out_tokens 1024); HF transformers "
      "LlamaForCausalLM logits.float()";
  return p;
}

// PyTorch FSDP with MixedPrecision(param_dtype=bf16): the sharded flat parameter is the fp32 master
// (weights and master are the same 4 bytes), gradients are kept in fp32 for it, Adam m, v are fp32:
// 4 + 4 + 8 = 16 bytes/param sharded; the bf16 copies exist only while a unit is gathered
// (PyTorch FSDP docs, "FSDP Notes"). Logits as in HF transformers models.
FrameworkProfile fsdp() {
  FrameworkProfile p{.framework = Framework::Fsdp, .name = "fsdp"};
  p.weight_bytes = 4;
  p.grad_bytes = 4;
  p.master_bytes = 0;
  p.logits_bytes = 10;
  p.zero3_live_layers = 2;
  // Time: FSDP reduce-scatters each unit's gradients as its backward finishes and prefetches the next
  // unit's parameters (BackwardPrefetch.BACKWARD_PRE, forward_prefetch); units = transformer layers.
  p.grad_sync_overlap = true;
  p.grad_bucket_elements = 0;
  p.grad_reduce_bytes = 2;  // MixedPrecision(reduce_dtype=bf16), as llm-foundry / torchtitan configure it
  p.zero3_overlap = true;
  // HF LlamaRMSNorm for Llama models; the rest of the glue stays fused: the FSDP runs llmsim is checked
  // against are llm-foundry MPT (its own fused LayerNorm and attention code).
  p.glue.rmsnorm_kernels = 6;
  // A gated MLP runs as eager code on this stack, w2(silu(w1(x)) * w3(x)) (torchtitan models/llama3
  // FeedForward, torchtune modules/feed_forward.py, HF LlamaMLP), and autograd keeps act(gate) for the
  // product's backward; llm-foundry's MPT is not gated.
  p.glue.split_gated_activation = true;
  // Selective recomputation on the PyTorch-native stack is torchtitan's op-level SAC (its llama3 train
  // configs: activation_checkpoint.mode = "selective", selective_ac_option = "op"; the policy in
  // torchtitan/distributed/activation_checkpoint.py saves every odd aten.mm, SDPA, reduce-scatter and
  // all-to-all output of a block and recomputes the rest). torchtune, llm-foundry and HF offer only
  // whole-block checkpointing (full).
  p.selective = model::SelectivePolicy::AlternateMatmuls;
  // torchtune's FSDP recipes train in pure bf16 (dtype: bf16, no master copy) and can step inside
  // backward (optimizer_in_bwd: True, via Tensor.register_post_accumulate_grad_hook).
  p.pure_16bit = true;
  p.optimizer_in_backward = true;
  // torchtitan steps AdamW with implementation "fused" by default (its optimizer config) and torchtune's
  // recipes pass fused: True to torch.optim.AdamW.
  p.optimizer_impl = OptimizerImpl::Fused;
  p.time_source =
      "PyTorch FSDP docs (per-unit reduce-scatter, backward prefetch); HF LlamaRMSNorm kernel count; torchtitan "
      "distributed/activation_checkpoint.py (op-level selective AC)";
  p.source = "PyTorch FSDP docs (MixedPrecision, flat fp32 sharded params, forward/backward prefetch of one unit)";
  return p;
}

// Hugging Face Trainer without ZeRO: fp32 weights with autocast (AMP), fp32 gradients, Adam m, v:
// 4 + 4 + 8 = 16 bytes/param (HF docs "Model training anatomy"). torch DDP copies every gradient into
// bucket buffers unless gradient_as_bucket_view=True (PyTorch DDP docs). generate() before transformers
// 4.45.0 computes the logits of every prompt position and upcasts them to fp32 (LlamaForCausalLM.forward:
// logits = lm_head(hidden_states).float()); from 4.45.0 it asks the model for the last position's alone
// (generation/utils.py: model_kwargs["num_logits_to_keep"] = 1 when the model supports it, PR #31292).
FrameworkProfile hf() {
  FrameworkProfile p{.framework = Framework::Hf, .name = "hf"};
  // HF Trainer accumulates gradients in .grad across gradient_accumulation_steps (zero_grad only after the
  // optimizer step): autograd's AccumulateGrad adds onto the existing gradient from the second micro-batch on.
  p.grad_accumulation = FrameworkProfile::GradAccumulation::AccumulateGrad;
  p.weight_bytes = 4;
  p.grad_bytes = 4;
  p.master_bytes = 0;
  p.logits_bytes = 10;
  p.bucket_copies_all_grads = true;
  p.full_prefill_logits = true;
  p.last_logits_from = Version{4, 45, 0};
  // Time: torch DDP all-reduces 25 MiB buckets (bucket_cap_mb=25) overlapped with backward.
  p.grad_sync_overlap = true;
  p.grad_bucket_elements = 25.0 * 1024 * 1024 / 4;
  p.grad_reduce_bytes = 4;  // fp32 gradients under AMP
  p.glue = hf_model_code_glue(true);
  // Optimizer.zero_grad() sets gradients to None by default since PyTorch 2.0 (HF Trainer calls
  // model.zero_grad()); each is allocated when its layer's backward runs.
  p.grads_transient = true;
  // A model loaded with torch_dtype=bfloat16 and trained without AMP is pure bf16; HF Trainer's
  // layer-wise optimizers (LOMO, GaLore "layerwise") and PyTorch's post-accumulate-grad hooks step
  // inside backward.
  p.pure_16bit = true;
  p.optimizer_in_backward = true;
  // HF Trainer's default optim is adamw_torch_fused with torch >= 2.8 (training_args.py default_optim);
  // from transformers 4.32.0 (PR #25109) to then it was adamw_torch, torch.optim.AdamW's foreach step,
  // which a recipe or --optimizer-impl foreach states.
  p.optimizer_impl = OptimizerImpl::Fused;
  p.time_source = "PyTorch DDP docs (bucket_cap_mb 25, overlapped all-reduce); HF LlamaRMSNorm kernel count";
  p.source = "HF transformers docs 'Model training anatomy' (AMP: 4+4+8 bytes/param); PyTorch DDP docs (bucket copies)";
  return p;
}

// Inference engines (vLLM, TGI, LightLLM, TensorRT-LLM): KV cache sized by the tokens in use (paged or
// token-granular; the engines' up-front reservation of the rest of memory is not a requirement) and
// logits only for the last position of each sequence (vLLM/TRT-LLM gather_last_token_logits).
// Training through them is not meaningful; their training fields follow Hugging Face models.
FrameworkProfile engine(Framework f, std::string name) {
  FrameworkProfile p = hf();
  p.framework = f;
  p.name = std::move(name);
  p.full_prefill_logits = false;
  p.source =
      "vLLM docs (PagedAttention, logits of the last token); TensorRT-LLM docs (gather_context_logits off by default)";
  return p;
}
}  // namespace

const FrameworkProfile& framework_profile(Framework f) {
  static const std::array<FrameworkProfile, 16> profiles{megatron(),
                                                         deepspeed(),
                                                         fsdp(),
                                                         hf(),
                                                         engine(Framework::Vllm, "vllm"),
                                                         engine(Framework::Tgi, "tgi"),
                                                         engine(Framework::LightLlm, "lightllm"),
                                                         engine(Framework::TrtLlm, "trt-llm"),
                                                         engine(Framework::FasterTransformer, "fastertransformer"),
                                                         engine(Framework::LmDeploy, "lmdeploy"),
                                                         engine(Framework::Sglang, "sglang"),
                                                         engine(Framework::LlamaCpp, "llama.cpp"),
                                                         engine(Framework::ExLlamaV2, "exllamav2"),
                                                         engine(Framework::MlcLlm, "mlc-llm"),
                                                         engine(Framework::TinyChat, "tinychat"),
                                                         engine(Framework::AutoAwq, "autoawq")};
  for (const auto& p : profiles)
    if (p.framework == f) return p;
  return profiles[1];
}

}  // namespace llmsim::sim
