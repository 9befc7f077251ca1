#pragma once
// The training tests' shared pieces: a pre-training run spec from its sizes, and one row of a time breakdown.
#include <cstdint>
#include <string>
#include <vector>

#include "llmsim/run/run_spec.h"
#include "llmsim/train/train_sim.h"

namespace llmsim::test {

// Pre-training on `gpus` GPUs at the given micro-batch, global batch and sequence length; the rest as the
// simulator defaults it.
inline sim::RunSpec pretrain(std::int64_t gpus, std::int64_t micro_batch, std::int64_t global_batch, std::int64_t seq) {
  sim::RunSpec r;
  r.workload = sim::Workload::Pretrain;
  r.par.gpus = gpus;
  r.train.micro_batch = micro_batch;
  r.train.global_batch = global_batch;
  r.train.seq_len = seq;
  return r;
}

// The seconds of the breakdown row `name` (by phase, module or operator class); 0 when it has none.
inline double share(const std::vector<sim::TimeShare>& v, const std::string& name) {
  for (const auto& x : v)
    if (x.name == name) return x.seconds;
  return 0.0;
}

}  // namespace llmsim::test
