#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "test_util.h"

#include <stdexcept>
#include <string>

#include "llmsim/core/error.h"
#include "llmsim/model/hf_config.h"
#include "llmsim/model/operators.h"
#include "llmsim/model/param_count.h"
#include "llmsim/model/presets.h"

using llmsim::Error;
using llmsim::ErrorKind;
using llmsim::JsonDocument;
using namespace llmsim::model;

namespace {

const std::string kData = LLMSIM_DATA_DIR;
const std::string kTestModels = std::string(LLMSIM_TEST_DATA_DIR) + "/models/";

using llmsim::test::error_of;

// An in-memory config.json, for cases too small to deserve a file.
ModelSpec from_text(const std::string& text) {
  return model_from_hf_json(JsonDocument{.file = "mem.json", .text = text, .root = nlohmann::json::parse(text)});
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace

TEST_CASE("supported model types are the thirty-one families, in dispatch order") {
  CHECK(supported_model_types() == std::vector<std::string>{"llama",
                                                            "mistral",
                                                            "mixtral",
                                                            "qwen2",
                                                            "qwen2_moe",
                                                            "qwen3",
                                                            "qwen3_moe",
                                                            "qwen3_next",
                                                            "qwen3_5_text",
                                                            "qwen3_5",
                                                            "qwen3_5_moe_text",
                                                            "qwen3_5_moe",
                                                            "granitemoehybrid",
                                                            "phi3",
                                                            "gpt_neox",
                                                            "gpt2",
                                                            "deepseek_v2",
                                                            "deepseek_v3",
                                                            "deepseek_v32",
                                                            "kimi_k2",
                                                            "glm4_moe",
                                                            "minimax_m2",
                                                            "smollm3",
                                                            "internlm2",
                                                            "olmo2",
                                                            "chatglm",
                                                            "baichuan",
                                                            "falcon",
                                                            "gemma2",
                                                            "gemma3_text",
                                                            "gpt_oss",
                                                            "llama4_text"});
}

TEST_CASE("internlm2 (InternLM2.5-7B): fused wqkv, GQA 32/8, no biases, untied; 7.74 B") {
  const ModelSpec m = load_hf_config(kTestModels + "internlm2_5-7b/config.json");
  CHECK(m.model_type == "internlm2");
  CHECK(m.fused_qkv);
  CHECK(attention_input_projections(m) == 1);
  CHECK(m.num_kv_heads == 8);
  CHECK(m.head_dim == 128);
  CHECK_FALSE(m.qkv_bias);  // "bias": false
  CHECK_FALSE(m.mlp_bias);
  CHECK(m.rope_theta == 1000000.0);
  CHECK_FALSE(m.tied_embeddings);
  // Per layer: wqkv 4096*(4096 + 2*1024) = 25,165,824 + wo 4096*4096 = 16,777,216 (41,943,040); w1, w3,
  // w2 3*4096*14336 = 176,160,768; norms 2*4096 = 8,192: 218,112,000 x 32 = 6,979,584,000; + embedding
  // and output 2*92544*4096 = 758,120,448 + final norm 4096 = 7,737,708,544 (the card's "7B" model).
  CHECK(count_params(m).total == 7737708544);
  // InternLM2Config's default bias is True: q, k, v and o get one.
  const ModelSpec d = from_text(R"({"model_type": "internlm2"})");
  CHECK(d.qkv_bias);
  CHECK(d.out_bias);
  CHECK_FALSE(d.mlp_bias);
  CHECK(d.vocab == 103168);
}

TEST_CASE("olmo2 (OLMo-2-1124-7B): q/k RMSNorm over the whole projection, post-norm; 7.30 B") {
  const ModelSpec m = load_hf_config(kTestModels + "olmo-2-1124-7b/config.json");
  CHECK(m.model_type == "olmo2");
  CHECK(m.qk_norm);
  CHECK(m.qk_norm_full_width);
  CHECK_FALSE(m.qkv_bias);
  CHECK(m.dtype == llmsim::DType::FP32);
  // Per layer: q, k, v, o 4*4096*4096 = 67,108,864; MLP 3*4096*11008 = 135,266,304; norms: the two
  // post-norms 2*4096 (as many as pre-norm) + q_norm 32*128 + k_norm 32*128 = 16,384 (Qwen3's per-head
  // norms would be 2*128): 202,391,552 x 32 = 6,476,529,664; + untied embedding and head
  // 2*100352*4096 = 822,083,584 + final norm 4096 = 7,298,617,344 (OLMo 2 "7B").
  CHECK(count_layer_params(m, 0).norms == 2 * 4096 + 4096 + 4096);
  CHECK(count_params(m).total == 7298617344);
}

TEST_CASE("chatglm (ChatGLM3-6B): MQA with 2 groups, qkv bias only, rotary on half the head; 6.24 B") {
  const ModelSpec m = load_hf_config(kTestModels + "chatglm3-6b/config.json");
  CHECK(m.model_type == "chatglm");
  CHECK(m.num_layers == 28);
  CHECK(m.vocab == 65024);
  CHECK(m.ffn_hidden == 13696);
  CHECK(m.num_kv_heads == 2);
  CHECK(m.head_dim == 128);
  CHECK(m.rotary_fraction == 0.5);
  CHECK(m.max_positions == 8192);
  CHECK(m.fused_qkv);
  CHECK(m.fused_gate_up);
  CHECK(m.qkv_bias);
  CHECK_FALSE(m.out_bias);
  CHECK_FALSE(m.mlp_bias);
  CHECK(m.norm == NormKind::RmsNorm);
  CHECK_FALSE(m.tied_embeddings);
  CHECK(m.dtype == llmsim::DType::FP16);
  // Per layer: query_key_value 4096*(4096 + 2*2*128) + bias 4608 = 18,878,976 + dense 4096*4096 =
  // 16,777,216 (35,656,192); dense_h_to_4h 4096*2*13696 + dense_4h_to_h 13696*4096 = 168,296,448; norms
  // 2*4096: 203,960,832 x 28 = 5,710,903,296; + word_embeddings and output_layer 2*65024*4096 =
  // 532,676,608 + final_layernorm 4096 = 6,243,584,000 (ChatGLM3-"6B").
  CHECK(count_params(m).total == 6243584000);
  // rope_ratio scales the base; a prefix encoder and a missing final norm are refused.
  CHECK(from_text(R"({"model_type": "chatglm", "rope_ratio": 50})").rope_theta == 500000.0);
  CHECK(contains(error_of([] { from_text(R"({"model_type": "chatglm", "pre_seq_len": 128})"); }).message(),
                 "pre_seq_len"));
  CHECK(contains(error_of([] { from_text(R"({"model_type": "chatglm", "post_layer_norm": false})"); }).message(),
                 "post_layer_norm false"));
  CHECK(from_text(R"({"model_type": "chatglm", "rmsnorm": false})").norm == NormKind::LayerNorm);
}

TEST_CASE("baichuan (Baichuan2-7B): fused W_pack, no GQA, RoPE; 13B shapes (ALiBi) are refused; 7.51 B") {
  const ModelSpec m = load_hf_config(kTestModels + "baichuan2-7b/config.json");
  CHECK(m.model_type == "baichuan");
  CHECK(m.fused_qkv);
  CHECK(m.num_kv_heads == 32);
  CHECK(m.position == PositionKind::Rope);
  CHECK_FALSE(m.qkv_bias);
  CHECK_FALSE(m.tied_embeddings);
  // Per layer: W_pack 3*4096*4096 + o_proj 4096*4096 = 67,108,864; MLP 3*4096*11008 = 135,266,304; norms
  // 2*4096: 202,383,360 x 32 = 6,476,267,520; + embedding and lm_head 2*125696*4096 = 1,029,701,632 +
  // final norm 4096 = 7,505,973,248 (Baichuan2-"7B").
  CHECK(count_params(m).total == 7505973248);
  // Baichuan2-13B (hidden 5120, 40 layers) uses ALiBi: refused at hidden_size, not silently rotated.
  const Error e = error_of([] {
    from_text(R"({"model_type": "baichuan", "hidden_size": 5120, "num_hidden_layers": 40, "num_attention_heads": 40})");
  });
  CHECK(e.kind() == ErrorKind::Input);
  CHECK(e.where().key == "hidden_size");
  CHECK(contains(e.message(), "ALiBi"));
  // num_key_value_heads is not a Baichuan key: ignored, as the modelling code does.
  CHECK(from_text(R"({"model_type": "baichuan", "num_key_value_heads": 8})").num_kv_heads == 32);
}

TEST_CASE("falcon (Falcon-40B-instruct): new decoder architecture, 8 KV heads, ln_attn + ln_mlp, tied; 41.3 B") {
  const ModelSpec m = load_hf_config(kTestModels + "falcon-40b-instruct/config.json");
  CHECK(m.model_type == "falcon");
  CHECK(m.num_heads == 128);
  CHECK(m.num_kv_heads == 8);
  CHECK(m.head_dim == 64);
  CHECK(m.ffn_hidden == 4 * 8192);
  CHECK(m.norm == NormKind::LayerNorm);
  CHECK(m.mlp == MlpKind::Plain);
  CHECK(m.activation == "gelu");
  CHECK(m.parallel_residual);
  CHECK_FALSE(m.shared_block_norm);
  CHECK(m.fused_qkv);
  CHECK_FALSE(m.qkv_bias);
  CHECK(m.tied_embeddings);  // no tie_word_embeddings key: PretrainedConfig's True
  // Per layer: query_key_value 8192*(128 + 2*8)*64 = 75,497,472 + dense 8192*8192 = 67,108,864
  // (142,606,336); dense_h_to_4h and dense_4h_to_h 2*8192*32768 = 536,870,912; ln_attn and ln_mlp
  // 2*2*8192 = 32,768: 679,510,016 x 60 = 40,770,600,960; + tied word_embeddings 65024*8192 =
  // 532,676,608 + ln_f 2*8192 = 41,303,293,952 (the card's "40B").
  CHECK(count_layer_params(m, 0).norms == 4 * 8192);
  CHECK(count_params(m).total == 41303293952);
}

TEST_CASE("falcon: Falcon-7B's multi-query layout with one input_layernorm; ALiBi and broken layouts refused") {
  // FalconConfig's defaults are a falcon-7b shape: 32 layers of 4544, 71 heads of 64, multi_query.
  const ModelSpec m = from_text(R"({"model_type": "falcon"})");
  CHECK(m.num_kv_heads == 1);
  CHECK(m.head_dim == 64);
  CHECK(m.shared_block_norm);
  // Per layer: query_key_value 4544*(4544 + 2*64) = 21,229,568 + dense 4544^2 = 20,647,936; MLP
  // 8*4544^2 = 165,183,488; one input_layernorm 2*4544 = 9,088: 207,070,080 x 32 = 6,626,242,560; + tied
  // embedding 65024*4544 = 295,469,056 + ln_f 9,088 = 6,921,720,704 (Falcon-"7B").
  CHECK(count_layer_params(m, 0).norms == 2 * 4544);
  CHECK(count_params(m).total == 6921720704);
  // Without multi_query every head has its own K and V; without parallel_attn two sequential norms.
  CHECK(from_text(R"({"model_type": "falcon", "multi_query": false})").num_kv_heads == 71);
  const ModelSpec seq = from_text(R"({"model_type": "falcon", "parallel_attn": false})");
  CHECK_FALSE(seq.parallel_residual);
  CHECK(count_layer_params(seq, 0).norms == 2 * 2 * 4544);
  const Error alibi = error_of([] { from_text(R"({"model_type": "falcon", "alibi": true})"); });
  CHECK(alibi.where().key == "alibi");
  CHECK(contains(alibi.message(), "ALiBi"));
  CHECK(contains(error_of([] {
                   from_text(R"({"model_type": "falcon", "new_decoder_architecture": true, "parallel_attn": false})");
                 }).message(),
                 "builds no ln_attn"));
  CHECK(from_text(R"({"model_type": "falcon", "new_decoder_architecture": true, "num_ln_in_parallel_attn": 1})")
            .shared_block_norm);
}

TEST_CASE("deepseek_v3 (DeepSeek-R1): MLA, 256 routed + 1 shared expert after 3 dense layers; 671 B, 37 B active") {
  const ModelSpec m = load_hf_config(kTestModels + "deepseek-r1/config.json");
  CHECK(m.model_type == "deepseek_v3");
  CHECK(m.mla.enabled());
  CHECK(m.mla.q_lora_rank == 1536);
  CHECK(m.head_dim == 192);  // 128 nope + 64 RoPE
  CHECK(m.v_head_dim() == 128);
  CHECK(m.o_dim() == 128 * 128);
  CHECK(m.moe.first_dense == 3);
  CHECK_FALSE(m.is_moe_layer(2));
  CHECK(m.is_moe_layer(3));
  CHECK(m.moe.router_bias);  // noaux_tc
  CHECK(m.mtp_layers == 1);
  CHECK(m.quant.format == WeightQuant::Fp8);
  // Attention per layer: q_a 7168*1536 = 11,010,048; q_b 1536*128*192 = 37,748,736; kv_a 7168*576 =
  // 4,128,768; kv_b 512*128*256 = 16,777,216; o 16384*7168 = 117,440,512: 187,105,280. Norms 2*7168 +
  // 1536 + 512 = 16,384. Dense MLP 3*7168*18432 = 396,361,728 (3 layers). MoE layer: 257 experts of
  // 3*7168*2048 = 44,040,192 (256 routed + 1 shared) = 11,318,329,344 + router 7168*256 + 256 bias =
  // 11,320,164,608 (58 layers). Embedding and head 2*129280*7168 = 1,853,358,080; final norm 7168.
  const ParamCounts c = count_params(m);
  CHECK(c.total == 671026419200);
  // Active: 8 routed + shared + router = 398,196,992 per MoE layer.
  CHECK(c.active == 37552297472);
  // MTP: 3 norms 21,504 + eh_proj 2*7168*7168 = 102,760,448 + one MoE layer 11,507,286,272.
  CHECK(c.mtp == 11610068224);
  // The latent cache: (512 + 64) x 61 layers x 2 B, whole on every TP rank.
  CHECK(kv_bytes_per_token(m, m.num_layers, 8, 2.0) == doctest::Approx(576.0 * 61 * 2));
}

TEST_CASE("deepseek_v32 (DeepSeek-V3.2-Exp): V3's shape with the sparse-attention indexer; its keys in the cache") {
  const ModelSpec m = load_hf_config(kTestModels + "deepseek-v3.2-exp/config.json");
  const ModelSpec v3 = load_hf_config(kTestModels + "deepseek-r1/config.json");
  CHECK(m.model_type == "deepseek_v32");
  CHECK(m.unread_keys.empty());
  REQUIRE(m.dsa.enabled());
  CHECK(m.dsa.heads == 64);
  CHECK(m.dsa.head_dim == 128);
  CHECK(m.dsa.topk == 2048);
  CHECK_FALSE(v3.dsa.enabled());
  // Indexer per layer (DeepSeek-V3.2-Exp inference/model.py Indexer): wq_b 1536 x 64 x 128 = 12,582,912; wk
  // 7168 x 128 = 917,504; weights_proj 7168 x 64 = 458,752; k_norm 2 x 128 = 256: 13,959,424 on each of the 61
  // layers and on the MTP module's layer.
  const ParamCounts c = count_params(m), c3 = count_params(v3);
  CHECK(c.total - c3.total == 61 * 13959424);
  CHECK(c.active - c3.active == 61 * 13959424);
  CHECK(c.mtp - c3.mtp == 13959424);
  CHECK(c.total == 671877944064);
  // The cache adds the indexer's fp8 key and one fp32 scale per token and layer: 128 + 4 B, at any latent dtype.
  CHECK(kv_bytes_per_token(m, m.num_layers, 8, 2.0) == doctest::Approx((576.0 * 2 + 132) * 61));
  CHECK(kv_bytes_per_token(m, m.num_layers, 8, 1.0) == doctest::Approx((576.0 + 132) * 61));
  // The indexer projects MLA's query latent: a config without q_lora_rank has none.
  const Error e = error_of([] { from_text(R"({"model_type": "deepseek_v32", "q_lora_rank": null})"); });
  CHECK(e.where().key == "q_lora_rank");
  CHECK(contains(e.message(), "q_lora_rank must be > 0"));
  // Another DeepSeek reader does not model the indexer: its keys there are refused by name.
  const Error f = error_of([] { from_text(R"({"model_type": "deepseek_v3", "index_topk": 2048})"); });
  CHECK(f.where().key == "index_topk");
}

TEST_CASE("deepseek_v2 (DeepSeek-V2-Lite): one q_proj, 64 experts + 2 shared after 1 dense layer; 15.7 B") {
  const ModelSpec m = load_hf_config(kTestModels + "deepseek-v2-lite/config.json");
  CHECK(m.model_type == "deepseek_v2");
  CHECK(m.mla.q_lora_rank == 0);  // absent: q_proj straight from the hidden state
  CHECK(m.moe.shared_expert_ffn == 2 * 1408);
  CHECK_FALSE(m.moe.router_bias);  // greedy
  CHECK(m.mtp_layers == 0);
  // Attention: q 2048*16*192 = 6,291,456; kv_a 2048*576 = 1,179,648; kv_b 512*16*256 = 2,097,152; o 2048*2048
  // = 4,194,304; norms 2*2048 + 512. Dense 3*2048*10944 (1 layer); MoE 64*3*2048*1408 + 3*2048*2816 +
  // 2048*64 = 571,080,704 (26 layers); embedding and head 2*102400*2048.
  const ParamCounts c = count_params(m);
  CHECK(c.total == 15706484224);
  CHECK(c.active == 2661150208);
}

TEST_CASE("phi3 (Phi-3.5-mini, Phi-4-mini): fused qkv and gate_up, partial rotary; the cards' 3.8 B") {
  const ModelSpec p35 = load_hf_config(kTestModels + "phi-3.5-mini/config.json");
  CHECK(p35.model_type == "phi3");
  CHECK(p35.fused_qkv);
  CHECK(p35.fused_gate_up);
  CHECK(attention_input_projections(p35) == 1);
  CHECK(mlp_input_projections(p35) == 1);
  CHECK(p35.rotary_fraction == 1.0);
  CHECK_FALSE(p35.tied_embeddings);
  // Per layer: qkv 3072*9216 + o 3072*3072 = 37,748,736; gate_up 3072*16384 + down 8192*3072 =
  // 75,497,472; norms 6,144: 113,252,352 x 32 = 3,624,075,264; + embedding and head 2*32064*3072 =
  // 197,001,216 + final norm 3072 = 3,821,079,552.
  CHECK(count_params(p35).total == 3821079552);
  const ModelSpec p4 = load_hf_config(kTestModels + "phi-4-mini/config.json");
  CHECK(p4.num_kv_heads == 8);
  CHECK(p4.head_dim == 128);
  CHECK(p4.rotary_fraction == 0.75);
  CHECK(p4.tied_embeddings);
  // Per layer: qkv 3072*(3072 + 2*1024) + o 3072*3072 = 25,165,824; MLP 3*3072*8192 = 75,497,472; norms
  // 6,144: 100,669,440 x 32 = 3,221,422,080; + tied embedding 200064*3072 = 614,596,608 + 3072.
  CHECK(count_params(p4).total == 3836021760);
}

TEST_CASE("qwen3 (Qwen3-4B): head_dim 128 beside hidden 2560, q/k norms, tied; the card's 4.0 B") {
  const ModelSpec m = load_hf_config(kTestModels + "qwen3-4b/config.json");
  CHECK(m.model_type == "qwen3");
  CHECK(m.hidden == 2560);
  CHECK(m.head_dim == 128);
  CHECK(m.q_dim() == 4096);  // 32 heads x 128: wider than hidden
  CHECK(m.kv_dim() == 1024);
  CHECK(m.qk_norm);
  CHECK_FALSE(m.qkv_bias);
  CHECK_FALSE(m.out_bias);
  CHECK(m.tied_embeddings);
  // Per layer: q 2560*4096 + k, v 2560*1024 each + o 4096*2560 = 26,214,400; MLP 3*2560*9728 =
  // 74,711,040; norms 2*2560 + q/k norms 2*128 = 5,376; 36 layers = 3,633,509,376; + embedding
  // 151936*2560 = 388,956,160 (tied) + final norm 2560 = 4,022,468,096.
  const ParamCounts c = count_params(m);
  CHECK(c.total == 4022468096);
  CHECK(count_layer_params(m, 0).norms == 2 * 2560 + 2 * 128);
}

TEST_CASE("qwen3_moe (Qwen3-30B-A3B): 128 experts of 768, top-8, no shared expert; 30.5 B, 3.3 B active") {
  const ModelSpec m = load_hf_config(kTestModels + "qwen3-30b-a3b/config.json");
  CHECK(m.model_type == "qwen3_moe");
  CHECK(m.moe.num_experts == 128);
  CHECK(m.moe.experts_per_token == 8);
  CHECK(m.moe.expert_ffn == 768);
  CHECK(m.moe.shared_expert_ffn == 0);  // qwen2_moe's default would add a 5632-wide shared expert
  CHECK(m.qk_norm);
  // Per layer: experts 128*3*2048*768 = 603,979,776; router 2048*128 = 262,144; attention q, o
  // 2048*4096 each + k, v 2048*512 each = 18,874,368; norms 2*2048 + 2*128 = 4,352: 623,120,640 x 48 =
  // 29,909,790,720; + untied embedding and head 2*151936*2048 = 622,329,856 + final norm 2048.
  const ParamCounts c = count_params(m);
  CHECK(c.total == 30532122624);
  // Active: 8 of the experts (37,748,736) + router + attention + norms = 56,889,600 x 48 + embeddings.
  CHECK(c.active == 3353032704);
}

TEST_CASE("llama2-7b preset: every field from the file or LlamaConfig defaults") {
  const ModelSpec m = resolve_model("llama2-7b", kData);
  CHECK(m.name == "llama2-7b");
  CHECK(m.model_type == "llama");
  CHECK(m.num_layers == 32);
  CHECK(m.hidden == 4096);
  CHECK(m.num_heads == 32);
  CHECK(m.num_kv_heads == 32);
  CHECK(m.head_dim == 128);
  CHECK(m.ffn_hidden == 11008);
  CHECK(m.vocab == 32000);
  CHECK(m.max_positions == 4096);
  CHECK(m.norm == NormKind::RmsNorm);
  CHECK(m.mlp == MlpKind::Gated);
  CHECK(m.position == PositionKind::Rope);
  CHECK(m.activation == "silu");
  CHECK(m.rope_theta == 10000.0);  // absent in the file: LlamaConfig default
  CHECK_FALSE(m.qkv_bias);
  CHECK_FALSE(m.out_bias);
  CHECK_FALSE(m.mlp_bias);
  CHECK_FALSE(m.tied_embeddings);
  CHECK(m.dropout == 0.0);
  CHECK(m.sliding_window == 0);
  CHECK_FALSE(m.moe.enabled());
  CHECK(m.dtype == llmsim::DType::FP16);
  CHECK(m.quant.format == WeightQuant::None);
}

TEST_CASE("llama3.1-405b preset: GQA and rope_theta from the file") {
  const ModelSpec m = resolve_model("llama3.1-405b", kData);
  CHECK(m.num_heads == 128);
  CHECK(m.num_kv_heads == 8);
  CHECK(m.kv_dim() == 1024);
  CHECK(m.rope_theta == 500000.0);
  CHECK(m.max_positions == 131072);
  CHECK(m.dtype == llmsim::DType::BF16);
}

TEST_CASE("mistral-7b preset keeps its 4096-token sliding window") {
  const ModelSpec m = resolve_model("mistral-7b", kData);
  CHECK(m.model_type == "mistral");
  CHECK(m.sliding_window == 4096);
  CHECK(m.num_kv_heads == 8);
}

TEST_CASE("mistral: absent sliding_window is the 4096 default, null is full attention") {
  CHECK(from_text(R"({"model_type": "mistral"})").sliding_window == 4096);
  CHECK(from_text(R"({"model_type": "mistral", "sliding_window": null})").sliding_window == 0);
}

TEST_CASE("mixtral-8x7b preset: 8 experts of 14336, top-2, no dense MLP, no window") {
  const ModelSpec m = resolve_model("mixtral-8x7b", kData);
  CHECK(m.moe.num_experts == 8);
  CHECK(m.moe.experts_per_token == 2);
  CHECK(m.moe.expert_ffn == 14336);
  CHECK(m.moe.shared_expert_ffn == 0);
  CHECK_FALSE(m.moe.shared_expert_gate);
  CHECK(m.moe.sparse_step == 1);
  CHECK(m.ffn_hidden == 0);
  CHECK(m.sliding_window == 0);  // "sliding_window": null
  CHECK(m.rope_theta == 1000000.0);
  CHECK(m.is_moe_layer(0));
  CHECK(m.is_moe_layer(31));
}

TEST_CASE("mixtral: num_experts (transformers >= 5 spelling) is read like num_local_experts") {
  const ModelSpec m = from_text(R"({"model_type": "mixtral", "num_experts": 4, "num_experts_per_tok": 1})");
  CHECK(m.moe.num_experts == 4);
  CHECK(m.moe.experts_per_token == 1);
}

TEST_CASE("qwen2 presets: biases on q, k, v only; the window is off without use_sliding_window") {
  const ModelSpec m = resolve_model("qwen2-72b", kData);
  CHECK(m.model_type == "qwen2");
  CHECK(m.qkv_bias);
  CHECK_FALSE(m.out_bias);
  CHECK_FALSE(m.mlp_bias);
  CHECK(m.sliding_window == 0);  // sliding_window 131072 but use_sliding_window false
  CHECK(resolve_model("qwen2-7b", kData).num_kv_heads == 4);
  CHECK(from_text(R"({"model_type": "qwen2", "use_sliding_window": true, "sliding_window": 2048})").sliding_window ==
        2048);
}

TEST_CASE("every shipped preset loads and is listed, sorted") {
  const auto presets = list_model_presets(kData);
  CHECK(presets == std::vector<std::string>{"llama2-13b", "llama2-70b", "llama2-7b", "llama3-70b", "llama3-8b",
                                            "llama3.1-405b", "mistral-7b", "mixtral-8x7b", "qwen2-72b", "qwen2-7b"});
  for (const auto& p : presets) CHECK(resolve_model(p, kData).name == p);
}

TEST_CASE("gpt2: GPT2Config names, 4x MLP for n_inner null, learned positions, tied, dropout 0.1") {
  const ModelSpec m = load_hf_config(kTestModels + "gpt2");  // a folder holding config.json
  CHECK(m.name == kTestModels + "gpt2/config.json");
  CHECK(m.model_type == "gpt2");
  CHECK(m.hidden == 768);
  CHECK(m.num_layers == 12);
  CHECK(m.num_heads == 12);
  CHECK(m.num_kv_heads == 12);
  CHECK(m.head_dim == 64);
  CHECK(m.ffn_hidden == 3072);
  CHECK(m.vocab == 50257);
  CHECK(m.max_positions == 1024);
  CHECK(m.norm == NormKind::LayerNorm);
  CHECK(m.mlp == MlpKind::Plain);
  CHECK(m.position == PositionKind::Learned);
  CHECK(m.activation == "gelu_new");
  CHECK(m.qkv_bias);
  CHECK(m.out_bias);
  CHECK(m.mlp_bias);
  CHECK(m.tied_embeddings);
  CHECK(m.dropout == doctest::Approx(0.1));
  CHECK(m.dtype == llmsim::DType::FP32);  // no torch_dtype: transformers loads float32
}

TEST_CASE("gpt2 defaults apply to an empty config; n_inner overrides the 4x rule") {
  const ModelSpec d = from_text(R"({"model_type": "gpt2"})");
  CHECK(d.hidden == 768);
  CHECK(d.ffn_hidden == 3072);
  CHECK(d.vocab == 50257);
  CHECK(from_text(R"({"model_type": "gpt2", "n_embd": 1024, "n_head": 16, "n_inner": 1000})").ffn_hidden == 1000);
  CHECK(from_text(R"({"model_type": "gpt2", "attn_pdrop": 0.0, "resid_pdrop": 0.0})").dropout == 0.0);
}

TEST_CASE("gpt_neox (pythia-160m): partial rotary, parallel residual, LayerNorm, biases, untied") {
  const ModelSpec m = load_hf_config(kTestModels + "pythia-160m/config.json");
  CHECK(m.model_type == "gpt_neox");
  CHECK(m.hidden == 768);
  CHECK(m.ffn_hidden == 3072);
  CHECK(m.vocab == 50304);
  CHECK(m.rotary_fraction == doctest::Approx(0.25));
  CHECK(m.rope_theta == 10000.0);
  CHECK(m.parallel_residual);
  CHECK(m.norm == NormKind::LayerNorm);
  CHECK(m.mlp == MlpKind::Plain);
  CHECK(m.activation == "gelu");
  CHECK(m.qkv_bias);
  CHECK(m.out_bias);
  CHECK(m.mlp_bias);
  CHECK_FALSE(m.tied_embeddings);
  CHECK(m.dtype == llmsim::DType::FP16);
}

TEST_CASE("gpt_neox: GPTNeoXConfig defaults and the transformers 5 rope_parameters spelling") {
  const ModelSpec d = from_text(R"({"model_type": "gpt_neox"})");
  CHECK(d.vocab == 50432);
  CHECK(d.hidden == 6144);
  CHECK(d.num_layers == 44);
  CHECK(d.num_heads == 64);
  CHECK(d.ffn_hidden == 24576);
  CHECK(d.rotary_fraction == doctest::Approx(0.25));
  CHECK(d.parallel_residual);
  const ModelSpec n = from_text(
      R"({"model_type": "gpt_neox", "rope_parameters": {"rope_type": "default", "rope_theta": 20000.0,
          "partial_rotary_factor": 0.5}})");
  CHECK(n.rope_theta == 20000.0);
  CHECK(n.rotary_fraction == doctest::Approx(0.5));
  // GPT-NeoX has no GQA: transformers ignores num_key_value_heads there.
  CHECK(from_text(R"({"model_type": "gpt_neox", "num_key_value_heads": 4})").num_kv_heads == 64);
}

