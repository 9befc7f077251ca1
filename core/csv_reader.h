#pragma once
// The one CSV reader of llmsim (measured-run files, request traces): RFC 4180 records. Quoted fields
// may hold commas, doubled quotes and line breaks; CRLF and LF both end a record; a trailing newline
// is not an empty record; a leading UTF-8 byte-order mark is skipped. Errors are Input errors naming the file and line.
#include <string>
#include <vector>

namespace llmsim {

struct CsvRecord {
  int line = 0;                     // line the record starts on (quoted fields may span lines)
  std::vector<std::string> fields;  // as written (not trimmed), quotes removed
  std::vector<int> columns;         // 1-based column of each field's first character on its line
};

struct CsvOptions {
  bool comment_lines = false;  // skip lines whose first non-blank character is '#'
  bool skip_blank = false;     // drop records whose fields are all blank (spaces, tabs)
};

std::vector<CsvRecord> parse_csv(const std::string& text, const std::string& file, const CsvOptions& options = {});

}  // namespace llmsim
