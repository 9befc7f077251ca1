#pragma once
// Variable-length training samples (TrainSpec::tokens_per_sample, padding): what a step's sequences hold.
// Fine-tuning recipes rarely pad every sample to the longest allowed (ms-swift, HF Trainer with a
// padding collator, xtuner without packing): a step's time is that of the lengths it ran, not of seq_len.
// One rule for the training simulator and the reports; the memory model keeps seq_len (the longest sample,
// which sets the peak).
#include <cstdint>
#include <string>

#include "llmsim/run/run_spec.h"

namespace llmsim::sim {

struct SampleShape {
  std::int64_t simulated_len = 0;   // tokens per sequence the step's kernels run at
  double samples_per_sequence = 1;  // training samples a sequence holds (packing: several)
  double tokens_per_sequence = 0;   // tokens of samples per sequence (counted by tokens/s metrics)
  std::string problem;              // non-empty: the lengths cannot be priced (the missing mechanism)
};

// - padding max, or no tokens_per_sample: sequences of seq_len, one sample each, whose tokens count as
//   tokens_per_sample when stated (the padding is computed, not counted), else seq_len;
// - padding none (packed): sequences of seq_len holding seq_len / tokens_per_sample samples;
// - padding batch at micro-batch 1: each sequence is one sample, run at its own length; with only the mean
//   known, at tokens_per_sample (the time at the mean: attention's quadratic part makes the true mean time
//   somewhat longer); at a larger micro-batch the expected longest of micro_batch samples needs their
//   distribution, which is not modelled (problem).
SampleShape sample_shape(const TrainSpec& t);

}  // namespace llmsim::sim