TEST_CASE("qwen2_moe (Qwen1.5-MoE-A2.7B): experts, top-k, shared expert with gate, qkv bias") {
  const ModelSpec m = load_hf_config(kTestModels + "qwen1.5-moe-a2.7b");
  CHECK(m.model_type == "qwen2_moe");
  CHECK(m.moe.num_experts == 60);
  CHECK(m.moe.experts_per_token == 4);
  CHECK(m.moe.expert_ffn == 1408);
  CHECK(m.moe.shared_expert_ffn == 5632);
  CHECK(m.moe.shared_expert_gate);
  CHECK(m.moe.sparse_step == 1);
  CHECK(m.ffn_hidden == 5632);
  CHECK(m.qkv_bias);
  CHECK_FALSE(m.out_bias);
  CHECK(m.rope_theta == 1000000.0);
}

TEST_CASE("qwen2_moe: decoder_sparse_step makes every n-th layer sparse; mlp_only_layers is refused") {
  const ModelSpec m = from_text(R"({"model_type": "qwen2_moe", "decoder_sparse_step": 2})");
  CHECK_FALSE(m.is_moe_layer(0));
  CHECK(m.is_moe_layer(1));
  const Error e = error_of([] { from_text(R"({"model_type": "qwen2_moe", "mlp_only_layers": [0, 5]})"); });
  CHECK(e.kind() == ErrorKind::Input);
  CHECK(e.where().key == "mlp_only_layers");
  // An empty list is the transformers default and means nothing.
  CHECK(from_text(R"({"model_type": "qwen2_moe", "mlp_only_layers": []})").moe.num_experts == 60);
}

