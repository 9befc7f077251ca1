#pragma once
// The space of a what-if search, defined apart from how its points are evaluated (sim/search/search.h):
// one axis per setting, each fixed, listed or free (its natural set), parsed from the CLI syntax
//   4  |  1,2,4,8  |  1-8  |  pow2:1-16  |  any  (or *)  |  items combined: 1,2,pow2:8-32
// for numbers, and names for choices (recompute none,selective; framework any). The generator
// enumerates valid tuples in a fixed order (system, gpus, tp, pp, cp, ep, vp, framework, zero stage,
// offload, precision, FlashAttention, recomputation, sequence parallelism, schedule, micro-batch;
// the last varies fastest) and prunes what cannot run — divisibility and structural rules
// (sim::structural_problems, sim::training_problems), then memory — counting each pruned tuple under
// the reason that removed it first. Serving spaces will get their own axes on the same parsing.
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "llmsim/hardware/system_spec.h"
#include "llmsim/model/model_spec.h"
#include "llmsim/run/run_spec.h"
#include "llmsim/search/axis.h"
#include "llmsim/search/prune_tally.h"

namespace llmsim::sim {

// ---- Training spaces --------------------------------------------------------------------------

// The axes of a training search, in enumeration order (system outermost, micro-batch innermost).
enum class TrainAxis {
  System,
  Gpus,
  Tp,
  Pp,
  Cp,
  Ep,
  Vp,
  Framework,
  ZeroStage,
  Offload,
  Precision,
  FlashAttn,
  Recompute,
  SequenceParallel,
  Schedule,
  MicroBatch
};
inline constexpr std::size_t kTrainAxes = 16;

// Flag names ("tp", "micro-batch", …), in enumeration order; "dp" (a filter on the derived DP size)
// and "global-batch" (fixed or a range) are set with set_train_axis too but are not enumerated.
const std::vector<std::string>& train_axis_names();

struct TrainSpace {
  std::vector<std::string> systems;  // preset names or TOML paths; values index this list
  std::array<Axis, kTrainAxes> axes;
  Axis dp;                            // allowed data-parallel sizes (Free = any)
  std::int64_t global_batch_min = 0;  // sequences per step; 0 = default (4 Mi tokens)
  std::int64_t global_batch_max = 0;
  bool precision_given = false;  // else bf16 where the GPU has it, fp16 otherwise
  RunSpec base;                  // the fixed settings: workload, seq_len, optimizer, LoRA…
  std::int64_t max_gpus = 0;     // constraint (0 = none)
  std::int64_t min_gpus = 0;
  double min_headroom_bytes = 0;  // free GPU memory a configuration must leave

  // Defaults of `llmsim search train`: parallelism, micro-batch, recomputation and ZeRO free; gpus
  // free (bounded by max_gpus); the rest fixed at `base`'s values.
  static TrainSpace defaults(const RunSpec& base);
  Axis& axis(TrainAxis a) { return axes[static_cast<std::size_t>(a)]; }
  const Axis& axis(TrainAxis a) const { return axes[static_cast<std::size_t>(a)]; }
};

// Sets one axis from its CLI text ("tp", "1,2,4"); unknown names are Usage errors with a did-you-mean.
// "system" takes names or paths (comma-separated), "global-batch" a number or a range "512-2048".
void set_train_axis(TrainSpace& space, const std::string& name, const std::string& text);

// The display text of an axis value ("selective", "on", "8").
std::string train_axis_value_name(TrainAxis a, std::int64_t v);

// A training space resolved for a model and its systems: concrete values per axis per system.
struct ResolvedTrainSpace {
  struct Slice {
    int system = 0;                                            // index into TrainSpace::systems
    std::array<std::vector<std::int64_t>, kTrainAxes> values;  // [System] holds just `system`
    std::uint64_t offset = 0;                                  // index of its first tuple
    std::uint64_t size = 0;                                    // tuples (product of the axis sizes)
  };
  std::vector<Slice> slices;
  std::uint64_t size = 0;
  std::int64_t global_batch_min = 0, global_batch_max = 0;  // resolved (defaults applied)
  // No --global-batch and the optimizer steps inside backward: every configuration takes one micro-batch
  // per step (global batch = micro-batch x dp), the only batch that recipe can run.
  bool one_micro_batch_per_step = false;
};

// `systems` are the resolved specs of space.systems (same order). Free axes take their natural sets:
// gpus = divisors of the node size and whole nodes up to max_gpus; tp = powers of two up to the node
// size; pp = divisors of the layer count and powers of two up to it; cp 1,2,4,8; ep = powers of two
// dividing the experts; vp 1,2,4; micro-batch pow2:1-16; every name of a choice axis.
ResolvedTrainSpace resolve_train_space(const TrainSpace& space, const model::ModelSpec& m,
                                       const std::vector<hardware::SystemSpec>& systems);

// One tuple of the space as a run (with_defaults applied), or the reason it was pruned.
struct TrainCandidate {
  std::uint64_t index = 0;
  int system = 0;
  RunSpec run;
  const void* primed_by = nullptr;  // the generator whose fixed settings `run` already holds
};

// A position in the enumeration (the digits of each axis), for walking it without divisions.
struct TrainCursor {
  std::uint64_t index = 0;
  std::size_t slice = 0;
  std::array<std::uint32_t, kTrainAxes> digit{};
};

class TrainGenerator {
 public:
  TrainGenerator(const TrainSpace& space, const ResolvedTrainSpace& resolved, const model::ModelSpec& m,
                 const std::vector<hardware::SystemSpec>& systems);
  std::uint64_t size() const { return resolved_.size; }
  // Decodes tuple `index` and applies every rule that needs no memory model. Returns true when the
  // tuple is structurally valid; otherwise fills `key` and `message` with the first rule it breaks.
  // With `tally`, the generator's own messages are only formatted for reasons it has not seen yet
  // (the message is then empty).
  bool decode(std::uint64_t index, TrainCandidate& out, std::string& key, std::string& message,
              const PruneTally* tally = nullptr) const;
  // The same by cursor: seek once, then check and advance tuple by tuple.
  TrainCursor seek(std::uint64_t index) const;
  void advance(TrainCursor& c) const;
  bool check(const TrainCursor& c, TrainCandidate& out, std::string& key, std::string& message,
             const PruneTally* tally = nullptr) const;

 private:
  const TrainSpace& space_;
  const ResolvedTrainSpace& resolved_;
  const model::ModelSpec& m_;
  const std::vector<hardware::SystemSpec>& systems_;
};

}  // namespace llmsim::sim
