// gpu_bench.h for a CUDA build: the SampleLog side of run_gpu_items. This file is compiled into
// llmsim_calibrate (which owns SampleLog) and includes no CUDA or MPI header; the measuring is done by
// llmsim_calibrate_cuda behind runner.h, the talking between ranks by process_group.h.
#include "llmsim/calibrate/gpu_bench.h"

#include <iostream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "llmsim/calibrate/cuda/runner.h"
#include "llmsim/calibrate/process_group.h"
#include "llmsim/core/error.h"

namespace llmsim::calibrate {

bool gpu_benchmarks_built() { return true; }

std::optional<GpuInfo> probe_gpus(std::string& why) { return cuda::probe(why); }

namespace {

// Skip notes grouped by family and reason, so that e.g. every NCCL item of a build without NCCL makes
// one line ("nccl_all_reduce (12 items, e.g. KEY): reason") instead of twelve.
class SkipNotes {
 public:
  void note(const BenchItem& item, const std::string& reason) {
    const auto id = std::make_pair(item.bench, reason);
    Group& g = groups_[id];
    if (g.count++ == 0) {
      g.first_key = item.key();
      order_.push_back(id);
    }
  }
  void flush(std::vector<std::string>& out) const {
    for (const auto& id : order_) {
      const Group& g = groups_.at(id);
      if (g.count == 1)
        out.push_back(g.first_key + ": " + id.second);
      else
        out.push_back(id.first + " (" + std::to_string(g.count) + " items, e.g. " + g.first_key + "): " + id.second);
    }
  }

 private:
  struct Group {
    std::string first_key;
    int count = 0;
  };
  std::vector<std::pair<std::string, std::string>> order_;
  std::map<std::pair<std::string, std::string>, Group> groups_;
};

// Every rank must have a GPU for its local rank; otherwise every rank stops with the same verdict
// (a rank that went on would wait forever in the first collective).
GpuInfo probe_everywhere(ProcessGroup& group) {
  std::string why;
  auto info = cuda::probe(why);
  const int local = group.local_rank();
  if (info && local >= info->device_count) {
    why = fmt::format("local rank {} needs GPU {}, but {} GPU(s) are visible", local, local, info->device_count);
    info.reset();
  }
  const bool everywhere = group.all(info.has_value());
  if (everywhere) return *info;
  const std::string where = group.multi_process() ? fmt::format("rank {} of {} on {}: ", group.rank(), group.size(),
                                                                group.hosts()[static_cast<std::size_t>(group.rank())])
                                                  : "";
  throw Error(ErrorKind::NoDevice, Location{},
              info ? where + "another rank has no usable GPU (see its message)" : where + why);
}

}  // namespace

bool run_gpu_items(const std::vector<BenchItem>& items, SampleLog* log, const Progress& progress,
                   std::vector<std::string>& skipped, const StopCheck& stop, ProcessGroup& group) {
  const bool root = group.rank() == 0;
  if (root && !log) throw Error(ErrorKind::Internal, Location{}, "run_gpu_items: rank 0 needs the sample log");
  const GpuInfo info = probe_everywhere(group);
  cuda::Peers peers;
  peers.rank = group.rank();
  peers.size = group.size();
  peers.device = group.multi_process() ? group.local_rank() : 0;
  peers.broadcast = [&group](std::string& bytes) { group.broadcast(bytes); };
  peers.max = [&group](double v) { return group.max(v); };
  cuda::Runner runner(info, peers);

  // The work: the GPU items rank 0 has not measured yet, in plan order, the same list on every rank.
  SkipNotes notes;
  std::vector<BenchItem> work;
  std::vector<std::size_t> plan_index;  // position in `items`, for the progress line
  for (std::size_t i = 0; i < items.size(); ++i) {
    const BenchItem& item = items[i];
    if (!cuda::is_gpu_family(item.bench)) {
      // cpu_* and host_* are measured on the host by the caller.
      if (!item.bench.starts_with("cpu_") && !item.bench.starts_with("host_"))
        notes.note(item, "not a GPU benchmark family this build knows");
      continue;
    }
    if (root && log->done(item)) continue;
    work.push_back(item);
    plan_index.push_back(i);
  }
  if (group.multi_process()) {
    std::string packed = root ? pack_items(work) : std::string();
    group.broadcast(packed);
    if (!root) work = unpack_items(packed);
  }

  bool finished = true;
  for (std::size_t w = 0; w < work.size(); ++w) {
    const BenchItem& item = work[w];
    // Rank 0 decides whether to go on (the time budget); the others follow.
    std::string go = root ? (stop && stop() ? "0" : "1") : "";
    group.broadcast(go);
    if (go != "1") {
      finished = false;
      break;
    }
    const bool collective = group.multi_process() && item.bench.starts_with("nccl_");
    if (!root && !collective) continue;  // single-GPU and host<->device items run on rank 0 alone
    cuda::SkipNote skip;
    try {
      if (auto sample = runner.measure(item, skip)) {
        if (root) {
          log->append(*sample);
          if (progress) progress(item, plan_index.empty() ? w : plan_index[w], items.size());
        }
      } else {
        notes.note(item, skip.why);
      }
    } catch (const Error& e) {
      if (collective) {
        // The other ranks may be inside this collective: end them all. The log holds every sample
        // measured so far; --resume continues after the cause is fixed.
        std::cerr << fmt::format("llmsim calibrate: rank {}: {} failed: {}; ending every rank\n", group.rank(),
                                 item.key(), e.what());
        group.abort(exit_code(e.kind()));
      }
      // One shape that cuBLAS rejects must not cost the whole run; a lost device must.
      if (e.kind() == ErrorKind::NoDevice) throw;
      notes.note(item, e.what());
    }
  }
  notes.flush(skipped);
  return finished;
}

}  // namespace llmsim::calibrate