TEST_CASE("nested text_config: the language model of a llava config, LlamaConfig defaults filling gaps") {
  const ModelSpec m = load_hf_config(kTestModels + "llava-1.5-7b/config.json");
  CHECK(m.model_type == "llama");  // from text_config.model_type, not the wrapper's "llava"
  CHECK(m.vocab == 32064);
  CHECK(m.hidden == 4096);    // not vision_config.hidden_size (1024)
  CHECK(m.num_layers == 32);  // not vision_config.num_hidden_layers (24)
  CHECK(m.ffn_hidden == 11008);
  CHECK(m.num_kv_heads == 32);
  CHECK(m.max_positions == 4096);
  CHECK_FALSE(m.tied_embeddings);
  CHECK(m.dtype == llmsim::DType::FP16);
}

TEST_CASE("errors inside text_config are located inside text_config") {
  const std::string text = R"({
  "model_type": "llava",
  "vision_config": {"hidden_size": 1024},
  "text_config": {
    "model_type": "llama",
    "hidden_size": 0
  }
})";
  const Error e = error_of([&] { from_text(text); });
  CHECK(e.kind() == ErrorKind::Input);
  CHECK(e.where().key == "text_config.hidden_size");
  CHECK(e.where().line == 6);
}

TEST_CASE("quantization_config: bitsandbytes NF4 with double quantization") {
  const ModelSpec m = load_hf_config(kTestModels + "llama3-8b-bnb-nf4.json");
  CHECK(m.quant.format == WeightQuant::Nf4);
  CHECK(m.quant.method == "bitsandbytes");
  CHECK(m.quant.double_quant);
  CHECK(m.quant.group_size == 64);
  CHECK(m.dtype == llmsim::DType::BF16);
  CHECK(m.hidden == 4096);
}

