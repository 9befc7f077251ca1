#include "llmsim/hardware/attention_kernel.h"

namespace llmsim {

std::string_view name_of(AttentionKernel k) {
  switch (k) {
    case AttentionKernel::Fa2: return "fa2";
    case AttentionKernel::Fa1: return "fa1";
    case AttentionKernel::Fa3: return "fa3";
    case AttentionKernel::Cudnn: return "cudnn";
  }
  return "fa2";
}

std::vector<std::string> attention_kernel_names() { return {"fa2", "fa1", "fa3", "cudnn"}; }

bool parse_name(std::string_view s, AttentionKernel& out) {
  for (const AttentionKernel k :
       {AttentionKernel::Fa2, AttentionKernel::Fa1, AttentionKernel::Fa3, AttentionKernel::Cudnn})
    if (s == name_of(k)) {
      out = k;
      return true;
    }
  return false;
}

}  // namespace llmsim
