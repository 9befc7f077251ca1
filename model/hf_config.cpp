#include "llmsim/model/hf_config.h"

#include "llmsim/model/param_count.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <string_view>

#include "llmsim/core/suggest.h"

namespace llmsim::model {

namespace {

// The bounds of param_count.h, under the names this file uses.
constexpr std::int64_t kMaxDimension = kMaxModelDimension;
constexpr std::int64_t kMaxLayers = kMaxModelLayers;

using nlohmann::json;

// How a JSON value looks in an error message: its JSON text (strings keep their quotes), shortened.
std::string shown(const json& v) {
  std::string s = v.dump();
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

// Reads keys of the object describing the text model (the root, or root["text_config"] of a multimodal
// config). Hugging Face configs are a foreign format: unknown keys are ignored, but every key we read
// is type-checked. A key holding null means "not set" (Python None), exactly as transformers reads it.
class Reader {
 public:
  Reader(const JsonDocument& doc, const json& obj, std::string prefix,
         std::shared_ptr<std::set<std::string>> read = std::make_shared<std::set<std::string>>())
      : doc_(doc), obj_(obj), prefix_(std::move(prefix)), read_(std::move(read)) {}

  // Location of `key` inside this object: searched after the object's own key so that a nested
  // text_config.hidden_size is not confused with a vision_config.hidden_size earlier in the file.
  Location where(const std::string& key) const {
    Location loc{.file = doc_.file, .key = prefix_ + key};
    std::size_t from = 0;
    if (!prefix_.empty()) {
      const std::string owner = "\"" + prefix_.substr(0, prefix_.size() - 1) + "\"";
      const std::size_t p = doc_.text.find(owner);
      if (p != std::string::npos) from = p;
    }
    const std::size_t pos = doc_.text.find("\"" + key + "\"", from);
    if (pos != std::string::npos) line_col(doc_.text, pos, loc.line, loc.column);
    return loc;
  }

  // The value of `key`, or nullptr when absent or null.
  const json* get(const std::string& key) const {
    read_->insert(prefix_ + key);
    const auto it = obj_.find(key);
    if (it == obj_.end() || it->is_null()) return nullptr;
    return &*it;
  }
  bool present(const std::string& key) const {
    read_->insert(prefix_ + key);
    return obj_.contains(key);
  }

  // This object's keys no reader asked for, in file order.
  std::vector<std::string> unread() const {
    std::vector<std::string> out;
    for (auto it = obj_.begin(); it != obj_.end(); ++it)
      if (!read_->count(prefix_ + it.key())) out.push_back(it.key());
    return out;
  }

  [[noreturn]] void fail(const std::string& key, const std::string& rule) const { throw_input(where(key), rule); }

  std::int64_t integer(const std::string& key, std::int64_t fallback) const {
    const json* v = get(key);
    if (!v) return fallback;
    // Hugging Face writes dimensions as JSON integers; 4096.0 or "4096" means a broken file.
    if (!v->is_number_integer()) fail(key, fmt::format("{} must be an integer, got {}", key, shown(*v)));
    return v->get<std::int64_t>();
  }

  // A positive integer (null or absent: `fallback`, as Python's None takes the default). Sizes past
  // `cap` (kMaxDimension, or kMaxLayers for layer counts) are no model's and would overflow the
  // simulators' products.
  std::int64_t positive(const std::string& key, std::int64_t fallback, std::int64_t cap = kMaxDimension) const {
    const std::int64_t n = integer(key, fallback);
    if (n <= 0) fail(key, fmt::format("{} must be a positive integer, got {}", key, n));
    if (n > cap) fail(key, fmt::format("{} = {} is larger than any model's (at most {})", key, n, cap));
    return n;
  }

  // A dimension the model cannot be built without (hidden size, layers, heads, vocab, MLP width): absent
  // takes the family default, but an explicit null is refused, as transformers would fail on it.
  std::int64_t dimension(const std::string& key, std::int64_t fallback, std::int64_t cap = kMaxDimension) const {
    if (present(key) && !get(key)) fail(key, fmt::format("{} is null: give a positive integer", key));
    return positive(key, fallback, cap);
  }

  std::int64_t non_negative(const std::string& key, std::int64_t fallback, std::int64_t cap = kMaxDimension) const {
    const std::int64_t n = integer(key, fallback);
    if (n < 0) fail(key, fmt::format("{} must be zero or positive, got {}", key, n));
    if (n > cap) fail(key, fmt::format("{} = {} is larger than any model's (at most {})", key, n, cap));
    return n;
  }

  double number(const std::string& key, double fallback) const {
    const json* v = get(key);
    if (!v) return fallback;
    if (!v->is_number()) fail(key, fmt::format("{} must be a number, got {}", key, shown(*v)));
    return v->get<double>();
  }

  // A probability in [0, 1) (dropout rates).
  double probability(const std::string& key, double fallback) const {
    const double p = number(key, fallback);
    if (p < 0.0 || p >= 1.0) fail(key, fmt::format("{} must be in [0, 1), got {}", key, p));
    return p;
  }

  bool boolean(const std::string& key, bool fallback) const {
    const json* v = get(key);
    if (!v) return fallback;
    if (!v->is_boolean()) fail(key, fmt::format("{} must be true or false, got {}", key, shown(*v)));
    return v->get<bool>();
  }

  std::string string(const std::string& key, const std::string& fallback) const {
    const json* v = get(key);
    if (!v) return fallback;
    if (!v->is_string()) fail(key, fmt::format("{} must be a string, got {}", key, shown(*v)));
    return v->get<std::string>();
  }

  // A nested object (rope_parameters, quantization_config), or nullopt when absent or null.
  std::optional<Reader> object(const std::string& key) const {
    const json* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_object()) fail(key, fmt::format("{} must be an object, got {}", key, shown(*v)));
    return Reader(doc_, *v, prefix_ + key + ".", read_);
  }

  const JsonDocument& doc() const { return doc_; }

 private:
  const JsonDocument& doc_;
  const json& obj_;
  std::string prefix_;
  std::shared_ptr<std::set<std::string>> read_;  // every key any reader of this document asked for
};

// The Hugging Face defaults of one llama-like family (the keyword defaults of its *Config class).
struct Defaults {
  std::int64_t vocab;
  std::int64_t hidden;
  std::int64_t ffn;
  std::int64_t layers;
  std::int64_t heads;
  std::int64_t kv_heads;  // 0 = num_attention_heads
  std::int64_t max_positions;
  double rope_theta;
};

// rope_theta: transformers >= 5 nests it in rope_parameters, older files keep it at the top level.
double read_rope_theta(const Reader& r, const char* old_key, double fallback) {
  if (const auto rp = r.object("rope_parameters"); rp && rp->get("rope_theta")) {
    const double t = rp->number("rope_theta", fallback);
    if (t <= 0.0) rp->fail("rope_theta", fmt::format("rope_theta must be positive, got {}", t));
    return t;
  }
  const double t = r.number(old_key, fallback);
  if (t <= 0.0) r.fail(old_key, fmt::format("{} must be positive, got {}", old_key, t));
  return t;
}

// Heads, KV heads and head_dim with the divisibility rules the attention layout needs. Families
// without grouped-query attention (gpt2, gpt_neox) pass default_kv_heads < 0: transformers ignores
// num_key_value_heads there, so do we.
void read_attention_shape(const Reader& r, ModelSpec& m, std::int64_t default_heads, std::int64_t default_kv_heads,
                          const char* heads_key = "num_attention_heads") {
  m.num_heads = r.dimension(heads_key, default_heads);
  if (default_kv_heads < 0) {
    m.num_kv_heads = m.num_heads;
  } else {
    // Absent takes the family default; null (None) means multi-head attention, as in transformers.
    const bool absent = !r.present("num_key_value_heads");
    m.num_kv_heads = r.positive("num_key_value_heads", absent && default_kv_heads > 0 ? default_kv_heads : m.num_heads);
  }
  if (m.num_heads % m.num_kv_heads != 0)
    r.fail("num_key_value_heads",
           fmt::format("num_key_value_heads ({}) must divide {} ({}) so that each KV head serves the same "
                       "number of query heads",
                       m.num_kv_heads, heads_key, m.num_heads));
  if (r.get("head_dim")) {
    m.head_dim = r.positive("head_dim", 0);
    return;
  }
  if (m.hidden % m.num_heads != 0)
    r.fail(heads_key, fmt::format("{} ({}) must divide the hidden size ({}) when head_dim is not given", heads_key,
                                  m.num_heads, m.hidden));
  m.head_dim = m.hidden / m.num_heads;
}

// sliding_window when the key is absent takes the family default; null (None) means full attention.
std::int64_t read_window(const Reader& r, std::int64_t absent_default) {
  return r.present("sliding_window") ? r.non_negative("sliding_window", 0) : absent_default;
}

// The decoder shared by llama, mistral, mixtral, qwen2 and qwen2_moe: RMSNorm, SwiGLU, RoPE.
ModelSpec read_llama_like(const Reader& r, const Defaults& d) {
  ModelSpec m;
  m.vocab = r.dimension("vocab_size", d.vocab);
  m.hidden = r.dimension("hidden_size", d.hidden);
  m.ffn_hidden = r.dimension("intermediate_size", d.ffn);
  m.num_layers = r.dimension("num_hidden_layers", d.layers, kMaxLayers);
  read_attention_shape(r, m, d.heads, d.kv_heads);
  m.max_positions = r.positive("max_position_embeddings", d.max_positions);
  m.norm = NormKind::RmsNorm;
  m.mlp = MlpKind::Gated;
  m.position = PositionKind::Rope;
  m.activation = r.string("hidden_act", "silu");
  m.rope_theta = read_rope_theta(r, "rope_theta", d.rope_theta);
  m.tied_embeddings = r.boolean("tie_word_embeddings", false);
  // These decoders drop out attention probabilities only (no residual dropout).
  m.dropout = r.probability("attention_dropout", 0.0);
  return m;
}

ModelSpec read_llama(const Reader& r) {
  // LlamaConfig defaults (a llama-7b shape).
  ModelSpec m = read_llama_like(r, {32000, 4096, 11008, 32, 32, 0, 2048, 10000.0});
  // attention_bias puts biases on q, k, v and o alike; mlp_bias on gate, up and down.
  m.qkv_bias = m.out_bias = r.boolean("attention_bias", false);
  m.mlp_bias = r.boolean("mlp_bias", false);
  return m;
}

// Mistral: sliding_window defaults to 4096 when the key is absent; null means full attention.
ModelSpec read_mistral(const Reader& r) {
  ModelSpec m = read_llama_like(r, {32000, 4096, 14336, 32, 32, 8, 4096 * 32, 10000.0});
  m.sliding_window = read_window(r, 4096);
  m.flash_class_repeats_kv = true;  // MistralFlashAttention2.forward: repeat_kv before _flash_attention_forward
  return m;
}

// Experts per token under `key` (num_experts_per_tok, or a family's own spelling), at most the experts.
std::int64_t read_experts_per_token(const Reader& r, std::int64_t fallback, std::int64_t num_experts,
                                    const char* key = "num_experts_per_tok") {
  const std::int64_t k = r.positive(key, fallback);
  if (k > num_experts)
    r.fail(key, fmt::format("{} ({}) cannot exceed the number of experts ({})", key, k, num_experts));
  return k;
}

// The routed experts of a file that writes num_local_experts (Mixtral, gpt-oss) or, transformers >= 5,
// num_experts; either spelling is accepted.
std::int64_t read_local_experts(const Reader& r, std::int64_t fallback) {
  return r.positive(r.get("num_local_experts") || !r.get("num_experts") ? "num_local_experts" : "num_experts",
                    fallback);
}

ModelSpec read_mixtral(const Reader& r) {
  ModelSpec m = read_llama_like(r, {32000, 4096, 14336, 32, 32, 8, 4096 * 32, 1000000.0});
  m.sliding_window = r.non_negative("sliding_window", 0);  // MixtralConfig default: None
  m.flash_class_repeats_kv = true;                         // MixtralFlashAttention2: copied from Mistral's
  m.moe.num_experts = read_local_experts(r, 8);
  m.moe.experts_per_token = read_experts_per_token(r, 2, m.moe.num_experts);
  // Every Mixtral layer is sparse: intermediate_size is the width of one expert, no dense MLP exists.
  m.moe.expert_ffn = m.ffn_hidden;
  m.ffn_hidden = 0;
  return m;
}

// Qwen2 attention has biases on q, k, v but not on o_proj.
void read_qwen_attention_bias(const Reader& r, ModelSpec& m, bool fallback) {
  m.qkv_bias = r.boolean("qkv_bias", fallback);
  m.out_bias = false;
}

// Qwen2 only slides the window when use_sliding_window is set (then on the layers layer_types marks;
// the spec carries one window for all layers).
void read_qwen_window(const Reader& r, ModelSpec& m) {
  if (r.boolean("use_sliding_window", false)) {
    m.sliding_window = read_window(r, 4096);
  } else {
    // Inert without use_sliding_window (transformers' Qwen2Attention passes no window then).
    r.present("sliding_window");
    r.present("max_window_layers");
  }
}

// The routing of the Qwen MoE families (transformers' Qwen2MoeConfig / Qwen3MoeConfig defaults given).
struct QwenMoeDefaults {
  std::int64_t experts, per_token, expert_ffn, shared_ffn;
};
void read_qwen_moe(const Reader& r, ModelSpec& m, const QwenMoeDefaults& d) {
  // mlp_only_layers lists dense layers by index; the spec models only the decoder_sparse_step pattern.
  if (const json* dense = r.get("mlp_only_layers")) {
    if (!dense->is_array())
      r.fail("mlp_only_layers", fmt::format("mlp_only_layers must be a list of layer indices, got {}", shown(*dense)));
    if (!dense->empty())
      r.fail("mlp_only_layers",
             "mlp_only_layers (dense layers at listed indices) is not supported; only decoder_sparse_step is");
  }
  m.moe.num_experts = r.non_negative("num_experts", d.experts);
  if (m.moe.num_experts == 0) return;  // transformers builds only dense MLPs then
  m.moe.experts_per_token = read_experts_per_token(r, d.per_token, m.moe.num_experts);
  m.moe.expert_ffn = r.positive("moe_intermediate_size", d.expert_ffn);
  m.moe.shared_expert_ffn = r.non_negative("shared_expert_intermediate_size", d.shared_ffn);
  m.moe.shared_expert_gate = m.moe.shared_expert_ffn > 0;
  m.moe.sparse_step = r.positive("decoder_sparse_step", 1);
}

ModelSpec read_qwen2(const Reader& r) {
  ModelSpec m = read_llama_like(r, {151936, 4096, 22016, 32, 32, 32, 32768, 10000.0});
  m.qkv_bias = true;  // Qwen2Attention hard-codes bias=True on q, k, v
  m.out_bias = false;
  read_qwen_window(r, m);
  m.flash_class_repeats_kv = true;  // Qwen2FlashAttention2.forward: repeat_kv before _flash_attention_forward
  return m;
}

ModelSpec read_qwen2_moe(const Reader& r) {
  ModelSpec m = read_llama_like(r, {151936, 2048, 5632, 24, 16, 16, 32768, 10000.0});
  read_qwen_attention_bias(r, m, true);
  read_qwen_window(r, m);
  read_qwen_moe(r, m, {.experts = 60, .per_token = 4, .expert_ffn = 1408, .shared_ffn = 5632});
  m.flash_class_repeats_kv = true;  // Qwen2MoeFlashAttention2: copied from Qwen2's
  return m;
}

// Qwen3's attention, shared by qwen3 and qwen3_moe: attention_bias on q, k, v and o alike (default none),
// RMSNorm over each head's query and key (q_norm / k_norm), Qwen's sliding-window keys.
void read_qwen3_attention(const Reader& r, ModelSpec& m) {
  m.qkv_bias = m.out_bias = r.boolean("attention_bias", false);
  m.qk_norm = true;
  read_qwen_window(r, m);
}

// Qwen3: Qwen2's decoder with an explicit head_dim (q_dim may differ from hidden) and Qwen3's attention.
ModelSpec read_qwen3(const Reader& r) {
  ModelSpec m = read_llama_like(r, {151936, 4096, 22016, 32, 32, 32, 32768, 10000.0});
  read_qwen3_attention(r, m);
  return m;
}

// Qwen3-MoE: Qwen3's attention, Qwen2-MoE's routing without a shared expert (Qwen3MoeConfig has none).
ModelSpec read_qwen3_moe(const Reader& r) {
  ModelSpec m = read_llama_like(r, {151936, 2048, 6144, 24, 32, 4, 32768, 10000.0});
  read_qwen3_attention(r, m);
  read_qwen_moe(r, m, {.experts = 128, .per_token = 8, .expert_ffn = 768, .shared_ffn = 0});
  return m;
}

// The fraction of head_dim RoPE rotates: rope_parameters.partial_rotary_factor (transformers >= 5), else
// the family's own top-level key (`old_key`), in (0, 1].
double read_rotary_fraction(const Reader& r, const char* old_key, double fallback) {
  const auto rp = r.object("rope_parameters");
  const bool nested = rp && rp->get("partial_rotary_factor");
  const Reader& fr = nested ? *rp : r;
  const char* key = nested ? "partial_rotary_factor" : old_key;
  const double f = fr.number(key, fallback);
  if (f <= 0.0 || f > 1.0) fr.fail(key, fmt::format("{} must be in (0, 1], got {}", key, f));
  return f;
}

// mamba_ssm_dtype: the recurrent state's element type where a config states it (Qwen3.5's files).
void read_state_dtype(const Reader& r, LinearAttentionSpec& g) {
  if (!r.get("mamba_ssm_dtype")) return;
  const std::string name = r.string("mamba_ssm_dtype", "");
  DType t{};
  if (!parse_dtype(name, t))
    r.fail("mamba_ssm_dtype", fmt::format("unknown mamba_ssm_dtype '{}'; known: {}", name, join(dtype_names())));
  g.state_dtype = t;
}

// The token mixers of the Gated DeltaNet hybrids (model::LinearAttentionSpec; Qwen3NextConfig, Qwen3_5TextConfig
// and Qwen3_5MoeTextConfig): layer_types lists "linear_attention" or "full_attention" for every layer, or, without
// it, every full_attention_interval-th layer (default 4) is full attention and the rest linear, as those configs'
// __post_init__ builds the list; the linear layers' dimensions with those configs' defaults. mamba_ssm_dtype
// (Qwen3.5's files) is the recurrent state's element type.
void read_gated_deltanet(const Reader& r, ModelSpec& m) {
  LinearAttentionSpec& g = m.linear_attn;
  g.kind = LinearMixer::GatedDeltaNet;
  g.chunk = 64;  // fla.ops.gated_delta_rule's chunk size (BT = 64), as vLLM's copy of it
  g.key_heads = r.dimension("linear_num_key_heads", 16);
  g.key_head_dim = r.dimension("linear_key_head_dim", 128);
  g.value_heads = r.dimension("linear_num_value_heads", 32);
  g.value_head_dim = r.dimension("linear_value_head_dim", 128);
  g.conv_kernel = r.positive("linear_conv_kernel_dim", 4, 1024);
  if (g.value_heads % g.key_heads != 0)
    r.fail("linear_num_value_heads",
           fmt::format("linear_num_value_heads ({}) must be a multiple of linear_num_key_heads ({}): each key head "
                       "serves the same number of value heads",
                       g.value_heads, g.key_heads));
  const std::int64_t interval = r.positive("full_attention_interval", 4, kMaxLayers);
  g.layers.assign(static_cast<std::size_t>(m.num_layers), false);
  if (const json* types = r.get("layer_types"); types && !types->is_null()) {
    if (!types->is_array() || static_cast<std::int64_t>(types->size()) != m.num_layers)
      r.fail("layer_types", fmt::format("layer_types must list one mixer type per layer ({} layers)", m.num_layers));
    for (std::size_t i = 0; i < types->size(); ++i) {
      const json& t = (*types)[i];
      if (!t.is_string() || (t != "linear_attention" && t != "full_attention"))
        r.fail("layer_types",
               fmt::format("layer_types[{}] must be \"linear_attention\" or \"full_attention\", got {}", i, shown(t)));
      g.layers[i] = t == "linear_attention";
    }
  } else {
    for (std::int64_t l = 0; l < m.num_layers; ++l) g.layers[static_cast<std::size_t>(l)] = (l + 1) % interval != 0;
  }
  read_state_dtype(r, g);
}

// The Qwen3-Next family's decoder (transformers' modeling_qwen3_next.py, modeling_qwen3_5.py and
// modeling_qwen3_5_moe.py): full-attention layers with Qwen3's per-head q/k norms, RoPE over
// partial_rotary_factor (0.25) of head_dim (256) and an output gate (attn_output_gate: q_proj projects 2 x q_dim,
// the output is multiplied by sigmoid(gate) before o_proj), Gated DeltaNet layers in place of the others
// (read_gated_deltanet); mtp_num_hidden_layers MTP layers (Qwen3.5's files state them; Qwen3-Next's checkpoints
// carry one MTP layer that the config does not state), counted apart.
void read_qwen3_next_decoder(const Reader& r, ModelSpec& m) {
  if (!r.present("head_dim")) m.head_dim = 256;  // the configs' default, not hidden / heads
  m.qkv_bias = m.out_bias = r.boolean("attention_bias", false);
  m.qk_norm = true;
  m.attn_output_gate = r.boolean("attn_output_gate", true);
  m.rotary_fraction = read_rotary_fraction(r, "partial_rotary_factor", 0.25);
  read_gated_deltanet(r, m);
  m.mtp_layers = r.non_negative("mtp_num_hidden_layers", 0, kMaxLayers);
  if (r.boolean("mtp_use_dedicated_embeddings", false))
    r.fail("mtp_use_dedicated_embeddings",
           "MTP layers with embeddings of their own are not counted; only ones sharing the model's are");
}

// Qwen3-Next (Qwen3NextConfig; Qwen/Qwen3-Next-80B-A3B, Qwen/Qwen3-Coder-Next): the decoder above with Qwen3-MoE's
// routing plus a shared expert and its sigmoid gate (Qwen3NextSparseMoeBlock) on every decoder_sparse_step-th
// layer. Defaults: Qwen3NextConfig's.
ModelSpec read_qwen3_next(const Reader& r) {
  ModelSpec m = read_llama_like(r, {151936, 2048, 5632, 48, 16, 2, 32768, 10000.0});
  read_qwen3_next_decoder(r, m);
  read_qwen_moe(r, m, {.experts = 512, .per_token = 10, .expert_ffn = 512, .shared_ffn = 512});
  return m;
}

// Qwen3.5 (Qwen3_5TextConfig, the text model of Qwen3_5ForConditionalGeneration): the decoder above with a dense
// SwiGLU MLP on every layer. Defaults: Qwen3_5TextConfig's (the 9B's shape).
ModelSpec read_qwen3_5_text(const Reader& r) {
  ModelSpec m = read_llama_like(r, {248320, 4096, 12288, 32, 16, 4, 32768, 10000.0});
  read_qwen3_next_decoder(r, m);
  return m;
}

// Qwen3.5-MoE (Qwen3_5MoeTextConfig): the decoder above with Qwen3-Next's mixture on every layer.
// Defaults: Qwen3_5MoeTextConfig's (the 35B-A3B's shape).
ModelSpec read_qwen3_5_moe_text(const Reader& r) {
  // Qwen3_5MoeTextConfig has no intermediate_size: every layer is MoE (the fallback is never used then).
  ModelSpec m = read_llama_like(r, {248320, 2048, 512, 40, 16, 2, 32768, 10000.0});
  read_qwen3_next_decoder(r, m);
  read_qwen_moe(r, m, {.experts = 256, .per_token = 8, .expert_ffn = 512, .shared_ffn = 512});
  return m;
}

// Granite-4.0-H (transformers' GraniteMoeHybridConfig and modeling_granitemoehybrid.py; ibm-granite/granite-4.0-h-*):
// layer_types lists "mamba" (a Mamba-2 mixer, BambaMixer) or "attention" (GraniteMoeSharedAttention: q, k, v and o
// with attention_bias) per layer (without it every layer is mamba, as the config's layers_block_type says); after
// the mixer a shared SwiGLU MLP of shared_intermediate_size (input_linear of 2 x width, output_linear) on every
// layer and, with num_local_experts > 0, a mixture of that many experts of intermediate_size (router without bias,
// no shared-expert gate) beside it. position_embedding_type "rope" rotates the attention's queries and keys; None
// or "nope" (the released H models) leaves them without positions. The muP multipliers (embedding, attention,
// residual, logits) scale values, not work. Defaults: GraniteMoeHybridConfig's.
ModelSpec read_granitemoehybrid(const Reader& r) {
  ModelSpec m = read_llama_like(r, {32000, 4096, 11008, 32, 32, 0, 2048, 10000.0});
  m.qkv_bias = m.out_bias = r.boolean("attention_bias", false);
  const std::string positions = r.string("position_embedding_type", "nope");
  if (positions != "rope" && positions != "nope")
    r.fail("position_embedding_type",
           fmt::format("position_embedding_type must be \"rope\", \"nope\" or null, got '{}'", positions));
  if (positions == "nope") {
    m.position = PositionKind::None;
    m.rotary_fraction = 0.0;
  }
  for (const char* k : {"embedding_multiplier", "attention_multiplier", "residual_multiplier", "logits_scaling"})
    r.number(k, 1.0);
  // The MLP of every layer is the shared one; the experts, when there are any, come beside it.
  const std::int64_t shared = r.non_negative("shared_intermediate_size", 1024);
  m.moe.num_experts = r.non_negative("num_local_experts", 8);
  if (m.moe.num_experts > 0) {
    m.moe.experts_per_token = read_experts_per_token(r, 2, m.moe.num_experts);
    m.moe.expert_ffn = m.ffn_hidden;
    m.moe.shared_expert_ffn = shared;
    m.ffn_hidden = 0;
  } else {
    r.non_negative("num_experts_per_tok", 0);
    m.ffn_hidden = shared;
  }
  LinearAttentionSpec& g = m.linear_attn;
  g.kind = LinearMixer::Mamba2;
  g.ssm_heads = r.dimension("mamba_n_heads", 128);
  const std::int64_t inner = r.positive("mamba_expand", 2, 64) * m.hidden;
  if (inner % g.ssm_heads != 0)
    r.fail("mamba_n_heads",
           fmt::format("mamba_n_heads ({}) must divide mamba_expand x hidden_size ({})", g.ssm_heads, inner));
  if (const json* d = r.get("mamba_d_head"); d && d->is_string() && *d == "auto")
    g.ssm_head_dim = inner / g.ssm_heads;
  else
    g.ssm_head_dim = r.dimension("mamba_d_head", inner / g.ssm_heads);
  if (g.ssm_head_dim * g.ssm_heads != inner)
    r.fail("mamba_d_head", fmt::format("mamba_n_heads x mamba_d_head ({} x {}) must equal mamba_expand x hidden_size "
                                       "({})",
                                       g.ssm_heads, g.ssm_head_dim, inner));
  g.ssm_state = r.dimension("mamba_d_state", 256);
  g.ssm_groups = r.dimension("mamba_n_groups", 1);
  if (g.ssm_heads % g.ssm_groups != 0)
    r.fail("mamba_n_groups",
           fmt::format("mamba_n_groups ({}) must divide mamba_n_heads ({})", g.ssm_groups, g.ssm_heads));
  g.conv_kernel = r.positive("mamba_d_conv", 4, 1024);
  g.chunk = r.positive("mamba_chunk_size", 256);
  g.conv_bias = r.boolean("mamba_conv_bias", true);
  g.proj_bias = r.boolean("mamba_proj_bias", false);
  g.layers.assign(static_cast<std::size_t>(m.num_layers), true);
  if (const json* types = r.get("layer_types"); types && !types->is_null()) {
    if (!types->is_array() || static_cast<std::int64_t>(types->size()) != m.num_layers)
      r.fail("layer_types", fmt::format("layer_types must list one mixer type per layer ({} layers)", m.num_layers));
    for (std::size_t i = 0; i < types->size(); ++i) {
      const json& t = (*types)[i];
      if (!t.is_string() || (t != "mamba" && t != "attention"))
        r.fail("layer_types", fmt::format("layer_types[{}] must be \"mamba\" or \"attention\", got {}", i, shown(t)));
      g.layers[i] = t == "mamba";
    }
  }
  read_state_dtype(r, g);
  return m;
}

// Phi-3 (Phi-3/3.5, Phi-4-mini): a Llama-style decoder with a fused qkv_proj and gate_up_proj, no
// biases, an optional partial rotary factor (Phi-4-mini: 0.75) and a sliding window (Phi3Config: None
// unless given). resid_pdrop and attention_dropout drop out the residual branches and probabilities.
ModelSpec read_phi3(const Reader& r) {
  ModelSpec m = read_llama_like(r, {32064, 3072, 8192, 32, 32, 0, 4096, 10000.0});
  m.fused_qkv = m.fused_gate_up = true;
  m.sliding_window = r.non_negative("sliding_window", 0);
  m.rotary_fraction = read_rotary_fraction(r, "partial_rotary_factor", 1.0);
  m.dropout = std::max(m.dropout, r.probability("resid_pdrop", 0.0));
  if (r.boolean("lm_head_bias", false)) r.fail("lm_head_bias", "an LM-head bias is not modelled");
  return m;
}

// GPT-NeoX (Pythia): LayerNorm, GELU MLP with biases, partial rotary, parallel residual.
ModelSpec read_gpt_neox(const Reader& r) {
  ModelSpec m;
  m.vocab = r.positive("vocab_size", 50432);
  m.hidden = r.positive("hidden_size", 6144);
  m.ffn_hidden = r.positive("intermediate_size", 24576);
  m.num_layers = r.positive("num_hidden_layers", 44, kMaxLayers);
  read_attention_shape(r, m, 64, -1);
  m.max_positions = r.positive("max_position_embeddings", 2048);
  m.norm = NormKind::LayerNorm;
  m.mlp = MlpKind::Plain;
  m.position = PositionKind::Rope;
  m.activation = r.string("hidden_act", "gelu");
  m.qkv_bias = m.out_bias = r.boolean("attention_bias", true);
  m.mlp_bias = true;  // GPTNeoXMLP always has biases
  m.tied_embeddings = r.boolean("tie_word_embeddings", false);
  m.parallel_residual = r.boolean("use_parallel_residual", true);
  m.fused_qkv = true;  // query_key_value
  // transformers >= 5: rope_parameters.{rope_theta, partial_rotary_factor}; older: rotary_emb_base, rotary_pct.
  m.rope_theta = read_rope_theta(r, "rotary_emb_base", 10000.0);
  m.rotary_fraction = read_rotary_fraction(r, "rotary_pct", 0.25);
  // A mask exists when either the attention probabilities or the residual branches drop out.
  m.dropout = std::max(r.probability("attention_dropout", 0.0), r.probability("hidden_dropout", 0.0));
  return m;
}

// An integer under its GPT-2 name, or under the generic name transformers maps onto it (attribute_map).
std::int64_t gpt2_dim(const Reader& r, const char* key, const char* alias, std::int64_t fallback,
                      std::int64_t cap = kMaxDimension) {
  return r.positive(r.get(key) || !r.get(alias) ? key : alias, fallback, cap);
}

// GPT-2: LayerNorm, GELU MLP (4x unless n_inner), learned positions, biases everywhere, tied head.
ModelSpec read_gpt2(const Reader& r) {
  ModelSpec m;
  m.fused_qkv = true;  // c_attn
  m.vocab = r.positive("vocab_size", 50257);
  m.hidden = gpt2_dim(r, "n_embd", "hidden_size", 768);
  m.num_layers = gpt2_dim(r, "n_layer", "num_hidden_layers", 12, kMaxLayers);
  read_attention_shape(r, m, 12, -1,
                       r.get("n_head") || !r.get("num_attention_heads") ? "n_head" : "num_attention_heads");
  m.ffn_hidden = r.get("n_inner") ? r.positive("n_inner", 0) : 4 * m.hidden;  // n_inner None = 4 * n_embd
  m.max_positions = gpt2_dim(r, "n_positions", "max_position_embeddings", 1024);
  m.norm = NormKind::LayerNorm;
  m.mlp = MlpKind::Plain;
  m.position = PositionKind::Learned;
  m.activation = r.string("activation_function", "gelu_new");
  m.qkv_bias = m.out_bias = m.mlp_bias = true;                 // Conv1D layers always carry a bias
  m.tied_embeddings = r.boolean("tie_word_embeddings", true);  // PretrainedConfig default
  m.rope_theta = 0.0;                                          // no rotary embedding
  m.rotary_fraction = 0.0;
  m.dropout = std::max(r.probability("attn_pdrop", 0.1), r.probability("resid_pdrop", 0.1));
  return m;
}

// The period k of a per-layer flag list whose set layers are every k-th (layer + 1 divisible by k): the first
// set layer's number, checked against every layer (`key` fails naming the breaking layer, `what` saying what
// a set layer is); 0 when no layer is set. The one pattern ModelSpec::global_every models.
std::int64_t periodic_every(const Reader& r, const char* key, const std::vector<bool>& set, const char* what) {
  std::int64_t first = 0;
  for (std::size_t i = 0; i < set.size() && first == 0; ++i)
    if (set[i]) first = static_cast<std::int64_t>(i) + 1;
  for (std::size_t i = 0; i < set.size() && first > 0; ++i)
    if (((static_cast<std::int64_t>(i) + 1) % first == 0) != set[i])
      r.fail(key, fmt::format("{} is not every {}-th layer {} (layer {} breaks it); only that periodic pattern is "
                              "modelled",
                              key, first, what, i));
  return first;
}

// The local/global layer pattern of a windowed model: layer_types (transformers >= 4.53 writes one
// "sliding_attention" / "full_attention" entry per layer) must be the periodic pattern ModelSpec models
// (every k-th layer global); without it `default_every` (the family's fixed pattern) holds.
std::int64_t read_global_every(const Reader& r, const ModelSpec& m, std::int64_t default_every) {
  const json* types = r.get("layer_types");
  if (!types) return default_every;
  if (!types->is_array() || static_cast<std::int64_t>(types->size()) != m.num_layers)
    r.fail("layer_types", fmt::format("layer_types must list one attention type per layer ({} layers)", m.num_layers));
  std::vector<bool> global;
  for (std::size_t i = 0; i < types->size(); ++i) {
    const json& t = (*types)[i];
    if (!t.is_string() || (t != "sliding_attention" && t != "full_attention"))
      r.fail("layer_types",
             fmt::format("layer_types[{}] must be \"sliding_attention\" or \"full_attention\", got {}", i, shown(t)));
    global.push_back(t == "full_attention");
  }
  return periodic_every(r, "layer_types", global, "global");  // 0: every layer windowed
}

// Gemma-2 and Gemma-3 (Gemma2Config / Gemma3TextConfig): a Llama-style decoder with head_dim 256, a gated
// GELU-tanh MLP (hidden_activation), tied embeddings, four RMSNorms per layer (Gemma2DecoderLayer:
// input, post_attention, pre_feedforward, post_feedforward) and local sliding-window layers between
// global ones: Gemma-2 alternates (layer_idx % 2 == 0 is sliding: every 2nd global), Gemma-3 has
// sliding_window_pattern - 1 local layers per global one (default 6); Gemma-3 adds Qwen3-style per-head
// q/k norms. Logit soft-capping and query_pre_attn_scalar change values, not work.
ModelSpec read_gemma(const Reader& r, bool gemma3) {
  ModelSpec m = read_llama_like(r, gemma3 ? Defaults{262208, 2304, 9216, 26, 8, 4, 131072, 1000000.0}
                                          : Defaults{256000, 2304, 9216, 26, 8, 4, 8192, 10000.0});
  m.activation = r.string("hidden_activation", r.string("hidden_act", "gelu_pytorch_tanh"));
  m.tied_embeddings = r.boolean("tie_word_embeddings", true);
  m.qkv_bias = m.out_bias = r.boolean("attention_bias", false);
  m.sandwich_norms = true;
  m.qk_norm = gemma3;
  m.sliding_window = read_window(r, 4096);
  const std::int64_t pattern = gemma3 ? r.positive("sliding_window_pattern", 6) : 2;
  m.global_every = m.sliding_window > 0 ? read_global_every(r, m, pattern) : 0;
  return m;
}

ModelSpec read_gemma2(const Reader& r) { return read_gemma(r, false); }
ModelSpec read_gemma3_text(const Reader& r) { return read_gemma(r, true); }

// gpt-oss (GptOssConfig, transformers' modeling_gpt_oss.py): every layer a mixture of experts of
// intermediate_size with biases on the experts' projections and on the router, attention with biases
// and a learned sink logit per head, head_dim 64, sliding-window (128) layers alternating with global
// ones (layer_types), untied embeddings. The MXFP4 checkpoint (quantization_config) quantizes the experts
// only; the simulator applies a weight format to every projection but the router and the LM head, so
// the attention weights (under 1 % of the parameters) count at MXFP4 too.
ModelSpec read_gpt_oss(const Reader& r) {
  ModelSpec m = read_llama_like(r, {201088, 2880, 2880, 36, 64, 8, 131072, 150000.0});
  m.qkv_bias = m.out_bias = r.boolean("attention_bias", true);
  m.attention_sinks = true;
  m.moe.num_experts = read_local_experts(r, 128);
  // GptOssConfig writes num_experts_per_tok; OpenAI's original files experts_per_token.
  m.moe.experts_per_token = read_experts_per_token(
      r, 4, m.moe.num_experts,
      r.get("num_experts_per_tok") || !r.get("experts_per_token") ? "num_experts_per_tok" : "experts_per_token");
  m.moe.expert_ffn = m.ffn_hidden;
  m.ffn_hidden = 0;
  m.moe.router_bias = true;
  m.mlp_bias = true;  // the experts' gate_up_proj_bias and down_proj_bias
  m.sliding_window = read_window(r, 128);
  m.global_every = m.sliding_window > 0 ? read_global_every(r, m, 2) : 0;
  return m;
}

// Llama 4 (Llama4TextConfig, transformers' modeling_llama4.py; the text model of Llama4ForConditionalGeneration):
// a Llama decoder whose MoE layers (every interleave_moe_layer_step-th: moe_layers = range(step - 1, layers,
// step)) route each token to num_experts_per_tok of num_local_experts experts of intermediate_size and always
// run a shared expert of the same width (Llama4TextMoe.shared_expert = Llama4TextMLP(config)); dense layers run
// an MLP of intermediate_size_mlp. Every no_rope_layer_interval-th layer (no_rope_layers[i] == 0, default
// every 4th) uses no RoPE and attends to every key; the others use RoPE and chunked attention: a token sees
// the keys of its own attention_chunk_size chunk only, taken here as a window of the chunk size (an upper
// bound: within a chunk a token sees on average half of it). The weightless L2 norm over RoPE layers'
// queries and keys (use_qk_norm, Llama4TextL2Norm) has no parameters and is not costed.
ModelSpec read_llama4_text(const Reader& r) {
  // Llama4TextConfig defaults (Scout's shape).
  ModelSpec m = read_llama_like(r, {202048, 5120, 8192, 48, 40, 8, 4096 * 32, 500000.0});
  m.qkv_bias = m.out_bias = r.boolean("attention_bias", false);
  const std::int64_t expert_ffn = m.ffn_hidden;
  m.ffn_hidden = r.dimension("intermediate_size_mlp", 16384);
  m.moe.num_experts = read_local_experts(r, 16);
  m.moe.experts_per_token = read_experts_per_token(r, 1, m.moe.num_experts);
  m.moe.expert_ffn = expert_ffn;
  m.moe.shared_expert_ffn = expert_ffn;
  m.moe.sparse_step = r.positive("interleave_moe_layer_step", 1);
  if (const json* layers = r.get("moe_layers"); layers && !layers->is_null()) {
    if (!layers->is_array()) r.fail("moe_layers", "moe_layers must list the MoE layers' indices");
    std::vector<std::int64_t> want;
    for (std::int64_t l = 0; l < m.num_layers; ++l)
      if ((l + 1) % m.moe.sparse_step == 0) want.push_back(l);
    std::vector<std::int64_t> got;
    for (const json& v : *layers) {
      if (!v.is_number_integer())
        r.fail("moe_layers", fmt::format("moe_layers must hold layer indices, got {}", shown(v)));
      got.push_back(v.get<std::int64_t>());
    }
    if (got != want)
      r.fail("moe_layers", fmt::format("moe_layers is not every {}-th layer (interleave_moe_layer_step); only that "
                                       "pattern is modelled",
                                       m.moe.sparse_step));
  }
  // The chunked (RoPE) layers and the global (NoPE) ones: no_rope_layers[i] is 1 where layer i uses RoPE.
  std::int64_t every = r.positive("no_rope_layer_interval", 4);
  if (const json* flags = r.get("no_rope_layers"); flags && flags->is_array() && !flags->empty()) {
    if (static_cast<std::int64_t>(flags->size()) != m.num_layers)
      r.fail("no_rope_layers", fmt::format("no_rope_layers must hold one flag per layer ({} layers)", m.num_layers));
    std::vector<bool> global;
    for (std::size_t i = 0; i < flags->size(); ++i) {
      const json& f = (*flags)[i];
      if (!f.is_number_integer() || (f != 0 && f != 1))
        r.fail("no_rope_layers", fmt::format("no_rope_layers[{}] must be 0 or 1, got {}", i, shown(f)));
      global.push_back(f == 0);
    }
    every = periodic_every(r, "no_rope_layers", global, "without RoPE");
  }
  const json* chunk = r.get("attention_chunk_size");
  m.sliding_window = chunk && chunk->is_null() ? 0 : r.positive("attention_chunk_size", 8192);
  m.global_every = m.sliding_window > 0 ? every : 0;
  return m;
}

// DeepSeek-V2 and V3 (transformers' DeepseekV2Config / DeepseekV3Config, the checkpoints' config.json):
// multi-head latent attention (ModelSpec::mla) and a mixture of experts with shared experts after
// first_k_dense_replace dense layers, every moe_layer_freq-th layer. Keyword defaults are V3's
// (DeepseekV3Config: 61 layers of 7168, 128 heads, kv_lora 512, q_lora 1536, rope 64, nope 128, v 128,
// 256 routed experts of 2048 with top-8 and one shared, 3 dense layers of 18432); V2 files state theirs.
// q_lora_rank absent or null means one q_proj (DeepSeek-V2-Lite). V3 routes with sigmoid scores and a
// per-expert correction bias (topk_method "noaux_tc") and adds num_nextn_predict_layers MTP modules,
// counted apart. Group-limited routing (n_group, topk_group), routed_scaling_factor, norm_topk_prob and
// scoring_func change which experts a token meets, not the work: the balanced-routing model holds.
ModelSpec read_deepseek(const Reader& r, bool v3) {
  ModelSpec m;
  m.vocab = r.dimension("vocab_size", v3 ? 129280 : 102400);
  m.hidden = r.dimension("hidden_size", v3 ? 7168 : 4096);
  m.ffn_hidden = r.dimension("intermediate_size", v3 ? 18432 : 11008);
  m.num_layers = r.dimension("num_hidden_layers", v3 ? 61 : 30, kMaxLayers);
  m.num_heads = r.dimension("num_attention_heads", v3 ? 128 : 32);
  m.num_kv_heads = m.num_heads;  // every head gets its own keys and values from the shared latent
  MlaSpec& a = m.mla;
  a.q_lora_rank = r.get("q_lora_rank") ? r.positive("q_lora_rank", 0) : (v3 && !r.present("q_lora_rank") ? 1536 : 0);
  a.kv_lora_rank = r.dimension("kv_lora_rank", 512);
  r.present("num_key_value_heads");  // unused by MLA: keys and values come from the latent, one per query head
  a.qk_nope_head_dim = r.dimension("qk_nope_head_dim", 128);
  a.qk_rope_head_dim = r.dimension("qk_rope_head_dim", 64);
  a.v_head_dim = r.dimension("v_head_dim", 128);
  m.head_dim = a.qk_nope_head_dim + a.qk_rope_head_dim;
  m.rotary_fraction = static_cast<double>(a.qk_rope_head_dim) / static_cast<double>(m.head_dim);
  m.max_positions = r.positive("max_position_embeddings", v3 ? 4096 : 2048);
  m.norm = NormKind::RmsNorm;
  m.mlp = MlpKind::Gated;
  m.position = PositionKind::Rope;
  m.activation = r.string("hidden_act", "silu");
  m.rope_theta = read_rope_theta(r, "rope_theta", 10000.0);
  m.tied_embeddings = r.boolean("tie_word_embeddings", false);
  m.qkv_bias = m.out_bias = r.boolean("attention_bias", false);
  m.dropout = r.probability("attention_dropout", 0.0);
  const std::int64_t experts = r.get("n_routed_experts") || !r.present("n_routed_experts")
                                   ? r.non_negative("n_routed_experts", v3 ? 256 : 0)
                                   : 0;
  if (experts > 0) {
    m.moe.num_experts = experts;
    m.moe.experts_per_token = read_experts_per_token(r, v3 ? 8 : 6, experts);
    m.moe.expert_ffn = r.positive("moe_intermediate_size", v3 ? 2048 : 1407);
    // n_shared_experts experts of moe_intermediate_size, run as one MLP of their summed width.
    m.moe.shared_expert_ffn = r.non_negative("n_shared_experts", v3 ? 1 : 0) * m.moe.expert_ffn;
    m.moe.sparse_step = r.positive("moe_layer_freq", 1);
    m.moe.first_dense = r.non_negative("first_k_dense_replace", v3 ? 3 : 0, kMaxLayers);
    if (m.moe.first_dense > m.num_layers)
      r.fail("first_k_dense_replace",
             fmt::format("first_k_dense_replace ({}) exceeds num_hidden_layers ({})", m.moe.first_dense, m.num_layers));
    m.moe.router_bias = r.string("topk_method", v3 ? "noaux_tc" : "greedy") == "noaux_tc";
  }
  if (v3) m.mtp_layers = r.non_negative("num_nextn_predict_layers", 0, kMaxLayers);
  return m;
}

// GLM-4.5 and its successors of the same shape (transformers' Glm4MoeConfig and modeling_glm4_moe.py):
// grouped-query attention with biases on q, k and v (attention_bias; o_proj has none), an optional RMSNorm over
// each head's query and key (use_qk_norm), RoPE over partial_rotary_factor of head_dim; after
// first_k_dense_replace dense layers a DeepSeek-V3-style mixture of n_routed_experts of moe_intermediate_size
// with n_shared_experts shared experts of that size (Glm4MoeMoE), routed with sigmoid scores and a per-expert
// correction bias (Glm4MoeTopkRouter.e_score_correction_bias); num_nextn_predict_layers MTP layers, counted
// apart. As for DeepSeek, n_group, topk_group, routed_scaling_factor and norm_topk_prob change which experts
// a token meets, not the work. Defaults: Glm4MoeConfig's (GLM-4.5-Air's shape).
ModelSpec read_glm4_moe(const Reader& r) {
  ModelSpec m = read_llama_like(r, {151552, 4096, 10944, 46, 96, 8, 131072, 10000.0});
  m.qkv_bias = r.boolean("attention_bias", false);
  m.qk_norm = r.boolean("use_qk_norm", false);
  m.rotary_fraction = read_rotary_fraction(r, "partial_rotary_factor", 0.5);
  m.moe.num_experts = r.positive("n_routed_experts", 128);
  m.moe.experts_per_token = read_experts_per_token(r, 8, m.moe.num_experts);
  m.moe.expert_ffn = r.positive("moe_intermediate_size", 1408);
  m.moe.shared_expert_ffn = r.non_negative("n_shared_experts", 1) * m.moe.expert_ffn;
  m.moe.first_dense = r.non_negative("first_k_dense_replace", 1, kMaxLayers);
  if (m.moe.first_dense > m.num_layers)
    r.fail("first_k_dense_replace",
           fmt::format("first_k_dense_replace ({}) exceeds num_hidden_layers ({})", m.moe.first_dense, m.num_layers));
  m.moe.router_bias = true;
  m.mtp_layers = r.non_negative("num_nextn_predict_layers", 0, kMaxLayers);
  return m;
}

// MiniMax-M2 (transformers' MiniMaxM2Config and modeling_minimax_m2.py; MiniMaxAI/MiniMax-M2's config.json):
// full attention on every layer (attn_type_list all 1; MiniMax-01's lightning-attention layers, 0, are not
// modelled and refused), grouped-query attention with an explicit head_dim, RoPE over rotary_dim of each head
// (or rope_parameters.partial_rotary_factor), an RMSNorm over the whole projected query and key (qk_norm_type
// "per_layer"; "per_head" normalises each head), and on every layer num_local_experts experts of
// intermediate_size (no dense MLP; shared_intermediate_size 0 in the released checkpoints) routed with sigmoid
// scores and a per-expert bias (use_routing_bias); with use_mtp, num_mtp_modules x mtp_transformer_layers MTP
// layers, counted apart. Defaults: the released MiniMax-M2 shape.
ModelSpec read_minimax_m2(const Reader& r) {
  ModelSpec m = read_llama_like(r, {200064, 3072, 1536, 62, 48, 8, 196608, 5000000.0});
  m.qkv_bias = m.out_bias = r.boolean("attention_bias", false);
  m.qk_norm = r.boolean("use_qk_norm", true);
  const std::string norm_type = r.string("qk_norm_type", "per_layer");
  if (norm_type != "per_layer" && norm_type != "per_head")
    r.fail("qk_norm_type", fmt::format("qk_norm_type must be per_layer or per_head, got '{}'", norm_type));
  m.qk_norm_full_width = m.qk_norm && norm_type == "per_layer";
  if (r.get("rotary_dim")) {
    const std::int64_t rotary = r.positive("rotary_dim", m.head_dim);
    if (rotary > m.head_dim)
      r.fail("rotary_dim", fmt::format("rotary_dim ({}) exceeds head_dim ({})", rotary, m.head_dim));
    m.rotary_fraction = static_cast<double>(rotary) / static_cast<double>(m.head_dim);
  } else {
    m.rotary_fraction = read_rotary_fraction(r, "partial_rotary_factor", 1.0);
  }
  if (const json* types = r.get("attn_type_list"); types && types->is_array()) {
    if (static_cast<std::int64_t>(types->size()) != m.num_layers)
      r.fail("attn_type_list", fmt::format("attn_type_list must hold one entry per layer ({} layers)", m.num_layers));
    for (std::size_t i = 0; i < types->size(); ++i)
      if (!(*types)[i].is_number_integer() || (*types)[i] != 1)
        r.fail("attn_type_list", fmt::format("attn_type_list[{}] is {}: only full-attention layers (1) are modelled, "
                                             "not MiniMax's lightning attention (0)",
                                             i, shown((*types)[i])));
  }
  m.moe.num_experts = read_local_experts(r, 256);
  m.moe.experts_per_token = read_experts_per_token(r, 8, m.moe.num_experts);
  m.moe.expert_ffn = m.ffn_hidden;  // intermediate_size is one expert's width
  m.ffn_hidden = 0;
  m.moe.shared_expert_ffn = r.non_negative("shared_intermediate_size", 0);
  m.moe.router_bias = r.boolean("use_routing_bias", true);
  if (r.boolean("use_mtp", false))
    m.mtp_layers = r.non_negative("num_mtp_modules", 0, kMaxLayers) * r.positive("mtp_transformer_layers", 1);
  return m;
}

// SmolLM3 (transformers' SmolLM3Config and modeling_smollm3.py; HuggingFaceTB/SmolLM3-3B's config.json): a Llama
// decoder whose no_rope_layers flags (1 = RoPE, 0 = none; no_rope_layer_interval 4 builds the default pattern)
// leave every fourth layer without RoPE, and Qwen2's optional sliding window. A layer without RoPE skips one
// elementwise pass over its queries and keys and holds no other difference: it is priced as a RoPE layer, a few
// microseconds per layer. Defaults: the 3B's shape; the context (32768) and rope_theta (2e6) defaults are
// assumptions (released files state both).
ModelSpec read_smollm3(const Reader& r) {
  ModelSpec m = read_llama_like(r, {128256, 2048, 11008, 36, 16, 4, 32768, 2000000.0});
  m.qkv_bias = m.out_bias = r.boolean("attention_bias", false);
  m.mlp_bias = r.boolean("mlp_bias", false);
  r.positive("no_rope_layer_interval", 4);
  if (const json* flags = r.get("no_rope_layers"); flags && !flags->is_null()) {
    if (!flags->is_array() || static_cast<std::int64_t>(flags->size()) != m.num_layers)
      r.fail("no_rope_layers", fmt::format("no_rope_layers must hold one flag per layer ({} layers)", m.num_layers));
    for (std::size_t i = 0; i < flags->size(); ++i)
      if (!(*flags)[i].is_number_integer() || ((*flags)[i] != 0 && (*flags)[i] != 1))
        r.fail("no_rope_layers", fmt::format("no_rope_layers[{}] must be 0 or 1, got {}", i, shown((*flags)[i])));
  }
  read_qwen_window(r, m);
  return m;
}

ModelSpec read_deepseek_v2(const Reader& r) { return read_deepseek(r, false); }
ModelSpec read_deepseek_v3(const Reader& r) { return read_deepseek(r, true); }

// DeepSeek-V3.2 (DeepseekV32ForCausalLM, model_type deepseek_v32): DeepSeek-V3's shape with DeepSeek Sparse
// Attention (SparseIndexerSpec): index_n_heads, index_head_dim and index_topk, whose defaults are those of
// deepseek-ai/DeepSeek-V3.2-Exp inference/model.py ModelArgs (64, 128, 2048). The indexer's wq_b reads MLA's
// query latent, so a model without q_lora_rank has none to read.
ModelSpec read_deepseek_v32(const Reader& r) {
  ModelSpec m = read_deepseek(r, true);
  m.dsa.heads = r.positive("index_n_heads", 64);
  m.dsa.head_dim = r.positive("index_head_dim", 128);
  m.dsa.topk = r.positive("index_topk", 2048);
  if (m.mla.q_lora_rank <= 0)
    r.fail("q_lora_rank", "DeepSeek sparse attention's indexer projects MLA's query latent: q_lora_rank must be > 0");
  return m;
}

// InternLM2 / InternLM2.5 (the checkpoints' own configuration_internlm2.py and modeling_internlm2.py, as
// internlm/internlm2_5-7b ships them): a Llama decoder whose attention is one fused wqkv of
// (num_heads + 2 * num_key_value_heads) * head_dim outputs and wo, both with `bias` (InternLM2Config
// default True); the MLP's w1, w3 (gate, up) and w2 (down) never have one; attention_norm and ffn_norm
// are RMSNorms; output (the head) is untied unless tie_word_embeddings. head_dim = hidden / heads.
// Defaults: InternLM2Config (vocab 103168, 4096, 11008, 32 layers, 32 heads, KV None = heads, 2048
// positions, rope_theta 10000). rope_scaling (dynamic NTK) changes no shape.
ModelSpec read_internlm2(const Reader& r) {
  ModelSpec m = read_llama_like(r, {103168, 4096, 11008, 32, 32, 0, 2048, 10000.0});
  m.fused_qkv = true;  // wqkv
  m.qkv_bias = m.out_bias = r.boolean("bias", true);
  m.mlp_bias = false;
  return m;
}

// OLMo-2 (transformers' Olmo2Config / modeling_olmo2.py): a Llama decoder with attention_bias on q, k, v
// and o alike (default none), q_norm and k_norm RMSNorms over the WHOLE projected query
// (num_heads * head_dim) and key (num_kv_heads * head_dim) before RoPE, and the block norms placed after
// attention and after the MLP (post_attention_layernorm, post_feedforward_layernorm on the block
// outputs, before the residual add): the same two hidden-sized scales per layer as pre-norm, so the
// count and the inventory's kernels are those of a pre-norm layer. Olmo2Config defaults: vocab 50304,
// 4096, 11008, 32 layers, 32 heads, KV None = heads, 2048 positions, rope_theta 10000.
ModelSpec read_olmo2(const Reader& r) {
  ModelSpec m = read_llama_like(r, {50304, 4096, 11008, 32, 32, 0, 2048, 10000.0});
  m.qkv_bias = m.out_bias = r.boolean("attention_bias", false);
  m.qk_norm = m.qk_norm_full_width = true;
  return m;
}

// ChatGLM2 / ChatGLM3 (THUDM's configuration_chatglm.py and modeling_chatglm.py, shipped with
// THUDM/chatglm3-6b): num_layers GLMBlocks of input_layernorm, one fused query_key_value (num_heads *
// kv_channels queries, multi_query_group_num KV heads of kv_channels when multi_query_attention, else
// one per head; bias when add_bias_linear or add_qkv_bias), dense (bias add_bias_linear),
// post_attention_layernorm and an MLP whose dense_h_to_4h emits 2 * ffn_hidden_size for SwiGLU (the
// fused gate and up) and dense_4h_to_h (bias add_bias_linear). RMSNorm when rmsnorm, else LayerNorm;
// final_layernorm when post_layer_norm; output_layer is a separate padded_vocab_size head. RoPE: the
// model builds RotaryEmbedding(kv_channels // 2) and apply_rotary_pos_emb rotates only those first
// kv_channels / 2 dims of each head (rotary_fraction 0.5, whatever original_rope says: that key picks
// the rotation formula, not its width), base 10000 * rope_ratio. The config's defaults (ChatGLMConfig:
// 28 layers, padded vocab 65024, 4096, ffn 13696, kv_channels 128, 32 heads, seq_length 2048, no MQA,
// one group) are from a copy of configuration_chatglm.py, not THUDM's own file, which was not at hand.
ModelSpec read_chatglm(const Reader& r) {
  ModelSpec m;
  m.num_layers = r.dimension("num_layers", 28, kMaxLayers);
  // ChatGLMConfig stores padded_vocab_size as vocab_size too; the embedding and head use the padded size.
  m.vocab = r.dimension(r.get("padded_vocab_size") || !r.get("vocab_size") ? "padded_vocab_size" : "vocab_size", 65024);
  m.hidden = r.dimension("hidden_size", 4096);
  m.ffn_hidden = r.dimension("ffn_hidden_size", 13696);
  m.num_heads = r.dimension("num_attention_heads", 32);
  m.head_dim = r.get("kv_channels") ? r.positive("kv_channels", 128) : m.hidden / m.num_heads;
  if (!r.get("kv_channels") && m.hidden % m.num_heads != 0)
    r.fail("num_attention_heads", fmt::format("num_attention_heads ({}) must divide hidden_size ({}) when "
                                              "kv_channels is not given",
                                              m.num_heads, m.hidden));
  m.num_kv_heads = r.boolean("multi_query_attention", false) ? r.positive("multi_query_group_num", 1) : m.num_heads;
  if (m.num_heads % m.num_kv_heads != 0)
    r.fail("multi_query_group_num",
           fmt::format("multi_query_group_num ({}) must divide num_attention_heads ({})", m.num_kv_heads, m.num_heads));
  if (m.head_dim % 4 != 0)
    r.fail("kv_channels",
           fmt::format("kv_channels ({}) must be a multiple of 4: RoPE rotates pairs in its first half", m.head_dim));
  m.max_positions = r.positive("seq_length", 2048);
  m.norm = r.boolean("rmsnorm", true) ? NormKind::RmsNorm : NormKind::LayerNorm;
  if (!r.boolean("post_layer_norm", true))
    r.fail("post_layer_norm",
           "post_layer_norm false (no final norm) is not modelled; released ChatGLM2/3 "
           "checkpoints set it true");
  if (r.get("pre_seq_len")) r.fail("pre_seq_len", "a P-tuning v2 prefix encoder (pre_seq_len) is not modelled");
  m.mlp = MlpKind::Gated;
  m.activation = "silu";  // swiglu: silu(x0) * x1 over the two halves of dense_h_to_4h
  m.fused_qkv = m.fused_gate_up = true;
  const bool linear_bias = r.boolean("add_bias_linear", false);
  m.qkv_bias = linear_bias || r.boolean("add_qkv_bias", false);
  m.out_bias = m.mlp_bias = linear_bias;
  m.position = PositionKind::Rope;
  m.rotary_fraction = 0.5;
  const double ratio = r.number("rope_ratio", 1.0);
  if (ratio <= 0.0) r.fail("rope_ratio", fmt::format("rope_ratio must be positive, got {}", ratio));
  m.rope_theta = 10000.0 * ratio;
  // output_layer is its own Linear; chatglm3-6b states tie_word_embeddings false. Whether a config
  // without the key would be tied was not verified: absent reads as untied, the released layout.
  m.tied_embeddings = r.boolean("tie_word_embeddings", false);
  m.dropout = std::max(r.probability("attention_dropout", 0.0), r.probability("hidden_dropout", 0.0));
  return m;
}

// Baichuan and Baichuan2 (the checkpoints' own configuration_baichuan.py and modeling_baichuan.py): a
// Llama decoder with one fused W_pack (3 * hidden, no bias), o_proj, gate/up/down without biases, RMSNorms,
// no grouped-query attention (num_key_value_heads is not read), an untied lm_head (Baichuan2's NormHead
// normalises the same vocab x hidden weight). The 7B models rotate (RoPE); the 13B models (Baichuan-13B,
// Baichuan2-13B: hidden 5120, 40 layers) ship a different modelling file that adds ALiBi biases instead,
// under the same model_type. vLLM's baichuan.py tells them apart by hidden_size == 4096 (RoPE) and
// otherwise uses ALiBi; so do we, and refuse ALiBi. BaichuanConfig defaults: vocab 64000, 4096, 11008,
// 32 layers, 32 heads, 4096 positions.
ModelSpec read_baichuan(const Reader& r) {
  ModelSpec m = read_llama_like(r, {64000, 4096, 11008, 32, 32, -1, 4096, 10000.0});
  if (m.hidden != 4096)
    r.fail("hidden_size", fmt::format("hidden_size {} is a Baichuan-13B shape, which uses ALiBi position biases "
                                      "instead of RoPE; ALiBi positions are not modelled (only hidden_size 4096, "
                                      "the rotary 7B models, loads)",
                                      m.hidden));
  m.fused_qkv = true;  // W_pack
  return m;
}

// Falcon (transformers' FalconConfig / modeling_falcon.py): LayerNorm, a plain MLP (dense_h_to_4h of
// ffn_hidden_size, default 4 * hidden, activation default gelu, dense_4h_to_h), one fused query_key_value
// and dense, `bias` on every linear layer (default none), RoPE on the whole head (head_dim = hidden /
// heads), the head tied to word_embeddings unless tie_word_embeddings is false (PretrainedConfig default
// true). KV heads: num_kv_heads with new_decoder_architecture (Falcon-40B/180B), one with multi_query
// (Falcon-7B), else one per head. Layers: parallel_attn sums attention and MLP of the same input; then
// FalconDecoderLayer builds ln_attn and ln_mlp when num_ln_in_parallel_attn is 2 (None means 2 with
// new_decoder_architecture) and one input_layernorm for both otherwise (Falcon-7B); without
// parallel_attn, input_layernorm and post_attention_layernorm in sequence. FalconConfig defaults (a
// falcon-7b shape): vocab 65024, 4544, 32 layers, 71 heads, 2048 positions, rope_theta 10000.
ModelSpec read_falcon(const Reader& r) {
  if (r.boolean("alibi", false))
    r.fail("alibi", "ALiBi position biases (alibi true, Falcon-RW) are not modelled; only rotary Falcon loads");
  ModelSpec m;
  m.vocab = r.dimension("vocab_size", 65024);
  m.hidden = r.dimension("hidden_size", 4544);
  m.num_layers = r.dimension("num_hidden_layers", 32, kMaxLayers);
  m.num_heads = r.dimension("num_attention_heads", 71);
  if (m.hidden % m.num_heads != 0)
    r.fail("num_attention_heads",
           fmt::format("num_attention_heads ({}) must divide hidden_size ({})", m.num_heads, m.hidden));
  m.head_dim = m.hidden / m.num_heads;
  const bool new_arch = r.boolean("new_decoder_architecture", false);
  if (new_arch) {
    m.num_kv_heads = r.positive("num_kv_heads", m.num_heads);
    r.present("multi_query");  // inert with new_decoder_architecture: num_kv_heads applies
  } else {
    m.num_kv_heads = r.boolean("multi_query", true) ? 1 : m.num_heads;
  }
  if (m.num_heads % m.num_kv_heads != 0)
    r.fail("num_kv_heads",
           fmt::format("num_kv_heads ({}) must divide num_attention_heads ({})", m.num_kv_heads, m.num_heads));
  m.parallel_residual = r.boolean("parallel_attn", true);
  const std::int64_t norms = r.integer("num_ln_in_parallel_attn", new_arch ? 2 : 1);
  if (norms != 1 && norms != 2)
    r.fail("num_ln_in_parallel_attn", fmt::format("num_ln_in_parallel_attn must be 1 or 2, got {}", norms));
  // FalconDecoderLayer.forward reads ln_attn exactly when new_decoder_architecture and two norms; the
  // layouts that build other norms than forward reads fail in transformers too.
  if (new_arch && !m.parallel_residual)
    r.fail("parallel_attn",
           "new_decoder_architecture with parallel_attn false builds no ln_attn, which "
           "FalconDecoderLayer.forward reads");
  if (!new_arch && m.parallel_residual && norms == 2)
    r.fail("num_ln_in_parallel_attn",
           "num_ln_in_parallel_attn 2 needs new_decoder_architecture: without it "
           "FalconDecoderLayer.forward reads input_layernorm, which is not built");
  m.shared_block_norm = m.parallel_residual && norms == 1;
  m.ffn_hidden = r.dimension("ffn_hidden_size", 4 * m.hidden);
  m.max_positions = r.positive("max_position_embeddings", 2048);
  m.norm = NormKind::LayerNorm;
  m.mlp = MlpKind::Plain;
  m.activation = r.string("activation", "gelu");
  m.position = PositionKind::Rope;
  m.rope_theta = read_rope_theta(r, "rope_theta", 10000.0);
  m.fused_qkv = true;  // query_key_value
  m.qkv_bias = m.out_bias = m.mlp_bias = r.boolean("bias", false);
  m.tied_embeddings = r.boolean("tie_word_embeddings", true);
  m.dropout = std::max(r.probability("attention_dropout", 0.0), r.probability("hidden_dropout", 0.0));
  return m;
}

using Builder = ModelSpec (*)(const Reader&);
struct Family {
  std::string_view model_type;
  Builder build;
};
constexpr std::array<Family, 32> kFamilies{{{"llama", read_llama},
                                            {"mistral", read_mistral},
                                            {"mixtral", read_mixtral},
                                            {"qwen2", read_qwen2},
                                            {"qwen2_moe", read_qwen2_moe},
                                            {"qwen3", read_qwen3},
                                            {"qwen3_moe", read_qwen3_moe},
                                            {"qwen3_next", read_qwen3_next},
                                            // Qwen3.5's wrappers (qwen3_5, qwen3_5_moe) hold these in text_config;
                                            // a file flattened to the wrapper's type reads the same.
                                            {"qwen3_5_text", read_qwen3_5_text},
                                            {"qwen3_5", read_qwen3_5_text},
                                            {"qwen3_5_moe_text", read_qwen3_5_moe_text},
                                            {"qwen3_5_moe", read_qwen3_5_moe_text},
                                            {"granitemoehybrid", read_granitemoehybrid},
                                            {"phi3", read_phi3},
                                            {"gpt_neox", read_gpt_neox},
                                            {"gpt2", read_gpt2},
                                            {"deepseek_v2", read_deepseek_v2},
                                            {"deepseek_v3", read_deepseek_v3},
                                            {"deepseek_v32", read_deepseek_v32},
                                            // Kimi-K2's checkpoints name DeepseekV3ForCausalLM's shape kimi_k2.
                                            {"kimi_k2", read_deepseek_v3},
                                            {"glm4_moe", read_glm4_moe},
                                            {"minimax_m2", read_minimax_m2},
                                            {"smollm3", read_smollm3},
                                            {"internlm2", read_internlm2},
                                            {"olmo2", read_olmo2},
                                            {"chatglm", read_chatglm},
                                            {"baichuan", read_baichuan},
                                            {"falcon", read_falcon},
                                            {"gemma2", read_gemma2},
                                            {"gemma3_text", read_gemma3_text},
                                            {"gpt_oss", read_gpt_oss},
                                            {"llama4_text", read_llama4_text}}};

// torch_dtype (transformers < 4.56) or dtype (newer). Without either, transformers loads float32.
DType read_dtype(const Reader& text, const Reader& root) {
  for (const Reader* r : {&text, &root}) {
    for (const char* key : {"dtype", "torch_dtype"}) {
      if (!r->get(key)) continue;
      const std::string name = r->string(key, "");
      DType t{};
      if (name == "float8_e4m3fn" || name == "float8_e5m2") return DType::FP8;
      if (!parse_dtype(name, t))
        r->fail(key, fmt::format("unknown {} '{}'; known: float32, float16, bfloat16, float8_e4m3fn, "
                                 "float8_e5m2, {}",
                                 key, name, join(dtype_names())));
      return t;
    }
  }
  return DType::FP32;
}

QuantSpec read_bitsandbytes(const Reader& q) {
  QuantSpec s{.method = "bitsandbytes"};
  if (q.boolean("load_in_4bit", false)) {
    const std::string kind = q.string("bnb_4bit_quant_type", "fp4");  // BitsAndBytesConfig default
    if (kind == "nf4") {
      s.format = WeightQuant::Nf4;
    } else if (kind == "fp4") {
      s.format = WeightQuant::Int4;  // 4-bit codes with a per-block scale: stored like int4
    } else {
      q.fail("bnb_4bit_quant_type", fmt::format("bnb_4bit_quant_type must be nf4 or fp4, got '{}'", kind));
    }
    s.group_size = 64;  // bitsandbytes 4-bit block size (one absmax scale per 64 weights)
    s.double_quant = q.boolean("bnb_4bit_use_double_quant", false);
  } else if (q.boolean("load_in_8bit", false)) {
    s.format = WeightQuant::Int8;  // LLM.int8(): one scale per output row
  } else {
    q.fail("load_in_4bit", "a bitsandbytes quantization_config must set load_in_4bit or load_in_8bit");
  }
  return s;
}

// GPTQ and AWQ: integer weights with a scale per group of input channels (group_size -1 = per row).
QuantSpec read_int_groups(const Reader& q, const std::string& method) {
  QuantSpec s{.method = method};
  const std::int64_t bits = q.integer("bits", method == "awq" ? 4 : 0);
  if (bits == 4) {
    s.format = WeightQuant::Int4;
  } else if (bits == 8) {
    s.format = WeightQuant::Int8;
  } else {
    q.fail("bits", fmt::format("{} bits must be 4 or 8, got {}", method, bits));
  }
  const std::int64_t g = q.integer("group_size", 128);
  if (g == 0 || g < -1) q.fail("group_size", fmt::format("group_size must be positive or -1, got {}", g));
  s.group_size = g == -1 ? 0 : g;
  return s;
}

// FP8 checkpoints: weight_block_size [rows, cols] gives one scale per block; otherwise per tensor.
QuantSpec read_fp8(const Reader& q, const std::string& method) {
  QuantSpec s{.format = WeightQuant::Fp8, .method = method};
  const json* block = q.get("weight_block_size");
  if (!block) return s;
  const bool ok = block->is_array() && !block->empty() && std::all_of(block->begin(), block->end(), [](const json& v) {
                    return v.is_number_integer() && v.get<std::int64_t>() > 0;
                  });
  if (!ok)
    q.fail("weight_block_size",
           fmt::format("weight_block_size must be a list of positive integers, got {}", shown(*block)));
  s.group_size = 1;
  for (const json& v : *block) s.group_size *= v.get<std::int64_t>();
  return s;
}

QuantSpec read_quant(const Reader& q) {
  // Old bitsandbytes configs have no quant_method, only the load_in_* flags.
  const bool bnb_flags = q.get("load_in_4bit") || q.get("load_in_8bit");
  const std::string method = q.string("quant_method", bnb_flags ? "bitsandbytes" : "");
  if (method == "bitsandbytes") return read_bitsandbytes(q);
  if (method == "gptq" || method == "awq") return read_int_groups(q, method);
  // fbgemm_fp8 (Meta's FP8 releases) scales per output row.
  if (method == "fp8" || method == "fbgemm_fp8") return read_fp8(q, method);
  // MXFP4 (gpt-oss): 4-bit E2M1 weights with an E8M0 scale per 32 (OCP Microscaling Formats v1.0).
  if (method == "mxfp4") return QuantSpec{.format = WeightQuant::Mxfp4, .method = method, .group_size = 32};
  const std::vector<std::string> known{"bitsandbytes", "gptq", "awq", "fp8", "fbgemm_fp8", "mxfp4"};
  if (method.empty()) q.fail("quant_method", "quantization_config has no quant_method; supported: " + join(known));
  q.fail("quant_method", fmt::format("unsupported quant_method '{}'; supported: {}{}", method, join(known),
                                     did_you_mean(method, known)));
}

// Keys that change neither compute nor memory, ignored without a word (docs/model-configs.md lists them):
// identity and tokenizer metadata, special-token ids, initialisation and norm epsilons, dropout rates,
// runtime flags of transformers, the values (not the cost) of RoPE scaling and soft-capping, router
// losses and routing-score options that leave each token's top-k experts' work unchanged.
constexpr std::string_view kCosmeticKeys[] = {
    "_name_or_path", "architectures", "auto_map", "transformers_version", "tokenizer_class", "model_name",
    "bos_token_id", "eos_token_id", "pad_token_id", "sep_token_id", "decoder_start_token_id", "image_token_index",
    "image_token_id", "video_token_id", "vision_start_token_id", "vision_end_token_id", "vision_token_id",
    "boi_token_index", "eoi_token_index", "initializer_range", "initializer_factor", "rms_norm_eps", "layer_norm_eps",
    "layer_norm_epsilon", "layernorm_epsilon", "norm_epsilon", "attention_dropout", "hidden_dropout",
    "hidden_dropout_prob", "attention_probs_dropout_prob", "resid_pdrop", "embd_pdrop", "attn_pdrop",
    "classifier_dropout", "summary_activation", "summary_first_dropout", "summary_proj_to_labels", "summary_type",
    "summary_use_proj", "task_specific_params", "use_cache", "output_attentions", "output_hidden_states", "return_dict",
    "pretraining_tp", "tie_encoder_decoder", "use_bfloat16", "_attn_implementation", "attn_implementation",
    "rope_scaling", "original_max_position_embeddings", "attn_logit_softcapping", "final_logit_softcapping",
    "query_pre_attn_scalar", "router_aux_loss_coef", "output_router_logits", "router_z_loss_coef",
    "router_jitter_noise", "aux_loss_alpha", "seq_aux", "norm_topk_prob", "routed_scaling_factor", "topk_method",
    "scoring_func", "topk_group", "n_group", "scale_attn_weights", "reorder_and_upcast_attn",
    "scale_attn_by_inverse_layer_idx", "apply_query_key_layer_scaling", "attention_softmax_in_fp32",
    "apply_residual_connection_post_layernorm", "fp32_residual_connection", "bias_dropout_fusion",
    "quantization_config", "torch_dtype", "dtype", "model_type",
    // Metadata and duplicates: the tokenizer's length, the config's origin, a training EP hint, a second
    // spelling of a key that is read (gpt2's n_ctx, gemma2's sliding_window_size, gpt-oss's experts_per_token).
    "_from_model_config", "model_max_length", "ep_size", "n_ctx", "sliding_window_size", "experts_per_token",
    "initial_context_length", "cache_implementation",
    // Values, not cost: RoPE variants (local-layer base, LongRoPE and ChatGLM factors, M-RoPE), Llama 4's
    // attention temperature, gpt-oss's SwiGLU clamp, Llama 4's weightless q/k L2 norm.
    "rope_local_base_freq", "interpolate_factor", "original_rope", "use_mrope", "attn_scale", "attn_temperature_tuning",
    "floor_scale", "swiglu_limit", "use_qk_norm", "for_llm_compressor",
    // Phi-3's modelling code builds its projections without bias whatever these say (other readers read them).
    "attention_bias", "mlp_bias",
    // A multimodal wrapper's vision side (the tower is not simulated; vision_tower.h counts it).
    "projector_hidden_act", "vision_feature_layer", "vision_feature_select_strategy", "ignore_index"};

// Keys that change compute or memory in architectures no reader of that model_type models (the Gated DeltaNet
// keys outside the Qwen3-Next family's readers, Mllama's cross-attention, DeepSeek Sparse Attention's index keys
// outside deepseek_v32's): refused by name rather than ignored.
constexpr std::string_view kUnmodelledKeys[] = {"full_attention_interval", "linear_num_key_heads",
                                                "linear_num_value_heads",  "linear_key_head_dim",
                                                "linear_value_head_dim",   "linear_conv_kernel_dim",
                                                "cross_attention_layers",  "index_n_heads",
                                                "index_head_dim",          "index_topk"};

bool listed(const auto& list, const std::string& key) {
  return std::find(std::begin(list), std::end(list), std::string_view(key)) != std::end(list);
}

// The keys of `r` no reader asked for: an error for the unmodelled ones, the cosmetic ones dropped, the
// rest returned (show model prints them) under `prefix`.
void collect_unread(const Reader& r, const std::string& type, const std::string& prefix,
                    std::vector<std::string>& out) {
  for (const auto& k : r.unread()) {
    if (listed(kUnmodelledKeys, k))
      r.fail(k, fmt::format("{} changes compute or memory in a way llmsim's {} reader does not model", k, type));
    if (!listed(kCosmeticKeys, k)) out.push_back(prefix + k);
  }
}

// A multimodal wrapper's vision tower (vision_config beside text_config), counted apart where its
// architecture is known: Pixtral's encoder with Mistral-3's projector (mistral3, e.g. Mistral-Small-3.1).
// Another tower is named and left uncounted.
VisionTower read_vision_tower(const Reader& root, const Reader& vision, std::int64_t text_hidden) {
  VisionTower v;
  v.model_type = vision.string("model_type", "unknown");
  const std::string wrapper = root.string("model_type", "");
  if (wrapper == "qwen3_5" || wrapper == "qwen3_5_moe") {
    if (!vision.get("model_type")) v.model_type = wrapper + "_vision";  // Qwen3_5VisionConfig.model_type
    // Qwen3_5VisionConfig's defaults; old checkpoints name the tower's type after the wrapper (the config's
    // __post_init__ renames it).
    const std::int64_t hidden = vision.dimension("hidden_size", 1152);
    v.tower_params = qwen3_5_tower_params(
        hidden, vision.dimension("intermediate_size", 4304), vision.dimension("depth", 27, kMaxLayers),
        vision.dimension("in_channels", 3), vision.dimension("patch_size", 16),
        vision.dimension("temporal_patch_size", 2), vision.dimension("num_position_embeddings", 2304));
    v.projector_params = qwen3_5_merger_params(hidden, vision.positive("spatial_merge_size", 2),
                                               vision.dimension("out_hidden_size", 3584));
    v.counted = true;
    return v;
  }
  if (v.model_type != "pixtral" || wrapper != "mistral3") return v;
  const std::int64_t hidden = vision.dimension("hidden_size", 1024);
  v.tower_params = pixtral_tower_params(hidden, vision.dimension("intermediate_size", 4096),
                                        vision.dimension("num_hidden_layers", 24), vision.dimension("num_channels", 3),
                                        vision.dimension("patch_size", 16));
  v.projector_params = mistral3_projector_params(hidden, text_hidden, root.positive("spatial_merge_size", 2),
                                                 root.boolean("multimodal_projector_bias", false));
  v.counted = true;
  return v;
}

}  // namespace

std::vector<std::string> supported_model_types() {
  std::vector<std::string> out;
  for (const auto& f : kFamilies) out.emplace_back(f.model_type);
  return out;
}

ModelSpec model_from_hf_json(const JsonDocument& doc) {
  if (!doc.root.is_object()) throw_input(Location{.file = doc.file}, "a config.json must hold a JSON object");
  const Reader root(doc, doc.root, "");
  // Multimodal wrappers (llava, …) describe the language model in text_config.
  const auto text_obj = root.object("text_config");
  const Reader& text = text_obj ? *text_obj : root;
  const Reader& typed = text.get("model_type") ? text : root;
  if (!typed.get("model_type"))
    throw_input(Location{.file = doc.file, .key = "model_type"},
                "missing model_type; supported: " + join(supported_model_types()));
  const std::string type = typed.string("model_type", "");
  const auto family =
      std::find_if(kFamilies.begin(), kFamilies.end(), [&](const Family& f) { return f.model_type == type; });
  if (family == kFamilies.end())
    typed.fail("model_type", fmt::format("unsupported model_type '{}'; supported: {}{}", type,
                                         join(supported_model_types()), did_you_mean(type, supported_model_types())));

  ModelSpec m = family->build(text);
  // A wrapper may state tie_word_embeddings only at its top level.
  if (text_obj && !text.get("tie_word_embeddings") && root.get("tie_word_embeddings"))
    m.tied_embeddings = root.boolean("tie_word_embeddings", m.tied_embeddings);
  m.name = doc.file;
  m.model_type = type;
  if (const auto vision = root.object("vision_config")) m.vision = read_vision_tower(root, *vision, m.hidden);
  collect_unread(text, type, text_obj ? "text_config." : "", m.unread_keys);
  if (text_obj) collect_unread(root, type, "", m.unread_keys);
  m.dtype = read_dtype(text, root);
  if (const auto q = root.object("quantization_config")) {
    m.quant = read_quant(*q);
  } else if (const auto tq = text_obj ? text.object("quantization_config") : std::nullopt) {
    m.quant = read_quant(*tq);
  }
  // Each dimension is bounded as it is read; their products must be representable too (the fuzz run of
  // tests/fuzz found 2^32 MTP modules of DeepSeek-V3's size overflowing the count).
  check_param_counts(m, Location{.file = doc.file});
  return m;
}

ModelSpec load_hf_config(const std::string& path) {
  const std::string file =
      std::filesystem::is_directory(path) ? (std::filesystem::path(path) / "config.json").string() : path;
  return model_from_hf_json(parse_json_file(file));
}

}  // namespace llmsim::model
