#include "llmsim/search/axis.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "llmsim/core/error.h"
#include "llmsim/core/strings.h"
#include "llmsim/core/suggest.h"

namespace llmsim::sim {

namespace {

bool to_int(std::string_view s, std::int64_t& out) {
  if (s.empty()) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

constexpr const char* kIntSyntax = "a number, a list 1,2,4, a range 1-8, pow2:1-16 or any";
constexpr std::int64_t kMaxAxisValues = 100000;
}  // namespace

bool is_free_axis_text(std::string_view s) { return s == "any" || s == "*"; }

void axis_error(std::string_view flag, std::string_view text, const std::string& rule) {
  throw_usage(std::string(flag), fmt::format("{} '{}': {}", flag, text, rule));
}

bool Axis::contains(std::int64_t v) const { return std::find(values.begin(), values.end(), v) != values.end(); }

Axis parse_int_axis(std::string_view flag, std::string_view text_in, std::int64_t min_value) {
  const std::string_view text = trim_blanks(text_in);
  Axis a;
  a.text = std::string(text);
  if (text.empty()) axis_error(flag, text, std::string("must be ") + kIntSyntax);
  if (is_free_axis_text(text)) {
    a.mode = AxisMode::Free;
    return a;
  }
  const auto items = split_fields(text, ',');
  bool single = items.size() == 1;
  for (const std::string_view item : items) {
    if (item.empty()) axis_error(flag, text, "empty item in the list");
    if (is_free_axis_text(item))
      axis_error(flag, text, "'any' stands for the whole axis and cannot be combined with values");
    std::string_view body = item;
    bool pow2 = false;
    if (const auto colon = item.find(':'); colon != std::string_view::npos) {
      const std::string_view prefix = item.substr(0, colon);
      if (prefix != "pow2")
        axis_error(flag, text,
                   fmt::format("unknown prefix '{}:'{} (the syntax is {})", prefix, did_you_mean(prefix, {"pow2"}),
                               kIntSyntax));
      pow2 = true;
      body = item.substr(colon + 1);
    }
    std::int64_t lo = 0, hi = 0;
    const auto dash = body.find('-', 1);
    if (dash != std::string_view::npos) {
      if (!to_int(trim_blanks(body.substr(0, dash)), lo) || !to_int(trim_blanks(body.substr(dash + 1)), hi))
        axis_error(flag, text, fmt::format("'{}' is not a range a-b of integers", item));
      if (lo > hi) axis_error(flag, text, fmt::format("range '{}' runs backwards (write {}-{})", item, hi, lo));
      single = false;
    } else {
      if (!to_int(body, lo)) {
        std::string hint = did_you_mean(body, {"any"});
        axis_error(flag, text, fmt::format("'{}' is not {}{}", item, kIntSyntax, hint));
      }
      hi = lo;
      if (pow2) single = false;
    }
    if (lo < min_value) axis_error(flag, text, fmt::format("values must be >= {}", min_value));
    if (!pow2 && hi - lo >= kMaxAxisValues)
      axis_error(flag, text, fmt::format("range '{}' has more than {} values", item, kMaxAxisValues));
    const std::size_t before = a.values.size();
    if (pow2) {
      for (std::int64_t p = 1; p <= hi && p > 0; p *= 2)
        if (p >= lo) a.values.push_back(p);
      if (a.values.size() == before) axis_error(flag, text, fmt::format("no power of two in '{}'", item));
    } else {
      for (std::int64_t v = lo; v <= hi; ++v) a.values.push_back(v);
    }
  }
  std::sort(a.values.begin(), a.values.end());
  a.values.erase(std::unique(a.values.begin(), a.values.end()), a.values.end());
  a.mode = single ? AxisMode::Fixed : AxisMode::Listed;
  return a;
}

Axis parse_choice_axis(std::string_view flag, std::string_view text_in, const std::vector<std::string>& choices,
                       const std::vector<std::pair<std::string, std::string>>& aliases) {
  const std::string_view text = trim_blanks(text_in);
  Axis a;
  a.text = std::string(text);
  if (text.empty()) axis_error(flag, text, "must be one or more of " + join(choices) + " (comma-separated) or any");
  if (is_free_axis_text(text)) {
    a.mode = AxisMode::Free;
    return a;
  }
  std::vector<std::string> known = choices;
  for (const auto& [alias, target] : aliases) known.push_back(alias);
  const auto items = split_fields(text, ',');
  for (const std::string_view item_in : items) {
    std::string item(item_in);
    if (item.empty()) axis_error(flag, text, "empty item in the list");
    if (is_free_axis_text(item))
      axis_error(flag, text, "'any' stands for the whole axis and cannot be combined with values");
    for (const auto& [alias, target] : aliases)
      if (item == alias) item = target;
    const auto it = std::find(choices.begin(), choices.end(), item);
    if (it == choices.end())
      axis_error(flag, text,
                 fmt::format("'{}' is not one of {}{}", item_in, join(choices), did_you_mean(item_in, known)));
    const auto v = static_cast<std::int64_t>(it - choices.begin());
    if (std::find(a.values.begin(), a.values.end(), v) == a.values.end()) a.values.push_back(v);
  }
  a.mode = items.size() == 1 ? AxisMode::Fixed : AxisMode::Listed;
  return a;
}

}  // namespace llmsim::sim
