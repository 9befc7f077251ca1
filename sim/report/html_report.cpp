#include "llmsim/report/html_report.h"

#include <ostream>
#include <string>

#include "llmsim/report/html_assets.h"

namespace llmsim::report {

namespace {

// Text placed inside a <script> element must not hold "</" (an HTML parser ends the element at
// "</script" whatever the JavaScript around it); "<\/" means the same in a JSON string.
std::string script_safe(std::string s) {
  for (std::size_t at = s.find("</"); at != std::string::npos; at = s.find("</", at + 3)) s.replace(at, 2, "<\\/");
  return s;
}

// Text placed inside an HTML element's content: &, < and > escaped.
std::string html_text(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string title_of(const nlohmann::json& doc) {
  std::string t = "llmsim " + doc.value("command", std::string("report"));
  if (doc.contains("model") && doc["model"].is_string()) t += ": " + doc["model"].get<std::string>();
  if (doc.contains("system") && doc["system"].is_string()) t += " on " + doc["system"].get<std::string>();
  return t;
}

}  // namespace

bool html_available() { return !assets::chartjs().empty(); }

void write_html(std::ostream& out, const nlohmann::json& doc) {
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      << "<meta name=\"generator\" content=\"llmsim\">\n"
      << "<title>" << html_text(title_of(doc)) << "</title>\n"
      << "<style>\n"
      << assets::report_css() << "</style>\n</head>\n<body>\n"
      << "<main id=\"report\"><noscript>This report draws its charts and tables with JavaScript.</noscript></main>\n"
      // The document first: the report's script reads it.
      << "<script id=\"llmsim-document\" type=\"application/json\">"
      << script_safe(doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)) << "</script>\n"
      << "<script>\n"
      << script_safe(std::string(assets::chartjs())) << "\n</script>\n"
      << "<script>\n"
      << assets::report_js() << "\n</script>\n</body>\n</html>\n";
}

}  // namespace llmsim::report
