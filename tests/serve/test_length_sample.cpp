// Length samples (sim/serve/length_sample.h): the shipped ShareGPT sample, in-order paired draws,
// file errors, and the mechanism they exist for: a real stream's length tail sets an offline run's makespan.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "llmsim/model/presets.h"
#include "llmsim/run/engine_profile.h"
#include "llmsim/serve/length_sample.h"
#include "llmsim/serve/request_stream.h"
#include "llmsim/serve/serving_sim.h"
#include "test_util.h"

using namespace llmsim;
using llmsim::test::error_of;
using llmsim::test::write_temp;

namespace {
// A sample's prompt and reply tokens, and its requests that received no token.
struct Totals {
  std::int64_t in = 0, out = 0, zeros = 0;
};
Totals totals(const sim::LengthSample& s) {
  Totals t;
  for (std::size_t i = 0; i < s.size(); ++i) {
    t.in += s.input[i];
    t.out += s.output[i];
    t.zeros += s.output[i] == 0 ? 1 : 0;
  }
  return t;
}
}  // namespace

TEST_CASE("length samples: the shipped sharegpt sample is the benchmark's 320 requests") {
  const auto s = sim::load_length_sample("sharegpt", LLMSIM_DATA_DIR);
  REQUIRE(s->size() == 320);
  const auto [in, out, zeros] = totals(*s);
  // The source file's own totals (total_input_tokens 65814, total_output_tokens 60364).
  CHECK(in == 65814);
  CHECK(out == 60364);
  CHECK(zeros == 83);
  // Served lengths count a reply that never came as one token: (60364 + 83) / 320.
  CHECK(s->mean_output() == doctest::Approx((60364.0 + 83.0) / 320.0));
  CHECK(s->mean_input() == doctest::Approx(65814.0 / 320.0));
  CHECK(s->source.find("benchmark_serving.py") != std::string::npos);
  CHECK(sim::load_length_sample("sharegpt", LLMSIM_DATA_DIR) == s);  // read once
  const auto names = sim::shipped_length_samples(LLMSIM_DATA_DIR);
  CHECK(std::find(names.begin(), names.end(), "sharegpt") != names.end());
}

TEST_CASE("length samples: the same 320 prompts with the replies of three more models (Lambda's result files)") {
  // Each file's total_input_tokens and total_output_tokens, and its requests that received no token.
  struct Expected {
    const char* name;
    std::int64_t in, out, zeros;
  };
  for (const Expected e : {Expected{"sharegpt-llama3.1-8b-base", 65578, 44463, 105},
                           Expected{"sharegpt-mistral-7b-instruct", 73671, 71203, 34},
                           Expected{"sharegpt-mixtral-8x7b-instruct", 73671, 69677, 48}}) {
    CAPTURE(e.name);
    const auto s = sim::load_length_sample(e.name, LLMSIM_DATA_DIR);
    REQUIRE(s->size() == 320);
    const Totals t = totals(*s);
    CHECK(t.in == e.in);
    CHECK(t.out == e.out);
    CHECK(t.zeros == e.zeros);
  }
}

TEST_CASE("length samples and traces: the shipped Azure LLM inference traces of 2023 (code, conversation)") {
  // Azure/AzurePublicDataset data/AzureLLMInferenceTrace_{code,conv}.csv: 8,819 and 19,366 requests whose
  // ContextTokens sum to 18,059,974 and 22,361,870 and GeneratedTokens to 245,896 and 4,088,665 (summed from
  // the source files); no request generated 0 tokens. The traces keep the arrivals: the code trace's last
  // request came 3,435.948 s after its first (19:14:19.928016 - 18:17:03.979960), the conversation trace's
  // 3,501.722 s after (19:14:08.402527 - 18:15:46.680590).
  struct Expected {
    const char* name;
    std::size_t size;
    std::int64_t in, out;
    double span_s;
  };
  for (const Expected e : {Expected{"azure-code-2023", 8819, 18059974, 245896, 3435.948056},
                           Expected{"azure-conv-2023", 19366, 22361870, 4088665, 3501.721937}}) {
    CAPTURE(e.name);
    const auto s = sim::load_length_sample(e.name, LLMSIM_DATA_DIR);
    REQUIRE(s->size() == e.size);
    std::int64_t in = 0, out = 0;
    for (std::size_t i = 0; i < s->size(); ++i) {
      in += s->input[i];
      out += s->output[i];
    }
    CHECK(in == e.in);
    CHECK(out == e.out);
    CHECK(s->mean_output() == doctest::Approx(static_cast<double>(e.out) / static_cast<double>(e.size)));
    CHECK(s->source.find("Azure LLM inference trace 2023") != std::string::npos);
    const auto t = sim::read_trace_csv(std::string(LLMSIM_DATA_DIR) + "/traces/" + e.name + ".csv");
    REQUIRE(t.requests.size() == e.size);
    CHECK(t.was_sorted);
    CHECK(t.requests.front().arrival_s == 0);
    CHECK(t.requests.back().arrival_s == doctest::Approx(e.span_s).epsilon(1e-9));
    // The trace and the sample hold the same requests in the same order.
    for (std::size_t i = 0; i < e.size; i += 997) {
      CHECK(t.requests[i].input_tokens == s->input[i]);
      CHECK(t.requests[i].output_tokens == s->output[i]);
    }
  }
  const auto names = sim::shipped_length_samples(LLMSIM_DATA_DIR);
  CHECK(std::find(names.begin(), names.end(), "azure-conv-2023") != names.end());
}

