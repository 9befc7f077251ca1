#include "llmsim/core/version.h"

#include <cctype>

#include <fmt/format.h>

namespace llmsim {

std::optional<Version> parse_version(std::string_view s) {
  if (!s.empty() && (s.front() == 'v' || s.front() == 'V')) s.remove_prefix(1);
  int parts[3] = {0, 0, 0};
  std::size_t i = 0;
  for (int p = 0; p < 3; ++p) {
    if (i >= s.size() || !std::isdigit(static_cast<unsigned char>(s[i]))) {
      if (p == 0) return std::nullopt;  // no leading number
      break;
    }
    long n = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
      n = n * 10 + (s[i] - '0');
      if (n > 100000) return std::nullopt;
      ++i;
    }
    parts[p] = static_cast<int>(n);
    if (i < s.size() && s[i] == '.' && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])))
      ++i;
    else
      break;
  }
  // What follows the numbers is a pre-release or build tag (".post1", "rc1", "-beta", "+cu121") or nothing.
  if (i < s.size()) {
    const char c = s[i];
    if (!(c == '.' || c == '-' || c == '+' || std::isalpha(static_cast<unsigned char>(c)))) return std::nullopt;
  }
  return Version{parts[0], parts[1], parts[2]};
}

std::string to_string(const Version& v) { return fmt::format("{}.{}.{}", v.major, v.minor, v.patch); }

}  // namespace llmsim
