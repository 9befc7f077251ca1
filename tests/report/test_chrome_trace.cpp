// Chrome traces as Perfetto reads them: every track named, process metadata with a tid, slices on a track
// nested or apart (never partly overlapping), and the blocking TP collectives on a track of their own.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "llmsim/report/chrome_trace.h"
#include "llmsim/report/serving_trace.h"
#include "llmsim/serve/request_stream.h"
#include "llmsim/train/train_sim.h"
#include "memory/memory_test_util.h"

using llmsim::test::preset_model;
using llmsim::test::preset_system;
namespace sim = llmsim::sim;

namespace {

struct Slice {
  std::int64_t begin = 0, end = 0;  // nanoseconds
  std::string name;
};

// Microseconds as written (with three decimals) -> whole nanoseconds, without binary rounding.
std::int64_t ns_of(const nlohmann::json& v) {
  std::ostringstream s;
  s << v.dump();
  const std::string t = s.str();
  const auto dot = t.find('.');
  const std::string whole = t.substr(0, dot);
  std::string frac = dot == std::string::npos ? "" : t.substr(dot + 1);
  frac.resize(3, '0');
  return std::stoll(whole) * 1000 + std::stoll(frac);
}

struct Checked {
  std::size_t slices = 0;
  std::vector<std::string> problems;
  std::set<std::string> thread_names;
};

// What a viewer needs of `text`: the checks of the header comment, as a list of problems.
Checked check_trace(const std::string& text) {
  Checked out;
  const auto j = nlohmann::json::parse(text);
  std::map<std::pair<int, int>, std::vector<Slice>> tracks;
  std::set<std::pair<int, int>> named;
  for (const auto& e : j.at("traceEvents")) {
    const std::string ph = e.at("ph");
    if (ph == "M") {
      if (!e.contains("tid")) out.problems.push_back("metadata event without tid: " + e.dump());
      if (e.at("name") == "thread_name") {
        named.insert({e.at("pid").get<int>(), e.at("tid").get<int>()});
        out.thread_names.insert(e.at("args").at("name").get<std::string>());
      }
    } else if (ph == "X") {
      const std::int64_t b = ns_of(e.at("ts"));
      tracks[{e.at("pid").get<int>(), e.at("tid").get<int>()}].push_back(
          Slice{b, b + ns_of(e.at("dur")), e.at("name").get<std::string>()});
      ++out.slices;
    }
  }
  for (auto& [track, slices] : tracks) {
    if (!named.contains(track))
      out.problems.push_back("track pid " + std::to_string(track.first) + " tid " + std::to_string(track.second) +
                             " has no thread_name");
    // Longer first at one start, so that a parent comes before the slices it holds.
    std::sort(slices.begin(), slices.end(),
              [](const Slice& a, const Slice& b) { return a.begin != b.begin ? a.begin < b.begin : a.end > b.end; });
    std::vector<const Slice*> open;  // the enclosing slices of the current one
    for (const Slice& s : slices) {
      while (!open.empty() && open.back()->end <= s.begin) open.pop_back();
      if (!open.empty() && s.end > open.back()->end)
        out.problems.push_back("'" + s.name + "' [" + std::to_string(s.begin) + ", " + std::to_string(s.end) +
                               ") partly overlaps '" + open.back()->name + "' [" + std::to_string(open.back()->begin) +
                               ", " + std::to_string(open.back()->end) + ") on one track");
      open.push_back(&s);
    }
  }
  return out;
}

std::string written(const std::vector<sim::TraceEvent>& events) {
  std::ostringstream s;
  sim::write_chrome_trace(s, events);
  return s.str();
}

}  // namespace

TEST_CASE("the checker itself sees a partial overlap, a missing thread name and process metadata without tid") {
  // A hand-written trace with all three faults: the check must be able to fail.
  const std::string bad = R"({"traceEvents":[
    {"name":"process_name","ph":"M","pid":0,"args":{"name":"p"}},
    {"name":"a","ph":"X","pid":0,"tid":0,"ts":0.000,"dur":1.001},
    {"name":"b","ph":"X","pid":0,"tid":0,"ts":1.000,"dur":1.000}]})";
  const Checked c = check_trace(bad);
  REQUIRE(c.problems.size() == 3);
  CHECK(c.problems[0].find("without tid") != std::string::npos);
  CHECK(c.problems[1].find("no thread_name") != std::string::npos);
  CHECK(c.problems[2].find("'b' [1000, 2000) partly overlaps 'a' [0, 1001)") != std::string::npos);
}

