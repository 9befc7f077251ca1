#include "llmsim/model/tokenizer.h"

#include <array>
#include <string_view>

namespace llmsim::model {

namespace {

// Llama 3 paper (Dubey et al. 2024, arXiv:2407.21783, section 3.1): "Compared to the Llama 2 tokenizer, our new
// tokenizer improves compression rates on a sample of English data from 3.17 to 3.94 characters per token."
constexpr TokenizerFamily kLlama2{"Llama 2 (SentencePiece BPE, 32,000 tokens)", 3.17,
                                  "Llama 3 paper (arXiv:2407.21783) section 3.1: 3.17 characters per token"};
constexpr TokenizerFamily kLlama3{"Llama 3 (tiktoken BPE, 128,256 tokens)", 3.94,
                                  "Llama 3 paper (arXiv:2407.21783) section 3.1: 3.94 characters per token"};
// Mistral's SentencePiece tokenizers (v0.1: 32,000 tokens, Mixtral's too; v0.3: 32,768, the v0.1 vocabulary with
// control tokens added). No published figure: the shipped ShareGPT samples (data/lengths) count the same 320
// prompts as 65,814 Llama-3.1 tokens and 73,671 Mistral-7B-Instruct-v0.3 tokens (Mixtral-8x7B-Instruct-v0.1's
// tokenizer gives the same counts), so 3.94 x 65,814 / 73,671 = 3.52 characters per token.
constexpr TokenizerFamily kMistral{"Mistral (SentencePiece BPE, 32,000 / 32,768 tokens)", 3.52,
                                   "3.94 x 65,814 / 73,671: the same 320 ShareGPT prompts in Llama-3.1 and Mistral "
                                   "tokens (data/lengths/sharegpt.csv, sharegpt-mistral-7b-instruct.csv)"};

struct Match {
  std::string_view model_type;
  std::int64_t vocab;
  const TokenizerFamily* family;
};

// The vocabulary size tells the released tokenizers of a model family apart (Llama 2 and Llama 3 share the
// "llama" model_type); a fine-tune that resizes the vocabulary matches none and is served as counted.
constexpr std::array<Match, 6> kMatches{{{"llama", 32000, &kLlama2},
                                         {"llama", 128256, &kLlama3},
                                         {"mistral", 32000, &kMistral},
                                         {"mistral", 32768, &kMistral},
                                         {"mixtral", 32000, &kMistral},
                                         {"mixtral", 32768, &kMistral}}};

}  // namespace

const TokenizerFamily* tokenizer_family(const ModelSpec& m) {
  for (const Match& x : kMatches)
    if (x.model_type == m.model_type && x.vocab == m.vocab) return x.family;
  return nullptr;
}

}  // namespace llmsim::model
