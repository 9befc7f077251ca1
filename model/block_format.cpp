#include "llmsim/model/block_format.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>

#include "llmsim/core/error.h"

namespace llmsim::model {

namespace {

// ggml's block types: bytes per block and weights per block (ggml/src/ggml-common.h, the block_* structs and
// their static_asserts: block_q4_0 = fp16 d + 16 nibble bytes per 32 weights, block_q4_K = 2 fp16 + 12 scale
// bytes + 128 nibble bytes per 256, block_q6_K = 128 + 64 + 16 + 2 bytes per 256, ...).
enum class BlockType { Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, F16 };

struct BlockSize {
  double bytes;
  int weights;
};

BlockSize block_size(BlockType t) {
  switch (t) {
    case BlockType::Q4_0: return {18, 32};
    case BlockType::Q4_1: return {20, 32};
    case BlockType::Q5_0: return {22, 32};
    case BlockType::Q5_1: return {24, 32};
    case BlockType::Q8_0: return {34, 32};
    case BlockType::Q2_K: return {84, 256};
    case BlockType::Q3_K: return {110, 256};
    case BlockType::Q4_K: return {144, 256};
    case BlockType::Q5_K: return {176, 256};
    case BlockType::Q6_K: return {210, 256};
    case BlockType::IQ4_NL: return {18, 32};
    case BlockType::IQ4_XS: return {136, 256};
    case BlockType::F16: return {2, 1};
  }
  return {2, 1};
}

double bits_of(BlockType t) {
  const BlockSize s = block_size(t);
  return 8.0 * s.bytes / s.weights;
}

// llama.cpp's file types (tools/quantize: the names; src/llama-quant.cpp: the block type each starts from).
enum class FileType {
  Q4_0,
  Q4_1,
  Q5_0,
  Q5_1,
  Q8_0,
  F16,
  BF16,
  Q2_K,
  Q2_K_S,
  Q3_K_S,
  Q3_K_M,
  Q3_K_L,
  Q4_K_S,
  Q4_K_M,
  Q5_K_S,
  Q5_K_M,
  Q6_K,
  IQ4_NL,
  IQ4_XS
};

struct FileTypeName {
  FileType type;
  const char* name;
  BlockType base;
};

constexpr std::array<FileTypeName, 19> kFileTypes{{
    {FileType::Q4_0, "Q4_0", BlockType::Q4_0},       {FileType::Q4_1, "Q4_1", BlockType::Q4_1},
    {FileType::Q5_0, "Q5_0", BlockType::Q5_0},       {FileType::Q5_1, "Q5_1", BlockType::Q5_1},
    {FileType::Q8_0, "Q8_0", BlockType::Q8_0},       {FileType::F16, "F16", BlockType::F16},
    {FileType::BF16, "BF16", BlockType::F16},        {FileType::Q2_K, "Q2_K", BlockType::Q2_K},
    {FileType::Q2_K_S, "Q2_K_S", BlockType::Q2_K},   {FileType::Q3_K_S, "Q3_K_S", BlockType::Q3_K},
    {FileType::Q3_K_M, "Q3_K_M", BlockType::Q3_K},   {FileType::Q3_K_L, "Q3_K_L", BlockType::Q3_K},
    {FileType::Q4_K_S, "Q4_K_S", BlockType::Q4_K},   {FileType::Q4_K_M, "Q4_K_M", BlockType::Q4_K},
    {FileType::Q5_K_S, "Q5_K_S", BlockType::Q5_K},   {FileType::Q5_K_M, "Q5_K_M", BlockType::Q5_K},
    {FileType::Q6_K, "Q6_K", BlockType::Q6_K},       {FileType::IQ4_NL, "IQ4_NL", BlockType::IQ4_NL},
    {FileType::IQ4_XS, "IQ4_XS", BlockType::IQ4_XS},
}};

const FileTypeName* find_file_type(std::string_view name) {
  for (const auto& f : kFileTypes)
    if (name == f.name) return &f;
  return nullptr;
}

// A BlockFormat's GGUF type, known by construction (parse_block_format checked it).
const FileTypeName& file_type(std::string_view name) {
  const FileTypeName* f = find_file_type(name);
  if (!f)
    throw_input(Location{.key = "weight_quant"}, fmt::format("gguf:{} is not a GGUF file type llmsim knows", name));
  return *f;
}

// What a tensor is to llama.cpp's recipe (src/llama-quant.cpp tensor_get_category).
enum class Category { AttnQ, AttnK, AttnV, AttnQkv, AttnOutput, FfnGate, FfnUp, FfnDown, Output, TokenEmbd };

// llama.cpp's use_more_bits: the first and last eighth of the layers and every third in between.
bool use_more_bits(std::int64_t i, std::int64_t n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

// The block type llama.cpp's recipe gives one tensor (llama_tensor_get_type_impl, read at ggml-org/llama.cpp
// 007dbbf3; the K-quant rules date from the K-quants' introduction, June 2023). Without an importance matrix;
// Falcon's own rules are not modelled. `i` is the layer, `n` the layers, `ncols` the tensor's input width.
BlockType recipe_type(FileType ft, BlockType base, Category cat, std::int64_t i, const ModelSpec& m,
                      std::int64_t ncols) {
  if (base == BlockType::F16) return base;  // 16-bit files: no recipe (only quantized types are adjusted)
  const std::int64_t n = m.num_layers;
  const std::int64_t gqa = m.num_kv_heads > 0 ? m.num_heads / m.num_kv_heads : 1;
  const bool eight_experts = m.moe.num_experts == 8;
  BlockType t = base;
  switch (cat) {
    case Category::Output:
    case Category::TokenEmbd:  // TokenEmbd reaches here only when tied to the output
      if (ncols % block_size(base).weights != 0)
        t = BlockType::Q8_0;
      else if (base != BlockType::Q8_0)
        t = BlockType::Q6_K;
      return t;
    case Category::AttnV:
    case Category::AttnQkv:  // category_is_attn_v: a fused QKV follows the value projection's rules
      if (ft == FileType::Q2_K)
        t = gqa >= 4 ? BlockType::Q4_K : BlockType::Q3_K;
      else if (ft == FileType::Q2_K_S && gqa >= 4)
        t = BlockType::Q4_K;
      else if (ft == FileType::Q3_K_M)
        t = i < 2 ? BlockType::Q5_K : BlockType::Q4_K;
      else if (ft == FileType::Q3_K_L)
        t = BlockType::Q5_K;
      else if ((ft == FileType::IQ4_NL || ft == FileType::IQ4_XS) && gqa >= 4)
        t = BlockType::Q5_K;
      else if ((ft == FileType::Q4_K_M || ft == FileType::Q5_K_M) && use_more_bits(i, n))
        t = BlockType::Q6_K;
      else if (ft == FileType::Q4_K_S && i < 4)
        t = BlockType::Q5_K;
      // llama.cpp's 70B type (80 layers with grouped KV heads): the 8x smaller value projection gets more bits.
      if (n == 80 && gqa > 1 && (t == BlockType::Q3_K || t == BlockType::Q4_K)) t = BlockType::Q5_K;
      if (eight_experts) t = BlockType::Q8_0;
      break;
    case Category::AttnK:
      if (eight_experts) t = BlockType::Q8_0;
      break;
    case Category::FfnDown:
      if (ft == FileType::Q2_K)
        t = BlockType::Q3_K;
      else if (ft == FileType::Q2_K_S && i < n / 8)
        t = BlockType::Q4_K;
      else if (ft == FileType::Q3_K_M)
        t = i < n / 16 ? BlockType::Q5_K : BlockType::Q4_K;
      else if (ft == FileType::Q3_K_L)
        t = BlockType::Q5_K;
      else if (ft == FileType::Q4_K_M && use_more_bits(i, n))
        t = BlockType::Q6_K;
      else if (i < n / 8 && (ft == FileType::IQ4_NL || ft == FileType::IQ4_XS))
        t = BlockType::Q5_K;
      else if (ft == FileType::Q5_K_M && use_more_bits(i, n))
        t = BlockType::Q6_K;
      else if (ft == FileType::Q4_K_S && i < n / 8)
        t = BlockType::Q5_K;
      break;
    case Category::AttnOutput:
      if (eight_experts) {
        if (ft == FileType::Q2_K || ft == FileType::Q3_K_S || ft == FileType::Q3_K_M || ft == FileType::IQ4_NL ||
            ft == FileType::Q4_K_S || ft == FileType::Q4_K_M || ft == FileType::IQ4_XS)
          t = BlockType::Q5_K;
      } else if (ft == FileType::Q2_K) {
        t = BlockType::Q3_K;
      } else if (ft == FileType::Q3_K_M) {
        t = BlockType::Q4_K;
      } else if (ft == FileType::Q3_K_L) {
        t = BlockType::Q5_K;
      }
      break;
    default: break;
  }
  return t;
}

// A type whose blocks do not tile the tensor's rows falls back (tensor_type_fallback), then to F16.
BlockType fit_rows(BlockType t, std::int64_t ncols) {
  if (ncols % block_size(t).weights == 0) return t;
  switch (t) {
    case BlockType::Q2_K:
    case BlockType::Q3_K: t = BlockType::Q4_0; break;
    case BlockType::Q4_K: t = BlockType::Q5_0; break;
    case BlockType::Q5_K: t = BlockType::Q5_1; break;
    case BlockType::Q6_K: t = BlockType::Q8_0; break;
    case BlockType::IQ4_XS: t = BlockType::IQ4_NL; break;
    default: break;
  }
  return ncols % block_size(t).weights == 0 ? t : BlockType::F16;
}

double dbl(std::int64_t v) { return static_cast<double>(v); }

StoredBits gguf_bits(const FileTypeName& ft, const ModelSpec& m) {
  double bits = 0, params = 0;
  const auto add = [&](Category cat, std::int64_t layer, std::int64_t ncols, double count) {
    const BlockType t = fit_rows(recipe_type(ft.type, ft.base, cat, layer, m, ncols), ncols);
    bits += bits_of(t) * count;
    params += count;
  };
  const std::int64_t h = m.hidden;
  for (std::int64_t l = 0; l < m.num_layers; ++l) {
    if (m.fused_qkv) {
      add(Category::AttnQkv, l, h, dbl(h) * dbl(m.q_dim() + m.kv_dim() + m.v_dim()));
    } else {
      add(Category::AttnQ, l, h, dbl(h) * dbl(m.q_dim()));
      add(Category::AttnK, l, h, dbl(h) * dbl(m.kv_dim()));
      add(Category::AttnV, l, h, dbl(h) * dbl(m.v_dim()));
    }
    add(Category::AttnOutput, l, m.o_dim(), dbl(m.o_dim()) * dbl(h));
    const bool moe = m.is_moe_layer(l);
    const std::int64_t ffn = moe ? m.moe.expert_ffn : m.ffn_hidden;
    const double experts = moe ? dbl(m.moe.num_experts) : 1.0;
    if (m.mlp == MlpKind::Gated) add(Category::FfnGate, l, h, dbl(h) * dbl(ffn) * experts);
    add(Category::FfnUp, l, h, dbl(h) * dbl(ffn) * experts);
    add(Category::FfnDown, l, ffn, dbl(ffn) * dbl(h) * experts);
    if (moe && m.moe.shared_expert_ffn > 0) {
      const std::int64_t s = m.moe.shared_expert_ffn;
      if (m.mlp == MlpKind::Gated) add(Category::FfnGate, l, h, dbl(h) * dbl(s));
      add(Category::FfnUp, l, h, dbl(h) * dbl(s));
      add(Category::FfnDown, l, s, dbl(s) * dbl(h));
    }
  }
  StoredBits out;
  out.linear = params > 0 ? bits / params : bits_of(ft.base);
  out.head = bits_of(fit_rows(recipe_type(ft.type, ft.base, Category::Output, 0, m, h), h));
  // A tied table is stored once, as the output tensor; an untied one keeps the file type's base block type.
  out.embedding = m.tied_embeddings ? out.head : bits_of(fit_rows(ft.base, h));
  return out;
}

}  // namespace

std::string BlockFormat::text() const { return (family == Family::Gguf ? "gguf:" : "exl2:") + type; }

std::vector<std::string> gguf_file_types() {
  std::vector<std::string> out;
  for (const auto& f : kFileTypes) out.emplace_back(f.name);
  return out;
}

bool is_block_format_text(std::string_view text) {
  return text.substr(0, 5) == "gguf:" || text.substr(0, 5) == "exl2:";
}

std::optional<BlockFormat> parse_block_format(std::string_view text, std::string& problem) {
  problem.clear();
  if (!is_block_format_text(text)) return std::nullopt;
  BlockFormat f;
  f.type = std::string(text.substr(5));
  if (text.substr(0, 5) == "gguf:") {
    f.family = BlockFormat::Family::Gguf;
    if (!find_file_type(f.type)) {
      problem = fmt::format("gguf:{} is not a GGUF file type llmsim knows; known: {}", f.type,
                            fmt::join(gguf_file_types(), ", "));
      return std::nullopt;
    }
    return f;
  }
  f.family = BlockFormat::Family::Exl2;
  const char* end = f.type.data() + f.type.size();
  const auto r = std::from_chars(f.type.data(), end, f.bits);
  // ExLlamaV2's converter targets 2..8 bits per weight (conversion/convert_exl2.py warns outside 2..8).
  if (r.ec != std::errc{} || r.ptr != end || !std::isfinite(f.bits) || f.bits < 2 || f.bits > 8) {
    problem = fmt::format(
        "exl2:{} needs the bits per weight as a number from 2 to 8 (ExLlamaV2's converter range), e.g. exl2:4.0",
        f.type);
    return std::nullopt;
  }
  return f;
}

StoredBits stored_bits(const BlockFormat& f, const ModelSpec& m) {
  if (f.family == BlockFormat::Family::Gguf) return gguf_bits(file_type(f.type), m);
  // EXL2 (turboderp/exllamav2 v0.2.7): the converter's target bits (-b) over the decoder's projections, the
  // head at --head_bits 6 by default (conversion/convert_exl2.py), the token embedding in 16 bits in host memory
  // (model.py loads ExLlamaV2Embedding on the CPU unless told otherwise).
  StoredBits out;
  out.linear = f.bits;
  out.head = 6.0;
  // A tied model's head is made from the embedding table and quantized at the head bits; the table the
  // embedding reads stays in host memory.
  out.embedding = m.tied_embeddings ? out.head : 0.0;
  return out;
}

WeightQuant kernel_format(const BlockFormat& f) {
  if (f.family == BlockFormat::Family::Exl2) return WeightQuant::Int4;
  const FileTypeName& ft = file_type(f.type);
  if (ft.base == BlockType::F16) return WeightQuant::None;
  if (ft.base == BlockType::Q8_0) return WeightQuant::Int8;
  return WeightQuant::Int4;
}

InferenceWeightBytes inference_weight_bytes(const std::optional<BlockFormat>& f, WeightQuant q, DType precision,
                                            const ModelSpec& m) {
  if (!f) return inference_weight_bytes(q, precision);
  const StoredBits b = stored_bits(*f, m);
  const double table = dbl(m.vocab) * dbl(m.hidden);
  const double head = m.tied_embeddings ? 0.0 : table;
  return {b.linear / 8.0, (table * b.embedding + head * b.head) / (8.0 * (table + head))};
}

}  // namespace llmsim::model
