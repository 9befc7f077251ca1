#include <doctest/doctest.h>

#include "test_util.h"

#include "llmsim/core/csv_reader.h"
#include "llmsim/core/error.h"
#include "llmsim/core/json_reader.h"
#include "llmsim/core/strings.h"
#include "llmsim/core/toml_reader.h"

using llmsim::test::write_temp;
constexpr auto caught = [](auto&& f) { return llmsim::test::error_of(f); };

TEST_CASE("TOML reader: typed getters, ranges, unknown keys with line and did-you-mean") {
  const auto path = write_temp("reader.toml", "a = 1\nb = \"x\"\n[t]\nbandwidth_GBps = -5\nlatncy_us = 2\n");
  const auto root = llmsim::parse_toml_file(path);
  llmsim::TomlReader r(root, path);
  CHECK(r.integer("a") == 1);
  CHECK(r.string("b") == "x");
  auto t = r.table("t");
  const auto neg = caught([&] { t.positive("bandwidth_GBps"); });
  CHECK(neg.kind() == llmsim::ErrorKind::Input);
  CHECK(neg.where().line == 4);
  CHECK(neg.where().key == "t.bandwidth_GBps");
  t.opt_number("latency_us");  // the misspelt key is what the file has
  const auto unknown = caught([&] { t.finish(); });
  CHECK(unknown.where().line == 5);
  CHECK(std::string(unknown.what()).find("did you mean 'latency_us'") != std::string::npos);
  const auto wrong_type = caught([&] { r.number("b"); });
  CHECK(std::string(wrong_type.what()).find("expected a number") != std::string::npos);
}

TEST_CASE("TOML reader: nan, inf and numbers past 1e15 are refused at their key and line") {
  const auto path = write_temp("reader-nonfinite.toml", "a = nan\nb = -inf\nc = 1e300\nd = 1e15\ne = 1e16\n");
  const auto root = llmsim::parse_toml_file(path);
  llmsim::TomlReader r(root, path);
  const auto a = caught([&] { r.number("a"); });
  CHECK(a.where().line == 1);
  CHECK(a.where().key == "a");
  CHECK(a.message() == "value nan breaks the rule: must be a finite number");
  CHECK(caught([&] { r.opt_positive("b"); }).message() == "value -inf breaks the rule: must be a finite number");
  const auto c = caught([&] { r.opt_non_negative("c"); });
  CHECK(c.where().line == 3);
  CHECK(c.message() == "value 1e+300 breaks the rule: must be at most 1e+15 in magnitude");
  CHECK(r.number("d") == 1e15);
  CHECK(caught([&] { r.number("e"); }).kind() == llmsim::ErrorKind::Input);
}

TEST_CASE("TOML reader: malformed file gives its line, missing file is NotFound") {
  const auto bad = write_temp("bad.toml", "a = 1\nb = [1, 2\nc = 3\n");
  const auto e = caught([&] { llmsim::parse_toml_file(bad); });
  CHECK(e.kind() == llmsim::ErrorKind::Input);
  CHECK(e.where().line >= 2);
  CHECK(caught([] { llmsim::parse_toml_file("/nonexistent/x.toml"); }).kind() == llmsim::ErrorKind::NotFound);
}

TEST_CASE("JSON reader: syntax errors located by line and column; keys located in the text") {
  const auto bad = write_temp("bad.json", "{\n  \"a\": 1,\n  \"b\": ,\n}\n");
  const auto e = caught([&] { llmsim::parse_json_file(bad); });
  CHECK(e.kind() == llmsim::ErrorKind::Input);
  CHECK(e.where().line == 3);
  const auto good = write_temp("good.json", "{\n  \"hidden_size\": 4096,\n  \"x\": {\"num_heads\": 2}\n}\n");
  const auto doc = llmsim::parse_json_file(good);
  CHECK(doc.where("hidden_size").line == 2);
  CHECK(doc.where("x.num_heads").line == 3);
}

TEST_CASE("text helpers: blanks trimmed, ASCII lower-cased") {
  CHECK(llmsim::trim_blanks(" \t megatron-lm \t") == "megatron-lm");
  CHECK(llmsim::trim_blanks("  ").empty());
  CHECK(llmsim::trim_blanks("a b") == "a b");
  CHECK(llmsim::to_lower("TensorRT-LLM") == "tensorrt-llm");
}

TEST_CASE("csv reader: quoted fields, line and column of each field, comments, blanks, BOM") {
  const std::string text =
      "\xEF\xBB\xBF"
      "a,b,c\r\n"
      "1,\"x, y\",\"say \"\"hi\"\"\"\n"
      "# a comment line\n"
      "   \n"
      "2,\"two\nlines\",z\n"
      "3, 4 ,5";
  const auto plain = llmsim::parse_csv(text, "t.csv");
  // Without options the comment and the blank line are records of their own.
  REQUIRE(plain.size() == 6);
  const auto r = llmsim::parse_csv(text, "t.csv", llmsim::CsvOptions{.comment_lines = true, .skip_blank = true});
  REQUIRE(r.size() == 4);
  CHECK(r[0].fields == std::vector<std::string>{"a", "b", "c"});  // BOM and CR gone
  CHECK(r[0].columns == std::vector<int>{1, 3, 5});
  CHECK(r[1].line == 2);
  CHECK(r[1].fields == std::vector<std::string>{"1", "x, y", "say \"hi\""});
  CHECK(r[1].columns == std::vector<int>{1, 3, 10});
  CHECK(r[2].line == 5);
  CHECK(r[2].fields[1] == "two\nlines");
  CHECK(r[3].line == 7);  // after the two-line record
  CHECK(r[3].fields == std::vector<std::string>{"3", " 4 ", "5"});
  CHECK(r[3].columns == std::vector<int>{1, 3, 7});
  // Broken quoting is an Input error at its line.
  const auto rule = [](const std::string& t) {
    try {
      llmsim::parse_csv(t, "bad.csv");
    } catch (const llmsim::Error& e) {
      CHECK(e.kind() == llmsim::ErrorKind::Input);
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(rule("a,b\n1,\"open\n").find("bad.csv:2") != std::string::npos);
  CHECK(rule("a,b\n1,\"x\"y\n").find("after a closing quote") != std::string::npos);
  CHECK(rule("a,b\n1,x\"y\"\n").find("quote inside an unquoted field") != std::string::npos);
}

TEST_CASE("text helpers: whitespace trim, words, whole finite numbers") {
  CHECK(llmsim::trim_space(" \t a b \r\n") == "a b");
  CHECK(llmsim::trim_space("\r\n").empty());
  CHECK(llmsim::split_words("  nThread 1\tnGpus  8 \r") == std::vector<std::string>{"nThread", "1", "nGpus", "8"});
  CHECK(llmsim::split_words(" ").empty());
  CHECK(llmsim::parse_finite("+1.5") == 1.5);
  CHECK(llmsim::parse_finite("2e3") == 2000.0);
  CHECK_FALSE(llmsim::parse_finite("1.5x"));
  CHECK_FALSE(llmsim::parse_finite(""));
  CHECK_FALSE(llmsim::parse_finite("+"));
  CHECK_FALSE(llmsim::parse_finite("inf"));
  CHECK_FALSE(llmsim::parse_finite("nan"));
  CHECK_FALSE(llmsim::parse_finite("1e999"));  // overflow is not a number here
}
