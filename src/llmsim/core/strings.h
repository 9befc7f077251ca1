#pragma once
// Small text helpers shared by the readers (measured runs, search axes, framework names).
#include <string>
#include <string_view>

namespace llmsim {

// `s` without leading and trailing blanks (spaces and tabs).
std::string_view trim_blanks(std::string_view s);

// `s` with ASCII letters in lower case.
std::string to_lower(std::string_view s);

}  // namespace llmsim
