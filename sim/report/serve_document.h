#pragma once
// The document of `llmsim serve` (docs/output-schema.md, "serve") and its verdict: the run as the user
// described it, the engine as it ran, the KV cache, throughput and latency statistics with their bands,
// speculation, LoRA and goodput; the pools of a disaggregated run. Built here, in the library, from the
// serving simulation's records and the description the caller gives.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmsim/report/verdict.h"
#include "llmsim/run/run_config.h"
#include "llmsim/run/run_spec.h"
#include "llmsim/serve/serving_disagg.h"
#include "llmsim/serve/serving_sim.h"

namespace llmsim::report {

// What the document shows besides the result: the run as the user described it.
struct ServeDescription {
  std::string model, system, stream;
  sim::RunSpec run;
  sim::RunRequest request;  // the settings as given, with `run` (for the report's run object)
  std::string summary;      // the run in one line
  bool calibrated = false;
  double gpu_memory = 0;
  double wall_s = 0;
  double slo_ttft_ms = 0, slo_tpot_ms = 0;  // the goodput bounds given (0: none)
  // Settings the request stream stands in for (input-len under --input-dist or a trace, batch under a
  // continuous engine): left out of the report's run object, where they would state lengths not served.
  std::vector<std::string> stream_replaces;
};

// The SLOs given, as the table writes them ("TTFT <= 200 ms and TPOT <= 50 ms").
std::string slo_text(const ServeDescription& c);
// The answer in one sentence: every request served or not, and with SLOs whether their p99 holds them (the
// bound plan serve compares), with the share of requests that meet them.
Verdict serve_verdict(const ServeDescription& c, const sim::ServingResult& r);
nlohmann::json serve_document(const ServeDescription& c, const sim::ServingResult& r);
// The pools of a disaggregated run: their sizes, the KV link and transfers, each pool's occupancy.
nlohmann::json disaggregated_json(const sim::DisaggregatedResult& pd, std::int64_t prefill_replicas,
                                  std::int64_t decode_replicas);

}  // namespace llmsim::report