TEST_CASE("quantization_config: the other methods") {
  auto quant = [](const std::string& q) {
    return from_text(R"({"model_type": "llama", "quantization_config": )" + q + "}").quant;
  };
  const QuantSpec int8 = quant(R"({"quant_method": "bitsandbytes", "load_in_8bit": true})");
  CHECK(int8.format == WeightQuant::Int8);
  CHECK(int8.group_size == 0);
  // Old bitsandbytes configs carry only the flags; fp4 is the BitsAndBytesConfig default type.
  const QuantSpec fp4 = quant(R"({"load_in_4bit": true})");
  CHECK(fp4.method == "bitsandbytes");
  CHECK(fp4.format == WeightQuant::Int4);
  CHECK_FALSE(fp4.double_quant);
  const QuantSpec gptq = quant(R"({"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": false})");
  CHECK(gptq.format == WeightQuant::Int4);
  CHECK(gptq.group_size == 128);
  CHECK(quant(R"({"quant_method": "gptq", "bits": 8, "group_size": -1})").group_size == 0);
  CHECK(quant(R"({"quant_method": "gptq", "bits": 8, "group_size": -1})").format == WeightQuant::Int8);
  const QuantSpec awq = quant(R"({"quant_method": "awq", "bits": 4, "group_size": 64, "version": "gemm"})");
  CHECK(awq.format == WeightQuant::Int4);
  CHECK(awq.group_size == 64);
  const QuantSpec fp8 = quant(R"({"quant_method": "fp8", "weight_block_size": [128, 128]})");
  CHECK(fp8.format == WeightQuant::Fp8);
  CHECK(fp8.group_size == 16384);
  CHECK(quant(R"({"quant_method": "fbgemm_fp8", "activation_scale_ub": 1200.0})").format == WeightQuant::Fp8);
}

TEST_CASE("quantization_config errors name the rule") {
  auto err = [](const std::string& q) {
    return error_of([&] { from_text(R"({"model_type": "llama", "quantization_config": )" + q + "}"); });
  };
  const Error bits = err(R"({"quant_method": "gptq", "bits": 3})");
  CHECK(bits.kind() == ErrorKind::Input);
  CHECK(bits.where().key == "quantization_config.bits");
  CHECK(contains(bits.message(), "4 or 8"));
  const Error method = err(R"({"quant_method": "gptqq"})");
  CHECK(contains(method.message(), "did you mean 'gptq'"));
  CHECK(contains(err(R"({"quant_method": "bitsandbytes"})").message(), "load_in_4bit or load_in_8bit"));
  CHECK(contains(
      err(R"({"quant_method": "bitsandbytes", "load_in_4bit": true, "bnb_4bit_quant_type": "int4"})").message(),
      "nf4 or fp4"));
}

