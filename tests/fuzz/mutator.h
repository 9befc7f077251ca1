#pragma once
// A deterministic mutation driver for the parser fuzz run (tests/fuzz/fuzz_parsers.cpp): the same seed
// and iteration give the same bytes on every machine, so a finding is reproduced by its two numbers alone.
// The mutations are the ones that broke llmsim's readers in issue 17's catalogue: flipped bits, cut and
// repeated spans, numbers replaced by boundary values (1e400, nan, 2^63, -1, 0), structural characters
// inserted (quotes, brackets, separators, a UTF-8 BOM, NUL), lines swapped or repeated, truncation, and
// splices of two seeds of the same format.
#include <cstdint>
#include <string>
#include <vector>

namespace llmsim::fuzz {

// splitmix64: small, fast, and the same sequence everywhere (std:: distributions are not specified
// bit-for-bit across standard libraries).
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next();
  // Uniform in [0, n) (n > 0).
  std::size_t below(std::size_t n);

 private:
  std::uint64_t state_;
};

// Boundary values a number in an input is replaced by.
const std::vector<std::string>& boundary_numbers();

// `seed` mutated 1 to 4 times by mutations drawn from `rng`; `other` is a second seed of the same
// format for splices (may equal `seed`).
std::string mutate(const std::string& seed, const std::string& other, Rng& rng);

}  // namespace llmsim::fuzz
