#include "llmsim/report/verdict.h"

#include <fmt/format.h>

#include "llmsim/core/units.h"

namespace llmsim::report {

std::string gib(double bytes) { return fmt::format("{:.2f}", bytes / units::GiB); }

std::string ms_text(double seconds) { return fmt::format("{:.1f}", seconds * 1e3); }

Verdict infeasible_verdict(const std::vector<std::string>& problems) {
  if (problems.empty()) return {.ok = false, .text = "infeasible"};
  return {.ok = false,
          .text = fmt::format("infeasible: {}{}", problems.front(),
                              problems.size() > 1 ? fmt::format(" (and {} more)", problems.size() - 1) : "")};
}

Verdict memory_verdict(const sim::MemoryResult& mem) {
  if (mem.fits())
    return {.ok = true,
            .text = fmt::format("memory: fits, {} of {} GiB per GPU (stage {})", gib(mem.gpu_bytes),
                                gib(mem.gpu_capacity_bytes), mem.peak_stage)};
  if (!mem.gpu_fits())
    return {.ok = false,
            .text = fmt::format("memory: DOES NOT FIT, {} of {} GiB per GPU (see `llmsim memory`); times below "
                                "assume it ran",
                                gib(mem.gpu_bytes), gib(mem.gpu_capacity_bytes))};
  return {.ok = false,
          .text = fmt::format("memory: DOES NOT FIT in host memory ({} of {} GiB per node); times below assume it ran",
                              gib(mem.host_bytes), gib(mem.host_capacity_bytes))};
}

Verdict memory_result_verdict(const sim::MemoryResult& r) {
  if (!r.valid()) return infeasible_verdict(r.problems);
  if (r.fits())
    return {.ok = true,
            .text = fmt::format("result: fits ({} GiB headroom per GPU)", gib(r.gpu_capacity_bytes - r.gpu_bytes))};
  std::string text;
  if (!r.gpu_fits())
    text = fmt::format("result: does not fit by {} GiB per GPU", gib(r.gpu_bytes - r.gpu_capacity_bytes));
  if (!r.host_fits())
    text += fmt::format("{}host memory short by {} GiB per node", text.empty() ? "result: " : "; ",
                        gib(r.host_bytes - r.host_capacity_bytes));
  return {.ok = false, .text = text};
}

Verdict infer_verdict(const sim::RunSpec& run, const sim::InferResult& r) {
  if (!r.valid()) return infeasible_verdict(r.problems);
  const auto& mem = r.memory;
  return {.ok = mem.fits(),
          .text = fmt::format("memory: {}, {} of {} GiB per GPU; max batch at {} tokens/seq: {}",
                              mem.fits() ? "fits" : "DOES NOT FIT", gib(mem.gpu_bytes), gib(mem.gpu_capacity_bytes),
                              run.infer.input_len + run.infer.output_len, mem.max_batch)};
}

}  // namespace llmsim::report