TEST_CASE("new transformers spellings: dtype, rope_parameters.rope_theta, head_dim") {
  const ModelSpec m = load_hf_config(kTestModels + "llama3-8b-new-spellings.json");
  CHECK(m.dtype == llmsim::DType::BF16);
  CHECK(m.rope_theta == 500000.0);
  CHECK(m.head_dim == 128);
  // rope_parameters wins over a stale top-level rope_theta.
  CHECK(from_text(R"({"model_type": "llama", "rope_theta": 1.0, "rope_parameters": {"rope_theta": 7.0}})").rope_theta ==
        7.0);
}

TEST_CASE("head_dim, when given, need not be hidden / heads") {
  const ModelSpec m = from_text(R"({"model_type": "mistral", "hidden_size": 5120, "num_attention_heads": 32,
                                    "num_key_value_heads": 8, "head_dim": 128})");
  CHECK(m.head_dim == 128);
  CHECK(m.q_dim() == 4096);
  CHECK(m.kv_dim() == 1024);
}

TEST_CASE("llama attention_bias and mlp_bias switch the biases on") {
  const ModelSpec m = from_text(R"({"model_type": "llama", "attention_bias": true, "mlp_bias": true,
                                    "attention_dropout": 0.1})");
  CHECK(m.qkv_bias);
  CHECK(m.out_bias);
  CHECK(m.mlp_bias);
  CHECK(m.dropout == doctest::Approx(0.1));
}

TEST_CASE("malformed JSON is an Input error at the line of the fault") {
  const Error e = error_of([] { load_hf_config(kTestModels + "malformed.json"); });
  CHECK(e.kind() == ErrorKind::Input);
  CHECK(e.where().line == 5);  // the comma is missing at the end of line 4; line 5 is unexpected
  CHECK(contains(e.message(), "malformed JSON"));
}

TEST_CASE("a missing file or folder is NotFound") {
  CHECK(error_of([] { load_hf_config(kTestModels + "no-such.json"); }).kind() == ErrorKind::NotFound);
  CHECK(error_of([] { load_hf_config(kTestModels); }).kind() == ErrorKind::NotFound);  // folder, no config.json
}

TEST_CASE("unknown model_type lists the supported ones with a did-you-mean, at the key's line") {
  const Error e = error_of([] { load_hf_config(kTestModels + "unknown-model-type.json"); });
  CHECK(e.kind() == ErrorKind::Input);
  CHECK(e.where().key == "model_type");
  CHECK(e.where().line == 6);
  CHECK(contains(e.message(), "'lama'"));
  CHECK(contains(e.message(), "llama, mistral, mixtral, qwen2, qwen2_moe, qwen3, qwen3_moe, qwen3_next"));
  CHECK(contains(e.message(), "did you mean 'llama'"));
  // The architecture is never guessed: no model_type is an error too.
  CHECK(contains(error_of([] { from_text(R"({"hidden_size": 4096})"); }).message(), "missing model_type"));
}

TEST_CASE("a negative hidden size is named with its value and the rule") {
  const Error e = error_of([] { load_hf_config(kTestModels + "negative-hidden.json"); });
  CHECK(e.kind() == ErrorKind::Input);
  CHECK(e.where().key == "hidden_size");
  CHECK(e.where().line == 4);
  CHECK(contains(e.message(), "hidden_size must be a positive integer, got -4096"));
}

TEST_CASE("kv heads that do not divide the query heads are refused") {
  const Error e = error_of([] { load_hf_config(kTestModels + "kv-heads-not-dividing.json"); });
  CHECK(e.kind() == ErrorKind::Input);
  CHECK(e.where().key == "num_key_value_heads");
  CHECK(contains(e.message(), "num_key_value_heads (5) must divide num_attention_heads (32)"));
}

TEST_CASE("heads that do not divide hidden are refused unless head_dim is given") {
  const Error e =
      error_of([] { from_text(R"({"model_type": "llama", "hidden_size": 4100, "num_attention_heads": 32})"); });
  CHECK(e.where().key == "num_attention_heads");
  CHECK(contains(e.message(), "must divide the hidden size (4100)"));
  CHECK(from_text(R"({"model_type": "llama", "hidden_size": 4100, "num_attention_heads": 32, "head_dim": 128})")
            .head_dim == 128);
}

TEST_CASE("wrong JSON types are refused, not coerced") {
  CHECK(contains(error_of([] { from_text(R"({"model_type": "llama", "hidden_size": "4096"})"); }).message(),
                 "hidden_size must be an integer, got \"4096\""));
  CHECK(contains(error_of([] { from_text(R"({"model_type": "llama", "num_hidden_layers": 32.5})"); }).message(),
                 "must be an integer"));
  CHECK(contains(error_of([] { from_text(R"({"model_type": "llama", "tie_word_embeddings": "no"})"); }).message(),
                 "must be true or false"));
  CHECK(contains(error_of([] { from_text(R"({"model_type": 7})"); }).message(), "model_type must be a string"));
  CHECK(contains(error_of([] { from_text(R"({"model_type": "llama", "torch_dtype": "float13"})"); }).message(),
                 "unknown torch_dtype 'float13'"));
  CHECK(contains(error_of([] { from_text(R"({"model_type": "mixtral", "num_experts_per_tok": 9})"); }).message(),
                 "cannot exceed the number of experts (8)"));
  CHECK(contains(error_of([] { from_text(R"([1, 2])"); }).message(), "JSON object"));
}

TEST_CASE("num_key_value_heads: absent takes the family default, null means multi-head") {
  CHECK(from_text(R"({"model_type": "mistral"})").num_kv_heads == 8);
  CHECK(from_text(R"({"model_type": "mistral", "num_key_value_heads": null})").num_kv_heads == 32);
  CHECK(from_text(R"({"model_type": "llama", "num_attention_heads": 16})").num_kv_heads == 16);
}

TEST_CASE("null means 'not set', as in Python: defaults apply") {
  const ModelSpec m = from_text(R"({"model_type": "llama", "num_key_value_heads": null, "head_dim": null,
                                    "rope_theta": null, "torch_dtype": null})");
  CHECK(m.num_kv_heads == 32);
  CHECK(m.head_dim == 128);
  CHECK(m.rope_theta == 10000.0);
}

TEST_CASE("resolve_model: a path wins over a preset and keeps the path as its name") {
  const std::string path = std::string(LLMSIM_DATA_DIR) + "/models/llama3-8b";
  const ModelSpec m = resolve_model(path, kData);
  CHECK(m.name == path);
  CHECK(m.vocab == 128256);
}

TEST_CASE("resolve_model: an unknown name is NotFound with the presets and a did-you-mean") {
  const Error e = error_of([] { resolve_model("llama2-7", kData); });
  CHECK(e.kind() == ErrorKind::NotFound);
  CHECK(contains(e.message(), "unknown model 'llama2-7'"));
  CHECK(contains(e.message(), "llama2-13b, llama2-70b, llama2-7b"));
  CHECK(contains(e.message(), "did you mean 'llama2-7b'"));
  const Error p = error_of([] { resolve_model("./nowhere/config.json", kData); });
  CHECK(p.kind() == ErrorKind::NotFound);
  CHECK(p.where().file == "./nowhere/config.json");
}

TEST_CASE("configs that would break the simulators are input errors naming the key") {
  // A dimension transformers cannot build from: null heads (null KV heads still mean multi-head).
  CHECK(contains(error_of([] { from_text(R"({"model_type": "llama", "num_attention_heads": null})"); }).message(),
                 "num_attention_heads is null"));
  // Sizes no model has, which would overflow the simulators' products.
  CHECK(
      contains(error_of([] { from_text(R"({"model_type": "llama", "hidden_size": 4611686018427387904})"); }).message(),
               "hidden_size = 4611686018427387904 is larger than any model's (at most 16777216)"));
  CHECK(contains(error_of([] { from_text(R"({"model_type": "llama", "num_hidden_layers": 2000000000})"); }).message(),
                 "is larger than any model's (at most 10000)"));
  // A number no double holds, with its line.
  const std::string big =
      llmsim::test::write_temp("big-number.json", "{\n  \"model_type\": \"llama\",\n  \"rope_theta\": 1e400\n}\n");
  const Error e = error_of([&] { load_hf_config(big); });
  CHECK(e.kind() == ErrorKind::Input);
  CHECK(e.where().line == 3);
  CHECK(contains(e.message(), "number 1e400 overflows a double"));
  // A symbolic-link loop is the user's path, not an internal error.
  const auto dir = llmsim::test::process_temp_dir();
  std::error_code ec;
  std::filesystem::remove(dir / "loop-a", ec);
  std::filesystem::remove(dir / "loop-b", ec);
  std::filesystem::create_symlink(dir / "loop-b", dir / "loop-a");
  std::filesystem::create_symlink(dir / "loop-a", dir / "loop-b");
  const Error loop = error_of([&] { resolve_model((dir / "loop-a").string(), kData); });
  CHECK(loop.kind() == ErrorKind::Input);
  CHECK(contains(loop.message(), "cannot read"));
}