TEST_CASE("length samples: a stream takes the pairs in order, cycling; a reply of 0 tokens is served as 1") {
  const auto path = write_temp("sample-abc.csv", "# a test sample\ninput_tokens,output_tokens\n10,5\n20,0\n30,7\n");
  sim::StreamSpec spec;
  spec.requests = 7;
  spec.input = sim::parse_length_dist("sample:" + path, "--input-dist");
  spec.output = sim::parse_length_dist("sample:" + path, "--output-dist", "", true);
  REQUIRE(spec.input.kind == sim::LengthKind::Sample);
  CHECK(spec.input.sample == spec.output.sample);
  CHECK(spec.input.sample->source == "a test sample");
  CHECK(spec.input.mean() == doctest::Approx(20));
  CHECK(spec.output.mean() == doctest::Approx((5 + 1 + 7) / 3.0));
  CHECK(spec.input.describe().find("3 requests in order") != std::string::npos);
  const auto reqs = sim::generate_requests(spec);
  REQUIRE(reqs.size() == 7);
  const std::int64_t want_in[] = {10, 20, 30, 10, 20, 30, 10};
  const std::int64_t want_out[] = {5, 1, 7, 5, 1, 7, 5};
  for (std::size_t i = 0; i < 7; ++i) {
    CHECK(reqs[i].input_tokens == want_in[i]);
    CHECK(reqs[i].output_tokens == want_out[i]);
  }
  // A sample for one side only leaves the other's draws as they were: the lengths generator is untouched.
  sim::StreamSpec mixed = spec;
  mixed.output = sim::parse_length_dist("lognormal:100,50", "--output-dist");
  sim::StreamSpec plain = mixed;
  plain.input = sim::parse_length_dist("512", "--input-dist");
  const auto a = sim::generate_requests(mixed), b = sim::generate_requests(plain);
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(a[i].output_tokens == b[i].output_tokens);
}

TEST_CASE("length samples: errors name the file, line, column and value") {
  const auto msg = [](const std::string& name, const std::string& text) {
    const auto p = write_temp(name, text);
    return std::string(error_of([&] { sim::read_length_sample(p); }).what());
  };
  CHECK(msg("ls-hdr.csv", "in,out\n1,2\n").find("ls-hdr.csv:1") != std::string::npos);
  CHECK(msg("ls-neg.csv", "input_tokens,output_tokens\n10,-1\n").find("ls-neg.csv:2:4: output_tokens = '-1'") !=
        std::string::npos);
  CHECK(msg("ls-zero.csv", "input_tokens,output_tokens\n0,3\n").find("input_tokens = '0': must be an integer from 1") !=
        std::string::npos);
  CHECK(msg("ls-frac.csv", "input_tokens,output_tokens\n1.5,3\n").find("'1.5'") != std::string::npos);
  CHECK(msg("ls-nan.csv", "input_tokens,output_tokens\nnan,3\n").find("'nan'") != std::string::npos);
  CHECK(msg("ls-huge.csv", "input_tokens,output_tokens\n1e300,3\n").find("'1e300'") != std::string::npos);
  CHECK(msg("ls-empty.csv", "input_tokens,output_tokens\n").find("no requests") != std::string::npos);
  CHECK(msg("ls-fields.csv", "input_tokens,output_tokens\n1,2,3\n").find("expected 2 fields") != std::string::npos);
  CHECK(msg("ls-cpt.csv", "# a sample\n# chars_per_token: 0.5 (too fine)\ninput_tokens,output_tokens\n1,2\n")
            .find("ls-cpt.csv:2: chars_per_token: chars_per_token = '0.5': must be a number from 1 to 10") !=
        std::string::npos);
  CHECK(msg("ls-cpt-nan.csv", "# chars_per_token: nan\ninput_tokens,output_tokens\n1,2\n").find("'nan'") !=
        std::string::npos);
  const auto unknown = error_of([] { sim::parse_length_dist("sharegtp", "--input-dist", LLMSIM_DATA_DIR); });
  CHECK(unknown.kind() == ErrorKind::NotFound);
  CHECK(std::string(unknown.what()).find("did you mean 'sharegpt'") != std::string::npos);
  CHECK(error_of([] { sim::read_length_sample("/nonexistent/s.csv"); }).kind() == ErrorKind::NotFound);
}

