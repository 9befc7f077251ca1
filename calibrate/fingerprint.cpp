#include "llmsim/calibrate/fingerprint.h"

#include "git_sha.h"  // generated at build time: LLMSIM_GIT_SHA

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "llmsim/core/error.h"
#include "llmsim/core/stats.h"

extern char** environ;

namespace llmsim::calibrate {

namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      return colon == std::string::npos ? line : line.substr(colon + 2);
    }
  return "unknown";
}

double mem_total_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  double kb = 0;
  while (in >> key >> kb >> unit)
    if (key == "MemTotal:") return kb * 1024.0;
  return 0;
}

bool allowed(const std::string& name) { return name == "CUDA_VISIBLE_DEVICES" || name.rfind("NCCL_", 0) == 0; }

}  // namespace

Fingerprint host_fingerprint(const std::vector<std::string>& argv) {
  Fingerprint f;
  f.tool_version = LLMSIM_VERSION;
  f.git_sha = LLMSIM_GIT_SHA;
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  f.date_utc = buf;
  f.argv = argv;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv = *e;
    const auto eq = kv.find('=');
    if (eq != std::string::npos && allowed(kv.substr(0, eq)))
      f.environment.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
  }
  f.host_cpu = cpu_model();
  f.host_threads = static_cast<int>(std::thread::hardware_concurrency());
  f.host_memory_bytes = mem_total_bytes();
  return f;
}

std::string fingerprint_json(const Fingerprint& f) {
  nlohmann::ordered_json j;
  j["schema_version"] = 1;
  j["tool"] = {{"name", "llmsim"}, {"version", f.tool_version}, {"git_sha", f.git_sha}};
  j["date_utc"] = f.date_utc;
  j["argv"] = f.argv;
  nlohmann::ordered_json env = nlohmann::ordered_json::object();
  for (const auto& [k, v] : f.environment) env[k] = v;
  j["environment"] = env;
  j["host"] = {{"cpu", f.host_cpu}, {"threads", f.host_threads}, {"memory_bytes", f.host_memory_bytes}};
  if (f.gpu) {
    const auto& g = *f.gpu;
    j["gpu"] = {{"name", g.name},
                {"count", g.device_count},
                {"compute_capability", fmt::format("{}.{}", g.cc_major, g.cc_minor)},
                {"sm_count", g.sm_count},
                {"memory_bytes", g.memory_bytes},
                {"sm_clock_Hz", g.sm_clock_Hz},
                {"memory_clock_Hz", g.memory_clock_Hz},
                {"driver", g.driver_version},
                {"cuda_runtime", g.runtime_version},
                {"cublas", g.cublas_version},
                {"nccl", g.nccl_version},
                {"p2p_all", g.p2p_all}};
  } else {
    j["gpu"] = nullptr;
  }
  j["quality"] = {{"noisy_samples", f.noisy_samples},
                  {"clocked_samples", f.clocked_samples},
                  {"throttled_samples", f.throttled_samples},
                  {"sm_clock_MHz_min", f.sm_clock_MHz_min},
                  {"sm_clock_MHz_median", f.sm_clock_MHz_median},
                  {"notes", f.notes}};
  return j.dump(2) + "\n";
}

