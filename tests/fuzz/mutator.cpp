#include "mutator.h"

#include <algorithm>
#include <cctype>

namespace llmsim::fuzz {

std::uint64_t Rng::next() {
  std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::size_t Rng::below(std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(next() % n); }

const std::vector<std::string>& boundary_numbers() {
  static const std::vector<std::string> v = {"0",
                                             "-0",
                                             "-1",
                                             "1e400",
                                             "-1e400",
                                             "1e-400",
                                             "nan",
                                             "-nan",
                                             "inf",
                                             "-inf",
                                             "NaN",
                                             "1e30",
                                             "1e15",
                                             "1e16",
                                             "2.5",
                                             "0x10",
                                             "1e308",
                                             "1e-9",
                                             "8x",
                                             "+1",
                                             ".5",
                                             "1.",
                                             "9223372036854775807",
                                             "9223372036854775808",
                                             "-9223372036854775808",
                                             "18446744073709551616",
                                             "4611686018427387904",
                                             "2147483648",
                                             "16777217",
                                             "4294967296"};
  return v;
}

namespace {

const std::vector<std::string>& structural_tokens() {
  static const std::vector<std::string> v = {
      "\"",
      "'",
      ",",
      "\n",
      "\r\n",
      "=",
      "[",
      "]",
      "{",
      "}",
      ":",
      "#",
      "\\",
      " ",
      "\t",
      std::string(1, '\0'),
      "\xEF\xBB\xBF",
      "\xFF\xFE",
      "null",
      "true",
      "[[",
      "]]",
      "\"\"",
      "[]",
      "{}",
      "\xC3\x28",
      "# Rank  0 Group  0 Pid 1 on host device  0 [0x01] NVIDIA H100 80GB HBM3\n"};
  return v;
}

// Spans of digits (with sign, point and exponent) in `s`: where numbers are.
std::vector<std::pair<std::size_t, std::size_t>> number_spans(const std::string& s) {
  std::vector<std::pair<std::size_t, std::size_t>> spans;
  std::size_t i = 0;
  while (i < s.size()) {
    if (std::isdigit(static_cast<unsigned char>(s[i]))) {
      std::size_t b = i;
      if (b > 0 && (s[b - 1] == '-' || s[b - 1] == '+')) --b;
      while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.' || s[i] == 'e' ||
                              s[i] == 'E' || ((s[i] == '-' || s[i] == '+') && (s[i - 1] == 'e' || s[i - 1] == 'E'))))
        ++i;
      spans.emplace_back(b, i - b);
    } else {
      ++i;
    }
  }
  return spans;
}

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> lines;
  std::size_t b = 0;
  for (std::size_t i = 0; i < s.size(); ++i)
    if (s[i] == '\n') {
      lines.push_back(s.substr(b, i + 1 - b));
      b = i + 1;
    }
  if (b < s.size()) lines.push_back(s.substr(b));
  return lines;
}

std::string join(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l;
  return s;
}

void mutate_once(std::string& s, const std::string& other, Rng& rng) {
  const std::size_t n = s.size();
  switch (rng.below(9)) {
    case 0:  // flip a bit
      if (n > 0) s[rng.below(n)] ^= static_cast<char>(1u << rng.below(8));
      break;
    case 1: {  // cut a span
      if (n == 0) break;
      const std::size_t b = rng.below(n);
      s.erase(b, 1 + rng.below(std::min<std::size_t>(64, n - b)));
      break;
    }
    case 2: {  // repeat a span
      if (n == 0) break;
      const std::size_t b = rng.below(n);
      const std::string span = s.substr(b, 1 + rng.below(std::min<std::size_t>(64, n - b)));
      s.insert(b, span);
      break;
    }
    case 3:
    case 4: {  // a number becomes a boundary value (twice as likely: numbers are where the rules are)
      const auto spans = number_spans(s);
      const auto& values = boundary_numbers();
      if (spans.empty()) {
        s.insert(rng.below(n + 1), values[rng.below(values.size())]);
        break;
      }
      const auto [b, len] = spans[rng.below(spans.size())];
      s.replace(b, len, values[rng.below(values.size())]);
      break;
    }
    case 5: {  // a structural character or token
      const auto& tokens = structural_tokens();
      s.insert(rng.below(n + 1), tokens[rng.below(tokens.size())]);
      break;
    }
    case 6: {  // swap, repeat or drop whole lines
      auto lines = split_lines(s);
      if (lines.size() < 2) break;
      const std::size_t a = rng.below(lines.size()), b = rng.below(lines.size());
      switch (rng.below(3)) {
        case 0: std::swap(lines[a], lines[b]); break;
        case 1: lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(a), lines[b]); break;
        default: lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(a)); break;
      }
      s = join(lines);
      break;
    }
    case 7:  // truncate
      s.resize(rng.below(n + 1));
      break;
    default: {  // splice: the head of this seed, the tail of the other
      const std::size_t cut = rng.below(n + 1), from = rng.below(other.size() + 1);
      s = s.substr(0, cut) + other.substr(from);
      break;
    }
  }
}

}  // namespace

std::string mutate(const std::string& seed, const std::string& other, Rng& rng) {
  std::string s = seed;
  const std::size_t times = 1 + rng.below(4);
  for (std::size_t i = 0; i < times; ++i) mutate_once(s, other, rng);
  return s;
}

}  // namespace llmsim::fuzz
