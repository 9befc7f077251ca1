#pragma once
// Reading JSON files with located errors: syntax errors carry file:line:column; value errors name the
// key and, where the key appears literally in the text, its line.
#include <nlohmann/json.hpp>

#include <string>

#include "llmsim/core/error.h"

namespace llmsim {

struct JsonDocument {
  std::string file;  // path as given
  std::string text;  // raw text (for locating keys)
  nlohmann::json root;

  // Location of the first occurrence of "key" in the text (line 0 when not found).
  Location where(const std::string& key) const;
};

// Missing file: NotFound; malformed JSON: Input with line and column.
JsonDocument parse_json_file(const std::string& path);

// 1-based line and column of a byte offset in text.
void line_col(const std::string& text, std::size_t offset, int& line, int& column);

}  // namespace llmsim