TEST_CASE("gemma2 (Gemma-2-9B): four norms per layer, a 4096 window on every other layer; 9.24 B") {
  const ModelSpec m = load_hf_config(kTestModels + "gemma-2-9b/config.json");
  CHECK(m.model_type == "gemma2");
  CHECK(m.head_dim == 256);
  CHECK(m.sandwich_norms);
  CHECK(m.tied_embeddings);
  CHECK(m.window_of(0) == 4096);  // layer_idx % 2 == 0 slides
  CHECK(m.window_of(1) == 0);
  // Per layer: q 3584*4096 + k, v 3584*2048 each + o 4096*3584 = 44,040,192; MLP 3*3584*14336 =
  // 154,140,672; four norms 4*3584: 198,195,200 x 42 = 8,324,198,400; + tied embedding 256000*3584 =
  // 917,504,000 + final norm 3584.
  CHECK(count_params(m).total == 9241705984);
}

TEST_CASE("gemma3_text (Gemma-3-1B): a 512 window with every 6th layer global, per-head q/k norms; 1 B") {
  const ModelSpec m = load_hf_config(kTestModels + "gemma-3-1b-it/config.json");
  CHECK(m.model_type == "gemma3_text");
  CHECK(m.qk_norm);
  CHECK(m.global_every == 6);
  CHECK(m.window_of(4) == 512);
  CHECK(m.window_of(5) == 0);
  // Per layer: q 1152*1024 + k, v 1152*256 each + o 1024*1152 = 2,949,120; q/k norms 2*256; MLP
  // 3*1152*6912 = 23,887,872; four norms 4*1152: 26,842,112 x 26 = 697,894,912; + tied embedding
  // 262144*1152 = 301,989,888 + final norm 1152.
  CHECK(count_params(m).total == 999885952);
  // transformers >= 4.53 lists the pattern as layer_types: read and checked against the periodic model.
  std::ifstream in(kTestModels + "gemma-3-1b-it/config.json");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string types = "\"layer_types\": [";
  for (int l = 0; l < 26; ++l)
    types += std::string(l ? ", " : "") + ((l + 1) % 6 == 0 ? "\"full_attention\"" : "\"sliding_attention\"");
  types += "],\n  \"model_type\"";
  const auto at = text.find("\"model_type\"");
  REQUIRE(at != std::string::npos);
  CHECK(from_text(text.substr(0, at) + types + text.substr(at + 12)).global_every == 6);
  const std::string broken = text.substr(0, at) +
                             std::string(types).replace(types.find("full_attention"), 14, "sliding_attention") +
                             text.substr(at + 12);
  const auto e = error_of([&] { from_text(broken); });
  CHECK(e.message().find("layer_types") != std::string::npos);
}

TEST_CASE("gpt_oss (gpt-oss-120b): 128 biased experts of 2880, top-4, sinks, alternating 128 windows, MXFP4; 116.8 B") {
  const ModelSpec m = load_hf_config(kTestModels + "gpt-oss-120b/config.json");
  CHECK(m.model_type == "gpt_oss");
  CHECK(m.moe.num_experts == 128);
  CHECK(m.moe.experts_per_token == 4);
  CHECK(m.attention_sinks);
  CHECK(m.window_of(0) == 128);
  CHECK(m.window_of(1) == 0);
  CHECK(m.quant.format == WeightQuant::Mxfp4);
  CHECK(quantized_weight_bytes(WeightQuant::Mxfp4, llmsim::DType::BF16) == doctest::Approx(4.25 / 8));
  // Per layer: attention q 2880*4096 + 4096, k and v 2880*512 + 512 each, o 4096*2880 + 2880, 64 sinks =
  // 26,550,144; router 2880*128 + 128; 128 experts of gate_up 2880*5760 + 5760 and down 2880*2880 + 2880 =
  // 3,186,155,520; norms 2*2880: 3,213,080,192 x 36 = 115,670,886,912; + untied embedding and head
  // 2*201088*2880 = 1,158,266,880 + final norm 2880.
  const ParamCounts c = count_params(m);
  CHECK(c.total == 116829156672);
  // Active: 4 experts (99,567,360) + router + attention + norms per layer; the card's 5.13 B leaves out
  // the 0.58 B embedding.
  CHECK(c.active == 5711982912);
}

TEST_CASE("llama4_text (Llama-4-Scout): 16 experts top-1 + shared on every layer, chunked RoPE layers, 107.8 B") {
  const ModelSpec m = load_hf_config(kTestModels + "llama-4-scout/config.json");
  CHECK(m.model_type == "llama4_text");
  CHECK(m.moe.num_experts == 16);
  CHECK(m.moe.experts_per_token == 1);
  CHECK(m.moe.expert_ffn == 8192);
  CHECK(m.moe.shared_expert_ffn == 8192);
  CHECK(m.is_moe_layer(0));
  CHECK(m.is_moe_layer(47));
  // no_rope_layers 1,1,1,0,...: layers 3, 7, ... attend globally, the rest in 8192-token chunks.
  CHECK(m.window_of(0) == 8192);
  CHECK(m.window_of(3) == 0);
  CHECK(m.windowed_layers() == 36);
  CHECK_FALSE(m.tied_embeddings);  // the wrapper's tie_word_embeddings: false
  // Per layer: q 5120*5120 + k, v 5120*1024 each + o 5120*5120 = 62,914,560; two norms 10,240; router
  // 5120*16 = 81,920; 16 experts of gate_up 5120*16384 + down 8192*5120 = 2,013,265,920; shared expert
  // 3*5120*8192 = 125,829,120: 2,202,101,760 x 48 = 105,700,884,480; + embedding and LM head
  // 2*202048*5120 = 2,068,971,520 + final norm 5120.
  const ParamCounts c = count_params(m);
  CHECK(c.total == 107769861120);
  // Active: one routed expert (125,829,120) + the shared expert + attention, norms and router per layer
  // (314,664,960 x 48) + embedding and head: 17.17 B (card: 17 B active).
  CHECK(c.active == 17172894720);
}

TEST_CASE("llama4_text: an moe_layers list that is not every interleave_moe_layer_step-th layer is refused") {
  std::ifstream in(kTestModels + "llama-4-scout/config.json");
  nlohmann::json j = nlohmann::json::parse(in);
  j["text_config"]["interleave_moe_layer_step"] = 2;  // moe_layers still lists every layer
  const std::string msg = error_of([&] { from_text(j.dump()); }).message();
  CHECK(contains(msg, "moe_layers is not every 2-th layer"));
}

TEST_CASE("config keys: cosmetic ones ignored, unknown ones reported, unmodelled ones refused by name") {
  // Special-token ids, dropout, epsilons and transformers metadata change neither compute nor memory.
  const ModelSpec a = from_text(R"({"model_type": "llama", "bos_token_id": 1, "attention_dropout": 0.0,
    "rms_norm_eps": 1e-5, "transformers_version": "4.51.0", "use_cache": true})");
  CHECK(a.unread_keys.empty());
  // A key no reader asks for and the cosmetic list does not hold is reported, in file order.
  const ModelSpec b = from_text(R"({"model_type": "llama", "my_new_flag": 3, "eos_token_id": 2, "zz_mode": "x"})");
  CHECK(b.unread_keys == std::vector<std::string>{"my_new_flag", "zz_mode"});
  // Inside a wrapper the text model's keys are named with their path.
  const ModelSpec c = from_text(R"({"model_type": "llava", "text_config": {"model_type": "llama", "odd": 1}})");
  CHECK(c.unread_keys == std::vector<std::string>{"text_config.odd"});
  // Qwen3-Next's linear-attention layers change compute and memory in a way no reader models: an input
  // error naming the key and its line.
  const Error e = error_of([] {
    from_text(R"({"model_type": "qwen3_moe",
  "full_attention_interval": 4})");
  });
  CHECK(e.kind() == ErrorKind::Input);
  CHECK(e.where().key == "full_attention_interval");
  CHECK(e.where().line == 2);
  CHECK(contains(e.message(), "changes compute or memory"));
  // Keys inert in their context are read, not reported: Qwen's window without use_sliding_window,
  // Falcon's multi_query with new_decoder_architecture, num_key_value_heads under MLA.
  CHECK(load_hf_config(kTestModels + "qwen3-4b").unread_keys.empty());
  CHECK(load_hf_config(kTestModels + "falcon-40b-instruct").unread_keys.empty());
  CHECK(load_hf_config(kTestModels + "deepseek-r1").unread_keys.empty());
  // Phi-4-mini's full_attn_mod is neither read nor cosmetic: reported.
  CHECK(load_hf_config(kTestModels + "phi-4-mini").unread_keys == std::vector<std::string>{"full_attn_mod"});
}

// Found by the parser fuzz run (tests/fuzz) under UBSan: 2^32 MTP modules of DeepSeek-V3's size overflowed the
// parameter count (signed overflow in param_count.cpp): counts read as zero-or-more had no upper bound. They
// have the dimensions' bound now (a layer count's for MTP modules), and products of bounded dimensions are
// checked: either way an Input error naming the file.
TEST_CASE("a config whose parameter count overflows 64 bits is refused, naming the file") {
  const Error mtp =
      error_of([] { from_text(R"({"model_type": "deepseek_v3", "num_nextn_predict_layers": 4294967296})"); });
  CHECK(mtp.kind() == ErrorKind::Input);
  CHECK(mtp.where().file == "mem.json");
  CHECK(mtp.where().key == "num_nextn_predict_layers");
  CHECK(contains(mtp.message(), "larger than any model's (at most 10000)"));
  // Three dimensions at their bound of 2^24 each: experts x expert width x hidden is 2^72.
  const Error experts = error_of([] {
    from_text(R"({"model_type": "mixtral", "hidden_size": 16777216, "intermediate_size": 16777216,
                  "num_local_experts": 16777216, "num_attention_heads": 16, "num_key_value_heads": 16})");
  });
  CHECK(experts.kind() == ErrorKind::Input);
  CHECK(experts.where().file == "mem.json");
  CHECK(contains(experts.message(), "overflows a 64-bit integer"));
  // The shipped DeepSeek-R1 config still loads (its counts are exact, tested above).
  CHECK(count_params(load_hf_config(kTestModels + "deepseek-r1/config.json")).mtp > 0);
}

