#pragma once
// Strict reading of TOML tables: every read records the key as known, typed getters check the type
// and range, and finish() rejects keys nobody asked for ("did you mean"). Errors carry file:line.
#include <toml++/toml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "llmsim/core/error.h"

namespace llmsim {

// The largest magnitude a TOML number may have (TomlReader refuses larger ones, and nan and inf).
inline constexpr double kMaxTomlMagnitude = 1e15;

// Parses a TOML file; a missing file is NotFound, a syntax error is Input with file:line:column.
toml::table parse_toml_file(const std::string& path);

class TomlReader {
 public:
  // `path` is the dotted name of this table ("" for the root), used in messages.
  TomlReader(const toml::table& table, std::string file, std::string path = "");

  bool has(const std::string& key) const;

  // Required values: a missing key or wrong type is an Input error naming file:line and key.
  double number(const std::string& key);  // integer or float
  std::int64_t integer(const std::string& key);
  std::string string(const std::string& key);
  bool boolean(const std::string& key);

  // Optional values: nullopt when absent; wrong type is still an error.
  std::optional<double> opt_number(const std::string& key);
  std::optional<std::int64_t> opt_integer(const std::string& key);
  std::optional<std::string> opt_string(const std::string& key);
  std::optional<bool> opt_boolean(const std::string& key);

  // Range-checked numbers (the rule is named in the error).
  double positive(const std::string& key);  // > 0
  std::optional<double> opt_positive(const std::string& key);
  double non_negative(const std::string& key);  // >= 0
  std::optional<double> opt_non_negative(const std::string& key);

  // A required / optional string that must be one of `choices`.
  std::string choice(const std::string& key, const std::vector<std::string>& choices);
  std::optional<std::string> opt_choice(const std::string& key, const std::vector<std::string>& choices);

  // Sub-tables: the returned reader must be finish()ed by the caller.
  TomlReader table(const std::string& key);
  std::optional<TomlReader> opt_table(const std::string& key);

  // Marks keys as known without reading them (e.g. free-form citation fields).
  void ignore(const std::string& key);

  // Throws on the first key that was never read, with a did-you-mean from the known keys.
  void finish() const;

  // Reads `schema_version` and refuses any other than `version` (an Input error at the key naming what
  // kind of file this llmsim reads, e.g. "facts files").
  void require_schema_version(std::int64_t version, const std::string& kind);

  // Location of a key (its line when present, the table's line otherwise).
  Location where(const std::string& key) const;
  const std::string& file() const { return file_; }

 private:
  const toml::node* get(const std::string& key);
  std::string full(const std::string& key) const;

  const toml::table* table_;
  std::string file_;
  std::string path_;
  std::vector<std::string> known_;
};

}  // namespace llmsim
