#pragma once
// The one project exception type. Library code throws llmsim::Error on bad input or environment;
// only main() maps ErrorKind to a process exit code (see exit_code()).
#include <stdexcept>
#include <string>

namespace llmsim {

// Why the input was rejected; each kind has a distinct exit code so scripts can tell them apart.
enum class ErrorKind {
  Usage,     // bad command-line flag or flag value
  Input,     // a file or value that breaks a rule (malformed TOML/JSON, unknown key, negative size)
  NotFound,  // missing file or unknown preset name
  NoDevice,  // a GPU is required but none is usable (calibration)
  Internal,  // a bug: an invariant of llmsim itself was violated
};

// Where the bad input is: a file (with line/column when known), a key path, or a flag name.
struct Location {
  std::string file;  // path as given by the user; empty for command-line input
  int line = 0;      // 1-based; 0 = unknown
  int column = 0;    // 1-based; 0 = unknown
  std::string key;   // dotted key path ("gpu.memory_GiB") or flag name ("--tp")

  std::string to_string() const;  // "file:line:col: key" with the unknown parts left out
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, Location where, std::string message);

  ErrorKind kind() const { return kind_; }
  const Location& where() const { return where_; }
  const std::string& message() const { return message_; }  // without the location prefix

 private:
  ErrorKind kind_;
  Location where_;
  std::string message_;
};

// Process exit code for an error kind: Usage 2, Input 3, NotFound 4, NoDevice 5, Internal 70.
int exit_code(ErrorKind kind);

// Shorthands used at parse time.
[[noreturn]] void throw_input(const Location& where, const std::string& message);
[[noreturn]] void throw_usage(const std::string& flag, const std::string& message);
[[noreturn]] void throw_not_found(const Location& where, const std::string& message);

}  // namespace llmsim
