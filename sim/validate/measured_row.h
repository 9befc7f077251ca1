#pragma once
// Internal to sim/validate/: one row of a measured-run CSV. RowReader gives typed access to its
// fields (an absent column and an empty field both read as "", not stated; every rule error names the
// file, line, column, value and rule); map_measured_row turns it into a MeasuredRun, recording what it
// filled in (measured_row_mapper.cpp).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "llmsim/core/csv_reader.h"
#include "llmsim/core/error.h"
#include "llmsim/core/strings.h"
#include "llmsim/core/suggest.h"
#include "llmsim/run/run_config.h"
#include "llmsim/validate/measured_runs.h"
#include "llmsim/validate/source_facts.h"

namespace llmsim::sim::measured {

// Column name -> field index, checked against the schema.
using Header = std::vector<std::pair<std::string, std::size_t>>;

// Typed access to one row: an absent column and an empty field both read as "" (not stated).

class RowReader {
 public:
  RowReader(const Header& header, const CsvRecord& rec, const std::string& file)
      : header_(header), rec_(rec), file_(file) {}

  // A row whose field count differs from the header's is an error of that row alone.
  void check_shape() const {
    if (rec_.fields.size() != header_.size())
      throw_input(Location{.file = file_, .line = rec_.line},
                  fmt::format("row has {} fields, the header has {} (every row needs one field per column; quote "
                              "fields that hold commas)",
                              rec_.fields.size(), header_.size()));
  }

  // The field, or "" when the column is absent or the row is too short to hold it.
  std::string text(const std::string& col) const {
    for (const auto& [n, idx] : header_)
      if (n == col) return idx < rec_.fields.size() ? std::string(trim_blanks(rec_.fields[idx])) : "";
    return "";
  }
  bool stated(const std::string& col) const { return !text(col).empty(); }
  Location where(const std::string& col) const { return Location{.file = file_, .line = rec_.line, .key = col}; }
  int line() const { return rec_.line; }

  [[noreturn]] void fail(const std::string& col, const std::string& rule) const {
    throw_input(where(col), fmt::format("{} = '{}': {}", col, text(col), rule));
  }

  std::string required(const std::string& col) const {
    const std::string s = text(col);
    if (s.empty()) throw_input(where(col), col + " is required (it is empty or the column is missing)");
    return s;
  }

  // An integer >= min; nullopt when not stated.
  std::optional<std::int64_t> integer(const std::string& col, std::int64_t min) const {
    const std::string s = text(col);
    if (s.empty()) return std::nullopt;
    std::int64_t x = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), x);
    if (ec == std::errc::result_out_of_range && end == s.data() + s.size())
      fail(col,
           fmt::format("is out of range (an integer from {} to {})", min, std::numeric_limits<std::int64_t>::max()));
    if (ec != std::errc() || end != s.data() + s.size()) fail(col, fmt::format("must be an integer >= {}", min));
    if (x < min) fail(col, fmt::format("must be >= {}", min));
    // The bound of the run setting the column states (micro_batch is --micro-batch, num_gpus --gpus): a row
    // may not ask for what the CLI refuses (the products of such sizes overflow the simulators').
    std::string setting = col == "num_gpus" ? "gpus" : col;
    std::replace(setting.begin(), setting.end(), '_', '-');
    if (const SettingInfo* info = find_setting(setting); info && info->max > 0 && x > info->max)
      fail(col, fmt::format("must be at most {} ({})", info->max, info->max_why));
    return x;
  }

  // A finite non-negative number; nullopt when not stated. With `allow_inf`, "inf" (any case) or
  // "infinity" reads as +infinity.
  std::optional<double> number(const std::string& col, bool allow_inf = false) const {
    const std::string s = text(col);
    if (s.empty()) return std::nullopt;
    if (allow_inf && (to_lower(s) == "inf" || to_lower(s) == "infinity"))
      return std::numeric_limits<double>::infinity();
    double x = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), x);
    if (ec != std::errc() || end != s.data() + s.size() || !(x >= 0) || x > 1e300)
      fail(col, allow_inf ? "must be a non-negative number or inf" : "must be a finite non-negative number");
    return x;
  }

  // One of `allowed`; nullopt when not stated.
  std::optional<std::string> choice(const std::string& col, const std::vector<std::string>& allowed) const {
    const std::string s = text(col);
    if (s.empty()) return std::nullopt;
    if (std::find(allowed.begin(), allowed.end(), s) == allowed.end())
      fail(col, "must be one of " + join(allowed) + did_you_mean(s, allowed));
    return s;
  }

  std::optional<bool> yes_no(const std::string& col) const {
    const auto s = choice(col, {"yes", "no"});
    if (!s) return std::nullopt;
    return *s == "yes";
  }

  // A run_spec enum by its name (parse_name); nullopt when not stated.
  template <typename E>
  std::optional<E> named(const std::string& col, const std::vector<std::string>& allowed) const {
    const std::string s = text(col);
    if (s.empty()) return std::nullopt;
    E e{};
    if (!parse_name(s, e)) fail(col, "must be one of " + join(allowed) + did_you_mean(s, allowed));
    return e;
  }

 private:
  const Header& header_;
  const CsvRecord& rec_;
  const std::string& file_;
};

// Context of the file being read, shared by its rows.
struct FileContext {
  std::string file;
  std::filesystem::path folder;  // relative model/system paths are relative to it
  std::string data_dir;
  std::vector<std::string> system_presets;  // listed once per file
  std::vector<SourceFact> facts;            // from the facts file beside the CSV (may be empty)
};

// The MeasuredRun of a row (throws the row's first rule error).
void map_measured_row(const FileContext& ctx, const RowReader& row, MeasuredRun& out);

}  // namespace llmsim::sim::measured
