#include "llmsim/core/dtype.h"

#include <array>
#include <utility>

namespace llmsim {

namespace {
struct Entry {
  DType type;
  std::string_view name;
  double bytes;
};
constexpr std::array<Entry, 9> kTable{{{DType::FP32, "fp32", 4.0},
                                       {DType::TF32, "tf32", 4.0},
                                       {DType::FP16, "fp16", 2.0},
                                       {DType::BF16, "bf16", 2.0},
                                       {DType::FP8, "fp8", 1.0},
                                       {DType::FP4, "fp4", (4.0 + 8.0 / 16.0) / 8.0},  // NVFP4: E4M3 scale per 16
                                       {DType::INT8, "int8", 1.0},
                                       {DType::INT4, "int4", 0.5},
                                       {DType::NF4, "nf4", 0.5}}};
// Spellings used by PyTorch / Hugging Face configs.
constexpr std::array<std::pair<std::string_view, DType>, 5> kAliases{{{"float32", DType::FP32},
                                                                      {"float16", DType::FP16},
                                                                      {"half", DType::FP16},
                                                                      {"bfloat16", DType::BF16},
                                                                      {"float", DType::FP32}}};
}  // namespace

double dtype_bytes(DType t) {
  for (const auto& e : kTable)
    if (e.type == t) return e.bytes;
  return 0.0;
}

std::string_view dtype_name(DType t) {
  for (const auto& e : kTable)
    if (e.type == t) return e.name;
  return "?";
}

bool parse_dtype(std::string_view name, DType& out) {
  for (const auto& e : kTable)
    if (e.name == name) {
      out = e.type;
      return true;
    }
  for (const auto& [alias, type] : kAliases)
    if (alias == name) {
      out = type;
      return true;
    }
  return false;
}

std::vector<std::string> dtype_names() {
  std::vector<std::string> names;
  for (const auto& e : kTable) names.emplace_back(e.name);
  return names;
}

std::vector<std::string> compute_precision_names() {
  std::vector<std::string> names;
  for (DType t : {DType::FP32, DType::TF32, DType::FP16, DType::BF16, DType::FP8, DType::FP4})
    names.emplace_back(dtype_name(t));
  return names;
}

DType activation_dtype(DType precision) {
  if (precision == DType::FP32 || precision == DType::TF32) return DType::FP32;
  if (precision == DType::FP16) return DType::FP16;
  return DType::BF16;
}

}  // namespace llmsim
