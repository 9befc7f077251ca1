#include "llmsim/run/sample_lengths.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace llmsim::sim {

SampleShape sample_shape(const TrainSpec& t) {
  SampleShape s;
  const double seq = static_cast<double>(t.seq_len);
  s.simulated_len = t.seq_len;
  s.tokens_per_sequence = seq;
  if (t.tokens_per_sample <= 0) return s;
  // A mean above the maximum cannot be: the samples are truncated at seq_len.
  const double mean = std::min(t.tokens_per_sample, seq);
  switch (t.padding) {
    case SamplePadding::Max: s.tokens_per_sequence = mean; break;
    case SamplePadding::None: s.samples_per_sequence = seq / mean; break;
    case SamplePadding::Batch:
      if (t.micro_batch > 1) {
        // Worded so that the search's reason key (numbers dropped) still reads as a sentence.
        s.problem = fmt::format(
            "padding to each micro-batch's longest sample at micro-batch {} needs the samples' length distribution "
            "(the expected longest of that many); only their mean, {:g} tokens, is stated and the distribution is not "
            "modelled",
            t.micro_batch, t.tokens_per_sample);
        break;
      }
      s.simulated_len = std::max<std::int64_t>(1, std::llround(mean));
      s.tokens_per_sequence = mean;
      break;
  }
  return s;
}

}  // namespace llmsim::sim