Fingerprint read_fingerprint(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw_not_found(Location{.file = path}, "cannot open the calibration fingerprint");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw_input(Location{.file = path}, std::string("not valid JSON: ") + e.what());
  }
  std::string key;
  try {
    Fingerprint f;
    key = "tool";
    f.tool_version = j.at("tool").at("version").get<std::string>();
    f.git_sha = j.at("tool").at("git_sha").get<std::string>();
    key = "date_utc";
    f.date_utc = j.at("date_utc").get<std::string>();
    key = "argv";
    f.argv = j.at("argv").get<std::vector<std::string>>();
    key = "environment";
    for (const auto& [k, v] : j.at("environment").items()) f.environment.emplace_back(k, v.get<std::string>());
    key = "host";
    f.host_cpu = j.at("host").at("cpu").get<std::string>();
    f.host_threads = j.at("host").at("threads").get<int>();
    f.host_memory_bytes = j.at("host").at("memory_bytes").get<double>();
    key = "gpu";
    if (const auto& g = j.at("gpu"); !g.is_null()) {
      GpuInfo info;
      info.name = g.at("name").get<std::string>();
      info.device_count = g.at("count").get<int>();
      const std::string cc = g.at("compute_capability").get<std::string>();
      if (std::sscanf(cc.c_str(), "%d.%d", &info.cc_major, &info.cc_minor) != 2)
        throw_input(Location{.file = path, .key = "gpu.compute_capability"}, "'" + cc + "' is not MAJOR.MINOR");
      info.sm_count = g.at("sm_count").get<int>();
      info.memory_bytes = g.at("memory_bytes").get<double>();
      info.sm_clock_Hz = g.at("sm_clock_Hz").get<double>();
      info.memory_clock_Hz = g.at("memory_clock_Hz").get<double>();
      info.driver_version = g.at("driver").get<std::string>();
      info.runtime_version = g.at("cuda_runtime").get<std::string>();
      info.cublas_version = g.at("cublas").get<std::string>();
      info.nccl_version = g.at("nccl").get<std::string>();
      info.p2p_all = g.at("p2p_all").get<bool>();
      f.gpu = info;
    }
    key = "quality";
    const auto& q = j.at("quality");
    f.noisy_samples = q.at("noisy_samples").get<int>();
    // Counts added after the first format: absent in older fingerprints.
    f.clocked_samples = q.value("clocked_samples", 0);
    f.throttled_samples = q.value("throttled_samples", 0);
    f.sm_clock_MHz_min = q.value("sm_clock_MHz_min", 0.0);
    f.sm_clock_MHz_median = q.value("sm_clock_MHz_median", 0.0);
    f.notes = q.at("notes").get<std::vector<std::string>>();
    return f;
  } catch (const nlohmann::json::exception& e) {
    throw_input(Location{.file = path, .key = key}, std::string("missing or mistyped: ") + e.what());
  }
}

std::string fingerprint_summary(const Fingerprint& f) {
  std::string gpu = f.gpu ? fmt::format("{} x{} (cc {}.{}, driver {}, CUDA {}, cuBLAS {})", f.gpu->name,
                                        f.gpu->device_count, f.gpu->cc_major, f.gpu->cc_minor, f.gpu->driver_version,
                                        f.gpu->runtime_version, f.gpu->cublas_version)
                          : std::string("no GPU");
  std::string clocks;
  if (f.clocked_samples > 0)
    clocks = fmt::format("; SM clock median {:.0f} MHz (min {:.0f}), {} of {} GPU samples power/thermal-throttled",
                         f.sm_clock_MHz_median, f.sm_clock_MHz_min, f.throttled_samples, f.clocked_samples);
  return fmt::format("llmsim calibrate {} ({}) on {}; host {} ({} threads); {}{}", f.tool_version, f.git_sha,
                     f.date_utc, f.host_cpu, f.host_threads, gpu, clocks);
}

void add_sample_quality(Fingerprint& f, const std::vector<Sample>& samples) {
  f.noisy_samples = f.clocked_samples = f.throttled_samples = 0;
  std::vector<double> clocks;
  for (const auto& s : samples) {
    f.noisy_samples += s.noisy ? 1 : 0;
    if (s.sm_clock_MHz > 0) {
      clocks.push_back(s.sm_clock_MHz);
      f.throttled_samples += s.throttled ? 1 : 0;
    }
  }
  f.clocked_samples = static_cast<int>(clocks.size());
  if (clocks.empty()) return;
  f.sm_clock_MHz_min = *std::min_element(clocks.begin(), clocks.end());
  f.sm_clock_MHz_median = median(clocks);
  if (f.throttled_samples > 0)
    f.notes.push_back(fmt::format(
        "clock throttling: {} of {} GPU samples ended with a power or thermal clock reduction active (SM clock "
        "median {:.0f} MHz, min {:.0f}); their rates are sustained figures, below a cool GPU's burst rate",
        f.throttled_samples, f.clocked_samples, f.sm_clock_MHz_median, f.sm_clock_MHz_min));
}

}  // namespace llmsim::calibrate
