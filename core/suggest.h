#pragma once
// "Did you mean" for unknown keys, flags and preset names.
#include <string>
#include <string_view>
#include <vector>

namespace llmsim {

// The candidate closest to `word` by edit distance, or "" when none is plausibly a typo of it.
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

// " (did you mean 'x'?)" or "" — ready to append to an error message.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

// "a, b, c" for listing the valid choices in an error message.
std::string join(const std::vector<std::string>& items, std::string_view sep = ", ");

// "must be one of a, b, c" and the did-you-mean for `word`: the rule a value outside its choices breaks.
std::string one_of(std::string_view word, const std::vector<std::string>& choices);

}  // namespace llmsim
