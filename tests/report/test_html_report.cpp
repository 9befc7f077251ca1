// The HTML printer (html_report.h) and the train document's parts (train_parts.h): the page embeds the
// document so that no text of it can end the script element, inlines its assets, and the scheduled step
// becomes spans merged as documented. The page drawn in a browser is tested end to end in
// tests/cli/check_html.cmake.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "llmsim/report/html_assets.h"
#include "llmsim/report/html_report.h"
#include "llmsim/report/report.h"
#include "llmsim/report/train_parts.h"

namespace report = llmsim::report;
namespace sim = llmsim::sim;

namespace {
std::string page(const nlohmann::json& doc) {
  std::ostringstream out;
  report::write_html(out, doc);
  return out.str();
}
std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}
}  // namespace

TEST_CASE("the page embeds the document so that its text cannot close the script element") {
  nlohmann::json doc = report::header("validate");
  doc["rows"] = nlohmann::json::array({{{"note", "a note with </script><script>alert(1)</script> in it"}}});
  const std::string html = page(doc);
  // Three scripts (document, Chart.js, report.js): their three closing tags and no other.
  CHECK(count(html, "</script>") == 3);
  CHECK(html.find("<\\/script><script>alert(1)<\\/script>") != std::string::npos);
  // The embedded text parses back to the very document.
  const std::string open = "<script id=\"llmsim-document\" type=\"application/json\">";
  const auto start = html.find(open) + open.size();
  const std::string embedded = html.substr(start, html.find("</script>", start) - start);
  CHECK(nlohmann::json::parse(embedded) == doc);
}

TEST_CASE("the page carries its title escaped, its style and script inline, and nothing from elsewhere") {
  nlohmann::json doc = report::header("train");
  doc["model"] = "gpt<&>";
  doc["system"] = "a800-nvlink";
  const std::string html = page(doc);
  CHECK(html.find("<title>llmsim train: gpt&lt;&amp;&gt; on a800-nvlink</title>") != std::string::npos);
  CHECK(html.find(std::string(report::assets::report_css().substr(0, 60))) != std::string::npos);
  CHECK(html.find(std::string(report::assets::report_js().substr(0, 60))) != std::string::npos);
  CHECK(html.find(" src=") == std::string::npos);
  CHECK(html.find(" href=") == std::string::npos);
  // The report's own assets can be inlined as they are: neither holds a closing script or style tag.
  CHECK(report::assets::report_js().find("</") == std::string_view::npos);
  CHECK(report::assets::report_css().find("</") == std::string_view::npos);
  if (report::html_available()) CHECK(html.find("Chart.js v") != std::string::npos);
}

TEST_CASE("the scheduled step: events of one phase on one stream merge across gaps up to the tolerance") {
  const std::vector<sim::TraceEvent> trace = {
      {.name = "l0", .track = "stage0.compute", .stage = 0, .start_s = 0.0, .duration_s = 1.0, .category = "forward"},
      {.name = "l1", .track = "stage0.compute", .stage = 0, .start_s = 1.05, .duration_s = 1.0, .category = "forward"},
      // A gap wider than the tolerance starts a new span, as does another phase.
      {.name = "l2", .track = "stage0.compute", .stage = 0, .start_s = 2.5, .duration_s = 0.5, .category = "forward"},
      {.name = "b0", .track = "stage0.compute", .stage = 0, .start_s = 3.0, .duration_s = 2.0, .category = "backward"},
      // Another stream of the stage, listed out of order.
      {.name = "ar1",
       .track = "stage0.tp_comm",
       .stage = 0,
       .start_s = 2.0,
       .duration_s = 0.1,
       .category = "communication"},
      {.name = "ar0",
       .track = "stage0.tp_comm",
       .stage = 0,
       .start_s = 1.0,
       .duration_s = 0.1,
       .category = "communication"},
      {.name = "f1", .track = "stage1.compute", .stage = 1, .start_s = 1.0, .duration_s = 1.0, .category = "forward"},
  };
  const nlohmann::json spans = report::schedule_spans(trace, 0.1);
  REQUIRE(spans.size() == 6);
  // stage 0 compute: [0, 2.05] forward (two events, gap 0.05), [2.5, 3.0] forward, [3, 5] backward.
  CHECK(spans[0]["stream"] == "compute");
  CHECK(spans[0]["start_s"].get<double>() == doctest::Approx(0.0));
  CHECK(spans[0]["end_s"].get<double>() == doctest::Approx(2.05));
  CHECK(spans[1]["start_s"].get<double>() == doctest::Approx(2.5));
  CHECK(spans[2]["phase"] == "backward");
  CHECK(spans[2]["end_s"].get<double>() == doctest::Approx(5.0));
  // stage 0 tp_comm: sorted by start; 1.1 -> 2.0 is wider than 0.1, so two spans.
  CHECK(spans[3]["stream"] == "tp_comm");
  CHECK(spans[3]["start_s"].get<double>() == doctest::Approx(1.0));
  CHECK(spans[4]["start_s"].get<double>() == doctest::Approx(2.0));
  CHECK(spans[5]["stage"] == 1);
  // With no tolerance nothing merges that does not touch.
  CHECK(report::schedule_spans(trace, 0.0).size() == 7);
}
