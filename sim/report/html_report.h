#pragma once
// The HTML printer of the result model (issue 18): one self-contained page, opened offline, that shows
// a command's document (report.h) as charts and tables. The page carries the document itself, Chart.js
// (Debian's libjs-chart.js, inlined at build time) and html/report.js, which draws the charts each
// command's document supports (docs/output-schema.md, "HTML report"). Nothing is formatted here twice:
// the page reads the same record the JSON and CSV printers write.
#include <iosfwd>

#include <nlohmann/json.hpp>

namespace llmsim::report {

// Whether this build can write HTML reports (it found Chart.js at configure time).
bool html_available();

// Writes the page; callers check html_available() first (without Chart.js the page could draw nothing).
void write_html(std::ostream& out, const nlohmann::json& doc);

}  // namespace llmsim::report
