#include "model/model_spec.h"

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
