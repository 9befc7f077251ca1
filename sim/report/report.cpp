#include "llmsim/report/report.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <ostream>
#include <sstream>

namespace llmsim::report {

namespace {

// A setting's canonical text as a typed JSON value (the kinds of sim::SettingKind).
nlohmann::json typed(const sim::SettingInfo& info, const std::string& text) {
  switch (info.kind) {
    case sim::SettingKind::PositiveInt:
    case sim::SettingKind::NonNegativeInt: return std::stoll(text);
    case sim::SettingKind::Flag: return text == "true";
    case sim::SettingKind::Fraction:
    case sim::SettingKind::Ratio:
    case sim::SettingKind::PositiveNumber: return std::stod(text);
    case sim::SettingKind::List: {
      auto a = nlohmann::json::array();
      std::stringstream ss(text);
      std::string item;
      while (std::getline(ss, item, ','))
        if (!item.empty()) a.push_back(item);
      return a;
    }
    case sim::SettingKind::Choice:
      // A choice among numbers (the ZeRO stage) is a number.
      if (!info.choices.empty() && std::all_of(info.choices.begin(), info.choices.end(), [](const std::string& c) {
            return !c.empty() && std::all_of(c.begin(), c.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
          }))
        return std::stoll(text);
      break;
    case sim::SettingKind::Text:
    case sim::SettingKind::Release: break;
  }
  return text;
}

// A scalar as CSV text: numbers in their shortest exact form, booleans as true/false, null as empty.
std::string text(const nlohmann::json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_array()) {  // a list of scalars: one field, items joined by ';'
    std::string out;
    for (const auto& x : v) out += (out.empty() ? "" : ";") + text(x);
    return out;
  }
  return v.dump();
}

// The header's keys, in the order every printer shows them; a document's other keys follow in key order.
constexpr std::string_view kHeaderOrder[] = {"schema_version", "command",     "model", "system",   "run",
                                             "defaulted",      "run_summary", "valid", "problems", "verdict"};

// The top-level keys of `doc` in printing order.
std::vector<std::string> ordered_keys(const nlohmann::json& doc) {
  std::vector<std::string> keys;
  for (const auto k : kHeaderOrder)
    if (doc.contains(k)) keys.emplace_back(k);
  for (const auto& [k, v] : doc.items())
    if (std::find(std::begin(kHeaderOrder), std::end(kHeaderOrder), k) == std::end(kHeaderOrder)) keys.push_back(k);
  return keys;
}

bool is_scalar_list(const nlohmann::json& v) {
  if (!v.is_array()) return false;
  for (const auto& x : v)
    if (x.is_object() || x.is_array()) return false;
  return true;
}

class CsvWriter {
 public:
  CsvWriter(std::ostream& out, const nlohmann::json& doc)
      : out_(out),
        prefix_(std::to_string(kSchemaVersion) + "," + csv_field(doc.value("command", std::string())) + ",") {}

  // One line per value: the figure's value, low, high and unit; a scalar's value.
  void value(const std::string& table, const std::string& row, const std::string& column, const nlohmann::json& v) {
    out_ << prefix_ << csv_field(table) << "," << csv_field(row) << "," << csv_field(column) << ",";
    if (is_figure(v)) {
      out_ << csv_field(text(v["value"])) << "," << csv_field(text(v.value("low", nlohmann::json()))) << ","
           << csv_field(text(v.value("high", nlohmann::json()))) << "," << csv_field(v["unit"].get<std::string>())
           << "\n";
    } else {
      out_ << csv_field(text(v)) << ",,,\n";
    }
  }

  // The fields of an object inside `table` at `row`; nested objects extend the column name with '.',
  // nested tables become tables of their own named table.column, their rows row.index.
  void object(const std::string& table, const std::string& row, const std::string& prefix, const nlohmann::json& o) {
    for (const auto& [key, v] : o.items()) {
      const std::string column = prefix.empty() ? key : prefix + "." + key;
      if (is_figure(v) || !v.is_structured() || is_scalar_list(v))
        value(table, row, column, v);
      else if (v.is_object())
        object(table, row, column, v);
      else
        rows(table + "." + column, row, v);
    }
  }

