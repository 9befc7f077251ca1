#pragma once
// Helpers shared by the unit tests.
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include <unistd.h>

#include "llmsim/core/error.h"

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

// This test process's own folder under the system's temporary folder, so that test executables running
// at once (ctest --parallel, two checkouts on one machine) never write the same file.
inline const std::filesystem::path& process_temp_dir() {
  static const std::filesystem::path dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("llmsim-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

// Writes `text` to a file in the process's temporary folder and returns its path.
inline std::string write_temp(const std::string& name, const std::string& text) {
  const auto path = process_temp_dir() / name;
  std::ofstream(path) << text;
  return path.string();
}

// An empty folder `name` in the process's temporary folder (emptied when it exists).
inline std::string fresh_temp_dir(const std::string& name) {
  const auto p = process_temp_dir() / name;
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p.string();
}

}  // namespace llmsim::test
