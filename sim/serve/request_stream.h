#pragma once
// Request streams for the serving simulator: when requests arrive and how long their prompts and outputs
// are. Arrival processes: a burst of N at t = 0, an open loop at a rate (Poisson or constant spacing), a
// closed loop of N clients (each sends its next request when the previous one completes; the simulator
// releases those), or a trace file. Lengths: fixed, uniform(min, max), lognormal(mean, stdev), or the
// paired lengths of a real benchmark's requests (a length sample, length_sample.h, taken in order). Random
// draws come from std::mt19937_64 through hand-written transforms (53-bit uniforms, Box-Muller normals,
// inverse-CDF exponentials), so a seed gives the same stream on every standard library.
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "llmsim/serve/length_sample.h"

namespace llmsim::sim {

struct Request {
  std::int64_t id = 0;             // 0-based, in arrival order
  double arrival_s = 0;            // seconds; closed loop: only the first `concurrency` are meaningful
  std::int64_t input_tokens = 1;   // prompt tokens
  std::int64_t output_tokens = 1;  // tokens to generate (the request's max_tokens; generation never stops early)
  // A prefix that other requests share (a system prompt, a few-shot template, a conversation's history):
  // requests with the same prefix_key have the same first min(their prefix_tokens) tokens, counted over the
  // prompt and then the reply (a conversation's next turn re-sends this turn's prompt and reply), so an engine
  // with prefix caching reuses their KV instead of recomputing it. -1: the request shares nothing.
  std::int64_t prefix_key = -1;
  std::int64_t prefix_tokens = 0;  // 0..input_tokens + output_tokens
  // Disaggregated serving's decode pool: the prompt's KV arrives with the request from the prefill pool,
  // with the token the prefill sampled (serving_disagg.h). 0: the engine computes everything.
  std::int64_t kv_ready_tokens = 0;
  std::int64_t generated_tokens = 0;
  // Multi-LoRA serving: the LoRA adapter the request runs with, 0..adapters-1 (-1: the base model alone).
  std::int64_t adapter = -1;
};

enum class LengthKind { Fixed, Uniform, LogNormal, Sample };

// The longest request length (input or output tokens) read or drawn: 2^24, far beyond any model's context
// (such a request is rejected as the engines reject it), and small enough that input + output and the
// simulators' token sums cannot overflow. Lengths written longer are errors; drawn ones are capped here.
inline constexpr std::int64_t kMaxRequestTokens = std::int64_t{1} << 24;

// Whether `v` is a whole number of tokens from `least` to kMaxRequestTokens: the rule of every length the
// streams read (flags, trace files, length samples). The range is checked before the whole-number test.
inline bool is_token_count(double v, double least = 1) {
  return v >= least && v <= static_cast<double>(kMaxRequestTokens) &&
         v == static_cast<double>(static_cast<std::int64_t>(v));
}

struct LengthDist {
  LengthKind kind = LengthKind::Fixed;
  double a = 128;  // fixed: the length; uniform: min; lognormal: mean of the length
  double b = 0;    // uniform: max; lognormal: standard deviation of the length
  // Sample: the paired lengths and which of the two columns this distribution reads. Request i of a
  // generated stream takes pair i (mod the sample's size), so that an input and an output distribution
  // naming the same sample stay paired as the benchmark sent them.
  std::shared_ptr<const LengthSample> sample;
  bool sample_output = false;
  double mean() const;           // expected length before rounding and clamping to >= 1
  std::string describe() const;  // "512", "uniform:100-900", "lognormal:512,256", "sharegpt"
  // Sample: the length of request `i` (outputs of 0 served as 1).
  std::int64_t sample_at(std::int64_t i) const;
};

// Parses a length distribution as written on the command line: "N" or "fixed:N", "uniform:MIN-MAX",
// "lognormal:MEAN,STD", or a length sample: a shipped one by name ("sharegpt", <data_dir>/lengths/) or
// "sample:FILE.csv"; `output_column` picks the sample's output lengths (for --output-dist). Errors (Usage)
// name `flag` and the rule broken; an unknown sample is a NotFound error listing the shipped ones.
LengthDist parse_length_dist(const std::string& text, const std::string& flag, const std::string& data_dir = {},
                             bool output_column = false);

// The length samples of a stream's input and output distributions in the model's tokens (in_model_tokens,
// length_sample.h): serve and plan serve apply it to what the flags gave. Returns the notes to report, each
// once (none for fixed, uniform or lognormal lengths, which are the model's tokens as written).
std::vector<std::string> lengths_in_model_tokens(LengthDist& input, LengthDist& output, const model::ModelSpec& m);

enum class ArrivalKind { Burst, Poisson, Constant, Closed, Trace };

struct StreamSpec {
  ArrivalKind kind = ArrivalKind::Burst;
  std::int64_t requests = 100;   // how many requests in all
  double rate = 0;               // Poisson / Constant: requests per second (> 0)
  std::int64_t concurrency = 1;  // Closed: clients, each with one request in flight
  LengthDist input{LengthKind::Fixed, 512, 0};
  LengthDist output{LengthKind::Fixed, 128, 0};
  std::uint64_t seed = 1;
  // A shared prefix of this many tokens before every prompt (0: none), one of `prefix_groups` different ones:
  // request i carries prefix i mod prefix_groups (SGLang's bench_serving generated-shared-prefix dataset:
  // gsp-system-prompt-len tokens of system prompt before each question, gsp-num-groups prompts). The input
  // distribution gives the tokens after it; the prompt is capped at kMaxRequestTokens.
  std::int64_t shared_prefix_tokens = 0;
  std::int64_t prefix_groups = 1;
  // Multi-LoRA serving: every request runs with one of `adapters` LoRA adapters (0: none), drawn by
  // assign_adapters.
  std::int64_t adapters = 0;
  double adapter_zipf = 0;
};

// Gives each request one of `adapters` LoRA adapters: uniformly (zipf_s = 0) or by popularity, adapter i drawn
// with probability proportional to 1 / (i + 1)^zipf_s (S-LoRA's evaluation draws adapters from a power law;
// Sheng et al. 2023). Its own generator (from `seed`), so the arrivals and lengths of a stream stay as they
// were. adapters <= 0 leaves every request on the base model.
void assign_adapters(std::vector<Request>& requests, std::int64_t adapters, double zipf_s, std::uint64_t seed);

// The seeded generator and the transforms the streams use (public for tests).
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : g_(seed) {}
  double uniform();                          // [0, 1), 53 random bits
  double normal();                           // standard normal, Box-Muller (both values used)
  double exponential(double rate);           // inverse CDF
  std::int64_t length(const LengthDist& d);  // a draw rounded to the nearest integer, at least 1 (Sample: a
                                             // uniformly chosen pair)

