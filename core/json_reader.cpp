#include "llmsim/core/json_reader.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace llmsim {

void line_col(const std::string& text, std::size_t offset, int& line, int& column) {
  line = 1;
  column = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
}

Location JsonDocument::where(const std::string& key) const {
  Location loc{.file = file, .key = key};
  // Keys may be dotted paths ("text_config.hidden_size"); the last part is what appears in the text.
  const std::string leaf = key.substr(key.rfind('.') == std::string::npos ? 0 : key.rfind('.') + 1);
  const std::size_t pos = text.find("\"" + leaf + "\"");
  if (pos != std::string::npos) line_col(text, pos, loc.line, loc.column);
  return loc;
}

JsonDocument parse_json_file(const std::string& path) {
  std::error_code ec;
  const bool regular = std::filesystem::is_regular_file(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory)
    throw_input(Location{.file = path}, "cannot read: " + ec.message());  // e.g. a symbolic-link loop
  if (!regular) throw_not_found(Location{.file = path}, "file not found (or not a regular file)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_input(Location{.file = path}, "cannot read: permission denied or unreadable");
  std::stringstream ss;
  ss << in.rdbuf();
  JsonDocument doc{.file = path, .text = ss.str(), .root = {}};
  try {
    doc.root = nlohmann::json::parse(doc.text);
  } catch (const nlohmann::json::parse_error& e) {
    Location loc{.file = path};
    // nlohmann reports the byte at which parsing failed (1-based).
    line_col(doc.text, e.byte > 0 ? e.byte - 1 : 0, loc.line, loc.column);
    std::string what = e.what();
    throw_input(loc, "malformed JSON: " + what.substr(what.find(':') + 2));
  } catch (const nlohmann::json::out_of_range& e) {
    // A number no double holds (1e400): nlohmann reports it without a position; find the literal.
    std::string what = e.what();
    const auto quote = what.find('\'');
    const std::string literal =
        quote == std::string::npos ? "" : what.substr(quote + 1, what.find('\'', quote + 1) - quote - 1);
    Location loc{.file = path};
    if (const auto pos = literal.empty() ? std::string::npos : doc.text.find(literal); pos != std::string::npos)
      line_col(doc.text, pos, loc.line, loc.column);
    throw_input(loc, "number " + (literal.empty() ? std::string("out of range") : literal + " overflows a double"));
  }
  return doc;
}

}  // namespace llmsim
