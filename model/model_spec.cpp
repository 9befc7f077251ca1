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

bool parse_weight_quant(std::string_view name, WeightQuant& out) {
  for (const auto& [v, n] : kQuantNames)
    if (n == name) {
      out = v;
      return true;
    }
  return false;
}

}  // namespace llmsim::model
