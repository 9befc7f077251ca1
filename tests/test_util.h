#pragma once
// Helpers shared by the unit tests.
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "sim/base/error.h"

namespace llmsim::test {

// The llmsim::Error that f() throws; fails the test (by throwing) when it throws none.
template <class F>
Error error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  throw std::runtime_error("expected an llmsim::Error");
}

// Writes `text` to a file in the temporary folder and returns its path.
inline std::string write_temp(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / ("llmsim-test-" + name);
  std::ofstream(path) << text;
  return path.string();
}

}  // namespace llmsim::test
