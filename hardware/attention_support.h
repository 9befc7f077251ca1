#pragma once
// Whether a GPU can run a fused-attention kernel at all: a property of the GPU (its compute
// capability), asked by the feasibility rules of training and inference and by `show system`.
#include <string>

#include "llmsim/hardware/attention_kernel.h"
#include "llmsim/hardware/system_spec.h"

namespace llmsim::hardware {

// Why the GPU cannot run this fused-attention kernel ("" when it can): FlashAttention-3 exists for
// Hopper (compute capability 9.0) only.
std::string attention_kernel_problem(const SystemSpec& sys, AttentionKernel kernel);

}  // namespace llmsim::hardware
