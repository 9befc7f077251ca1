#include "llmsim/core/version.h"

#include <cctype>

#include <fmt/format.h>

namespace llmsim {

namespace {
// A PEP 440 pre-, post- or dev-release tag (with its spellings) at the start of `tail`, followed by the end, a
// number or another separator.
bool is_release_tag(std::string_view tail) {
  static constexpr std::string_view kTags[] = {"alpha", "beta", "preview", "pre", "post", "rev",
                                               "rc",    "dev",  "a",       "b",   "c",    "r"};
  for (const std::string_view tag : kTags) {
    if (!tail.starts_with(tag)) continue;
    const std::string_view rest = tail.substr(tag.size());
    if (rest.empty() || std::isdigit(static_cast<unsigned char>(rest.front())) || rest.front() == '.' ||
        rest.front() == '-' || rest.front() == '+')
      return true;
  }
  return false;
}
}  // namespace

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
  // What follows the numbers is nothing, a suffix after '-' or '+' ("-beta", "+cu121"), or a PEP 440 pre-,
  // post- or dev-release tag, directly or after a dot (".post1", "rc1", ".dev20240101"): "0.4.x" or "2.1y"
  // name no release.
  if (i < s.size() && s[i] != '-' && s[i] != '+' && !is_release_tag(s.substr(s[i] == '.' ? i + 1 : i)))
    return std::nullopt;
  return Version{parts[0], parts[1], parts[2]};
}

std::string to_string(const Version& v) { return fmt::format("{}.{}.{}", v.major, v.minor, v.patch); }

}  // namespace llmsim
