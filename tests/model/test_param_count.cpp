#include <doctest/doctest.h>

#include <string>

#include "llmsim/model/custom_model.h"
#include "llmsim/model/hf_config.h"
#include "llmsim/model/param_count.h"
#include "llmsim/model/presets.h"

using namespace llmsim::model;

namespace {
const std::string kData = LLMSIM_DATA_DIR;
const std::string kTestModels = std::string(LLMSIM_TEST_DATA_DIR) + "/models/";

std::int64_t total_of(const std::string& preset) { return count_params(resolve_model(preset, kData)).total; }
}  // namespace

// Llama-2-7B, by hand (h = 4096, L = 32, ffn = 11008, V = 32000, MHA, untied, RMSNorm, no biases):
//   attention  4 * h*h              = 4 * 16,777,216        =    67,108,864
//   MLP        3 * h*ffn            = 3 * 45,088,768        =   135,266,304
//   norms      2 * h                                        =         8,192
//   one layer                                               =   202,383,360
//   32 layers                                               = 6,476,267,520
//   embedding + LM head  2 * V*h    = 2 * 131,072,000       =   262,144,000
//   final norm                                              =         4,096
//   total                                                   = 6,738,415,616
TEST_CASE("llama2-7b: 6,738,415,616 parameters, broken down") {
  const ModelSpec m = resolve_model("llama2-7b", kData);
  const LayerParams l = count_layer_params(m, 0);
  CHECK(l.attention == 67'108'864);
  CHECK(l.mlp == 135'266'304);
  CHECK(l.mlp_active == l.mlp);
  CHECK(l.norms == 8'192);
  CHECK(l.total() == 202'383'360);
  CHECK(l.linear == 202'375'168);  // everything but the two norms
  const ParamCounts c = count_params(m);
  CHECK(c.embedding == 131'072'000);
  CHECK(c.lm_head == 131'072'000);
  CHECK(c.position_embedding == 0);
  CHECK(c.final_norm == 4'096);
  CHECK(c.layers == 6'476'267'520);
  CHECK(c.total == 6'738'415'616);
  CHECK(c.active == c.total);
  CHECK(c.layers_linear == 32 * 202'375'168LL);
}

TEST_CASE("published totals of the dense presets") {
  CHECK(total_of("llama2-13b") == 13'015'864'320);
  CHECK(total_of("llama2-70b") == 68'976'648'192);
  CHECK(total_of("llama3-8b") == 8'030'261'248);
  CHECK(total_of("llama3-70b") == 70'553'706'496);
  CHECK(total_of("llama3.1-405b") == 405'853'388'800);
  CHECK(total_of("mistral-7b") == 7'241'732'096);
  // Qwen2 adds q/k/v biases: 3584 + 2*512 per layer on qwen2-7b.
  CHECK(total_of("qwen2-7b") == 7'615'616'512);
  CHECK(total_of("qwen2-72b") == 72'706'203'648);
}

// Mixtral-8x7B, by hand (h = 4096, L = 32, 8 experts of ffn 14336, top-2, 8 KV heads of 128, V = 32000):
//   attention  q, o: 2 * h*h = 33,554,432; k, v: 2 * h*1024 = 8,388,608      =     41,943,040
//   one expert 3 * h*14336                                                   =    176,160,768
//   router     h*8                                                           =         32,768
//   MoE block  8 experts + router = 1,409,286,144 + 32,768                   =  1,409,318,912
//   norms      2 * h                                                         =          8,192
//   one layer                                                                =  1,451,270,144
//   32 layers                                                                = 46,440,644,608
//   embedding + LM head 2 * 32000*4096 = 262,144,000; final norm 4,096
//   total                                                                    = 46,702,792,704
// Active per token: the top-2 experts plus the router (all tokens are scored by the router):
//   MoE block active  2 * 176,160,768 + 32,768                               =    352,354,304
//   one layer active  41,943,040 + 352,354,304 + 8,192                       =    394,305,536
//   32 layers                                                                = 12,617,777,152
//   + embedding, LM head, final norm (262,148,096)                           = 12,879,925,248
TEST_CASE("mixtral-8x7b: 46,702,792,704 total, 12,879,925,248 active per token") {
  const ModelSpec m = resolve_model("mixtral-8x7b", kData);
  const LayerParams l = count_layer_params(m, 7);
  CHECK(l.attention == 41'943'040);
  CHECK(l.mlp == 1'409'318'912);
  CHECK(l.mlp_active == 352'354'304);
  CHECK(l.total() == 1'451'270'144);
  CHECK(l.active() == 394'305'536);
  CHECK(l.linear == l.attention + l.mlp);
  const ParamCounts c = count_params(m);
  CHECK(c.total == 46'702'792'704);
  CHECK(c.layers_active == 12'617'777'152);
  CHECK(c.active == 12'879'925'248);
}

// GPT-2 small (h = 768, L = 12, V = 50257, 1024 learned positions, tied, LayerNorm, biases):
//   per layer: c_attn 768*2304 + 2304, c_proj 768*768 + 768, c_fc 768*3072 + 3072,
//   mlp c_proj 3072*768 + 768, two LayerNorms 2 * 1536  = 7,087,872
//   12 layers 85,054,464 + wte 38,597,376 + wpe 786,432 + ln_f 1,536 = 124,439,808
TEST_CASE("gpt2: 124,439,808 parameters (tied head, learned positions)") {
  const ModelSpec m = load_hf_config(kTestModels + "gpt2");
  const LayerParams l = count_layer_params(m, 0);
  CHECK(l.attention == 1'771'776 + 590'592);
  CHECK(l.mlp == 2'362'368 + 2'360'064);
  CHECK(l.norms == 3'072);
  const ParamCounts c = count_params(m);
  CHECK(c.embedding == 38'597'376);
  CHECK(c.position_embedding == 786'432);
  CHECK(c.lm_head == 0);
  CHECK(c.final_norm == 1'536);
  CHECK(c.total == 124'439'808);
}

// Pythia-160M is GPT-2's layer shape (biases, LayerNorm, 4x GELU MLP) with an untied 50304-row head
// and rotary positions: 12 * 7,087,872 + 2 * 50304*768 + 1,536 = 162,322,944.
TEST_CASE("pythia-160m (gpt_neox): 162,322,944 parameters") {
  const ParamCounts c = count_params(load_hf_config(kTestModels + "pythia-160m"));
  CHECK(c.layers == 12 * 7'087'872LL);
  CHECK(c.position_embedding == 0);
  CHECK(c.lm_head == 38'633'472);
  CHECK(c.total == 162'322'944);
}

// Qwen1.5-MoE-A2.7B (h = 2048, L = 24, 16 heads MHA, V = 151936, untied):
//   attention  q, k, v with bias 3 * (2048*2048 + 2048) = 12,589,056; o 4,194,304    =  16,783,360
//   experts    60 * 3 * 2048*1408 = 60 * 8,650,752                                   = 519,045,120
//   router 2048*60 = 122,880; shared expert 3 * 2048*5632 = 34,603,008; its gate 2,048
//   MoE block                                                                        = 553,773,056
//   layer (with 4,096 of norms)                                                      = 570,560,512
//   24 layers 13,693,452,288 + 2 * 151936*2048 (622,329,856) + 2,048                 = 14,315,784,192
// Active per token: top-4 experts 4 * 8,650,752 = 34,603,008, plus router, shared expert and gate
//   MoE block active  34,603,008 + 122,880 + 34,603,008 + 2,048                      =  69,330,944
//   layer active      16,783,360 + 69,330,944 + 4,096                                 =  86,118,400
//   24 * 86,118,400 + 622,329,856 + 2,048                                             = 2,689,173,504 ("A2.7B")
TEST_CASE("qwen1.5-moe-a2.7b (qwen2_moe): 14,315,784,192 total, 2,689,173,504 active") {
  const ModelSpec m = load_hf_config(kTestModels + "qwen1.5-moe-a2.7b");
  const LayerParams l = count_layer_params(m, 0);
  CHECK(l.attention == 16'783'360);
  CHECK(l.mlp == 553'773'056);
  CHECK(l.mlp_active == 69'330'944);
  const ParamCounts c = count_params(m);
  CHECK(c.total == 14'315'784'192);
  CHECK(c.active == 2'689'173'504);
}

TEST_CASE("qwen2_moe with decoder_sparse_step 2: odd layers are dense with intermediate_size") {
  ModelSpec m = load_hf_config(kTestModels + "qwen1.5-moe-a2.7b");
  m.moe.sparse_step = 2;
  const LayerParams dense = count_layer_params(m, 0);
  const LayerParams sparse = count_layer_params(m, 1);
  CHECK(dense.mlp == 3LL * 2048 * 5632);
  CHECK(dense.mlp_active == dense.mlp);
  CHECK(sparse.mlp == 553'773'056);
  CHECK(count_params(m).layers == 12 * (dense.total() + sparse.total()));
}

TEST_CASE("the llava text model counts as Vicuna-7B: llama2-7b plus 64 extra tokens in and out") {
  CHECK(count_params(load_hf_config(kTestModels + "llava-1.5-7b")).total == 6'738'415'616 + 2 * 64 * 4096);
}

TEST_CASE("custom models count like their families") {
  // GPT-2 small written as a custom gpt with a 1024-token run: the same 124,439,808.
  const ModelSpec gpt = make_custom_model(
      {.arch = "gpt", .layers = 12, .hidden = 768, .heads = 12, .vocab = 50257, .max_positions = 1024}, {});
  CHECK(count_params(gpt).total == 124'439'808);
  // Llama-2-7B written as a custom llama: the same 6,738,415,616.
  const ModelSpec llama =
      make_custom_model({.arch = "llama", .layers = 32, .hidden = 4096, .heads = 32, .ffn = 11008, .vocab = 32000}, {});
  CHECK(count_params(llama).total == 6'738'415'616);
}

TEST_CASE("weight-only quantization does not change the parameter count") {
  const ModelSpec q = load_hf_config(kTestModels + "llama3-8b-bnb-nf4.json");
  CHECK(count_params(q).total == total_of("llama3-8b"));
}

TEST_CASE("a weight format's stored element type") {
  using llmsim::DType;
  using llmsim::model::WeightQuant;
  CHECK(llmsim::model::stored_dtype(WeightQuant::Int8, DType::BF16) == DType::INT8);
  CHECK(llmsim::model::stored_dtype(WeightQuant::Int4, DType::BF16) == DType::INT4);
  CHECK(llmsim::model::stored_dtype(WeightQuant::Nf4, DType::BF16) == DType::NF4);
  CHECK(llmsim::model::stored_dtype(WeightQuant::Fp8, DType::BF16) == DType::FP8);
  CHECK(llmsim::model::stored_dtype(WeightQuant::Mxfp4, DType::BF16) == DType::INT4);  // 4-bit E2M1 elements
  CHECK(llmsim::model::stored_dtype(WeightQuant::Nvfp4, DType::BF16) == DType::FP4);   // E2M1 + E4M3 per 16
  CHECK(llmsim::model::stored_dtype(WeightQuant::None, DType::FP16) == DType::FP16);
  CHECK(llmsim::model::weight_quant_names() ==
        std::vector<std::string>{"none", "int8", "int4", "nf4", "fp8", "mxfp4", "nvfp4"});
}

TEST_CASE("KV bytes per token: K and V of the KV heads a GPU holds, one whole head beyond tp = KV heads") {
  const auto m = llmsim::model::resolve_model("llama2-70b", LLMSIM_DATA_DIR);  // 80 layers, 8 KV heads of 128
  // Whole model at 16-bit: 2 x 80 x 8 x 128 x 2 = 327,680 bytes.
  CHECK(llmsim::model::kv_bytes_per_token(m, 80, 1, 2.0) == 327680.0);
  CHECK(llmsim::model::kv_bytes_per_token(m, 80, 8, 2.0) == 327680.0 / 8);
  CHECK(llmsim::model::kv_bytes_per_token(m, 80, 16, 2.0) == 327680.0 / 8);  // replicated heads
  CHECK(llmsim::model::kv_bytes_per_token(m, 10, 1, 1.0) == 327680.0 / 16);  // 10 layers at fp8
}

TEST_CASE("a multimodal checkpoint's vision tower is counted apart from the text model, where its formula is known") {
  // Mistral-Small-3.1-24B (mistral3): the text model is a 40-layer mistral of hidden 5120, counted as usual.
  const ModelSpec m = load_hf_config(kTestModels + "mistral-small-3.1-24b");
  CHECK(count_params(m).total == 23572403200);
  REQUIRE(m.vision.present());
  CHECK(m.vision.model_type == "pixtral");
  CHECK(m.vision.counted);
  // Pixtral encoder, hidden 1024, intermediate 4096, 24 layers, patch 14, 3 channels:
  //   patch conv 3 x 14 x 14 x 1024 = 602,112; ln_pre 1,024;
  //   per layer q, k, v, o 4 x 1024^2 = 4,194,304 + gated MLP 3 x 1024 x 4096 = 12,582,912 + 2 norms 2,048
  //   = 16,779,264; x 24 = 402,702,336.  Tower: 403,305,472.
  CHECK(m.vision.tower_params == 403305472);
  // Mistral-3 projector, spatial_merge_size 2, no bias: norm 1,024 + merger 4096 x 1024 = 4,194,304 +
  // linear_1 1024 x 5120 = 5,242,880 + linear_2 5120 x 5120 = 26,214,400 = 35,652,608.
  CHECK(m.vision.projector_params == 35652608);
  // With the tower: 24,011,361,280 (the model card's "24B").
  CHECK(count_params(m).total + m.vision.params() == 24011361280);
  // llava-1.5's CLIP tower has no formula here: named, not counted.
  const ModelSpec llava = load_hf_config(kTestModels + "llava-1.5-7b/config.json");
  REQUIRE(llava.vision.present());
  CHECK(llava.vision.model_type == "clip_vision_model");
  CHECK_FALSE(llava.vision.counted);
  CHECK(llava.vision.params() == 0);
  // A text-only config has none.
  CHECK_FALSE(load_hf_config(kTestModels + "qwen3-4b").vision.present());
}
