// The JSON output of nccl-tests (-J FILE): one object per run with its parameters and results.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "llmsim/calibrate/nccl_tests_format.h"
#include "llmsim/core/json_reader.h"

namespace llmsim::calibrate {

namespace {

// A JSON integer as a long long; unsigned values beyond its range saturate (get<long long> would wrap them).
long long json_integer(const nlohmann::json& v) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<unsigned long long>();
    return u > static_cast<unsigned long long>(std::numeric_limits<long long>::max())
               ? std::numeric_limits<long long>::max()
               : static_cast<long long>(u);
  }
  return v.get<long long>();
}

}  // namespace

using namespace nccl_format;  // NOLINT(google-build-using-namespace): this reader's helpers

NcclTestsLog import_json(const std::string& path) {
  const JsonDocument doc = parse_json_file(path);
  const auto& root = doc.root;
  if (!root.is_object() || !root.contains("results") || !root["results"].is_array())
    throw_input(Location{.file = path}, "not an nccl-tests JSON output (-J): no \"results\" list");

  RunInfo run;
  if (root.contains("config") && root["config"].is_object()) {
    const auto& c = root["config"];
    auto get_int = [&](const char* key, long long cap) {
      if (!c.contains(key) || !c[key].is_number_integer()) return 0;
      return log_count(json_integer(c[key]), cap, doc.where(std::string("config.") + key), key);
    };
    run.nthread = get_int("nthreads", kMaxThreadsOrGpus);
    run.ngpus = get_int("ngpus", kMaxThreadsOrGpus);
    run.iters = get_int("iterations", std::numeric_limits<int>::max());
    // One device entry per process (the first rank of each), so a group's ranks = entries x threads x GPUs.
    // Each entry names its process's host ("hostname"); an output without them counts as one node.
    if (c.contains("devices") && c["devices"].is_array()) {
      for (const auto& d : c["devices"]) {
        const int g = d.is_object() && d.contains("group") && d["group"].is_number_integer()
                          ? log_count(json_integer(d["group"]), kMaxLogRanks, doc.where("config.devices"), "group")
                          : 0;
        run.add_ranks(g, std::max(1, run.nthread) * std::max(1, run.ngpus), doc.where("config.devices"));
        if (d.is_object() && d.contains("hostname") && d["hostname"].is_string()) {
          const std::string host = trim(d["hostname"].get<std::string>());
          if (!host.empty()) run.hosts_per_group[g].insert(host);
        }
        if (d.is_object() && d.contains("device_info") && d["device_info"].is_string()) {
          const std::string gpu = trim(d["device_info"].get<std::string>());
          if (!gpu.empty()) run.gpu_names.insert(gpu);
        }
      }
    }
  }

  std::string starting;
  if (root.contains("args") && root["args"].is_array() && !root["args"].empty() && root["args"][0].is_string())
    starting = binary_name_of(" " + std::filesystem::path(root["args"][0].get<std::string>()).filename().string());

  NcclTestsLog log;
  log.collective = choose_family(path, starting, {});
  log.ranks = run.ranks();
  log.nodes = run.nodes();
  log.gpus.assign(run.gpu_names.begin(), run.gpu_names.end());
  if (log.ranks <= 0)
    throw_input(doc.where("config"), "cannot tell how many GPUs ran: no config.nthreads / config.ngpus");

  const auto& results = root["results"];
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    const std::string key = "results[" + std::to_string(i) + "]";
    Location loc = doc.where("results");
    loc.key = key;
    if (!r.is_object() || !r.contains("size") || !r["size"].is_number() || !r.contains("type") ||
        !r["type"].is_string())
      throw_input(loc, "expected an object with \"size\" and \"type\"");
    const std::string redop = r.contains("redop") && r["redop"].is_string() ? trim(r["redop"].get<std::string>()) : "";
    if (is_reduction_family(log.collective) && (redop.empty() || redop == "none"))
      throw_input(loc, "no reduction op, which a " + log.collective.substr(5) +
                           " test always writes: the file comes from another test (check its name)");
    // Out-of-place unless only in-place was measured (out_of_place: null).
    const nlohmann::json* placement = nullptr;
    for (const char* k : {"out_of_place", "in_place"})
      if (!placement && r.contains(k) && r[k].is_object()) placement = &r[k];
    if (!placement) throw_input(loc, "no \"out_of_place\" or \"in_place\" timing");
    const char* tkey = placement->contains("time") ? "time" : "cpu_time";
    if (!placement->contains(tkey) || !(*placement)[tkey].is_number())
      throw_input(loc, "the timing has no numeric \"time\"");
    const double time_us = (*placement)[tkey].get<double>();
    if (time_us < 0 || !std::isfinite(time_us)) throw_input(loc, "negative time");
    if (placement->contains("nwrong") && (*placement)["nwrong"].is_number() && (*placement)["nwrong"].get<double>() > 0)
      throw_input(loc, "nccl-tests reports wrong elements (validation failed); fix the run before calibrating from it");
    const double size = r["size"].get<double>();
    if (size < 0) throw_input(loc, "negative size");
    if (time_us <= 0) continue;
    Sample s = make_sample(log.collective, size, r["type"].get<std::string>(), time_us, run.iters);
    s.item.group = log.ranks;
    s.item.nodes = log.nodes;
    log.samples.push_back(s);
  }
  if (log.samples.empty()) throw_input(Location{.file = path}, "the nccl-tests output has no result rows");
  return log;
}

}  // namespace llmsim::calibrate
