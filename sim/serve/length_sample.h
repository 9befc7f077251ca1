#pragma once
// Paired prompt and output lengths of a real request stream (a "length sample"): the lengths, never the
// text, of the requests a public benchmark sent, each file citing where its numbers come from. A stream
// drawing from a sample takes its pairs in the file's order (cycling when it asks for more requests than
// the sample holds), so that the input and output lengths of a request stay paired as the benchmark sent
// them and a run of N <= size requests is exactly the benchmark's first N.
//
// File format (CSV): '#' comment lines (the source, how the numbers were taken), then the header
// `input_tokens,output_tokens`, then one request per line. A comment line `# chars_per_token: X (why)` says
// how finely the tokenizer the lengths were counted in cuts English text (in_model_tokens). output_tokens may be 0: the
// benchmark received no token for that request (it ended at once or the engine refused it); the simulator serves it as
// its prefill and one token, the least an engine computes for a request it accepts.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "llmsim/model/model_spec.h"

namespace llmsim::sim {

struct LengthSample {
  std::string name;                  // "sharegpt" for a shipped sample, else the file path
  std::string source;                // the file's first comment line without '#', for reports
  std::vector<std::int64_t> input;   // prompt tokens of request i
  std::vector<std::int64_t> output;  // output tokens of request i as the benchmark received them (>= 0)
  double chars_per_token = 0;        // of the tokenizer the lengths are counted in (0: not stated)
  std::size_t size() const { return input.size(); }
  double mean_input() const;
  double mean_output() const;  // of the simulated lengths (0 counted as 1)
};

// Reads a length-sample CSV. Errors (Input) name file:line, the column and the value: a wrong header,
// non-integers, prompts < 1, outputs < 0, lengths beyond kMaxRequestTokens, no rows; NotFound when the
// file cannot be opened.
LengthSample read_length_sample(const std::string& path);

// The sample with every length times `scale` (rounded to the nearest token; a prompt at least 1, a reply of
// 0 tokens stays 0): the same requests counted by a tokenizer that cuts the same text into `scale` times as
// many tokens. Named "<name>x<scale>".
std::shared_ptr<const LengthSample> scaled_length_sample(const LengthSample& s, double scale);

// The sample in the tokens of the model's tokenizer (model/tokenizer.h): scaled by the sample's characters per
// token over the model's when both are known and differ (the same text, cut finer or coarser), else the
// sample as counted. `note` says which, for the row's or the run's report.
struct ModelTokens {
  std::shared_ptr<const LengthSample> sample;
  std::string note;  // "" when the sample is served as counted because both tokenizers cut alike
};
ModelTokens in_model_tokens(std::shared_ptr<const LengthSample> s, const model::ModelSpec& m);

// The shipped samples: the names of "<data_dir>/lengths/*.csv", sorted.
std::vector<std::string> shipped_length_samples(const std::string& data_dir);

// A shipped sample by name ("sharegpt" -> <data_dir>/lengths/sharegpt.csv) or a file by path ("sample:PATH"
// or any text naming an existing .csv file). Each file is read once per process (the validation of a
// collection asks for the same sample for many rows). Unknown names are NotFound errors listing the
// shipped ones with a did-you-mean hint.
std::shared_ptr<const LengthSample> load_length_sample(const std::string& name_or_path, const std::string& data_dir);

}  // namespace llmsim::sim
