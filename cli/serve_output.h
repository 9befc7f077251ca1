#pragma once
// The outputs of `llmsim serve` (cmd_serve.cpp): the table, JSON and CSV of a serving result, its
// Chrome trace and the per-request CSV.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmsim/run/run_config.h"
#include "llmsim/run/run_spec.h"
#include "llmsim/serve/serving_disagg.h"
#include "llmsim/serve/serving_sim.h"

namespace llmsim::cli::serve_output {

// What the printers show besides the result: the run as the user described it.
struct Context {
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

// The serve report (llmsim/report/report.h conventions).
nlohmann::json to_json(const Context& c, const sim::ServingResult& r);
// The pools of a disaggregated run: their sizes, the KV link and transfers, each pool's occupancy.
nlohmann::json disaggregated_json(const sim::DisaggregatedResult& pd, std::int64_t prefill_replicas,
                                  std::int64_t decode_replicas);
void print_table(const Context& c, const sim::ServingResult& r);
// Iterations and request lifetimes as a Chrome trace (Perfetto).
void write_trace(const std::string& path, const sim::ServingResult& r);
// Every request's metrics as CSV.
void write_per_request(const std::string& path, const sim::ServingResult& r);

}  // namespace llmsim::cli::serve_output
