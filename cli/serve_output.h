#pragma once
// The outputs of `llmsim serve` (cmd_serve.cpp): the table, JSON and CSV of a serving result, its
// Chrome trace and the per-request CSV.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmsim/report/serve_document.h"
#include "llmsim/run/run_config.h"
#include "llmsim/run/run_spec.h"
#include "llmsim/serve/serving_disagg.h"
#include "llmsim/serve/serving_sim.h"

namespace llmsim::cli::serve_output {

// What the printers show besides the result: the run as the user described it (the library's record).
using Context = report::ServeDescription;

void print_table(const Context& c, const sim::ServingResult& r);
// Iterations and request lifetimes as a Chrome trace (Perfetto).
void write_trace(const std::string& path, const sim::ServingResult& r);
// Every request's metrics as CSV.
void write_per_request(const std::string& path, const sim::ServingResult& r);

}  // namespace llmsim::cli::serve_output
