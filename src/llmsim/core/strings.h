#pragma once
// Small text helpers shared by the readers (measured runs, search axes, framework names).
#include <string>
#include <string_view>
#include <vector>

namespace llmsim {

// `s` without leading and trailing blanks (spaces and tabs).
std::string_view trim_blanks(std::string_view s);

// The fields of `s` between `sep` characters, each without leading and trailing blanks: n separators
// give n + 1 fields, empty ones included ("a, b," -> "a", "b", ""). The views point into `s`.
std::vector<std::string_view> split_fields(std::string_view s, char sep);

// `s` with ASCII letters in lower case.
std::string to_lower(std::string_view s);

}  // namespace llmsim
