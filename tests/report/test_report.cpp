// The result model every command prints (report.h): figures, the header with the run as typed settings,
// the JSON's key order and the one CSV layout, line by line as docs/output-schema.md describes it.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <initializer_list>
#include <sstream>
#include <string>
#include <utility>

#include "llmsim/core/error.h"
#include "llmsim/report/report.h"
#include "llmsim/run/run_config.h"

namespace report = llmsim::report;
namespace sim = llmsim::sim;

namespace {

sim::RunRequest request(std::initializer_list<std::pair<const char*, const char*>> settings) {
  sim::RunRequest req;
  req.model = "llama2-7b";
  req.system = "a800-nvlink";
  for (const auto& [name, value] : settings)
    sim::apply_setting(req, name, value, llmsim::Location{.key = "--" + std::string(name)}, llmsim::ErrorKind::Usage);
  return req;
}

std::string csv(const nlohmann::json& doc) {
  std::ostringstream out;
  report::write_csv(out, doc);
  return out.str();
}

}  // namespace

TEST_CASE("a figure carries its unit, and its band where it has one") {
  const auto banded = report::figure(sim::Interval{0.5, 0.4, 0.7}, "s");
  CHECK(banded["value"] == 0.5);
  CHECK(banded["low"] == 0.4);
  CHECK(banded["high"] == 0.7);
  CHECK(banded["unit"] == "s");
  CHECK(report::is_figure(banded));
  const auto exact = report::figure(1024.0, "B");
  CHECK_FALSE(exact.contains("low"));
  CHECK(report::is_figure(exact));
  CHECK_FALSE(report::is_figure(nlohmann::json{{"value", 1}}));  // no unit: a plain object
}

TEST_CASE("the run is an object of typed settings, with the defaulted ones named") {
  auto req =
      request({{"gpus", "8"}, {"tp", "2"}, {"zero-stage", "3"}, {"flash-attn", "false"}, {"lora-targets", "q,v"}});
  nlohmann::json doc = report::header("train");
  report::add_run(doc, req, "llama2-7b", "a800-nvlink", "8 GPUs ...", {});
  const auto& run = doc["run"];
  CHECK(run["gpus"] == 8);                                          // an integer, not "8"
  CHECK(run["zero-stage"] == 3);                                    // a choice among numbers is a number
  CHECK(run["flash-attn"] == false);                                // a flag is a boolean
  CHECK(run["lora-targets"] == nlohmann::json::array({"q", "v"}));  // a list is an array
  CHECK(run["workload"] == "pretrain");
  CHECK_FALSE(run.contains("model"));      // given once, at the top
  CHECK_FALSE(run.contains("input-len"));  // an inference setting means nothing for a training run
  const auto& defaulted = doc["defaulted"];
  CHECK(std::find(defaulted.begin(), defaulted.end(), "tp") == defaulted.end());
  CHECK(std::find(defaulted.begin(), defaulted.end(), "micro-batch") != defaulted.end());
  CHECK(doc["valid"] == true);
  CHECK(doc["problems"].empty());

  auto infer_req = request({{"workload", "inference"}, {"batch", "4"}});
  nlohmann::json infer_doc = report::header("infer");
  report::add_run(infer_doc, infer_req, "llama2-7b", "a800-nvlink", "1 GPU ...", {"a problem"});
  CHECK(infer_doc["run"]["batch"] == 4);
  CHECK_FALSE(infer_doc["run"].contains("zero-stage"));  // a training setting means nothing for inference
  CHECK(infer_doc["valid"] == false);
  CHECK(infer_doc["problems"] == nlohmann::json::array({"a problem"}));
}

TEST_CASE("the JSON prints the header first, the rest in key order") {
  nlohmann::json doc = report::header("memory");
  doc["alpha"] = 1;
  doc["model"] = "m";
  std::ostringstream out;
  report::write_json(out, doc);
  const std::string s = out.str();
  const auto at = [&](const char* key) { return s.find(std::string("\"") + key + "\""); };
  CHECK(at("schema_version") < at("command"));
  CHECK(at("command") < at("model"));
  CHECK(at("model") < at("alpha"));  // "alpha" sorts before "model" but the header comes first
  CHECK(nlohmann::json::parse(s) == doc);
}

TEST_CASE("the one CSV layout, line by line") {
  nlohmann::json doc = report::header("serve");
  doc["step_time_s"] = report::figure(sim::Interval{2.0, 1.5, 3.0}, "s");
  doc["fits"] = true;
  doc["name"] = "a, \"quoted\" name";
  doc["tags"] = nlohmann::json::array({"tp", "dp"});
  doc["memory"] = {{"gpu_bytes", report::figure(1024.0, "B")}, {"detail", {{"stage", 0}}}};
  doc["by_phase"] = nlohmann::json::array({{{"name", "forward"},
                                            {"seconds", report::figure(1.0, "s")},
                                            {"ops", nlohmann::json::array({{{"n", 1}}, {{"n", 2}}})}},
                                           {{"name", "backward"}, {"seconds", report::figure(2.0, "s")}}});
  doc["unset"] = nullptr;
  const std::string expected =
      "schema_version,command,table,row,column,value,low,high,unit\n"
      "2,serve,by_phase,1,name,forward,,,\n"
      "2,serve,by_phase.ops,1.1,n,1,,,\n"
      "2,serve,by_phase.ops,1.2,n,2,,,\n"
      "2,serve,by_phase,1,seconds,1.0,,,s\n"
      "2,serve,by_phase,2,name,backward,,,\n"
      "2,serve,by_phase,2,seconds,2.0,,,s\n"
      "2,serve,summary,,fits,true,,,\n"
      "2,serve,memory,,detail.stage,0,,,\n"
      "2,serve,memory,,gpu_bytes,1024.0,,,B\n"
      "2,serve,summary,,name,\"a, \"\"quoted\"\" name\",,,\n"
      "2,serve,summary,,step_time_s,2.0,1.5,3.0,s\n"
      "2,serve,summary,,tags,tp;dp,,,\n"
      "2,serve,summary,,unset,,,,\n";
  CHECK(csv(doc) == expected);
}
