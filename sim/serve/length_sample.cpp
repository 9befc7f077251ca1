#include "llmsim/serve/length_sample.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "llmsim/core/csv_reader.h"
#include "llmsim/core/error.h"
#include "llmsim/core/strings.h"
#include "llmsim/core/suggest.h"
#include "llmsim/model/tokenizer.h"
#include "llmsim/serve/request_stream.h"

namespace llmsim::sim {

namespace {

namespace fs = std::filesystem;

double mean_of(const std::vector<std::int64_t>& v, std::int64_t floor) {
  if (v.empty()) return 0;
  double s = 0;
  for (const auto x : v) s += static_cast<double>(std::max(x, floor));
  return s / static_cast<double>(v.size());
}

}  // namespace

double LengthSample::mean_input() const { return mean_of(input, 1); }
double LengthSample::mean_output() const { return mean_of(output, 1); }

LengthSample read_length_sample(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw_not_found(Location{.file = path}, "cannot open the length sample");
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  LengthSample s;
  s.name = path;
  // The comment lines: the first line, when a comment, names the source; "# chars_per_token: X (why)" says
  // which tokenizer the lengths are counted in.
  int line_number = 0;
  bool first = true;
  for (std::size_t pos = 0; pos < text.size();) {
    const std::size_t end = std::min(text.find('\n', pos), text.size());
    const std::string_view line = trim_space(std::string_view(text).substr(pos, end - pos));
    pos = end + 1;
    ++line_number;
    if (line.empty()) continue;
    if (first && line.front() == '#') s.source = std::string(trim_space(line.substr(1)));
    first = false;
    constexpr std::string_view kKey = "# chars_per_token:";
    if (!line.starts_with(kKey)) continue;
    const std::string_view rest = trim_space(line.substr(kKey.size()));
    const std::string number(rest.substr(0, rest.find_first_of(" \t(")));
    const auto x = parse_finite(number);
    if (!x || *x < 1 || *x > 10)
      throw_input(
          Location{.file = path, .line = line_number, .key = "chars_per_token"},
          fmt::format("chars_per_token = '{}': must be a number from 1 to 10 (characters of text per token)", number));
    s.chars_per_token = *x;
  }
  static const char* kColumns[] = {"input_tokens", "output_tokens"};
  bool header = false;
  int lineno = 0;
  for (const CsvRecord& rec : parse_csv(text, path, CsvOptions{.comment_lines = true, .skip_blank = true})) {
    lineno = rec.line;
    std::vector<std::string> fields;
    for (const std::string& field : rec.fields) fields.emplace_back(trim_space(field));
    if (!header) {
      if (fields.size() != 2 || fields[0] != kColumns[0] || fields[1] != kColumns[1])
        throw_input(Location{.file = path, .line = lineno, .column = 1},
                    fmt::format("expected the header 'input_tokens,output_tokens', found '{}'", join(fields, ",")));
      header = true;
      continue;
    }
    if (fields.size() != 2)
      throw_input(Location{.file = path, .line = lineno, .column = 1},
                  fmt::format("expected 2 fields (input_tokens,output_tokens), found {}", fields.size()));
    std::int64_t v[2] = {0, 0};
    for (int c = 0; c < 2; ++c) {
      const Location where{.file = path, .line = lineno, .column = rec.columns[static_cast<std::size_t>(c)]};
      const std::string& t = fields[static_cast<std::size_t>(c)];
      const auto x = parse_finite(t);
      const std::int64_t least = c == 0 ? 1 : 0;
      if (!x || !is_token_count(*x, static_cast<double>(least)))
        throw_input(where, fmt::format("{} = '{}': must be an integer from {} to {}", kColumns[c], t, least,
                                       kMaxRequestTokens));
      v[c] = static_cast<std::int64_t>(*x);
    }
    s.input.push_back(v[0]);
    s.output.push_back(v[1]);
  }
  if (!header) throw_input(Location{.file = path, .line = std::max(1, lineno)}, "empty length sample: no header");
  if (s.input.empty()) throw_input(Location{.file = path, .line = lineno}, "the length sample has no requests");
  return s;
}

std::shared_ptr<const LengthSample> scaled_length_sample(const LengthSample& s, double scale) {
  auto out = std::make_shared<LengthSample>(s);
  out->name = fmt::format("{}x{:g}", s.name, scale);
  const auto scaled = [scale](std::int64_t v, std::int64_t least) {
    if (v == 0 && least == 0) return std::int64_t{0};
    return std::clamp<std::int64_t>(std::llround(static_cast<double>(v) * scale), std::max<std::int64_t>(least, 1),
                                    kMaxRequestTokens);
  };
  for (auto& v : out->input) v = scaled(v, 1);
  for (auto& v : out->output) v = scaled(v, 0);
  return out;
}

ModelTokens in_model_tokens(std::shared_ptr<const LengthSample> s, const model::ModelSpec& m) {
  const model::TokenizerFamily* family = model::tokenizer_family(m);
  if (!s || s->chars_per_token <= 0 || !family) {
    const std::string why = !s || s->chars_per_token <= 0 ? "the sample does not say which tokenizer counted it"
                                                          : "the model's tokenizer is not one llmsim knows";
    return {s, s ? fmt::format("lengths {} served as counted ({})", s->name, why) : ""};
  }
  const double scale = s->chars_per_token / family->chars_per_token;
  if (std::abs(scale - 1) < 1e-9) return {s, ""};
  return {
      scaled_length_sample(*s, scale),
      fmt::format("lengths {} x{:.3g} in {} tokens: counted at {:g} characters per token, the model's tokenizer "
                  "{} cuts {:g} ({})",
                  s->name, scale, m.name, s->chars_per_token, family->name, family->chars_per_token, family->source)};
}

std::vector<std::string> shipped_length_samples(const std::string& data_dir) {
  std::vector<std::string> names;
  std::error_code ec;
  const fs::path dir = fs::path(data_dir) / "lengths";
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".csv") names.push_back(it->path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::shared_ptr<const LengthSample> load_length_sample(const std::string& name_or_path, const std::string& data_dir) {
  std::string path;
  std::string name = name_or_path;
  if (name_or_path.rfind("sample:", 0) == 0) {
    path = name = name_or_path.substr(7);
  } else if (name_or_path.find('/') != std::string::npos || name_or_path.ends_with(".csv")) {
    path = name_or_path;
  } else {
    const std::vector<std::string> shipped = shipped_length_samples(data_dir);
    if (std::find(shipped.begin(), shipped.end(), name_or_path) == shipped.end())
      throw_not_found(
          Location{.key = name_or_path},
          fmt::format("no length sample '{}'{} (shipped in {}/lengths: {}; or give sample:FILE.csv)", name_or_path,
                      did_you_mean(name_or_path, shipped), data_dir, shipped.empty() ? "none" : join(shipped)));
    path = (fs::path(data_dir) / "lengths" / (name_or_path + ".csv")).string();
  }
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const LengthSample>> cache;
  const std::lock_guard<std::mutex> lock(mutex);
  if (const auto it = cache.find(path); it != cache.end()) return it->second;
  auto s = std::make_shared<LengthSample>(read_length_sample(path));
  s->name = name;
  cache[path] = s;
  return s;
}

}  // namespace llmsim::sim
