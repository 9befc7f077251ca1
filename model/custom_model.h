#pragma once
// The `custom` model of the measured-run schema (data/validation/SCHEMA.md): an architecture
// family plus dimensions.
//   gpt   = LayerNorm, GELU MLP with 2 matrices, learned positions, MHA, biases, tied embeddings,
//           dropout 0.1 (Megatron-LM GPT defaults)
//   llama = RMSNorm, SwiGLU MLP with 3 matrices, RoPE, GQA, no biases, untied embeddings, no dropout
#include <cstdint>
#include <string>

#include "llmsim/core/error.h"
#include "llmsim/model/model_spec.h"

namespace llmsim::model {

struct CustomDims {
  std::string arch;  // "gpt" or "llama"
  std::int64_t layers = 0;
  std::int64_t hidden = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;  // 0 = heads
  std::int64_t ffn = 0;       // 0 = 4 * hidden
  std::int64_t vocab = 0;
  std::int64_t max_positions = 0;  // gpt: size of the learned position table (the run's seq_len)
};

// Validates (positive sizes, heads divide hidden, kv_heads divide heads) and builds the spec;
// `where` locates the dimensions in the caller's input for error messages.
ModelSpec make_custom_model(const CustomDims& dims, const Location& where);

}  // namespace llmsim::model