TEST_CASE("a length sample in another tokenizer is served in the model's tokens (Llama 3 paper: 3.94 vs 3.17)") {
  const auto s = sim::load_length_sample("sharegpt", LLMSIM_DATA_DIR);
  CHECK(s->chars_per_token == 3.94);  // counted in the Llama-3.1 tokenizer
  // Llama 2's tokenizer cuts the same text into 3.94 / 3.17 = 1.243 times as many tokens.
  const auto llama2 = sim::in_model_tokens(s, model::resolve_model("llama2-7b", LLMSIM_DATA_DIR));
  REQUIRE(llama2.sample != s);
  CHECK(llama2.sample->mean_input() == doctest::Approx(s->mean_input() * 3.94 / 3.17).epsilon(0.002));
  CHECK(llama2.sample->output[0] == std::llround(static_cast<double>(s->output[0]) * 3.94 / 3.17));
  CHECK(llama2.note.find("x1.24 in llama2-7b tokens") != std::string::npos);
  // The sample's own tokenizer: as counted, nothing to say.
  const auto llama3 = sim::in_model_tokens(s, model::resolve_model("llama3-8b", LLMSIM_DATA_DIR));
  CHECK(llama3.sample == s);
  CHECK(llama3.note.empty());
  // Mistral's tokenizer: 3.52 characters per token, from the same prompts counted in both tokenizers.
  const auto mistral = sim::in_model_tokens(s, model::resolve_model("mistral-7b", LLMSIM_DATA_DIR));
  CHECK(mistral.sample->mean_input() == doctest::Approx(73671.0 / 320).epsilon(0.003));
  const auto own = sim::load_length_sample("sharegpt-mistral-7b-instruct", LLMSIM_DATA_DIR);
  CHECK(sim::in_model_tokens(own, model::resolve_model("mixtral-8x7b", LLMSIM_DATA_DIR)).sample == own);
  // A tokenizer llmsim does not know (Qwen2's), or a sample that does not say: served as counted, and said so.
  const auto qwen = sim::in_model_tokens(s, model::resolve_model("qwen2-7b", LLMSIM_DATA_DIR));
  CHECK(qwen.sample == s);
  CHECK(qwen.note.find("not one llmsim knows") != std::string::npos);
  const auto azure = sim::load_length_sample("azure-conv-2023", LLMSIM_DATA_DIR);
  CHECK(azure->chars_per_token == 0);
  const auto traced = sim::in_model_tokens(azure, model::resolve_model("llama2-7b", LLMSIM_DATA_DIR));
  CHECK(traced.sample == azure);
  CHECK(traced.note.find("does not say which tokenizer") != std::string::npos);
}

TEST_CASE("a real stream's length tail sets an offline run's makespan (hand-checked)") {
  // 1 ms per iteration + 1 us per token: iterations, not tokens, dominate, as in decode-bound serving.
  const auto cost = sim::exact_time([](const std::vector<sim::SequenceWork>& b) {
    double tokens = 0;
    for (const auto& s : b) tokens += static_cast<double>(s.new_tokens);
    return 1e-3 + 1e-6 * tokens;
  });
  const auto sample = sim::load_length_sample("sharegpt", LLMSIM_DATA_DIR);
  sim::StreamSpec spec;
  spec.requests = 320;
  spec.input = sim::LengthDist{.kind = sim::LengthKind::Sample, .sample = sample};
  spec.output = sim::LengthDist{.kind = sim::LengthKind::Sample, .sample = sample, .sample_output = true};
  sim::StreamSpec fixed = spec;  // the same mean lengths, every request alike
  fixed.input = sim::LengthDist{sim::LengthKind::Fixed, std::round(sample->mean_input()), 0};
  fixed.output = sim::LengthDist{sim::LengthKind::Fixed, std::round(sample->mean_output()), 0};
  sim::ServingSetup setup;
  setup.engine = sim::engine_profile(sim::Framework::Vllm);
  setup.kv_capacity_tokens = 1'000'000;  // no KV pressure and every request in one batch: only the lengths differ
  setup.engine.max_num_seqs = 1024;
  const auto real = sim::run_serving(sim::generate_requests(spec), setup, cost);
  const auto same = sim::run_serving(sim::generate_requests(fixed), setup, cost);
  REQUIRE(real.completed == 320);
  REQUIRE(same.completed == 320);
  // The longest reply (779 tokens) needs 779 decode iterations of >= 1 ms after its prefill: >= 0.779 s.
  // Equal requests of 189 tokens finish together after ~189 iterations plus the prefills: ~0.2-0.35 s.
  CHECK(real.duration_s >= 0.779);
  CHECK(same.duration_s < 0.4);
  // Nearly the same tokens, a makespan several times longer: throughput falls with the tail.
  CHECK(real.output_tokens_per_s.value < 0.5 * same.output_tokens_per_s.value);
}
