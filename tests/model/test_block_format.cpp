// Weight formats with their exact storage (model/block_format.h): GGUF file types by llama.cpp's recipe and
// EXL2's bits, against byte counts derived by hand from ggml's block structs.
#include <doctest/doctest.h>

#include <string>

#include "llmsim/model/block_format.h"
#include "llmsim/model/presets.h"

using namespace llmsim;
using namespace llmsim::model;

namespace {
BlockFormat parsed(const char* text) {
  std::string why;
  const auto f = parse_block_format(text, why);
  REQUIRE_MESSAGE(f.has_value(), why);
  return *f;
}
constexpr double kQ4K = 8.0 * 144 / 256;  // block_q4_K: 2 fp16 + 12 scale bytes + 128 nibble bytes per 256
constexpr double kQ5K = 8.0 * 176 / 256;
constexpr double kQ6K = 8.0 * 210 / 256;  // block_q6_K: 128 + 64 + 16 + 2 bytes per 256 = 6.5625 bits
}  // namespace

TEST_CASE("GGUF block types: bits per weight from ggml's block structs") {
  CHECK(kQ4K == 4.5);
  CHECK(kQ6K == 6.5625);
  const ModelSpec m = resolve_model("llama2-7b", LLMSIM_DATA_DIR);
  // Q4_0 and Q8_0 store every projection in one type (18 and 34 bytes per 32 weights); the LM head of a Q4_0
  // file is Q6_K, a Q8_0 file keeps Q8_0.
  const StoredBits q40 = stored_bits(parsed("gguf:Q4_0"), m);
  CHECK(q40.linear == doctest::Approx(4.5));
  CHECK(q40.head == doctest::Approx(6.5625));
  CHECK(q40.embedding == doctest::Approx(4.5));
  const StoredBits q80 = stored_bits(parsed("gguf:Q8_0"), m);
  CHECK(q80.linear == doctest::Approx(8.5));
  CHECK(q80.head == doctest::Approx(8.5));
  const StoredBits f16 = stored_bits(parsed("gguf:F16"), m);
  CHECK(f16.linear == doctest::Approx(16));
  CHECK(f16.head == doctest::Approx(16));
}

TEST_CASE("GGUF Q4_K_M on Llama-2-7B: half of v and down in Q6_K, 4.08 GB in all") {
  const ModelSpec m = resolve_model("llama2-7b", LLMSIM_DATA_DIR);
  const StoredBits b = stored_bits(parsed("gguf:Q4_K_M"), m);
  // By hand: use_more_bits picks 16 of the 32 layers (0-3, 28-31 and every third from 6 to 27); per layer q, k,
  // o (16.78 M each), gate and up (45.09 M each) in Q4_K; v and down in Q6_K on those 16 layers, Q4_K elsewhere.
  const double qko = 4096.0 * 4096.0, mlp = 4096.0 * 11008.0;
  const double per_layer = 4 * qko + 3 * mlp;
  const double bits = 32 * (3 * qko + 2 * mlp) * kQ4K + 16 * (qko + mlp) * (kQ6K + kQ4K);
  CHECK(b.linear == doctest::Approx(bits / (32 * per_layer)).epsilon(1e-12));
  CHECK(b.linear == doctest::Approx(4.8153).epsilon(1e-4));
  CHECK(b.head == doctest::Approx(kQ6K));
  CHECK(b.embedding == doctest::Approx(kQ4K));
  // The whole file: the layers, token_embd (Q4_K), output (Q6_K) and the fp32 norms (65 of 4096): TheBloke's
  // llama-2-7b.Q4_K_M.gguf is 4.08 GB.
  const double table = 32000.0 * 4096.0;
  const double file_bytes = (bits + table * (kQ4K + kQ6K) + 65 * 4096.0 * 32) / 8;
  CHECK(file_bytes / 1e9 == doctest::Approx(4.08).epsilon(0.002));
  // The one rule of memory and the iteration cost: projections at their mean, the rest at the mean of the head
  // and the embedding.
  const InferenceWeightBytes wb = inference_weight_bytes(parsed("gguf:Q4_K_M"), WeightQuant::Int4, DType::FP16, m);
  CHECK(wb.linear == doctest::Approx(b.linear / 8));
  CHECK(wb.other == doctest::Approx((kQ4K + kQ6K) / 16));
  // Without a block format the format of model_spec.h prices the weights, as before.
  const InferenceWeightBytes int4 = inference_weight_bytes(std::nullopt, WeightQuant::Int4, DType::FP16, m);
  CHECK(int4.linear == doctest::Approx(quantized_weight_bytes(WeightQuant::Int4, DType::FP16)));
  CHECK(int4.other == 2.0);
}

TEST_CASE("GGUF Q4_K_M on a 70B model: llama.cpp's 70B rule gives the small value projection Q5_K") {
  const ModelSpec m = resolve_model("llama3-70b", LLMSIM_DATA_DIR);
  REQUIRE(m.num_layers == 80);
  const StoredBits b = stored_bits(parsed("gguf:Q4_K_M"), m);
  // 40 of the 80 layers use more bits (0-9, 70-79, every third from 12 to 69): v in Q6_K there, Q5_K elsewhere
  // (not Q4_K: the 70B rule); down in Q6_K there, Q4_K elsewhere.
  const double h = 8192, kv = 1024, ffn = 28672;
  const double q4 = (2 * h * h + h * kv + 2 * h * ffn) * kQ4K;
  const double v = h * kv * (kQ6K + kQ5K) / 2, down = h * ffn * (kQ6K + kQ4K) / 2;
  const double per_layer = 2 * h * h + 2 * h * kv + 3 * h * ffn;
  CHECK(b.linear == doctest::Approx((q4 + v + down) / per_layer).epsilon(1e-12));
}

TEST_CASE("EXL2: the converter's bits over the layers, a 6-bit head, the embedding in host memory") {
  const ModelSpec m = resolve_model("llama2-7b", LLMSIM_DATA_DIR);
  const BlockFormat f = parsed("exl2:4.65");
  CHECK(f.text() == "exl2:4.65");
  const StoredBits b = stored_bits(f, m);
  CHECK(b.linear == 4.65);
  CHECK(b.head == 6.0);
  CHECK(b.embedding == 0.0);
  CHECK(kernel_format(f) == WeightQuant::Int4);
  CHECK(kernel_format(parsed("gguf:Q8_0")) == WeightQuant::Int8);
  CHECK(kernel_format(parsed("gguf:F16")) == WeightQuant::None);
}

TEST_CASE("block format spellings: other text is not one, unknown types and bits are refused with the rule") {
  std::string why;
  CHECK_FALSE(parse_block_format("int4", why).has_value());
  CHECK(why.empty());
  CHECK_FALSE(is_block_format_text("awq"));
  CHECK(is_block_format_text("gguf:whatever"));
  CHECK_FALSE(parse_block_format("gguf:Q4_X", why).has_value());
  CHECK(why.find("gguf:Q4_X is not a GGUF file type llmsim knows; known: Q4_0") != std::string::npos);
  for (const char* bad : {"exl2:9", "exl2:1.5", "exl2:abc", "exl2:", "exl2:nan"}) {
    CHECK_FALSE_MESSAGE(parse_block_format(bad, why).has_value(), bad);
    CHECK_MESSAGE(why.find("from 2 to 8") != std::string::npos, bad);
  }
}
