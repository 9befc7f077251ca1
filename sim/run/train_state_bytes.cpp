#include "llmsim/run/train_state_bytes.h"

#include <algorithm>
#include <cmath>

namespace llmsim::sim {

double TrainStateBytes::update_traffic() const {
  const double updated = master > 0 ? master : weight;
  return grad + 2.0 * (updated + states) + (master > 0 ? weight : 0.0);
}

namespace {
// The type the model computes in (activation_dtype: 16-bit, or fp32 for fp32/tf32); weights and
// gradients take it without a master copy.
DType compute_storage(const TrainSpec& t) { return activation_dtype(t.precision); }
}  // namespace

DType optimizer_state_dtype(const TrainSpec& t) {
  if (t.optimizer_state_dtype) return *t.optimizer_state_dtype;
  // QLoRA's recipe has no master copy but keeps 32-bit AdamW states (paged_adamw_32bit).
  const bool pure = !t.master_weights && t.finetune != FinetuneKind::Qlora;
  return pure ? compute_storage(t) : DType::FP32;
}

TrainStateBytes train_state_bytes(const FrameworkProfile& fw, const TrainSpec& t) {
  TrainStateBytes b;
  b.recipe = fw.name;
  b.weight = fw.weight_bytes;
  b.grad = fw.grad_bytes;
  b.master = fw.master_bytes;
  if (t.finetune == FinetuneKind::Qlora) {
    // QLoRA's recipe keeps the adapters and their gradients in bf16 with no master copy, and 32-bit
    // (paged) AdamW states (Dettmers et al. 2023 Sec. 4; qlora.py: LoRA layers cast to bf16,
    // --optim paged_adamw_32bit).
    b.weight = b.grad = 2.0;
    b.master = 0.0;
    b.recipe = "qlora recipe";
  } else if (!t.master_weights) {
    // Pure 16-bit training: the model is loaded in the compute dtype and the optimizer updates it in
    // place, with gradients of the same type (torchtune dtype=bf16; a Hugging Face model loaded with
    // torch_dtype=bfloat16 and trained without AMP).
    b.weight = b.grad = dtype_bytes(compute_storage(t));
    b.master = 0.0;
    b.recipe = compute_storage(t) == DType::FP32 ? "pure fp32" : "pure bf16";
  }
  b.grad_wire = std::min(fw.grad_reduce_bytes, b.grad);
  b.state_dtype = optimizer_state_dtype(t);
  switch (t.optimizer) {
    case Optimizer::Adam:
      b.states = 2.0 * dtype_bytes(b.state_dtype);
      break;  // m and v
    // 8-bit m and v, block-wise (Dettmers et al. 2022; the block statistics are negligible).
    case Optimizer::Adam8bit: b.states = 2.0; break;
    case Optimizer::Sgd: b.states = 0.0; break;  // plain SGD keeps no state
  }
  return b;
}

double frozen_linear_bytes(const TrainSpec& t) {
  const model::WeightQuant q = t.base_quant != model::WeightQuant::None ? t.base_quant
                               : t.finetune == FinetuneKind::Qlora      ? model::WeightQuant::Nf4
                                                                        : model::WeightQuant::None;
  return q != model::WeightQuant::None ? model::quantized_weight_bytes(q, DType::BF16) : 2.0;
}

double largest_trainable_tensor(const model::ModelSpec& m, const TrainSpec& t, std::int64_t tp,
                                bool holds_vocab_matrix) {
  const double h = static_cast<double>(m.hidden);
  const double widest =
      static_cast<double>(std::max({m.ffn_hidden, m.moe.expert_ffn, m.moe.shared_expert_ffn, m.q_dim(), m.hidden}));
  if (t.finetune != FinetuneKind::Full) return static_cast<double>(t.lora_rank) * widest;
  double largest = h * widest / static_cast<double>(tp);
  if (holds_vocab_matrix)
    largest = std::max(largest, h * std::ceil(static_cast<double>(m.vocab) / static_cast<double>(tp)));
  return largest;
}

double live_gradient_params(const TrainSpec& t, double trainable, double largest_tensor) {
  return t.optimizer_in_backward ? std::min(trainable, largest_tensor) : trainable;
}

}  // namespace llmsim::sim