TEST_CASE("glm4_moe (GLM-4.5-Air): q/k/v biases, half-rotary heads, a biased router over 128 experts; 106.9 B") {
  const ModelSpec m = load_hf_config(kTestModels + "glm-4.5-air/config.json");
  CHECK(m.model_type == "glm4_moe");
  CHECK(m.q_dim() == 12288);  // 96 heads of 128: wider than the 4096 hidden
  CHECK(m.kv_dim() == 1024);
  CHECK(m.qkv_bias);
  CHECK_FALSE(m.out_bias);  // o_proj has none (Glm4MoeAttention; Megatron: --add-qkv-bias --disable-bias-linear)
  CHECK_FALSE(m.qk_norm);   // use_qk_norm false on the Air
  CHECK(m.rotary_fraction == 0.5);
  CHECK(m.moe.num_experts == 128);
  CHECK(m.moe.experts_per_token == 8);
  CHECK(m.moe.expert_ffn == 1408);
  CHECK(m.moe.shared_expert_ffn == 1408);
  CHECK(m.moe.first_dense == 1);
  CHECK(m.moe.router_bias);
  CHECK(m.mtp_layers == 1);
  CHECK_FALSE(m.is_moe_layer(0));
  CHECK(m.is_moe_layer(1));
  // Per layer: q 4096*12288 + 12288 bias, k and v 4096*1024 + 1024 each, o 12288*4096 = 109,066,240; norms
  // 2*4096. Layer 0's dense MLP 3*4096*10944 = 134,479,872; each of the 45 MoE layers: experts 128*3*4096*1408 =
  // 2,214,592,512, shared expert 3*4096*1408 = 17,301,504, router 128*4096 + 128 bias = 524,416. Layers
  // 105,610,733,184; + untied embedding and head 2*151552*4096 + final norm 4096.
  const ParamCounts c = count_params(m);
  CHECK(c.total == 106852251264);
  // Active: 8 of the experts 138,412,032 + shared + router = 156,237,952 per MoE layer.
  CHECK(c.active == 46LL * (109066240 + 8192) + 134479872 + 45LL * 156237952 + 2LL * 151552 * 4096 + 4096);
}

TEST_CASE("kimi_k2: DeepSeek-V3's shape under Kimi-K2's own model_type label") {
  const ModelSpec m = from_text(R"({"model_type": "kimi_k2", "architectures": ["DeepseekV3ForCausalLM"],
    "n_routed_experts": 384, "num_attention_heads": 64, "first_k_dense_replace": 1, "vocab_size": 163840})");
  CHECK(m.model_type == "kimi_k2");
  CHECK(m.mla.kv_lora_rank == 512);
  CHECK(m.moe.num_experts == 384);
  CHECK(m.moe.first_dense == 1);
}

TEST_CASE("minimax_m2 (MiniMax-M2): full attention, half-rotary heads, whole-projection q/k norms; 228.7 B") {
  const ModelSpec m = load_hf_config(kTestModels + "minimax-m2/config.json");
  CHECK(m.model_type == "minimax_m2");
  CHECK(m.q_dim() == 6144);
  CHECK(m.rotary_fraction == 0.5);  // rotary_dim 64 of head_dim 128
  CHECK(m.qk_norm);
  CHECK(m.qk_norm_full_width);  // qk_norm_type per_layer
  CHECK(m.ffn_hidden == 0);     // every layer is sparse
  CHECK(m.moe.num_experts == 256);
  CHECK(m.moe.expert_ffn == 1536);
  CHECK(m.moe.shared_expert_ffn == 0);
  CHECK(m.moe.router_bias);
  CHECK(m.mtp_layers == 3);
  // Per layer: q and o 3072*6144 each, k and v 3072*1024 each = 44,040,192; norms 2*3072 + q_norm 6144 + k_norm
  // 1024 = 13,312; experts 256*3*3072*1536 = 3,623,878,656; router 256*3072 + 256 bias = 786,688: 3,668,718,848 x
  // 62 layers; + untied embedding and head 2*200064*3072 + final norm 3072.
  const ParamCounts c = count_params(m);
  CHECK(c.total == 62LL * 3668718848 + 2LL * 200064 * 3072 + 3072);
  CHECK(c.total == 228689764864);
  // Active: 8 experts 113,246,208 + router + attention + norms = 158,086,400 per layer, + embedding and head.
  CHECK(c.active == 62LL * 158086400 + 2LL * 200064 * 3072 + 3072);
}

TEST_CASE("minimax_m2: lightning-attention layers and unknown q/k norm kinds are refused by name") {
  CHECK(contains(error_of([] {
                   from_text(R"({"model_type": "minimax_m2", "num_hidden_layers": 2, "attn_type_list": [0, 1]})");
                 }).message(),
                 "attn_type_list[0] is 0: only full-attention layers (1) are modelled"));
  CHECK(contains(error_of([] { from_text(R"({"model_type": "minimax_m2", "qk_norm_type": "per_token"})"); }).message(),
                 "qk_norm_type must be per_layer or per_head"));
  CHECK_FALSE(from_text(R"({"model_type": "minimax_m2", "qk_norm_type": "per_head"})").qk_norm_full_width);
}

TEST_CASE("smollm3 (SmolLM3-3B): a Llama decoder with every fourth layer without RoPE; 3.08 B") {
  // The 3B's shape as public SmolLM3 loaders state HuggingFaceTB/SmolLM3-3B's config.json (hidden 2048,
  // intermediate 11008, 36 layers, 16 heads over 4 KV heads, vocab 128256, tied, rope_theta 5e6, no_rope_layers
  // [1, 1, 1, 0] x 9); not a verbatim copy of the file.
  std::string flags;
  for (int i = 0; i < 36; ++i) flags += std::string(i ? ", " : "") + (i % 4 == 3 ? "0" : "1");
  const ModelSpec m = from_text(R"({"model_type": "smollm3", "hidden_size": 2048, "intermediate_size": 11008,
    "num_hidden_layers": 36, "num_attention_heads": 16, "num_key_value_heads": 4, "vocab_size": 128256,
    "tie_word_embeddings": true, "rope_theta": 5000000.0, "use_sliding_window": false, "sliding_window": null,
    "no_rope_layer_interval": 4, "no_rope_layers": [)" +
                                flags + "]}");
  CHECK(m.model_type == "smollm3");
  CHECK(m.tied_embeddings);
  // Per layer: q and o 2048*2048, k and v 2048*512 = 10,485,760; MLP 3*2048*11008 = 67,633,152; norms 2*2048:
  // 78,123,008 x 36; + the tied table 128256*2048 + final norm 2048.
  CHECK(count_params(m).total == 36LL * 78123008 + 128256LL * 2048 + 2048);
  CHECK(count_params(m).total == 3075098624);
  CHECK(contains(error_of([] {
                   from_text(R"({"model_type": "smollm3", "num_hidden_layers": 2, "no_rope_layers": [1]})");
                 }).message(),
                 "no_rope_layers must hold one flag per layer (2 layers)"));
}

TEST_CASE("qwen3_5 (Qwen3.5-9B): Gated DeltaNet hybrid, gated attention, MTP and vision tower; 9,653,104,368") {
  // The real Qwen3.5-9B config as a public test fixture states it (tests/data/models/README.md).
  const ModelSpec m = load_hf_config(kTestModels + "qwen3.5-9b/config.json");
  CHECK(m.model_type == "qwen3_5");
  CHECK(m.linear_attn.enabled());
  CHECK(m.linear_attention_layers() == 24);
  CHECK(m.attention_layers() == 8);
  CHECK(m.is_linear_attention_layer(0));
  CHECK_FALSE(m.is_linear_attention_layer(3));  // every fourth layer is full attention
  CHECK(m.attn_output_gate);
  CHECK(m.qk_norm);
  CHECK(m.head_dim == 256);
  CHECK(m.rotary_fraction == 0.25);
  CHECK(m.linear_state_dtype() == llmsim::DType::FP32);  // mamba_ssm_dtype
  CHECK(m.mtp_layers == 1);
  CHECK_FALSE(m.moe.enabled());
  // Full-attention layer: q_proj with its gate 4096 x 2*16*256 = 33,554,432, k and v 4096 x 1024 each, o 4096 x
  // 4096, q/k norms 2*256: 58,720,768. Gated DeltaNet layer: in_proj_qkvz 4096 x (2*2048 + 2*4096) = 50,331,648,
  // in_proj_ba 4096 x 64, conv1d 8192 x 4, dt_bias and A_log 2*32, norm 128, out_proj 4096 x 4096: 67,403,968.
  // MLP 3 x 4096 x 12288 = 150,994,944 and norms 2*4096 on every layer.
  const ParamCounts c = count_params(m);
  const std::int64_t full = 58720768 + 150994944 + 8192, linear = 67403968 + 150994944 + 8192;
  CHECK(c.layers == 8 * full + 24 * linear);
  CHECK(c.total == 8 * full + 24 * linear + 2LL * 248320 * 4096 + 4096);
  CHECK(c.total == 8953803264);
  // The MTP layer: pre_fc_norm_embedding, pre_fc_norm_hidden and its final norm, fc (2*4096 -> 4096), a
  // full-attention layer.
  CHECK(c.mtp == 3 * 4096 + 2LL * 4096 * 4096 + full);
  // Vision: patch Conv3d 3*2*16*16*1152 + 1152, positions 2304*1152, 27 blocks of 15,239,504, merger 40,119,040.
  REQUIRE(m.vision.counted);
  CHECK(m.vision.model_type == "qwen3_5_vision");  // the fixture leaves it out; Qwen3_5VisionConfig's
  CHECK(m.vision.params() == 456010480);
  // The checkpoint's safetensors total (Hugging Face API for Qwen/Qwen3.5-9B): text + MTP + vision.
  CHECK(c.total + c.mtp + m.vision.params() == 9653104368);
}

