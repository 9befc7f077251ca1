#include "llmsim/core/toml_reader.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "llmsim/core/suggest.h"

namespace llmsim {

toml::table parse_toml_file(const std::string& path) {
  if (!std::filesystem::is_regular_file(path))
    throw_not_found(Location{.file = path}, "file not found (or not a regular file)");
  try {
    return toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    throw_input(Location{.file = path, .line = static_cast<int>(b.line), .column = static_cast<int>(b.column)},
                std::string("malformed TOML: ") + std::string(e.description()));
  }
}

TomlReader::TomlReader(const toml::table& table, std::string file, std::string path)
    : table_(&table), file_(std::move(file)), path_(std::move(path)) {}

std::string TomlReader::full(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

Location TomlReader::where(const std::string& key) const {
  const toml::node* n = table_->get(key);
  const auto& src = n ? n->source() : table_->source();
  return Location{.file = file_, .line = static_cast<int>(src.begin.line), .key = full(key)};
}

bool TomlReader::has(const std::string& key) const { return table_->contains(key); }

const toml::node* TomlReader::get(const std::string& key) {
  if (std::find(known_.begin(), known_.end(), key) == known_.end()) known_.push_back(key);
  return table_->get(key);
}

void TomlReader::ignore(const std::string& key) { get(key); }

std::optional<double> TomlReader::opt_number(const std::string& key) {
  const toml::node* n = get(key);
  if (!n) return std::nullopt;
  if (auto v = n->value<double>(); v && (n->is_floating_point() || n->is_integer())) {
    // TOML spells nan and inf as floats; no llmsim key means either.
    if (!std::isfinite(*v))
      throw_input(where(key), fmt::format("value {} breaks the rule: must be a finite number", *v));
    // Far above any quantity a llmsim TOML holds in its key's unit (TFLOP/s, GiB, GB/s, us, ...), and low
    // enough that converting it to SI and multiplying it in the simulators stays finite.
    if (std::abs(*v) > kMaxTomlMagnitude)
      throw_input(where(key),
                  fmt::format("value {} breaks the rule: must be at most {:g} in magnitude", *v, kMaxTomlMagnitude));
    return *v;
  }
  throw_input(where(key), "expected a number");
}

std::optional<std::int64_t> TomlReader::opt_integer(const std::string& key) {
  const toml::node* n = get(key);
  if (!n) return std::nullopt;
  if (n->is_integer()) return n->value<std::int64_t>();
  throw_input(where(key), "expected an integer");
}

std::optional<std::string> TomlReader::opt_string(const std::string& key) {
  const toml::node* n = get(key);
  if (!n) return std::nullopt;
  if (n->is_string()) return n->value<std::string>();
  throw_input(where(key), "expected a string");
}

std::optional<bool> TomlReader::opt_boolean(const std::string& key) {
  const toml::node* n = get(key);
  if (!n) return std::nullopt;
  if (n->is_boolean()) return n->value<bool>();
  throw_input(where(key), "expected true or false");
}

template <typename T>
static T required(std::optional<T> v, const Location& loc) {
  if (!v) throw_input(loc, "required key is missing");
  return *v;
}

double TomlReader::number(const std::string& key) { return required(opt_number(key), where(key)); }
std::int64_t TomlReader::integer(const std::string& key) { return required(opt_integer(key), where(key)); }
std::string TomlReader::string(const std::string& key) { return required(opt_string(key), where(key)); }
bool TomlReader::boolean(const std::string& key) { return required(opt_boolean(key), where(key)); }

std::optional<double> TomlReader::opt_positive(const std::string& key) {
  auto v = opt_number(key);
  if (v && !(*v > 0)) throw_input(where(key), "value " + std::to_string(*v) + " must be > 0");
  return v;
}
std::optional<double> TomlReader::opt_non_negative(const std::string& key) {
  auto v = opt_number(key);
  if (v && !(*v >= 0)) throw_input(where(key), "value " + std::to_string(*v) + " must be >= 0");
  return v;
}
double TomlReader::positive(const std::string& key) { return required(opt_positive(key), where(key)); }
double TomlReader::non_negative(const std::string& key) { return required(opt_non_negative(key), where(key)); }

std::optional<std::string> TomlReader::opt_choice(const std::string& key, const std::vector<std::string>& choices) {
  auto v = opt_string(key);
  if (v && std::find(choices.begin(), choices.end(), *v) == choices.end())
    throw_input(where(key), "'" + *v + "' is not one of: " + join(choices) + did_you_mean(*v, choices));
  return v;
}
std::string TomlReader::choice(const std::string& key, const std::vector<std::string>& choices) {
  return required(opt_choice(key, choices), where(key));
}

std::optional<TomlReader> TomlReader::opt_table(const std::string& key) {
  const toml::node* n = get(key);
  if (!n) return std::nullopt;
  if (!n->is_table()) throw_input(where(key), "expected a table [" + full(key) + "]");
  return TomlReader(*n->as_table(), file_, full(key));
}
TomlReader TomlReader::table(const std::string& key) {
  auto t = opt_table(key);
  if (!t) throw_input(where(key), "required table [" + full(key) + "] is missing");
  return *t;
}

void TomlReader::finish() const {
  for (const auto& [k, node] : *table_) {
    const std::string key(k.str());
    if (std::find(known_.begin(), known_.end(), key) != known_.end()) continue;
    Location loc{.file = file_, .line = static_cast<int>(node.source().begin.line), .key = full(key)};
    throw_input(loc, "unknown key '" + key + "'" + did_you_mean(key, known_) +
                         (known_.empty() ? "" : "; known keys: " + join(known_)));
  }
}

void TomlReader::require_schema_version(std::int64_t version, const std::string& kind) {
  const std::int64_t v = integer("schema_version");
  if (v != version)
    throw_input(where("schema_version"),
                fmt::format("schema_version = {}: this llmsim reads {} of version {}", v, kind, version));
}

}  // namespace llmsim
