#include "llmsim/model/custom_model.h"

#include "llmsim/model/param_count.h"

#include <fmt/format.h>

#include "llmsim/core/suggest.h"

namespace llmsim::model {

namespace {

// The caller's location with the offending column appended to its key path.
Location at(const Location& where, const std::string& key) {
  Location loc = where;
  loc.key = where.key.empty() ? key : where.key + "." + key;
  return loc;
}

// Sizes past `cap` are no model's (param_count.h: the bounds the config.json reader applies too).
void require_at_most(const Location& where, const std::string& key, std::int64_t value, std::int64_t cap) {
  if (value > cap)
    throw_input(at(where, key), fmt::format("{} = {} is larger than any model's (at most {})", key, value, cap));
}

void require_positive(const Location& where, const std::string& key, std::int64_t value,
                      std::int64_t cap = kMaxModelDimension) {
  if (value <= 0) throw_input(at(where, key), fmt::format("{} must be a positive integer, got {}", key, value));
  require_at_most(where, key, value, cap);
}

// 0 means "use the default"; anything else must be positive.
void require_unset_or_positive(const Location& where, const std::string& key, std::int64_t value) {
  if (value < 0)
    throw_input(at(where, key), fmt::format("{} must be positive (or empty for the default), got {}", key, value));
  require_at_most(where, key, value, kMaxModelDimension);
}

void validate(const CustomDims& d, const Location& where) {
  const std::vector<std::string> archs{"gpt", "llama"};
  if (d.arch != "gpt" && d.arch != "llama")
    throw_input(at(where, "arch"),
                fmt::format("arch must be one of {}, got '{}'{}", join(archs), d.arch, did_you_mean(d.arch, archs)));
  require_positive(where, "layers", d.layers, kMaxModelLayers);
  require_positive(where, "hidden", d.hidden);
  require_positive(where, "heads", d.heads);
  require_positive(where, "vocab", d.vocab);
  require_unset_or_positive(where, "kv_heads", d.kv_heads);
  require_unset_or_positive(where, "ffn", d.ffn);
  if (d.hidden % d.heads != 0)
    throw_input(
        at(where, "heads"),
        fmt::format("heads ({}) must divide hidden ({}) so that every head has the same width", d.heads, d.hidden));
  const std::int64_t kv = d.kv_heads == 0 ? d.heads : d.kv_heads;
  if (d.heads % kv != 0)
    throw_input(at(where, "kv_heads"),
                fmt::format("kv_heads ({}) must divide heads ({}) so that each KV head serves the same number of "
                            "query heads",
                            kv, d.heads));
  if (d.arch == "gpt" && kv != d.heads)
    throw_input(at(where, "kv_heads"),
                fmt::format("arch gpt uses multi-head attention: kv_heads must equal heads ({}) or be empty, got {}",
                            d.heads, kv));
  // The learned position table of gpt has one row per position, sized by the run's sequence length.
  if (d.arch == "gpt" && d.max_positions <= 0)
    throw_input(at(where, "seq_len"),
                fmt::format("arch gpt needs a positive sequence length for its learned position table, got {}",
                            d.max_positions));
  require_unset_or_positive(where, "seq_len", d.max_positions);
}

}  // namespace

ModelSpec make_custom_model(const CustomDims& dims, const Location& where) {
  validate(dims, where);
  ModelSpec m;
  m.num_layers = dims.layers;
  m.hidden = dims.hidden;
  m.num_heads = dims.heads;
  m.num_kv_heads = dims.kv_heads == 0 ? dims.heads : dims.kv_heads;
  m.head_dim = dims.hidden / dims.heads;
  m.ffn_hidden = dims.ffn == 0 ? 4 * dims.hidden : dims.ffn;
  m.vocab = dims.vocab;
  m.max_positions = dims.max_positions;
  if (dims.arch == "gpt") {
    // Megatron-LM GPT defaults.
    m.name = m.model_type = "custom-gpt";
    m.fused_qkv = true;  // Megatron-style fused QKV
    m.norm = NormKind::LayerNorm;
    m.mlp = MlpKind::Plain;
    m.activation = "gelu";
    m.position = PositionKind::Learned;
    m.qkv_bias = m.out_bias = m.mlp_bias = true;
    m.tied_embeddings = true;
    m.dropout = 0.1;
    m.rope_theta = 0.0;  // no rotary embedding
    m.rotary_fraction = 0.0;
  } else {
    m.name = m.model_type = "custom-llama";
    m.norm = NormKind::RmsNorm;
    m.mlp = MlpKind::Gated;
    m.activation = "silu";
    m.position = PositionKind::Rope;
    m.tied_embeddings = false;
    m.dropout = 0.0;
  }
  check_param_counts(m, where);
  return m;
}

}  // namespace llmsim::model