TEST_CASE("qwen3_next (Qwen3-Coder-Next): 48 layers, 36 Gated DeltaNet, 512 experts; 79,674,391,296") {
  // Qwen/Qwen3-Coder-Next's config values as its GGUF metadata and public notes state them (hidden 2048, 48
  // layers, 16 heads of 256 over 2 KV heads, 512 experts of 512 with top-10 and a shared expert of 512, dense
  // width 5120, vocab 151936, context 262144, full_attention_interval 4); the linear-attention dimensions are
  // Qwen3NextConfig's defaults, which the checkpoint keeps.
  const ModelSpec m = from_text(R"({"model_type": "qwen3_next", "architectures": ["Qwen3NextForCausalLM"],
    "hidden_size": 2048, "num_hidden_layers": 48, "num_attention_heads": 16, "num_key_value_heads": 2,
    "head_dim": 256, "intermediate_size": 5120, "num_experts": 512, "num_experts_per_tok": 10,
    "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512, "decoder_sparse_step": 1,
    "mlp_only_layers": [], "vocab_size": 151936, "max_position_embeddings": 262144, "full_attention_interval": 4,
    "linear_num_key_heads": 16, "linear_key_head_dim": 128, "linear_num_value_heads": 32,
    "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4, "partial_rotary_factor": 0.25,
    "rope_theta": 10000000, "tie_word_embeddings": false, "torch_dtype": "bfloat16"})");
  CHECK(m.linear_attention_layers() == 36);
  CHECK(m.linear_state_dtype() == llmsim::DType::BF16);  // no mamba_ssm_dtype: the checkpoint's
  CHECK(m.moe.shared_expert_gate);
  // Full attention 27,263,488 (q with gate 16,777,216, k and v 1,048,576 each, o 8,388,608, q/k norms 512); Gated
  // DeltaNet 33,718,464 (25,165,824 + 131,072 + 32,768 + 64 + 128 + 8,388,608); MoE 1,614,809,088 (router
  // 1,048,576, experts 512 x 3,145,728, shared expert 3,145,728 and its gate 2,048); norms 4,096 per layer.
  const ParamCounts c = count_params(m);
  CHECK(c.total ==
        12LL * (27263488 + 1614809088 + 4096) + 36LL * (33718464 + 1614809088 + 4096) + 2LL * 151936 * 2048 + 2048);
  // The checkpoint's total without its MTP weights (the Hugging Face API's safetensors total; llama.cpp's
  // n_params for the GGUF): exact.
  CHECK(c.total == 79674391296);
  // Per token: 10 of the experts, the shared expert, the router and its gate.
  CHECK(c.active == c.total - 48LL * 502 * 3 * 512 * 2048);
  CHECK(c.active == 3874929408);  // the published active count (total less the inactive experts' tensors)
}

TEST_CASE("Gated DeltaNet configs: layer types, head ratios and unknown dtypes are checked by key") {
  CHECK(contains(error_of([] {
                   from_text(R"({"model_type": "qwen3_next", "num_hidden_layers": 2,
                     "layer_types": ["linear_attention", "sliding_attention"]})");
                 }).message(),
                 "layer_types[1] must be \"linear_attention\" or \"full_attention\""));
  CHECK(contains(error_of([] {
                   from_text(
                       R"({"model_type": "qwen3_next", "num_hidden_layers": 3, "layer_types": ["full_attention"]})");
                 }).message(),
                 "one mixer type per layer (3 layers)"));
  CHECK(contains(error_of([] {
                   from_text(
                       R"({"model_type": "qwen3_5_text", "linear_num_key_heads": 16, "linear_num_value_heads": 24})");
                 }).message(),
                 "must be a multiple of linear_num_key_heads"));
  CHECK(
      contains(error_of([] { from_text(R"({"model_type": "qwen3_5_text", "mamba_ssm_dtype": "float64"})"); }).message(),
               "unknown mamba_ssm_dtype 'float64'"));
  // The layout without layer_types: every full_attention_interval-th layer is full attention.
  const ModelSpec m =
      from_text(R"({"model_type": "qwen3_5_moe_text", "num_hidden_layers": 6, "full_attention_interval": 3})");
  CHECK(m.linear_attention_layers() == 4);
  CHECK_FALSE(m.is_linear_attention_layer(2));
  CHECK_FALSE(m.is_linear_attention_layer(5));
  CHECK(m.moe.num_experts == 256);  // Qwen3_5MoeTextConfig's default
  // Another family's reader still refuses the linear-attention keys by name.
  CHECK(contains(error_of([] { from_text(R"({"model_type": "qwen3", "linear_num_key_heads": 16})"); }).message(),
                 "linear_num_key_heads changes compute or memory"));
}

TEST_CASE("granitemoehybrid (Granite-4.0-H-350M): Mamba-2 layers, no positions, a shared MLP; 340,332,224") {
  // The real checkpoint's values as a public test fixture states them (tests/data/models/README.md).
  const ModelSpec m = load_hf_config(kTestModels + "granite-4.0-h-350m");
  CHECK(m.linear_attn.kind == LinearMixer::Mamba2);
  CHECK(m.linear_attention_layers() == 28);
  CHECK_FALSE(m.is_linear_attention_layer(10));  // attention at 10, 13, 17 and 27
  CHECK(m.position == PositionKind::None);
  CHECK(m.ffn_hidden == 2048);  // the shared MLP; no experts
  CHECK_FALSE(m.moe.enabled());
  CHECK(m.linear_attn.inner_dim() == 1536);
  CHECK(m.linear_attn.conv_dim() == 1536 + 2 * 128);
  // Attention layer: q and o 768 x 768, k and v 768 x 256: 1,572,864. Mamba-2 layer: in_proj 768 x (2 x 1536 +
  // 2 x 128 + 48) = 2,592,768, conv1d 1792 x 4 + 1792 bias, dt_bias, A_log and D 3 x 48, norm 1536, out_proj
  // 1536 x 768: 3,783,056. MLP 3 x 768 x 2048 and norms 2 x 768 on every layer; tied vocab 100352.
  const ParamCounts c = count_params(m);
  CHECK(c.total == 4LL * (1572864 + 4718592 + 1536) + 28LL * (3783056 + 4718592 + 1536) + 100352LL * 768 + 768);
  CHECK(c.total == 340332224);
  // With experts the shared MLP stays beside them (GraniteMoeHybridDecoderLayer's shared_mlp and block_sparse_moe).
  const ModelSpec moe = from_text(R"({"model_type": "granitemoehybrid", "hidden_size": 512, "num_hidden_layers": 2,
    "num_attention_heads": 8, "num_key_value_heads": 2, "intermediate_size": 256, "shared_intermediate_size": 1024,
    "num_local_experts": 4, "num_experts_per_tok": 2, "mamba_n_heads": 16, "mamba_d_state": 64,
    "layer_types": ["mamba", "attention"]})");
  CHECK(moe.moe.num_experts == 4);
  CHECK(moe.moe.expert_ffn == 256);
  CHECK(moe.moe.shared_expert_ffn == 1024);
  CHECK_FALSE(moe.moe.shared_expert_gate);
  CHECK(moe.linear_attn.ssm_head_dim == 64);  // mamba_d_head "auto": 2 x 512 / 16
  CHECK(contains(error_of([] {
                   from_text(R"({"model_type": "granitemoehybrid", "mamba_n_heads": 48, "mamba_expand": 2,
                     "hidden_size": 1024, "num_attention_heads": 8})");
                 }).message(),
                 "mamba_n_heads (48) must divide mamba_expand x hidden_size (2048)"));
  CHECK(contains(
      error_of([] {
        from_text(R"({"model_type": "granitemoehybrid", "num_hidden_layers": 2, "layer_types": ["mamba", "ssm"]})");
      }).message(),
      "layer_types[1] must be \"mamba\" or \"attention\""));
}
