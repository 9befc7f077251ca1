#include "llmsim/serve/request_stream.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <numbers>

#include <fmt/format.h>

#include "llmsim/core/csv_reader.h"
#include "llmsim/core/error.h"
#include "llmsim/core/strings.h"
#include "llmsim/core/suggest.h"

namespace llmsim::sim {

namespace {

std::string trim(const std::string& s) { return std::string(trim_space(s)); }

// A whole-string finite number.
bool parse_double(const std::string& s, double& out) {
  const auto v = parse_finite(s);
  if (v) out = *v;
  return v.has_value();
}

// Whether the whole of `s` reads as a floating-point number, finite or not (strtod's grammar).
bool is_number_text(const std::string& s) {
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return end != s.c_str() && *end == '\0';
}

// Lognormal parameters (mu, sigma of the underlying normal) for a length of mean m and stdev s.
void lognormal_params(double m, double s, double& mu, double& sigma) {
  const double s2 = std::log1p((s * s) / (m * m));
  sigma = std::sqrt(s2);
  mu = std::log(m) - s2 / 2;
}

}  // namespace

double LengthDist::mean() const {
  switch (kind) {
    case LengthKind::Fixed: return a;
    case LengthKind::Uniform: return (a + b) / 2;
    case LengthKind::LogNormal: return a;
    case LengthKind::Sample:
      if (!sample) return a;
      return sample_output ? sample->mean_output() : sample->mean_input();
  }
  return a;
}

std::int64_t LengthDist::sample_at(std::int64_t i) const {
  if (!sample || sample->size() == 0) return 1;
  const auto& column = sample_output ? sample->output : sample->input;
  const auto n = static_cast<std::int64_t>(column.size());
  return std::max<std::int64_t>(1, column[static_cast<std::size_t>(((i % n) + n) % n)]);
}

std::string LengthDist::describe() const {
  switch (kind) {
    case LengthKind::Fixed: return fmt::format("{:g}", a);
    case LengthKind::Uniform: return fmt::format("uniform:{:g}-{:g}", a, b);
    case LengthKind::LogNormal: return fmt::format("lognormal:{:g},{:g}", a, b);
    case LengthKind::Sample:
      return sample ? fmt::format("{} ({} requests in order, mean {:.0f})", sample->name, sample->size(), mean())
                    : "sample";
  }
  return "";
}

LengthDist parse_length_dist(const std::string& text_in, const std::string& flag, const std::string& data_dir,
                             bool output_column) {
  const std::string text = trim(text_in);
  const auto fail = [&](const std::string& rule) {
    throw_usage(flag, fmt::format("{} '{}': {} (forms: {})", flag, text_in, rule, kLengthForms));
  };
  LengthDist d;
  const auto colon = text.find(':');
  // A name is text that is not a number of any kind: "nan", "inf" and "1e400" are numbers, refused below by
  // the length rule rather than looked up as samples.
  const bool named = colon == std::string::npos && !text.empty() && !is_number_text(text);
  if (named || text.rfind("sample:", 0) == 0) {
    if (text == "sample:") fail("sample: needs a file");
    d.kind = LengthKind::Sample;
    d.sample = load_length_sample(text, data_dir);
    d.sample_output = output_column;
    return d;
  }
  const std::string kind = colon == std::string::npos ? "fixed" : text.substr(0, colon);
  const std::string args = colon == std::string::npos ? text : text.substr(colon + 1);
  if (kind == "fixed") {
    d.kind = LengthKind::Fixed;
    if (!parse_double(args, d.a) || !is_token_count(d.a))
      fail(fmt::format("a length must be an integer from 1 to {}", kMaxRequestTokens));
    return d;
  }
  if (kind == "uniform") {
    d.kind = LengthKind::Uniform;
    // MIN-MAX (a ',' is accepted too).
    auto sep = args.find('-', 1);
    if (sep == std::string::npos) sep = args.find(',');
    if (sep == std::string::npos) fail("uniform needs MIN-MAX");
    if (!parse_double(trim(args.substr(0, sep)), d.a) || !parse_double(trim(args.substr(sep + 1)), d.b))
      fail("MIN and MAX must be numbers");
    if (!is_token_count(d.a) || !is_token_count(d.b) || d.b < d.a)
      fail(fmt::format("needs integers 1 <= MIN <= MAX <= {}", kMaxRequestTokens));
    return d;
  }
  if (kind == "lognormal") {
    d.kind = LengthKind::LogNormal;
    const auto sep = args.find(',');
    if (sep == std::string::npos) fail("lognormal needs MEAN,STD");
    if (!parse_double(trim(args.substr(0, sep)), d.a) || !parse_double(trim(args.substr(sep + 1)), d.b))
      fail("MEAN and STD must be numbers");
    if (d.a < 1 || d.b < 0 || d.a > static_cast<double>(kMaxRequestTokens) ||
        d.b > static_cast<double>(kMaxRequestTokens))
      fail(fmt::format("needs 1 <= MEAN <= {0} and 0 <= STD <= {0}", kMaxRequestTokens));
    return d;
  }
  fail("unknown distribution '" + kind + "'");
  return d;
}

std::vector<std::string> lengths_in_model_tokens(LengthDist& input, LengthDist& output, const model::ModelSpec& m) {
  std::vector<std::string> notes;
  for (LengthDist* d : {&input, &output}) {
    if (d->kind != LengthKind::Sample) continue;
    ModelTokens t = in_model_tokens(d->sample, m);
    d->sample = std::move(t.sample);
    if (!t.note.empty() && std::find(notes.begin(), notes.end(), t.note) == notes.end()) notes.push_back(t.note);
  }
  return notes;
}

double Rng::uniform() {
  // The top 53 bits of one 64-bit draw, scaled to [0, 1): identical on every platform.
  return static_cast<double>(g_() >> 11) * 0x1.0p-53;
}

double Rng::normal() {
  if (have_spare_) {
    have_spare_ = false;
    return spare_;
  }
  double u1 = 0;
  do u1 = uniform();
  while (u1 <= 0);
  const double u2 = uniform();
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double t = 2.0 * std::numbers::pi * u2;
  spare_ = r * std::sin(t);
  have_spare_ = true;
  return r * std::cos(t);
}

double Rng::exponential(double rate) {
  double u = 0;
  do u = uniform();
  while (u <= 0);
  return -std::log(u) / rate;
}

std::int64_t Rng::length(const LengthDist& d) {
  double x = d.a;
  switch (d.kind) {
    case LengthKind::Fixed: break;
    case LengthKind::Sample:
      if (!d.sample || d.sample->size() == 0) break;
      return d.sample_at(static_cast<std::int64_t>(std::floor(uniform() * static_cast<double>(d.sample->size()))));
    case LengthKind::Uniform:
      // Integers MIN..MAX with equal probability.
      x = d.a + std::floor(uniform() * (d.b - d.a + 1));
      x = std::min(x, d.b);
      break;
    case LengthKind::LogNormal: {
      if (d.b <= 0) break;
      double mu = 0, sigma = 0;
      lognormal_params(d.a, d.b, mu, sigma);
      x = std::exp(mu + sigma * normal());
      break;
    }
  }
  // Capped before the conversion: a lognormal tail can draw any double.
  return std::max<std::int64_t>(1, std::llround(std::min(x, static_cast<double>(kMaxRequestTokens))));
}

std::vector<Request> generate_requests(const StreamSpec& spec) {
  std::vector<Request> out;
  if (spec.requests <= 0) return out;
  out.reserve(static_cast<std::size_t>(spec.requests));
  // Separate generators for arrivals and lengths so that changing the arrival process keeps the lengths.
  Rng arrivals(spec.seed * 0x9E3779B97F4A7C15ULL + 1);
  Rng lengths(spec.seed);
  double t = 0;
  for (std::int64_t i = 0; i < spec.requests; ++i) {
    Request r;
    r.id = i;
    // A length sample is read in order (request i takes pair i) and draws nothing from the generator.
    const auto length = [&](const LengthDist& d) {
      return d.kind == LengthKind::Sample ? d.sample_at(i) : lengths.length(d);
    };
    r.input_tokens = length(spec.input);
    r.output_tokens = length(spec.output);
    if (spec.shared_prefix_tokens > 0) {
      const std::int64_t prefix = std::min(spec.shared_prefix_tokens, kMaxRequestTokens);
      r.input_tokens = std::min(kMaxRequestTokens, r.input_tokens + prefix);
      r.prefix_key = i % std::max<std::int64_t>(1, spec.prefix_groups);
      r.prefix_tokens = std::min(prefix, r.input_tokens);
    }
    switch (spec.kind) {
      case ArrivalKind::Burst:
      case ArrivalKind::Closed:
      case ArrivalKind::Trace: r.arrival_s = 0; break;
      case ArrivalKind::Poisson:
        if (i > 0) t += arrivals.exponential(spec.rate);
        r.arrival_s = t;
        break;
      case ArrivalKind::Constant: r.arrival_s = static_cast<double>(i) / spec.rate; break;
    }
    out.push_back(r);
  }
  assign_adapters(out, spec.adapters, spec.adapter_zipf, spec.seed);
  return out;
}

void assign_adapters(std::vector<Request>& requests, std::int64_t adapters, double zipf_s, std::uint64_t seed) {
  if (adapters <= 0) return;
  // The cumulative popularity of adapters 0..n-1, drawn by inverse CDF.
  std::vector<double> cdf(static_cast<std::size_t>(adapters));
  double sum = 0;
  for (std::int64_t i = 0; i < adapters; ++i) {
    sum += zipf_s > 0 ? 1.0 / std::pow(static_cast<double>(i + 1), zipf_s) : 1.0;
    cdf[static_cast<std::size_t>(i)] = sum;
  }
  Rng draw(seed * 0xD1B54A32D192ED03ULL + 7);
  for (auto& r : requests) {
    const double u = draw.uniform() * sum;
    const auto it = std::upper_bound(cdf.begin(), cdf.end(), u);
    r.adapter = std::min<std::int64_t>(adapters - 1, it - cdf.begin());
  }
}

TraceFile read_trace_csv(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw_not_found(Location{.file = path}, "cannot open the trace file");
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  static const char* kColumns[] = {"arrival_s", "input_tokens", "output_tokens", "prefix_key", "prefix_tokens"};
  TraceFile tf;
  bool header = false;
  std::size_t columns = 3;  // 3, or 5 with the prefix columns
  int lineno = 0;
  for (const CsvRecord& rec : parse_csv(text, path, CsvOptions{.comment_lines = true, .skip_blank = true})) {
    lineno = rec.line;
    std::vector<std::string> fields;
    for (const std::string& field : rec.fields) fields.push_back(trim(field));
    const std::vector<int>& starts = rec.columns;
    const std::string t = trim(join(rec.fields, ","));
    if (!header) {
      bool ok = fields.size() == 3 || fields.size() == 5;
      for (std::size_t c = 0; ok && c < fields.size(); ++c) ok = fields[c] == kColumns[c];
      if (!ok)
        throw_input(Location{.file = path, .line = lineno, .column = 1},
                    fmt::format("expected the header 'arrival_s,input_tokens,output_tokens' (optionally followed by "
                                "',prefix_key,prefix_tokens'), found '{}'",
                                t));
      columns = fields.size();
      header = true;
      continue;
    }
    if (fields.size() != columns)
      throw_input(Location{.file = path, .line = lineno, .column = 1},
                  fmt::format("expected {} fields ({}), found {}", columns,
                              columns == 3 ? "arrival_s,input_tokens,output_tokens"
                                           : "arrival_s,input_tokens,output_tokens,prefix_key,prefix_tokens",
                              fields.size()));
    double v[5] = {0, 0, 0, -1, 0};
    for (std::size_t c = 0; c < columns; ++c) {
      const Location where{.file = path, .line = lineno, .column = starts[c]};
      const std::string& s = fields[c];
      if (!parse_double(s, v[c])) throw_input(where, fmt::format("{} = '{}': not a number", kColumns[c], s));
      if (c == 0 && v[c] < 0) throw_input(where, fmt::format("arrival_s = '{}': must be >= 0", s));
      if ((c == 1 || c == 2) && !is_token_count(v[c]))
        throw_input(where,
                    fmt::format("{} = '{}': must be an integer from 1 to {}", kColumns[c], s, kMaxRequestTokens));
      // Keys up to 2^53 stay exact in the double they are read through.
      if (c == 3 && !(v[c] >= 0 && v[c] <= 0x1.0p53 && v[c] == std::floor(v[c])))
        throw_input(where, fmt::format("prefix_key = '{}': must be a whole number from 0 to 2^53", s));
      if (c == 4 && !(is_token_count(v[c], 0) && v[c] <= v[1] + v[2]))
        throw_input(
            where,
            fmt::format("prefix_tokens = '{}': must be a whole number from 0 to input_tokens + output_tokens ({})", s,
                        static_cast<std::int64_t>(v[1] + v[2])));
    }
    Request r;
    r.arrival_s = v[0];
    r.input_tokens = static_cast<std::int64_t>(v[1]);
    r.output_tokens = static_cast<std::int64_t>(v[2]);
    if (columns == 5) {
      r.prefix_key = static_cast<std::int64_t>(v[3]);
      r.prefix_tokens = static_cast<std::int64_t>(v[4]);
    }
    if (!tf.requests.empty() && r.arrival_s < tf.requests.back().arrival_s) tf.was_sorted = false;
    r.id = lineno;  // carried through the sort, then replaced by the index
    tf.requests.push_back(r);
  }
  if (!header) throw_input(Location{.file = path, .line = std::max(1, lineno)}, "empty trace: no header");
  if (tf.requests.empty()) throw_input(Location{.file = path, .line = lineno}, "the trace has no requests");
  if (!tf.was_sorted) {
    std::stable_sort(tf.requests.begin(), tf.requests.end(),
                     [](const Request& a, const Request& b) { return a.arrival_s < b.arrival_s; });
    tf.note = fmt::format("{}: arrivals were not in order; sorted {} requests by arrival_s", path, tf.requests.size());
  }
  for (std::size_t i = 0; i < tf.requests.size(); ++i) {
    tf.lines.push_back(static_cast<int>(tf.requests[i].id));
    tf.requests[i].id = static_cast<std::int64_t>(i);
  }
  return tf;
}

}  // namespace llmsim::sim
