// Checks a JSON document against a JSON Schema (the subset docs/output-schema.json uses), so that the CLI
// tests validate every command's --json against the documented schema without a Python dependency.
//   json_schema_check SCHEMA.json DOCUMENT.json
// Exit 0 when the document conforms; 1 with one line per violation (JSON pointer, rule) when it does not;
// 2 when a file cannot be read or parsed, or the schema uses a keyword this checker does not know (so that
// a schema edit cannot silently check less than it says).
//
// Keywords: $ref (local "#/$defs/NAME"), $defs, type (a name or a list), const, enum, properties, required,
// additionalProperties (boolean or schema), items, minItems, minimum, exclusiveMinimum, maximum, pattern
// (ECMAScript), allOf, anyOf, if/then/else; annotations ($schema, $id, title, description, $comment,
// examples) are ignored.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

using nlohmann::json;

struct UnknownKeyword {
  std::string keyword;
};

class Checker {
 public:
  explicit Checker(const json& root) : root_(root) {}

  // Appends to `errors` every violation of `schema` by `doc` at `where`.
  void check(const json& schema, const json& doc, const std::string& where, std::vector<std::string>& errors) {
    if (schema.is_boolean()) {
      if (!schema.get<bool>()) errors.push_back(where + ": not allowed here");
      return;
    }
    static const std::set<std::string> known = {"$ref",    "$defs",      "type",        "const",
                                                "enum",    "properties", "required",    "additionalProperties",
                                                "items",   "minItems",   "minimum",     "exclusiveMinimum",
                                                "maximum", "pattern",    "allOf",       "anyOf",
                                                "if",      "then",       "else",        "$schema",
                                                "$id",     "title",      "description", "$comment",
                                                "examples"};
    for (const auto& [key, v] : schema.items())
      if (!known.count(key)) throw UnknownKeyword{key};

    if (schema.contains("$ref")) check(resolve(schema["$ref"].get<std::string>()), doc, where, errors);
    if (schema.contains("type") && !type_ok(schema["type"], doc)) {
      errors.push_back(where + ": is " + std::string(doc.type_name()) + ", the schema wants " + schema["type"].dump());
      return;  // the other rules assume the type
    }
    if (schema.contains("const") && doc != schema["const"])
      errors.push_back(where + ": is " + doc.dump() + ", the schema wants " + schema["const"].dump());
    if (schema.contains("enum")) {
      bool any = false;
      for (const auto& e : schema["enum"]) any = any || e == doc;
      if (!any) errors.push_back(where + ": " + doc.dump() + " is not one of " + schema["enum"].dump());
    }
    if (doc.is_object()) object(schema, doc, where, errors);
    if (doc.is_array()) {
      if (schema.contains("minItems") && doc.size() < schema["minItems"].get<std::size_t>())
        errors.push_back(where + ": " + std::to_string(doc.size()) + " items, fewer than " + schema["minItems"].dump());
      if (schema.contains("items"))
        for (std::size_t i = 0; i < doc.size(); ++i)
          check(schema["items"], doc[i], where + "/" + std::to_string(i), errors);
    }
    if (doc.is_number()) {
      const double x = doc.get<double>();
      if (schema.contains("minimum") && x < schema["minimum"].get<double>())
        errors.push_back(where + ": " + doc.dump() + " is below the minimum " + schema["minimum"].dump());
      if (schema.contains("exclusiveMinimum") && x <= schema["exclusiveMinimum"].get<double>())
        errors.push_back(where + ": " + doc.dump() + " is not above " + schema["exclusiveMinimum"].dump());
      if (schema.contains("maximum") && x > schema["maximum"].get<double>())
        errors.push_back(where + ": " + doc.dump() + " is above the maximum " + schema["maximum"].dump());
    }
    if (doc.is_string() && schema.contains("pattern") &&
        !std::regex_search(doc.get<std::string>(), std::regex(schema["pattern"].get<std::string>())))
      errors.push_back(where + ": " + doc.dump() + " does not match " + schema["pattern"].dump());
    if (schema.contains("allOf"))
      for (const auto& s : schema["allOf"]) check(s, doc, where, errors);
    if (schema.contains("anyOf")) {
      std::vector<std::string> first;
      bool any = false;
      for (const auto& s : schema["anyOf"]) {
        std::vector<std::string> e;
        check(s, doc, where, e);
        if (e.empty()) any = true;
        if (first.empty()) first = e;
      }
      if (!any) {
        errors.push_back(where + ": matches none of anyOf; the first says:");
        errors.insert(errors.end(), first.begin(), first.end());
      }
    }
    if (schema.contains("if")) {
      std::vector<std::string> e;
      check(schema["if"], doc, where, e);
      if (e.empty() && schema.contains("then")) check(schema["then"], doc, where, errors);
      if (!e.empty() && schema.contains("else")) check(schema["else"], doc, where, errors);
    }
  }

 private:
  void object(const json& schema, const json& doc, const std::string& where, std::vector<std::string>& errors) {
    if (schema.contains("required"))
      for (const auto& k : schema["required"])
        if (!doc.contains(k.get<std::string>())) errors.push_back(where + ": lacks the key " + k.dump());
    const json props = schema.value("properties", json::object());
    for (const auto& [key, v] : doc.items()) {
      if (props.contains(key))
        check(props[key], v, where + "/" + key, errors);
      else if (schema.contains("additionalProperties"))
        check(schema["additionalProperties"], v, where + "/" + key, errors);
    }
  }

  static bool type_ok(const json& type, const json& doc) {
    if (type.is_array()) {
      for (const auto& t : type)
        if (type_ok(t, doc)) return true;
      return false;
    }
    const std::string t = type.get<std::string>();
    if (t == "object") return doc.is_object();
    if (t == "array") return doc.is_array();
    if (t == "string") return doc.is_string();
    if (t == "boolean") return doc.is_boolean();
    if (t == "null") return doc.is_null();
    if (t == "integer") return doc.is_number_integer();
    if (t == "number") return doc.is_number();
    throw UnknownKeyword{"type " + t};
  }

  const json& resolve(const std::string& ref) const {
    const std::string prefix = "#/$defs/";
    if (ref.rfind(prefix, 0) != 0 || !root_.contains("$defs") || !root_["$defs"].contains(ref.substr(prefix.size())))
      throw UnknownKeyword{"$ref " + ref};
    return root_["$defs"][ref.substr(prefix.size())];
  }

  const json& root_;
};

bool read(const char* path, json& out) {
  std::ifstream in(path);
  if (!in) {
    std::cerr << path << ": cannot open\n";
    return false;
  }
  try {
    out = json::parse(in);
  } catch (const json::parse_error& e) {
    std::cerr << path << ": not JSON: " << e.what() << "\n";
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: json_schema_check SCHEMA.json DOCUMENT.json\n";
    return 2;
  }
  json schema;
  json doc;
  if (!read(argv[1], schema) || !read(argv[2], doc)) return 2;
  std::vector<std::string> errors;
  try {
    Checker(schema).check(schema, doc, "", errors);
  } catch (const UnknownKeyword& e) {
    std::cerr << argv[1] << ": the checker does not know the keyword '" << e.keyword << "'\n";
    return 2;
  } catch (const json::exception& e) {
    std::cerr << argv[1] << ": malformed schema: " << e.what() << "\n";
    return 2;
  }
  for (const auto& e : errors) std::cout << argv[2] << ": " << (e.rfind(":", 0) == 0 ? "(root)" + e : e) << "\n";
  return errors.empty() ? 0 : 1;
}
