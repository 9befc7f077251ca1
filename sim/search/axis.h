#pragma once
// One axis of a search space, parsed from the CLI syntax
//   4  |  1,2,4,8  |  1-8  |  pow2:1-16  |  any  (or *)  |  items combined: 1,2,pow2:8-32
// for numbers, and names for choices (recompute none,selective; framework any).
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace llmsim::sim {

enum class AxisMode { Fixed, Listed, Free };

// One axis: values as integers (choices as their index in the axis' name list), in the order given
// (duplicates dropped). A free axis holds no values until resolved against a model and a system.
struct Axis {
  AxisMode mode = AxisMode::Fixed;
  std::vector<std::int64_t> values;
  std::string text;  // as the user wrote it ("" for a default)
  bool contains(std::int64_t v) const;
};

// "4", "1,2,4,8", "1-8", "pow2:1-16", "any" / "*" (Free), or a comma-separated mix of them. Every
// value must be >= min_value. Errors are Usage errors naming `flag` and the rule.
Axis parse_int_axis(std::string_view flag, std::string_view text, std::int64_t min_value = 1);

// An axis of the one value `v`; of `values` (Fixed when there is only one).
Axis fixed_axis(std::int64_t v);
Axis listed_axis(std::vector<std::int64_t> values);

// Names from `choices` (their indexes become the values), comma-separated, or "any" / "*". Unknown
// names are Usage errors with a did-you-mean. `aliases` map extra spellings onto choices.
Axis parse_choice_axis(std::string_view flag, std::string_view text, const std::vector<std::string>& choices,
                       const std::vector<std::pair<std::string, std::string>>& aliases = {});

// Whether an axis text asks for the axis' natural set ("any" or "*").
bool is_free_axis_text(std::string_view s);

// Throws the Usage error of a bad axis text: "FLAG 'TEXT': RULE", naming the flag.
[[noreturn]] void axis_error(std::string_view flag, std::string_view text, const std::string& rule);

}  // namespace llmsim::sim
