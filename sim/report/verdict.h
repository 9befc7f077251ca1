#pragma once
// A command's answer in one sentence (report.h add_verdict): the table prints `text` as its first result
// line, the JSON and HTML documents carry both. Written once here from the simulators' records, so the
// table and the documents say the same.
#include <string>
#include <vector>

#include "llmsim/infer/infer_sim.h"
#include "llmsim/memory/memory_model.h"
#include "llmsim/run/run_spec.h"

namespace llmsim::report {

struct Verdict {
  bool ok = false;
  std::string text;
};

// "12.34": bytes in GiB with two decimals, as every verdict and memory table writes them.
std::string gib(double bytes);
// "12.3": seconds in milliseconds with one decimal, as serve's verdict and its latency table write them.
std::string ms_text(double seconds);

// The verdict of a run that cannot run as given: "infeasible: " and its first problem (and how many more).
Verdict infeasible_verdict(const std::vector<std::string>& problems);
// The memory verdict of train: "memory: fits, X of Y GiB per GPU (stage S)" or why it does not
// ("memory: DOES NOT FIT, ..." per GPU, or in host memory), "; times below assume it ran" when it does not.
Verdict memory_verdict(const sim::MemoryResult& mem);
// `memory`'s: "result: fits (H GiB headroom per GPU)", or by how much it does not, per GPU and in host memory.
Verdict memory_result_verdict(const sim::MemoryResult& r);
// `infer`'s: whether the batch fits, the memory per GPU and the largest batch at the run's lengths.
Verdict infer_verdict(const sim::RunSpec& run, const sim::InferResult& r);

}  // namespace llmsim::report
