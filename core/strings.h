#pragma once
// Small text helpers shared by the readers (measured runs, search axes, framework names).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace llmsim {

// `s` without leading and trailing blanks (spaces and tabs).
std::string_view trim_blanks(std::string_view s);

// The fields of `s` between `sep` characters, each without leading and trailing blanks: n separators
// give n + 1 fields, empty ones included ("a, b," -> "a", "b", ""). The views point into `s`.
std::vector<std::string_view> split_fields(std::string_view s, char sep);

// `s` without leading and trailing whitespace (spaces, tabs, CR, LF, form feeds, vertical tabs): for
// lines of tool output and trace files, which may end in CR.
std::string_view trim_space(std::string_view s);

// The whitespace-separated words of `s`.
std::vector<std::string> split_words(std::string_view s);

// `s` as a finite number when the whole text is one ("+1.5" and "2e3" are; "1.5x", "", "inf" and
// "nan" are not).
std::optional<double> parse_finite(std::string_view s);

// `s` with ASCII letters in lower case.
std::string to_lower(std::string_view s);

}  // namespace llmsim
