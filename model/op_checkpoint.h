#pragma once
// Which tensors of a transformer block selective activation checkpointing keeps for backward, and what
// it runs again, for the two selective policies frameworks ship:
//  * AttentionCore (Megatron-LM --recompute-granularity selective; Korthikanti et al. 2022 Sec. 5):
//    only the core attention (scores, softmax, dropout, context) is recomputed; with FlashAttention
//    nothing is (the kernel keeps no s^2 tensor). Its memory is activation_memory.h's formula.
//  * AlternateMatmuls (torchtitan's op-level SAC, activation_checkpoint.mode = "selective",
//    selective_ac_option = "op", as its llama3 train configs set it; torchtitan/distributed/
//    activation_checkpoint.py): inside each checkpointed block the policy saves the outputs of the ops
//    on its save list (aten.mm, the scaled_dot_product_attention kernels, the sequence-parallel
//    reduce_scatter_tensor, the expert-parallel all_to_all_single) except every second mm (the block's
//    mm counter restarts per block: the 2nd, 4th, ... are recomputed), and recomputes everything else
//    in backward (norms, RoPE, activations, residual adds, the even mms, all-gathers, grouped expert
//    GEMMs, which are not aten.mm).
// The policy is applied to the operator inventory (operators.h), one rule for the activation memory
// and the recompute time.
#include <cstdint>
#include <vector>

#include "llmsim/model/model_spec.h"
#include "llmsim/model/operators.h"

namespace llmsim::model {

enum class SelectivePolicy { AttentionCore, AlternateMatmuls };

struct OpCheckpoint {
  std::vector<double> recompute_share;  // per operator of the inventory: the share of its forward run again
  double saved_bytes = 0;               // bytes of the saved op outputs (the block's input is the caller's)
};

// The reference code's projections one inventory GEMM stands for, as output widths per GPU: the fused QKV
// GEMM is q, k and v where the model's code runs them as separate nn.Linear calls
// (attention_input_projections), the fused gate/up GEMM is gate and up (mlp_input_projections); any other
// GEMM is itself. Their sum is the GEMM's n.
std::vector<double> reference_projection_widths(const ModelSpec& m, const Operator& op, std::int64_t tp);

// torchtitan's op-level policy over one block's inventory `ops`, built with `p` (its micro-batch, query
// length, tensor parallelism and activation dtype give the saved tensors' sizes).
OpCheckpoint alternate_matmul_checkpoint(const ModelSpec& m, const std::vector<Operator>& ops,
                                         const InventoryParams& p);

}  // namespace llmsim::model
