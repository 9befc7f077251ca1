#include "llmsim/hardware/attention_support.h"

#include <fmt/format.h>

namespace llmsim::hardware {

std::string attention_kernel_problem(const SystemSpec& sys, AttentionKernel kernel) {
  const int cc = sys.gpu.compute_capability;
  // cuDNN's fused flash attention needs sm80+ (Transformer Engine disables FusedAttention below it).
  if (kernel == AttentionKernel::Cudnn && cc > 0 && cc < 80)
    return fmt::format("--attn-kernel cudnn (cuDNN fused attention) needs compute capability 8.0 or newer; {} is {}.{}",
                       sys.gpu.name, cc / 10, cc % 10);
  if (kernel != AttentionKernel::Fa3 || is_hopper(cc)) return "";
  return fmt::format("--attn-kernel fa3 (FlashAttention-3) runs on Hopper GPUs (compute capability 9.0) only; {} {}",
                     sys.gpu.name,
                     cc > 0 ? fmt::format("is {}.{}", cc / 10, cc % 10)
                            : std::string("has no compute_capability in its system profile"));
}

}  // namespace llmsim::hardware