  // A table: one row per element, numbered from 1 (prefixed by the enclosing row's number when nested).
  void rows(const std::string& table, const std::string& outer_row, const nlohmann::json& a) {
    std::size_t i = 0;
    for (const auto& el : a) {
      const std::string row = (outer_row.empty() ? "" : outer_row + ".") + std::to_string(++i);
      if (el.is_object())
        object(table, row, "", el);
      else
        value(table, row, "value", el);
    }
  }

 private:
  std::ostream& out_;
  std::string prefix_;
};

}  // namespace

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

nlohmann::json figure(const sim::Interval& v, std::string_view unit) {
  return {{"value", v.value}, {"low", v.low}, {"high", v.high}, {"unit", std::string(unit)}};
}

nlohmann::json figure(double v, std::string_view unit) { return {{"value", v}, {"unit", std::string(unit)}}; }

bool is_figure(const nlohmann::json& j) { return j.is_object() && j.contains("value") && j.contains("unit"); }

nlohmann::json header(std::string_view command) {
  nlohmann::json j;
  j["schema_version"] = kSchemaVersion;
  j["command"] = std::string(command);
  return j;
}

void add_run(nlohmann::json& doc, const sim::RunRequest& req, std::string_view model, std::string_view system,
             std::string_view summary, const std::vector<std::string>& problems) {
  doc["model"] = std::string(model);
  doc["system"] = std::string(system);
  nlohmann::json run = nlohmann::json::object();
  auto defaulted = nlohmann::json::array();
  for (const auto& [info, value] : sim::setting_values(req)) {
    if (info->name == "model" || info->name == "system") continue;  // given above, resolved
    if (!sim::applies_to(*info, req.run.workload)) continue;
    run[info->name] = value ? typed(*info, *value) : nlohmann::json();
    if (!req.was_given(info->name)) defaulted.push_back(info->name);
  }
  doc["run"] = run;
  doc["defaulted"] = defaulted;
  doc["run_summary"] = std::string(summary);
  doc["valid"] = problems.empty();
  doc["problems"] = problems;
}

void add_verdict(nlohmann::json& doc, bool ok, std::string_view text) {
  doc["verdict"] = {{"ok", ok}, {"text", std::string(text)}};
}

void write_json(std::ostream& out, const nlohmann::json& doc) {
  if (!doc.is_object()) {
    out << doc.dump(2) << "\n";
    return;
  }
  // The header first (an ordered copy of the top level; nested objects keep key order).
  nlohmann::ordered_json o;
  for (const auto& k : ordered_keys(doc)) o[k] = nlohmann::ordered_json::parse(doc[k].dump());
  out << o.dump(2) << "\n";
}

// Flattening, in key order: the header's schema_version and command are the first two columns of
// every line. A top-level scalar or figure is a line of table "summary"; a top-level object is a table of
// one row ("") whose columns are its fields (nested objects joined with '.'); a top-level array of objects
// is a table with one row per element, numbered from 1; an array inside a row is a table named
// table.column whose rows are numbered row.1, row.2, ...; a list of scalars is one field joined by ';'. A
// figure fills value, low, high and unit; any other value fills value alone.
void write_csv(std::ostream& out, const nlohmann::json& doc) {
  out << kCsvColumns << "\n";
  CsvWriter w(out, doc);
  for (const auto& key : ordered_keys(doc)) {
    if (key == "schema_version" || key == "command") continue;
    const nlohmann::json& v = doc[key];
    if (is_figure(v) || !v.is_structured() || is_scalar_list(v))
      w.value("summary", "", key, v);
    else if (v.is_object())
      w.object(key, "", "", v);
    else
      w.rows(key, "", v);
  }
}

}  // namespace llmsim::report
