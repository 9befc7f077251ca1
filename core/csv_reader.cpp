#include "llmsim/core/csv_reader.h"

#include <fmt/format.h>

#include <algorithm>

#include "llmsim/core/error.h"
#include "llmsim/core/strings.h"

namespace llmsim {

std::vector<CsvRecord> parse_csv(const std::string& text, const std::string& file, const CsvOptions& options) {
  std::vector<CsvRecord> records;
  CsvRecord rec{.line = 1};
  std::string field;
  int line = 1;
  int column = 1;            // of the next character on its line
  int field_column = 1;      // where the current field started
  bool quoted = false;       // inside a quoted field
  bool after_quote = false;  // a quoted field just closed: only a separator may follow
  bool record_has_text = false;
  const auto keep = [&](CsvRecord& r) {
    if (options.skip_blank &&
        std::all_of(r.fields.begin(), r.fields.end(), [](const std::string& f) { return trim_blanks(f).empty(); }))
      return;
    records.push_back(std::move(r));
  };
  const auto end_field = [&] {
    rec.fields.push_back(std::move(field));
    rec.columns.push_back(field_column);
    field.clear();
    after_quote = false;
  };
  const auto end_record = [&] {
    end_field();
    if (record_has_text) keep(rec);
    rec = CsvRecord{.line = line + 1};
    record_has_text = false;
  };
  // A spreadsheet's UTF-8 byte-order mark is not part of the first field.
  const std::size_t start = text.rfind("\xEF\xBB\xBF", 0) == 0 ? 3 : 0;
  for (std::size_t i = start; i < text.size(); ++i, ++column) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
        ++column;
      } else if (c == '"') {
        quoted = false;
        after_quote = true;
      } else {
        if (c == '\n') {
          ++line;
          column = 0;
        }
        field += c;
      }
      continue;
    }
    if (options.comment_lines && !record_has_text && rec.fields.empty() && trim_blanks(field).empty() && c == '#') {
      // A comment line: skip to its end.
      while (i < text.size() && text[i] != '\n') ++i;
      field.clear();
      ++line;
      column = 0;
      rec = CsvRecord{.line = line};
      continue;
    }
    if (c == ',') {
      end_field();
      field_column = column + 1;
      record_has_text = true;
    } else if (c == '\n' || (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n')) {
      if (c == '\r') ++i;
      end_record();
      ++line;
      column = 0;
      field_column = 1;
    } else if (after_quote) {
      throw_input(Location{.file = file, .line = line},
                  fmt::format("unexpected '{}' after a closing quote (a quoted field must end at a comma or the "
                              "end of the line; write \"\" for a quote inside it)",
                              c));
    } else if (c == '"') {
      if (!field.empty())
        throw_input(Location{.file = file, .line = line},
                    "quote inside an unquoted field (quote the whole field and double the inner quotes)");
      quoted = true;
      record_has_text = true;
    } else {
      field += c;
      record_has_text = true;
    }
  }
  if (quoted) throw_input(Location{.file = file, .line = rec.line}, "unterminated quoted field");
  if (record_has_text) {  // the last record had no line break after it
    rec.fields.push_back(std::move(field));
    rec.columns.push_back(field_column);
    keep(rec);
  }
  return records;
}

}  // namespace llmsim
