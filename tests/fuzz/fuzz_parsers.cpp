// Bounded, deterministic fuzz run of every file parser llmsim has (issue 17): for each target, seeds from
// the shipped and checked-in files of its format are mutated (tests/fuzz/mutator.h), written to a file and
// read by the parser as the CLI reads them. A finding is anything but a clean answer: an exception other
// than llmsim::Error, an Error of kind Internal, an Error that does not name the file it read, or one input
// taking longer than the time bound; a crash or a sanitizer report ends the process (CTest then fails it).
// Each finding's input is written to the findings folder with its target, seed and iteration; after a crash,
// the input that caused it is the newest file in the work folder's inputs/.
//
// Usage: llmsim_fuzz --root DIR --data-dir DIR --work DIR [--iterations N] [--seed S] [--max-seconds T]
//                    [--target NAME]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "llmsim/calibrate/fingerprint.h"
#include "llmsim/calibrate/nccl_tests_import.h"
#include "llmsim/calibrate/sample.h"
#include "llmsim/core/error.h"
#include "llmsim/hardware/system_toml.h"
#include "llmsim/model/hf_config.h"
#include "llmsim/model/param_count.h"
#include "llmsim/run/run_config.h"
#include "llmsim/serve/length_sample.h"
#include "llmsim/serve/request_stream.h"
#include "llmsim/validate/measured_runs.h"
#include "llmsim/validate/regime_bands.h"
#include "llmsim/validate/source_facts.h"
#include "mutator.h"

namespace fs = std::filesystem;
namespace fz = llmsim::fuzz;

