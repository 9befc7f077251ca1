// gpu_bench.h for a CUDA build: the SampleLog side of run_gpu_items. This file is compiled into
// llmsim_calibrate (which owns SampleLog) and includes no CUDA header; the measuring is done by
// llmsim_calibrate_cuda behind runner.h.
#include "calibrate/gpu_bench.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "calibrate/cuda/runner.h"
#include "sim/base/error.h"

namespace llmsim::calibrate {

bool gpu_benchmarks_built() { return true; }

std::optional<GpuInfo> probe_gpus(std::string& why) { return cuda::probe(why); }

bool run_gpu_items(const std::vector<BenchItem>& items, SampleLog& log, const Progress& progress,
                   std::vector<std::string>& skipped, const StopCheck& stop) {
  std::string why;
  const auto info = cuda::probe(why);
  if (!info) throw Error(ErrorKind::NoDevice, Location{}, why);
  cuda::Runner runner(*info);

  // Skip notes grouped by family and reason, so that e.g. every NCCL item of a build without NCCL makes
  // one line ("nccl_all_reduce (12 items, e.g. KEY): reason") instead of twelve.
  struct Group {
    std::string first_key;
    int count = 0;
  };
  std::vector<std::pair<std::string, std::string>> order;
  std::map<std::pair<std::string, std::string>, Group> groups;
  const auto note = [&](const BenchItem& item, const std::string& reason) {
    const auto id = std::make_pair(item.bench, reason);
    Group& g = groups[id];
    if (g.count++ == 0) {
      g.first_key = item.key();
      order.push_back(id);
    }
  };

  bool finished = true;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const BenchItem& item = items[i];
    if (!cuda::is_gpu_family(item.bench)) {
      // cpu_* and host_* are measured on the host by the caller.
      if (!item.bench.starts_with("cpu_") && !item.bench.starts_with("host_"))
        note(item, "not a GPU benchmark family this build knows");
      continue;
    }
    if (log.done(item)) continue;
    if (stop && stop()) {
      finished = false;
      break;
    }
    cuda::SkipNote skip;
    try {
      if (auto sample = runner.measure(item, skip)) {
        log.append(*sample);
        if (progress) progress(item, i, items.size());
      } else {
        note(item, skip.why);
      }
    } catch (const Error& e) {
      // One shape that cuBLAS rejects must not cost the whole run; a lost device must.
      if (e.kind() == ErrorKind::NoDevice) throw;
      note(item, e.what());
    }
  }
  for (const auto& id : order) {
    const Group& g = groups[id];
    if (g.count == 1) skipped.push_back(g.first_key + ": " + id.second);
    else
      skipped.push_back(id.first + " (" + std::to_string(g.count) + " items, e.g. " + g.first_key + "): " + id.second);
  }
  return finished;
}

}  // namespace llmsim::calibrate
