#pragma once
// Host-side microbenchmarks that run on any machine: CPU Adam throughput (ZeRO-Offload runs Adam on the
// CPU) and host memory bandwidth (STREAM-like copy and triad), both multi-threaded.
#include <vector>

#include "llmsim/calibrate/gpu_bench.h"
#include "llmsim/calibrate/sample.h"

namespace llmsim::calibrate {

// Measures one host item (families cpu_adam, host_copy, host_triad).
Sample run_host_item(const BenchItem& item);

// Measures every host item of `items` not already in `log`, appending as it goes.
void run_host_items(const std::vector<BenchItem>& items, SampleLog& log, const Progress& progress);

bool is_host_family(const std::string& bench);

}  // namespace llmsim::calibrate
