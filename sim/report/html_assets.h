#pragma once
// Text the HTML report inlines, compiled in by cmake/embed_text.cmake (sim/report/CMakeLists.txt).
#include <string_view>

namespace llmsim::report::assets {

// Chart.js's UMD bundle from Debian's libjs-chart.js; empty when the build found none.
std::string_view chartjs();
// The report's script (html/report.js): draws the embedded result document.
std::string_view report_js();
// The report's style sheet (html/report.css).
std::string_view report_css();

}  // namespace llmsim::report::assets
