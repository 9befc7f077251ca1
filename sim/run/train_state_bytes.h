#pragma once
// Bytes per trainable parameter of the training state (weights, gradients, master copy, optimizer
// states) and of the frozen base under LoRA: one definition for the memory model, the fast search
// evaluator and the step graph's optimizer update, so that a precision option changes all three.
#include <string_view>

#include <cstdint>

#include "llmsim/core/dtype.h"
#include "llmsim/model/model_spec.h"
#include "llmsim/run/framework_profile.h"
#include "llmsim/run/run_spec.h"

namespace llmsim::sim {

struct TrainStateBytes {
  // All in bytes per trainable parameter, before ZeRO sharding.
  double weight = 2;                // working copy the forward and backward read
  double grad = 2;                  // gradient buffer
  double master = 4;                // separate master copy held by the optimizer (0 = the weights are the master)
  double states = 8;                // optimizer states (Adam m and v)
  double grad_wire = 2;             // bytes per gradient element on the wire: the framework's reduce dtype, never
                                    // wider than the gradients are stored
  DType state_dtype = DType::FP32;  // element type of the Adam states (meaningless for SGD / 8-bit Adam)
  // Whose convention these are: the framework's name, "qlora recipe" or "pure bf16" / "pure fp32"
  // (static strings: the search evaluates this per candidate, so it allocates nothing).
  std::string_view recipe;

  double optimizer() const { return master + states; }
  // Bytes one fused optimizer update moves per parameter: read the gradient; read and write the master
  // (or the weights themselves when there is none) and the states; write the working copy when separate.
  double update_traffic() const;
};

// Adam's m and v element type for this run: the one given; else the weights' own 16-bit type under pure
// 16-bit training (torch.optim.AdamW allocates its states like the parameters); else fp32.
DType optimizer_state_dtype(const TrainSpec& t);

// The training state of `t` under framework profile `fw`.
TrainStateBytes train_state_bytes(const FrameworkProfile& fw, const TrainSpec& t);

// Bytes per parameter of the frozen base's linear weights under LoRA/QLoRA: 16-bit, or the quantized
// format (QLoRA implies NF4 with double quantization).
double frozen_linear_bytes(const TrainSpec& t);

// The largest single trainable tensor a GPU of a pipeline stage holds (parameters per TP rank): a
// projection or expert matrix of its layers, the embedding or LM head when the stage holds them, or
// under LoRA the largest adapter matrix (rank x the widest projection).
double largest_trainable_tensor(const model::ModelSpec& m, const TrainSpec& t, std::int64_t tp,
                                bool holds_vocab_matrix);

// Parameters whose gradients are live at once: all trainable ones, or with the optimizer in backward
// about the largest tensor (each is stepped and freed as soon as its gradient is complete).
double live_gradient_params(const TrainSpec& t, double trainable, double largest_tensor);

}  // namespace llmsim::sim
