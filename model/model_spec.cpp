#include "model/model_spec.h"

#include <algorithm>
#include <array>
#include <utility>

namespace llmsim::model {

namespace {
constexpr std::array<std::pair<WeightQuant, std::string_view>, 5> kQuantNames{{{WeightQuant::None, "none"},
                                                                              {WeightQuant::Int8, "int8"},
                                                                              {WeightQuant::Int4, "int4"},
                                                                              {WeightQuant::Nf4, "nf4"},
                                                                              {WeightQuant::Fp8, "fp8"}}};
}

std::string_view weight_quant_name(WeightQuant q) {
  for (const auto& [v, n] : kQuantNames)
    if (v == q) return n;
  return "?";
}

double kv_bytes_per_token(const ModelSpec& m, std::int64_t layers, std::int64_t tp, double elem_bytes) {
  const double heads_per_rank =
      std::max(1.0, static_cast<double>(m.num_kv_heads) / static_cast<double>(std::max<std::int64_t>(1, tp)));
  return 2.0 * heads_per_rank * static_cast<double>(m.head_dim) * static_cast<double>(layers) * elem_bytes;
}

DType stored_dtype(WeightQuant q, DType unquantized) {
  switch (q) {
    case WeightQuant::Int8: return DType::INT8;
    case WeightQuant::Int4: return DType::INT4;
    case WeightQuant::Nf4: return DType::NF4;
    case WeightQuant::Fp8: return DType::FP8;
    case WeightQuant::None: break;
  }
  return unquantized;
}

std::vector<std::string> weight_quant_names() {
  std::vector<std::string> names;
  for (const auto& [v, n] : kQuantNames) names.emplace_back(n);
  return names;
}

bool parse_weight_quant(std::string_view name, WeightQuant& out) {
  for (const auto& [v, n] : kQuantNames)
    if (n == name) {
      out = v;
      return true;
    }
  return false;
}

}  // namespace llmsim::model
