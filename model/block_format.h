#pragma once
// Weight formats stated with their exact storage, the formats of the local inference engines (issue 40):
// llama.cpp's GGUF file types ("gguf:Q4_K_M") and ExLlamaV2's EXL2 at a number of bits per weight
// ("exl2:4.0"). Their bytes differ from the int4 / int8 formats of model_spec.h in ways that matter at
// batch 1, where a token's time is the time to stream the weights once: a GGUF file type is a recipe that
// gives each tensor a block type of its own (Q4_K_M keeps half of the value and down projections, and the
// LM head, in Q6_K), and an EXL2 checkpoint averages the bits it was converted at over its layers.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "llmsim/model/model_spec.h"

namespace llmsim::model {

struct BlockFormat {
  enum class Family { Gguf, Exl2 };
  Family family = Family::Gguf;
  std::string type;          // the GGUF file type as llama.cpp names it ("Q4_K_M"); EXL2: the bits as written
  double bits = 0;           // EXL2: bits per weight of the decoder's projections
  std::string text() const;  // "gguf:Q4_K_M", "exl2:4.0"
};

// "gguf:TYPE" or "exl2:BITS"; nullopt when `text` has neither prefix, or (with `problem` set to why, naming
// the known types) when the prefix is known and the type is not (EXL2 bits outside 2..8).
std::optional<BlockFormat> parse_block_format(std::string_view text, std::string& problem);
// Whether `text` names a block-format family ("gguf:" or "exl2:"), known type or not.
bool is_block_format_text(std::string_view text);
// The GGUF file types parse_block_format knows, as llama.cpp's quantize tool names them.
std::vector<std::string> gguf_file_types();

// Bits per weight as the format stores the model's tensors: the mean over the layers' quantizable projections
// (each tensor at its recipe's block type), the LM head and the token embedding (0: kept off the GPU).
struct StoredBits {
  double linear = 16;
  double head = 16;
  double embedding = 16;
};
StoredBits stored_bits(const BlockFormat& f, const ModelSpec& m);

// The format family whose kernels run the format: the block types are dequantized inside the GEMV / GEMM
// kernels that read them (llama.cpp's mmvq / mmq, ExLlamaV2's q_gemm), as the int4 path prices them; Q8_0
// as int8; 16-bit GGUF files as unquantized weights.
WeightQuant kernel_format(const BlockFormat& f);

// Bytes per parameter of an inference model's weights: inference_weight_bytes(q, precision) for the formats of
// model_spec.h, and for a block format its stored bits: the projections at their mean, every other weight at
// the mean of the LM head and the token embedding weighted by their sizes. The one rule of the memory model
// and the iteration cost.
InferenceWeightBytes inference_weight_bytes(const std::optional<BlockFormat>& f, WeightQuant q, DType precision,
                                            const ModelSpec& m);

}  // namespace llmsim::model
