#include <doctest/doctest.h>

#include "test_util.h"

#include <stdexcept>
#include <string>

#include "llmsim/core/error.h"
#include "llmsim/model/custom_model.h"

using llmsim::Error;
using llmsim::ErrorKind;
using llmsim::Location;
using namespace llmsim::model;

namespace {

using llmsim::test::error_of;

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

const Location kRow{.file = "runs.csv", .line = 7};

CustomDims llama_dims() {
  return {.arch = "llama", .layers = 32, .hidden = 4096, .heads = 32, .kv_heads = 8, .ffn = 14336, .vocab = 128256};
}

}  // namespace

TEST_CASE("custom gpt: Megatron-LM GPT defaults") {
  const ModelSpec m = make_custom_model(
      {.arch = "gpt", .layers = 24, .hidden = 2048, .heads = 16, .vocab = 50304, .max_positions = 2048}, kRow);
  CHECK(m.model_type == "custom-gpt");
  CHECK(m.num_layers == 24);
  CHECK(m.hidden == 2048);
  CHECK(m.num_heads == 16);
  CHECK(m.num_kv_heads == 16);  // kv_heads 0 = heads
  CHECK(m.head_dim == 128);
  CHECK(m.ffn_hidden == 8192);  // ffn 0 = 4 * hidden
  CHECK(m.vocab == 50304);
  CHECK(m.max_positions == 2048);
  CHECK(m.norm == NormKind::LayerNorm);
  CHECK(m.mlp == MlpKind::Plain);
  CHECK(m.activation == "gelu");
  CHECK(m.position == PositionKind::Learned);
  CHECK(m.qkv_bias);
  CHECK(m.out_bias);
  CHECK(m.mlp_bias);
  CHECK(m.tied_embeddings);
  CHECK(m.dropout == doctest::Approx(0.1));
  CHECK_FALSE(m.moe.enabled());
}

TEST_CASE("custom llama: RMSNorm, SwiGLU, RoPE, GQA, no biases, untied, no dropout") {
  const ModelSpec m = make_custom_model(llama_dims(), kRow);
  CHECK(m.model_type == "custom-llama");
  CHECK(m.num_kv_heads == 8);
  CHECK(m.kv_dim() == 1024);
  CHECK(m.ffn_hidden == 14336);
  CHECK(m.norm == NormKind::RmsNorm);
  CHECK(m.mlp == MlpKind::Gated);
  CHECK(m.activation == "silu");
  CHECK(m.position == PositionKind::Rope);
  CHECK_FALSE(m.qkv_bias);
  CHECK_FALSE(m.out_bias);
  CHECK_FALSE(m.mlp_bias);
  CHECK_FALSE(m.tied_embeddings);
  CHECK(m.dropout == 0.0);
}

TEST_CASE("custom model errors carry the caller's location plus the column name") {
  CustomDims d = llama_dims();
  d.hidden = -1;
  const Error e = error_of([&] { make_custom_model(d, kRow); });
  CHECK(e.kind() == ErrorKind::Input);
  CHECK(e.where().file == "runs.csv");
  CHECK(e.where().line == 7);
  CHECK(e.where().key == "hidden");
  CHECK(contains(e.message(), "hidden must be a positive integer, got -1"));

  const Location keyed{.file = "run.toml", .line = 3, .key = "model.custom"};
  d = llama_dims();
  d.layers = 0;
  CHECK(error_of([&] { make_custom_model(d, keyed); }).where().key == "model.custom.layers");
}

TEST_CASE("custom model validation rules") {
  CustomDims d = llama_dims();
  d.arch = "lama";
  const Error arch = error_of([&] { make_custom_model(d, kRow); });
  CHECK(arch.where().key == "arch");
  CHECK(contains(arch.message(), "did you mean 'llama'"));

  d = llama_dims();
  d.heads = 30;  // 4096 / 30 is not whole
  CHECK(contains(error_of([&] { make_custom_model(d, kRow); }).message(), "heads (30) must divide hidden (4096)"));

  d = llama_dims();
  d.kv_heads = 6;
  const Error kv = error_of([&] { make_custom_model(d, kRow); });
  CHECK(kv.where().key == "kv_heads");
  CHECK(contains(kv.message(), "kv_heads (6) must divide heads (32)"));

  d = llama_dims();
  d.ffn = -5;
  CHECK(error_of([&] { make_custom_model(d, kRow); }).where().key == "ffn");

  d = llama_dims();
  d.vocab = 0;
  CHECK(error_of([&] { make_custom_model(d, kRow); }).where().key == "vocab");
}

TEST_CASE("custom gpt is multi-head and needs a sequence length for its position table") {
  const CustomDims gqa{
      .arch = "gpt", .layers = 2, .hidden = 256, .heads = 8, .kv_heads = 2, .vocab = 100, .max_positions = 128};
  CHECK(contains(error_of([&] { make_custom_model(gqa, kRow); }).message(), "multi-head attention"));
  const CustomDims no_len{.arch = "gpt", .layers = 2, .hidden = 256, .heads = 8, .vocab = 100};
  const Error e = error_of([&] { make_custom_model(no_len, kRow); });
  CHECK(e.where().key == "seq_len");
  // A llama has no position table, so it does not need one.
  CHECK(
      make_custom_model({.arch = "llama", .layers = 2, .hidden = 256, .heads = 8, .vocab = 100}, kRow).max_positions ==
      0);
}
