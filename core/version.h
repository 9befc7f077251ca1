#pragma once
// A software release number ("0.6.3", "v1.0.3", "2.1"), parsed once at the edge: engines changed their
// defaults between releases (TGI's CUDA graphs, vLLM's V1 engine), and a run names the release it ran.
#include <compare>
#include <optional>
#include <string>
#include <string_view>

namespace llmsim {

struct Version {
  int major = 0, minor = 0, patch = 0;
  auto operator<=>(const Version&) const = default;
};

// "MAJOR[.MINOR[.PATCH]]" with an optional leading 'v' and an optional suffix: anything after '-' or '+', or a
// PEP 440 pre-, post- or dev-release tag ("0.6.3.post1", "0.8.0rc1" read as 0.6.3, 0.8.0); nullopt when it does
// not start with a number, a part exceeds 100000, or another text follows ("0.4.x" names no release).
std::optional<Version> parse_version(std::string_view s);
std::string to_string(const Version& v);  // "0.6.3"

}  // namespace llmsim