TEST_CASE("back-to-back slices whose start and duration round up apart still meet exactly") {
  // Start 1,000,000,000.6 ns and duration 200,000,000.6 ns each round up: rounded apart they ended at
  // 1,200,000,002 ns, 1 ns past the next slice's start (1,200,000,001.2 ns rounded).
  const std::vector<sim::TraceEvent> events = {
      {"a", "stage0.compute", 0, 1.0000000006, 0.2000000006, "forward"},
      {"b", "stage0.compute", 0, 1.0000000006 + 0.2000000006, 0.2, "forward"},
  };
  const Checked c = check_trace(written(events));
  CHECK(c.slices == 2);
  CHECK(c.problems.empty());
}

TEST_CASE("a scheduled TP2 x PP2 step: nested tracks, all named, TP communication on its own track") {
  const auto m = preset_model("llama2-13b");
  const auto sys = preset_system("a800-nvlink");
  sim::RunSpec run;
  run.workload = sim::Workload::Pretrain;
  run.par.gpus = 8;
  run.par.tp = 2;
  run.par.pp = 2;
  run.train.micro_batch = 1;
  run.train.global_batch = 16;
  run.train.seq_len = 2048;
  run.train.framework = sim::Framework::Megatron;
  run.train.recompute = sim::Recompute::Full;
  sim::TrainOptions opt;
  opt.keep_trace = true;
  const auto r = sim::simulate_training(m, sys, run, opt);
  REQUIRE(r.valid());
  REQUIRE(r.trace.size() > 100);
  const Checked c = check_trace(written(r.trace));
  CHECK(c.slices == r.trace.size());
  for (const auto& p : c.problems) FAIL_CHECK(p);
  CHECK(c.thread_names.contains("stage0.compute"));
  CHECK(c.thread_names.contains("stage0.tp_comm"));
  CHECK(c.thread_names.contains("stage1.tp_comm"));
  // Each TP slice lies inside its layer's slice on the compute track and ends with it.
  std::size_t comm = 0;
  for (const auto& e : r.trace) {
    if (e.track != "stage0.tp_comm") continue;
    ++comm;
    const auto layer = std::find_if(r.trace.begin(), r.trace.end(), [&](const sim::TraceEvent& x) {
      return x.track == "stage0.compute" && "comm " + x.name == e.name;
    });
    REQUIRE(layer != r.trace.end());
    CHECK(e.duration_s > 0);
    CHECK(e.duration_s <= layer->duration_s);
    CHECK(e.start_s + e.duration_s == doctest::Approx(layer->start_s + layer->duration_s));
  }
  CHECK(comm > 0);
}

TEST_CASE("a serving trace: iterations nest on a named track, every request's spans close on another") {
  const auto m = preset_model("llama2-7b");
  const auto sys = preset_system("a800-nvlink");
  sim::RunSpec run;
  run.workload = sim::Workload::Inference;
  run.infer.framework = sim::Framework::Vllm;
  run = sim::with_defaults(run);
  sim::StreamSpec spec;
  spec.kind = sim::ArrivalKind::Poisson;
  spec.requests = 60;
  spec.rate = 20;
  spec.input = sim::parse_length_dist("uniform:20-400", "--input-dist");
  spec.output = sim::parse_length_dist("uniform:10-80", "--output-dist");
  sim::ServingConfig cfg;
  cfg.engine = sim::serving_profile(sim::Framework::Vllm, sys);
  cfg.keep_trace = true;
  const auto r = sim::simulate_serving(m, sys, run, cfg, sim::generate_requests(spec));
  REQUIRE(r.valid());
  REQUIRE(r.trace.size() > 60);
  std::ostringstream s;
  const std::size_t n = sim::write_serving_trace(s, r);
  const Checked c = check_trace(s.str());
  CHECK(c.slices == r.trace.size());  // one slice per iteration
  for (const auto& p : c.problems) FAIL_CHECK(p);
  CHECK(c.thread_names.contains("iterations"));
  CHECK(c.thread_names.contains("requests"));
  // Every async span that begins ends: begin and end events pair up per (request, name).
  const auto j = nlohmann::json::parse(s.str());
  CHECK(j.at("traceEvents").size() == n);
  std::map<std::pair<std::int64_t, std::string>, int> open;
  for (const auto& e : j.at("traceEvents")) {
    const std::string ph = e.at("ph");
    if (ph == "b") ++open[{e.at("id").get<std::int64_t>(), e.at("name").get<std::string>()}];
    if (ph == "e") --open[{e.at("id").get<std::int64_t>(), e.at("name").get<std::string>()}];
  }
  for (const auto& [k, v] : open) CHECK(v == 0);
  CHECK(open.size() >= 3 * 60);  // request, queued and prefill spans of each of the 60 requests
}