 private:
  std::mt19937_64 g_;
  bool have_spare_ = false;
  double spare_ = 0;
};

// The requests of a generated stream (kind != Trace), ids 0..requests-1 in arrival order. Closed loop:
// arrival_s = 0 for the first `concurrency` requests, the rest are released by the simulator.
std::vector<Request> generate_requests(const StreamSpec& spec);

// The forms a length flag takes, for help texts and errors (one wording for serve and plan serve).
inline constexpr const char* kLengthForms =
    "N, uniform:MIN-MAX, lognormal:MEAN,STD or a length sample (sharegpt, azure-conv-2023, azure-code-2023, "
    "sample:FILE.csv)";

struct TraceFile {
  std::vector<Request> requests;  // sorted by arrival, ids renumbered in that order
  std::vector<int> lines;         // the file line of each request (parallel to `requests`)
  bool was_sorted = true;         // false: the file's arrivals were out of order and have been sorted
  std::string note;               // what was done to the file's rows (sorting), for the caller to report
};

// Reads a CSV trace with header `arrival_s,input_tokens,output_tokens`, optionally followed by
// `prefix_key,prefix_tokens` (Request's shared prefix; other columns are errors; blank lines and lines
// starting with '#' are skipped). Errors (Input) name file:line, the column and the value: malformed numbers,
// negative arrivals, lengths < 1, a prefix_key that is not a whole number from 0 to 2^53, prefix_tokens
// outside 0..input_tokens + output_tokens, a wrong header, no rows. Unsorted arrivals are sorted (stable) and reported
// in `note`.
TraceFile read_trace_csv(const std::string& path);

}  // namespace llmsim::sim
