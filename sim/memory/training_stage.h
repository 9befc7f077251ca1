#pragma once
// The memory items of one pipeline stage of a training run, written once for the memory model (which
// lists them, with how each was counted) and the search's fast memory check (which only sums them):
// frozen or trained weights, gradients, optimizer states and what offload moves to the host, ZeRO-3
// gathered layers, communication buckets, activations held in flight, the recompute working set,
// logits and loss, autocast's weight copies, the gradient/activation overlap and the runtime.
// The caller supplies the stage's parameter and activation sums (StageInputs), computed from the
// model or from its per-layer caches, and a sink `void(MemoryKind, MemoryPlace, double bytes,
// NoteFn note)` that receives the items in order; `note()` formats the item's explanation and costs
// nothing unless the sink calls it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "llmsim/core/dtype.h"
#include "llmsim/hardware/system_spec.h"
#include "llmsim/memory/activation_memory.h"
#include "llmsim/memory/memory_model.h"
#include "llmsim/model/model_spec.h"
#include "llmsim/run/framework_profile.h"
#include "llmsim/run/run_spec.h"
#include "llmsim/run/train_state_bytes.h"

namespace llmsim::sim {

// What one GPU of a stage holds before ZeRO sharding, and its activations.
struct StageInputs {
  std::int64_t index = 0;            // stage index
  std::int64_t layers = 0;           // layers the stage owns
  bool first = false;                // holds the embedding
  bool last = false;                 // holds the final norm, LM head and loss
  double linear = 0;                 // parameters inside linear projections (quantizable, LoRA-frozen)
  double other = 0;                  // norms, embeddings, LM head (kept in 16-bit)
  double largest_layer = 0;          // parameters of the stage's biggest layer (ZeRO-3 gathers whole layers)
  double trainable = 0;              // all parameters, or the LoRA adapters
  double per_mb = 0;                 // stored activation bytes of one micro-batch through the stage
  double recompute_working_set = 0;  // the most one layer re-materialises while it recomputes (recompute_working_bytes)
  double total() const { return linear + other; }
};

enum class MemoryPlace { Gpu, Host };  // host items are per GPU; the caller scales them to the node

template <typename Sink>
void training_stage_items(const model::ModelSpec& m, const hardware::SystemSpec& sys, const RunSpec& run,
                          const StageInputs& st, Sink&& sink) {
  const auto& par = run.par;
  const auto& t = run.train;
  const FrameworkProfile& fw = framework_profile(t.framework);
  const double dp = static_cast<double>(par.dp);
  const double tp = static_cast<double>(par.tp);
  const double act_bytes = dtype_bytes(activation_dtype(t.precision));
  const bool lora = t.finetune != FinetuneKind::Full;
  const double trainable = st.trainable;
  const int z = t.zero_stage;
  const double shard_w = z >= 3 ? dp : 1.0, shard_g = z >= 2 ? dp : 1.0, shard_o = z >= 1 ? dp : 1.0;
  const bool offload_opt = t.offload != Offload::None;
  const bool offload_params = t.offload == Offload::OptimizerParams;
  // Items of zero bytes are left out. `allocated`: the GPU's tensors so far (what the allocator serves).
  double allocated = 0;
  const auto add = [&](MemoryKind kind, MemoryPlace where, double bytes, auto note) {
    if (bytes <= 0) return;
    if (where == MemoryPlace::Gpu) allocated += bytes;
    sink(kind, where, bytes, note);
  };
  constexpr MemoryPlace gpu = MemoryPlace::Gpu, host = MemoryPlace::Host;

  double frozen_base = 0;  // the frozen base's bytes on this GPU, or on the host under parameter offload
  if (lora) {
    // Frozen base: 16-bit for LoRA; NF4 with double quantization on linear layers for QLoRA
    // (embeddings, norms and the LM head stay 16-bit, as bitsandbytes leaves them).
    const double linear_b = frozen_linear_bytes(t);
    frozen_base = (st.linear * linear_b + st.other * 2.0) / shard_w;
    add(MemoryKind::FrozenWeights, gpu, offload_params ? 0.0 : frozen_base, [&] {
      return fmt::format("{:.3g} params: linear at {:.4g} B, rest at 2 B{}", st.total(), linear_b,
                         z >= 3 ? ", ZeRO-3 sharded" : "");
    });
  }
  const TrainStateBytes b = train_state_bytes(fw, t);
  const double w_bytes = trainable * b.weight / shard_w;
  add(lora ? MemoryKind::AdapterWeights : MemoryKind::Weights, gpu, offload_params ? 0.0 : w_bytes,
      [&] { return fmt::format("{:.4g} params x {} B ({}){}", trainable, b.weight, b.recipe, z >= 3 ? " / dp" : ""); });
  const double largest = largest_trainable_tensor(m, t, par.tp, st.first || st.last);
  const double grads = live_gradient_params(t, trainable, largest) * b.grad / shard_g;
  add(MemoryKind::Gradients, gpu, grads, [&] {
    return t.optimizer_in_backward
               ? fmt::format("{} B/param of the largest tensor: stepped and freed during backward{}", b.grad,
                             z >= 2 ? " / dp" : "")
               : fmt::format("{} B/param ({}){}", b.grad, b.recipe, z >= 2 ? " / dp" : "");
  });
  const double opt_bytes = trainable * b.optimizer() / shard_o;
  add(MemoryKind::OptimizerStates, gpu, offload_opt ? 0.0 : opt_bytes, [&] {
    return fmt::format("{} ({} B/param: master {} + states {}{}){}", name_of(t.optimizer), b.optimizer(), b.master,
                       b.states, t.optimizer == Optimizer::Adam ? fmt::format(" {}", dtype_name(b.state_dtype)) : "",
                       z >= 1 ? " / dp" : "");
  });
  if (offload_opt) {
    // ZeRO-Offload keeps the fp32 optimizer states and an fp32 gradient partition in host memory.
    add(MemoryKind::OffloadedOptimizer, host, opt_bytes,
        [] { return std::string("optimizer states moved to host (ZeRO-Offload)"); });
    add(MemoryKind::OffloadedGradients, host, trainable * 4.0 / shard_g,
        [] { return std::string("fp32 gradient partition on host"); });
  }
  // Parameter offload moves every parameter partition to the host, the frozen base's as well as the trained
  // ones (DeepSpeed offload_param / FSDP CPUOffload(offload_params=True) act on all parameters of the module).
  if (offload_params)
    add(MemoryKind::OffloadedWeights, host, w_bytes + frozen_base, [&] {
      return lora ? std::string("16-bit adapters and the frozen base on host (parameter offload)")
                  : std::string("16-bit parameters on host (ZeRO-Infinity)");
    });
  if (z >= 3 && dp > 1)
    add(MemoryKind::Zero3GatheredParams, gpu, fw.zero3_live_layers * st.largest_layer * 2.0,
        [&] { return fmt::format("{} layers gathered in 16-bit (current + prefetch)", fw.zero3_live_layers); });
  if (fw.bucket_elements > 0 && (z == 1 || z == 2)) {
    // DeepSpeed's ZeRO-1/2 backward() allocates its contiguous-gradient bucket of reduce_bucket_size
    // elements every micro-step, however few gradients it will hold and on one GPU too, and a second one
    // when overlap_comm double-buffers the reduction (stage_1_and_2.py backward: buf_0, buf_1).
    const double buffers = grad_reduce_on_compute_stream(fw, z, t.overlap_grad_reduce) ? 1.0 : 2.0;
    add(MemoryKind::CommBuckets, gpu, buffers * fw.bucket_elements * b.grad, [&] {
      return fmt::format("{} reduce bucket{} of {:.3g} elements ({}, allocated at each backward)", buffers,
                         buffers > 1 ? "s" : "", fw.bucket_elements, fw.name);
    });
  } else if (fw.bucket_elements > 0 && z == 0 && dp > 1) {
    add(MemoryKind::CommBuckets, gpu, std::min(fw.bucket_elements, trainable) * b.grad,
        [&] { return fmt::format("reduce bucket of {:.3g} elements ({})", fw.bucket_elements, fw.name); });
  }
  if (fw.bucket_copies_all_grads && z == 0 && dp > 1 && !t.optimizer_in_backward)
    add(MemoryKind::CommBuckets, gpu, trainable * b.grad,
        [] { return std::string("DDP bucket buffers copy every gradient"); });

  // Activations, with what the framework's model code saves beyond fused kernels (model::EagerGlue).
  const std::int64_t micro_batches = micro_batches_per_step(run);
  const double held = in_flight_factor(st.index, par.pp, par.vp, micro_batches, t.schedule);
  const double acts = st.per_mb * held;
  add(MemoryKind::Activations, gpu, acts, [&] {
    return fmt::format("{} layers x {:.3g} micro-batches in flight, recompute {}{}{}", st.layers, held,
                       name_of(t.recompute), t.flash_attn ? ", flash-attn" : "",
                       par.sequence_parallel ? ", sequence parallel" : "");
  });
  add(MemoryKind::RecomputeWorkingSet, gpu, st.recompute_working_set, [&] {
    return std::string(t.recompute == Recompute::Full ? "one layer's activations re-materialised in backward"
                                                      : "one layer's recomputed tensors re-materialised in backward");
  });
  double logits = 0;
  if (st.last) {
    const double tokens = static_cast<double>(t.micro_batch * t.seq_len) / static_cast<double>(par.cp);
    const double per_logit = loss_logits_bytes(fw, t);
    logits = tokens * std::ceil(static_cast<double>(m.vocab) / tp) * per_logit;
    add(MemoryKind::LogitsAndLoss, gpu, logits, [&] {
      return fmt::format("{} B per logit ({}{})", per_logit, fw.name, t.fused_loss ? ", fused cross-entropy" : "");
    });
  }
  const double amp_copies = amp_weight_copy_bytes(training_glue(fw, t), act_bytes, trainable / shard_w);
  add(MemoryKind::AmpWeightCopies, gpu, amp_copies, [&] {
    return fmt::format("{} B/param: autocast's copy of each fp32 weight, held from forward to backward", act_bytes);
  });
  const double overlap = gradient_overlap_bytes(fw, run, micro_batches, grads, acts + logits + amp_copies);
  if (overlap > 0) {
    allocated -= overlap;
    sink(MemoryKind::GradientOverlap, gpu, -overlap, [] {
      return std::string(
          "gradients are allocated in backward as activations are freed (zero_grad(set_to_none=True)), "
          "one micro-batch per step");
    });
  }
  // The optimizer step's transient copies: DeepSpeed's gradient copy (FrameworkProfile::step_grad_copy_bytes)
  // and AdamW's sqrt(v) (adam_sqrt_copy_bytes). A step after backward finds the activations, logits and
  // weight copies freed and the gradients complete: it raises the peak only by what exceeds the freed bytes.
  // A step inside backward (optimizer_in_backward) runs beside the activations still held.
  const double grad_copy = optimizer_step_copy_bytes(fw, run, trainable / shard_o);
  const double sqrt_v =
      adam_sqrt_copy_bytes(fw, run, trainable / shard_o, largest / shard_o, dtype_bytes(b.state_dtype));
  const double freed =
      t.optimizer_in_backward ? 0.0 : acts + logits + amp_copies + st.recompute_working_set - std::max(0.0, overlap);
  if (const double copy = grad_copy + sqrt_v - freed; copy > 0)
    add(MemoryKind::OptimizerStepCopy, gpu, copy, [&] {
      std::string what;
      if (grad_copy > 0)
        what = fmt::format("the step's {} B/param gradient copy of {} ({})", fw.step_grad_copy_bytes,
                           z >= 3 && fw.step_sub_group_params > 0
                               ? fmt::format("a sub-group of <= {:.3g} params", fw.step_sub_group_params)
                               : std::string("the partition"),
                           fw.name);
      if (sqrt_v > 0)
        what += fmt::format("{}{} AdamW's sqrt(v) copy of {:.3g} params ({} B each)", what.empty() ? "" : " + ",
                            name_of(t.optimizer_impl.value_or(fw.optimizer_impl)), sqrt_v / dtype_bytes(b.state_dtype),
                            dtype_bytes(b.state_dtype));
      return t.optimizer_in_backward ? what + ", during backward" : what + ", beyond the freed activations";
    });
  // The runtime (system [runtime] table): the allocator's reserve grows with what it serves.
  const double tensors = allocated;
  add(MemoryKind::CudaContext, gpu, sys.runtime.cuda_context_bytes,
      [] { return std::string("CUDA context, cuBLAS/NCCL workspaces (system runtime)"); });
  add(MemoryKind::AllocatorReserve, gpu, allocator_reserve_bytes(sys, tensors),
      [&] { return allocator_reserve_note(sys, tensors); });
}

}  // namespace llmsim::sim
