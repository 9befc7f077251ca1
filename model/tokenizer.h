#pragma once
// How finely a model's tokenizer cuts text: characters of English text per token. A length sample counted
// in one tokenizer (a benchmark's ShareGPT prompts in Llama-3.1 tokens) holds more tokens for a model
// whose tokenizer cuts finer (Llama 2's): the same text is chars_per_token(sample) /
// chars_per_token(model) times as many of the model's tokens (sim/serve/length_sample.h in_model_tokens).
#include "llmsim/model/model_spec.h"

namespace llmsim::model {

// The tokenizer a model was released with, identified by its Hugging Face model_type and vocabulary size.
struct TokenizerFamily {
  const char* name;        // for reports: "Llama 2 (SentencePiece, 32,000)"
  double chars_per_token;  // characters of English text per token
  const char* source;      // where the figure comes from
};

// The family of the model's tokenizer; nullptr when the model's tokenizer is not one of the known ones
// (a length sample is then served as counted).
const TokenizerFamily* tokenizer_family(const ModelSpec& m);

}  // namespace llmsim::model
