// The tokenizer a model was released with (model/tokenizer.h): known by model_type and vocabulary size.
#include <doctest/doctest.h>

#include "llmsim/model/presets.h"
#include "llmsim/model/tokenizer.h"

using namespace llmsim::model;

TEST_CASE("tokenizer families: Llama 2 and Llama 3 apart by vocabulary, Mistral's, and the unknown ones") {
  const auto cpt = [](const char* preset) {
    const TokenizerFamily* f = tokenizer_family(resolve_model(preset, LLMSIM_DATA_DIR));
    return f ? f->chars_per_token : 0.0;
  };
  CHECK(cpt("llama2-7b") == 3.17);  // Llama 3 paper, section 3.1
  CHECK(cpt("llama2-70b") == 3.17);
  CHECK(cpt("llama3-8b") == 3.94);
  CHECK(cpt("llama3.1-405b") == 3.94);
  CHECK(cpt("mistral-7b") == 3.52);
  CHECK(cpt("mixtral-8x7b") == 3.52);
  CHECK(cpt("qwen2-7b") == 0);  // not known: samples are served as counted
  // A fine-tune that resized the vocabulary (Code Llama: 32,016) is not the released tokenizer.
  ModelSpec code = resolve_model("llama2-7b", LLMSIM_DATA_DIR);
  code.vocab = 32016;
  CHECK(tokenizer_family(code) == nullptr);
}
