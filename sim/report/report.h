#pragma once
// The one result model every command hands its printers (issue 18): a JSON document with a fixed header
// and a few conventions, so that the JSON printer, the one CSV layout and the HTML report read the same
// record and nothing is formatted twice. docs/output-schema.md documents the header, the conventions and
// each command's body.
//
//   header   {"schema_version": 2, "command": "train", ...}; commands that simulate a run add "model",
//            "system", "run" (every setting as simulated, typed), "defaulted" (the settings the user did
//            not give), "run_summary" (the one-line description), "valid", "problems" and "verdict" (the
//            answer in one sentence, add_verdict).
//   figure   a quantity with its unit, and its band where it has one: {"value": 0.51, "unit": "s",
//            "low": 0.44, "high": 0.69}. Units are SI names ("s", "B", "tokens/s", "fraction", "TFLOP/s").
//   table    an array of objects, one per row, all with the same keys.
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmsim/core/interval.h"
#include "llmsim/run/run_config.h"

namespace llmsim::report {

// Version of the JSON and CSV layout; 2 since the result model of 2026-12-03 (1: each command's own).
inline constexpr int kSchemaVersion = 2;

// A figure: {"value", "unit", "low", "high"}.
nlohmann::json figure(const sim::Interval& v, std::string_view unit);
// An exact figure (no band): {"value", "unit"}.
nlohmann::json figure(double v, std::string_view unit);
// Whether `j` is a figure: an object holding "value" and "unit".
bool is_figure(const nlohmann::json& j);

// {"schema_version": kSchemaVersion, "command": command}.
nlohmann::json header(std::string_view command);

// The run a command simulated: "model", "system", "run" (every setting of sim::run_settings() that applies
// to the run's workload, as `req` holds it, the run being the one simulated: integers, booleans, strings,
// lists of strings, null where unset and a simulator rule fills it), "defaulted" (those the user did not
// give), "run_summary", "valid" (no problems) and "problems".
void add_run(nlohmann::json& doc, const sim::RunRequest& req, std::string_view model, std::string_view system,
             std::string_view summary, const std::vector<std::string>& problems);

// The command's answer in one sentence, the first thing every printer shows (the table's first result line,
// the HTML report's line under its title): "verdict" = {"ok": whether the run does what was asked (it fits,
// it serves every request within the SLOs given, a plan was found), "text": the sentence}.
void add_verdict(nlohmann::json& doc, bool ok, std::string_view text);

// The document as JSON, indented by two spaces, with a final newline.
void write_json(std::ostream& out, const nlohmann::json& doc);

// The one CSV layout of every command: a header line (kCsvColumns), then one line per value of the
// document, in key order (write_csv documents the flattening).
// A CSV field as RFC 4180 writes it: quoted when it holds a comma, a quote or a line break.
std::string csv_field(const std::string& s);
inline constexpr std::string_view kCsvColumns = "schema_version,command,table,row,column,value,low,high,unit";
void write_csv(std::ostream& out, const nlohmann::json& doc);

}  // namespace llmsim::report
