#pragma once
// Parts of the result documents that more than one command writes from the simulators' records: the
// memory breakdown (memory, train), the scheduled step and its memory timeline (train --schedule, drawn by
// the HTML report).
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmsim/memory/memory_model.h"
#include "llmsim/train/train_sim.h"

namespace llmsim::report {

// [{"name", "bytes": figure B, "note"}], one row per item of a memory breakdown.
nlohmann::json memory_items(const std::vector<sim::MemoryItem>& items);

// The time, cost and energy of a run's --steps / --tokens ({"steps", "time_s", "cost", "energy_J"}): train's
// document and each fully simulated configuration of search and plan train.
nlohmann::json train_totals(const sim::TrainResult& r);

// The scheduled step as busy spans: [{"stage", "stream", "phase", "start_s", "end_s"}], ordered by stage,
// stream and start. Events of one phase on one stream that follow each other within `merge_gap_s` are one
// span (a layer's kernels and the TP all-reduces between them make thousands of events a step; a chart
// and a reader want the micro-batches and the gaps between them). The stream is the part of the track
// after "stageN." (compute, tp_comm, pp_send, ...).
nlohmann::json schedule_spans(const std::vector<sim::TraceEvent>& trace, double merge_gap_s);

// The peak stage's memory over the step (TrainResult::memory_timeline): [{"stage", "time_s", "gpu_bytes"}],
// one row where the value changes (it holds until the next row's time).
nlohmann::json memory_timeline(const std::vector<sim::TrainResult::MemoryPoint>& points, std::int64_t stage);

}  // namespace llmsim::report