namespace {

// Seeds larger than this are cut at a line boundary: the parsers' rules are per line or per key, and
// whole 160 KB files would spend the run's time re-reading unmutated rows.
constexpr std::size_t kMaxSeedBytes = 16 * 1024;
// One input may take this long (issue 17: no input makes a command run over 5 s on the shipped presets).
constexpr double kMaxSecondsPerInput = 5.0;

struct Target {
  std::string name;
  // Seeds, as paths under the root: a file, or "DIR/*.EXT" for a folder's files. The shipped ones (data/)
  // must parse as they are; the checked-in test inputs (tests/data/) include deliberately bad files.
  std::vector<std::string> shipped, checked_in;
  std::string file_name;  // the name the mutated input is written as (the readers look at extensions)
  std::function<void(const std::string& path, const std::string& data_dir)> parse;
};

std::vector<Target> targets() {
  using namespace llmsim;
  return {
      {"system-toml",
       {"data/hardware/*.toml", "data/calibration/h200-2026-11-29/hgx-h200-calibrated.toml"},
       {"tests/data/hardware/*.toml", "tests/data/cli/system-huge-peak.toml", "tests/data/cli/broken-system.toml"},
       "system.toml",
       [](const std::string& p, const std::string&) { (void)hardware::load_system_toml(p); }},
      {"efficiency-overlay",
       {},
       {"tests/data/cli/overlay-slow-host.toml", "tests/data/cli/overlay-typo.toml"},
       "overlay.toml",
       [](const std::string& p, const std::string&) { hardware::check_efficiency_overlay(p); }},
      {"run-config-toml",
       {},
       {"tests/data/cli/llama7b-zero3.toml", "tests/data/cli/train_70b_megatron.toml", "tests/data/cli/typo.toml",
        "tests/data/cli/config-array.toml"},
       "run.toml",
       [](const std::string& p, const std::string&) {
         sim::RunRequest req;
         sim::apply_run_toml(req, p);
       }},
      {"hf-config-json",
       {"data/models/llama2-7b/config.json", "data/models/mixtral-8x7b/config.json"},
       {"tests/data/models/deepseek-r1/config.json", "tests/data/models/gpt-oss-120b/config.json",
        "tests/data/models/llama-4-scout/config.json", "tests/data/models/gemma-2-9b/config.json",
        "tests/data/models/mistral-small-3.1-24b/config.json", "tests/data/models/llama3-8b-bnb-nf4.json",
        "tests/data/models/chatglm3-6b/config.json", "tests/data/models/falcon-40b-instruct/config.json"},
       "config.json",
       [](const std::string& p, const std::string&) {
         const model::ModelSpec m = model::load_hf_config(p);
         (void)model::count_params(m);  // derived sizes: where overflow was (param_count.cpp, hidden 2^62)
       }},
      {"measured-run-csv",
       {"data/validation/published.csv", "data/validation/measured-h200-2026-11-29.csv"},
       {"tests/data/runs/*.csv", "tests/data/cli/fit-runs.csv"},
       "runs.csv",
       [](const std::string& p, const std::string& data_dir) { (void)sim::load_measured_runs(p, data_dir, false); }},
      {"source-facts-toml",
       {"data/validation/published.facts.toml"},
       {"tests/data/runs/facts/facts_ok.facts.toml", "tests/data/runs/facts/facts_per_model.facts.toml"},
       "runs.facts.toml",
       [](const std::string& p, const std::string&) { (void)sim::load_source_facts(p); }},
      {"regime-bands-toml",
       {"data/validation/bands.toml"},
       {"tests/data/cli/bands-test.toml"},
       "bands.toml",
       [](const std::string& p, const std::string&) { (void)sim::load_regime_bands(p); }},
      {"request-trace-csv",
       {},
       {"tests/data/cli/serve-trace.csv", "tests/data/cli/serve-trace-bad.csv", "tests/data/cli/serve-trace-huge.csv",
        "tests/data/cli/serve-trace-long.csv"},
       "trace.csv",
       [](const std::string& p, const std::string&) { (void)sim::read_trace_csv(p); }},
      {"length-sample-csv",
       {"data/lengths/sharegpt.csv"},
       {},
       "lengths.csv",
       [](const std::string& p, const std::string&) { (void)sim::read_length_sample(p); }},
      {"nccl-tests-text",
       {},
       {"tests/data/calibration/*.txt", "tests/data/calibration/pasted/*.log"},
       "all_reduce_perf.log",
       [](const std::string& p, const std::string&) { (void)calibrate::import_nccl_tests(p); }},
      {"nccl-tests-json",
       {},
       {"tests/data/calibration/*.json"},
       "sendrecv_perf.json",
       [](const std::string& p, const std::string&) { (void)calibrate::import_nccl_tests(p); }},
      {"calibration-samples-csv",
       {"data/calibration/h200-2026-11-29/samples.csv"},
       {},
       "samples.csv",
       [](const std::string& p, const std::string&) { (void)calibrate::read_samples(p); }},
      {"calibration-fingerprint-json",
       {"data/calibration/h200-2026-11-29/fingerprint.json"},
       {},
       "fingerprint.json",
       [](const std::string& p, const std::string&) { (void)calibrate::read_fingerprint(p); }},
  };
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
}

std::string cut(std::string s) {
  if (s.size() <= kMaxSeedBytes) return s;
  const std::size_t nl = s.rfind('\n', kMaxSeedBytes);
  s.resize(nl == std::string::npos ? kMaxSeedBytes : nl + 1);
  return s;
}

// The seed files of a target, sorted (the run is the same whatever order the folder lists them in).
std::vector<std::string> load_seeds(const fs::path& root, const std::vector<std::string>& specs) {
  std::vector<fs::path> files;
  for (const auto& spec : specs) {
    const auto star = spec.find("/*");
    if (star == std::string::npos) {
      files.push_back(root / spec);
      continue;
    }
    const fs::path dir = root / spec.substr(0, star);
    const std::string ext = spec.substr(star + 2);  // ".toml"
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_regular_file() && e.path().extension() == ext) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<std::string> seeds;
  for (const auto& f : files) {
    if (!fs::is_regular_file(f)) throw std::runtime_error("seed file missing: " + f.string());
    seeds.push_back(cut(read_file(f)));
  }
  return seeds;
}

struct Outcome {
  std::string finding;  // empty: a clean answer (parsed, or refused with an llmsim::Error naming the file)
  bool refused = false;
};

Outcome run_one(const Target& t, const std::string& path, const std::string& data_dir) {
  Outcome o;
  try {
    t.parse(path, data_dir);
  } catch (const llmsim::Error& e) {
    o.refused = true;
    if (e.kind() == llmsim::ErrorKind::Internal)
      o.finding = std::string("internal error: ") + e.what();
    else if (std::string(e.what()).find(path) == std::string::npos && e.where().file != path)
      o.finding = std::string("error does not name the file: ") + e.what();
  } catch (const std::exception& e) {
    o.finding = std::string("escaped std::exception: ") + e.what();
  } catch (...) {
    o.finding = "escaped a non-standard exception";
  }
  return o;
}

// A watchdog over the input being parsed: one that runs past kMaxSecondsPerInput (a hang: a loop over a
// count nobody bounded) is written to the findings folder and the run ends with exit 1, naming it, instead
// of waiting for CTest's timeout.
class Watchdog {
 public:
  explicit Watchdog(fs::path findings) : findings_(std::move(findings)), thread_([this] { watch(); }) {}
  ~Watchdog() {
    stop_ = true;
    thread_.join();
  }
  void start(const std::string* target, const std::string* input, std::size_t iteration) {
    target_ = target;
    input_ = input;
    iteration_ = iteration;
    started_ns_ = now_ns();
  }
  void done() { started_ns_ = 0; }

