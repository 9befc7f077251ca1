#pragma once
// The one-line description of a simulated run, the "run_summary" of every document (report.h add_run) and
// the "run:" line of every table: built once here, from the run as simulated, so that the JSON, the CSV,
// the HTML report and the table say the same thing.
#include <string>
#include <string_view>

#include "llmsim/run/run_spec.h"

namespace llmsim::report {

// The layout ("8 GPUs (tp 8, pp 1, dp 1, ep 8)"), then the workload's settings: batch and lengths, formats
// and engine for inference; framework, batches, precision, ZeRO, recomputation and every non-default
// training setting for training and fine-tuning.
std::string describe_run(const sim::RunSpec& r);
// The same for a served request stream (`serve`): the layout, the engine and formats, then the stream as
// described (requests, arrivals, lengths) in place of describe_run's batch and lengths, which serve does not run.
std::string describe_serving_run(const sim::RunSpec& r, std::string_view stream);

}  // namespace llmsim::report
