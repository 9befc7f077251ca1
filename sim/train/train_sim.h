#pragma once
// The training / fine-tuning step simulator: builds the operator graph of one optimizer step (every
// pipeline stage's representative rank), schedules it and turns the schedule into the user-facing
// result: step time with its interval, throughput, MFU/HFU, memory, and where the time goes.
// Evaluates specs; never reads files. An impossible configuration is a result with reasons.
#include <cstdint>
#include <string>
#include <vector>

#include "llmsim/core/interval.h"
#include "llmsim/hardware/system_spec.h"
#include "llmsim/memory/memory_model.h"
#include "llmsim/model/model_spec.h"
#include "llmsim/run/run_spec.h"

namespace llmsim::sim {

struct TimeShare {
  std::string name;     // phase, module or operator class
  double seconds = 0;   // per step (best estimate)
  double fraction = 0;  // of the table's total
};

struct TraceEvent {
  std::string name;
  std::string track;  // resource, e.g. "stage0.compute"
  int stage = 0;
  double start_s = 0;
  double duration_s = 0;
  std::string category;  // phase name
};

struct TrainOptions {
  bool keep_trace = false;        // fill TrainResult::trace
  double train_tokens = 0;        // > 0: report the time and cost to train this many tokens
  std::int64_t train_steps = 0;   // > 0: … or this many steps
  double price_per_gpu_hour = 0;  // currency units per GPU-hour, for the cost line (0 = no cost)
};

struct TrainResult {
  std::vector<std::string> problems;  // why the run cannot execute at all (structural, unsupported)
  MemoryResult memory;                // the memory model's verdict and breakdown

  Interval step_time_s;            // seconds per optimizer step
  std::int64_t micro_batches = 0;  // per data-parallel rank per step
  double tokens_per_step = 0;
  double samples_per_step = 0;
  Interval tokens_per_s, samples_per_s;  // all GPUs
  Interval tokens_per_s_per_gpu, samples_per_s_per_gpu;
  double model_flops_per_step = 0;     // 6N+attention convention (docs/training-time.md)
  double hardware_flops_per_step = 0;  // model FLOPs plus recomputation
  // Of each, the attention scores and values (counted in full, not halved for a causal mask): what a
  // source's FLOP formula may count differently.
  double attention_flops_per_step = 0;
  double attention_hardware_flops_per_step = 0;
  Interval model_tflops_per_gpu;  // 10^12 FLOP/s per GPU
  Interval mfu, hfu;              // fractions of the precision's dense peak
  double peak_flops_per_gpu = 0;  // FLOP/s used for MFU/HFU

  int critical_stage = 0;  // the pipeline stage that finishes last
  // Per pipeline stage: its layers and its compute stream's busy time in the step. Under 1F1B the first stage
  // finishes last, so its "pipeline bubble" also holds its waits for a busier stage; this says which one.
  struct StageBusy {
    std::int64_t layers = 0;
    double compute_s = 0;
  };
  std::vector<StageBusy> stages;
  double bubble_s = 0;                    // pipeline bubble on the critical stage (best estimate)
  double exposed_comm_s = 0;              // communication not hidden behind compute on it
  std::vector<TimeShare> by_phase;        // sums to the step time
  std::vector<TimeShare> by_module;       // GPU busy time per module on the critical stage
  std::vector<TimeShare> by_op_class;     // busy time per operator class on the critical stage (incl. comm streams)
  std::int64_t peak_in_flight = 0;        // largest number of micro-batches whose activations a stage holds at once
  double memory_timeline_peak_bytes = 0;  // the memory model's peak with activations held as the schedule holds them

  std::size_t graph_nodes = 0;
  std::vector<TraceEvent> trace;  // when TrainOptions::keep_trace
  // When TrainOptions::keep_trace: the peak stage's memory over the step, a step function that changes
  // where a micro-batch's forward starts (its activations come) or its backward ends (they go); the
  // largest value is memory_timeline_peak_bytes.
  struct MemoryPoint {
    double time_s = 0;
    double bytes = 0;
  };
  std::vector<MemoryPoint> memory_timeline;

  // Totals for TrainOptions::train_tokens / train_steps (0 when neither was given).
  double total_steps = 0;
  Interval total_time_s;
  double total_cost = 0;      // price_per_gpu_hour x GPUs x hours (best estimate)
  double total_energy_J = 0;  // GPUs x TDP x time: an upper bound of the GPUs' energy

  bool valid() const { return problems.empty(); }
};

TrainResult simulate_training(const model::ModelSpec& m, const hardware::SystemSpec& sys, const RunSpec& run,
                              const TrainOptions& options = {});

}  // namespace llmsim::sim