 private:
  static std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  void watch() {
    while (!stop_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const std::int64_t t0 = started_ns_;
      if (t0 == 0 || static_cast<double>(now_ns() - t0) * 1e-9 <= kMaxSecondsPerInput) continue;
      const std::string stem = *target_ + "-" + std::to_string(iteration_.load()) + "-hang";
      std::ofstream(findings_ / (stem + ".input"), std::ios::binary) << *input_;
      std::cerr << *target_ << " iteration " << iteration_ << ": no answer after " << kMaxSecondsPerInput
                << " s (a hang); input in " << (findings_ / (stem + ".input")).string() << std::endl;
      std::_Exit(1);
    }
  }
  fs::path findings_;
  std::atomic<bool> stop_{false};
  std::atomic<std::int64_t> started_ns_{0};
  std::atomic<const std::string*> target_{nullptr}, input_{nullptr};
  std::atomic<std::size_t> iteration_{0};
  std::thread thread_;
};

struct Options {
  fs::path root, data_dir, work;
  std::uint64_t seed = 1;
  std::size_t iterations = 1000;  // per target
  double max_seconds = 60;        // per target: the run stops early past it (said in the summary)
  std::string only;
};

Options parse_args(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--root")
      o.root = value();
    else if (a == "--data-dir")
      o.data_dir = value();
    else if (a == "--work")
      o.work = value();
    else if (a == "--iterations")
      o.iterations = std::stoull(value());
    else if (a == "--seed")
      o.seed = std::stoull(value());
    else if (a == "--max-seconds")
      o.max_seconds = std::stod(value());
    else if (a == "--target")
      o.only = value();
    else
      throw std::runtime_error("unknown argument " + a);
  }
  if (o.root.empty() || o.data_dir.empty() || o.work.empty())
    throw std::runtime_error("--root, --data-dir and --work are required");
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  try {
    opt = parse_args(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "llmsim_fuzz: " << e.what() << "\n";
    return 2;
  }
  const fs::path inputs = opt.work / "inputs", findings = opt.work / "findings";
  fs::remove_all(findings);
  fs::create_directories(inputs);
  fs::create_directories(findings);
  std::size_t total_findings = 0, targets_run = 0;
  Watchdog watchdog(findings);
  for (const auto& t : targets()) {
    if (!opt.only.empty() && t.name != opt.only) continue;
    ++targets_run;
    const auto shipped = load_seeds(opt.root, t.shipped);
    std::vector<std::string> seeds = shipped;
    for (auto& s : load_seeds(opt.root, t.checked_in)) seeds.push_back(std::move(s));
    const std::string path = (inputs / t.file_name).string();
    // Each target's own stream: adding a target does not change another's inputs.
    fz::Rng rng(opt.seed ^ std::hash<std::string>{}(t.name));
    std::size_t done = 0, refused = 0, found = 0;
    double slowest = 0;
    const auto start = std::chrono::steady_clock::now();
    // The seeds as they are come first: a parser must read its own shipped files.
    for (std::size_t i = 0; i < seeds.size() + opt.iterations; ++i) {
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (elapsed > opt.max_seconds) break;
      const std::string input =
          i < seeds.size() ? seeds[i] : fz::mutate(seeds[rng.below(seeds.size())], seeds[rng.below(seeds.size())], rng);
      write_file(path, input);
      const auto t0 = std::chrono::steady_clock::now();
      watchdog.start(&t.name, &input, i);
      Outcome o = run_one(t, path, opt.data_dir.string());
      watchdog.done();
      const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      slowest = std::max(slowest, took);
      if (o.finding.empty() && took > kMaxSecondsPerInput)
        o.finding = "took " + std::to_string(took) + " s (bound " + std::to_string(kMaxSecondsPerInput) + " s)";
      if (i < shipped.size() && o.refused && o.finding.empty()) o.finding = "a shipped file is refused";
      ++done;
      if (o.refused) ++refused;
      if (!o.finding.empty()) {
        ++found;
        const std::string stem = t.name + "-" + std::to_string(i);
        write_file(findings / (stem + "-" + t.file_name), input);
        write_file(findings / (stem + ".txt"), t.name + " seed " + std::to_string(opt.seed) + " iteration " +
                                                   std::to_string(i) + ": " + o.finding + "\n");
        if (found <= 5) std::cerr << t.name << " iteration " << i << ": " << o.finding << "\n";
      }
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << t.name << ": " << done << " inputs (" << seeds.size() << " seeds), " << refused
              << " refused with an llmsim error, " << found << " findings, slowest " << slowest * 1e3 << " ms, " << secs
              << " s" << (done < seeds.size() + opt.iterations ? " (stopped at --max-seconds)" : "")
              << std::endl;  // flushed: a crash in the next target keeps this line
    total_findings += found;
  }
  if (targets_run == 0) {
    std::cerr << "llmsim_fuzz: no target named '" << opt.only << "'\n";
    return 2;
  }
  std::cout << total_findings << " findings" << (total_findings ? " (inputs in " + findings.string() + ")" : "")
            << "\n";
  return total_findings == 0 ? 0 : 1;
}
