#pragma once
// Which fused-attention kernel generation a run uses. Its throughput differs by a large factor at long
// sequences (FlashAttention-2 roughly doubles FlashAttention-1), so it is a run setting with its own
// achievable fraction in the hardware profile, not a framework constant.
#include <string>
#include <string_view>
#include <vector>

namespace llmsim {

enum class AttentionKernel {
  Fa2,  // FlashAttention-2 (flash-attn >= 2.0, PyTorch SDPA's flash backend, vLLM/TGI flash kernels)
  Fa1,  // FlashAttention-1 generation: flash-attn 1.x CUDA kernels and the Triton FlashAttention kernel
  Fa3,  // FlashAttention-3 (Hopper only: warp-specialised TMA/WGMMA kernels, flash-attn 3.x)
  // cuDNN fused attention (sm80+): Transformer Engine's FusedAttention backend, which TE prefers over
  // FlashAttention on Hopper, and PyTorch SDPA's cuDNN backend.
  Cudnn,
};

std::string_view name_of(AttentionKernel k);                // "fa2", "fa1", "fa3", "cudnn"
std::vector<std::string> attention_kernel_names();          // every name, in enum order
bool parse_name(std::string_view s, AttentionKernel& out);  // false when unknown (out untouched)

}  // namespace llmsim
