// The framework catalog: free-text framework names -> profiles, with recipe defaults and sources.
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

#include "llmsim/run/engine_profile.h"
#include "llmsim/run/framework_catalog.h"

using namespace llmsim::sim;

namespace {

const FrameworkEntry& entry(const char* name) {
  const FrameworkEntry* e = find_framework(name);
  REQUIRE_MESSAGE(e != nullptr, name);
  return *e;
}

// describe() names every field that is set (and nothing when none is).
bool any_recipe_field(const RecipeDefaults& r) { return !describe(r).empty(); }

}  // namespace

TEST_CASE("framework names are matched case- and separator-insensitively") {
  CHECK(normalize_framework_name("  Megatron_LM ") == "megatron-lm");
  CHECK(normalize_framework_name("Text Generation Inference") == "text-generation-inference");
  CHECK(normalize_framework_name("   ").empty());
  const FrameworkEntry* e = find_framework("Megatron-LM");
  REQUIRE(e != nullptr);
  CHECK(e->training == Framework::Megatron);
  CHECK(find_framework("no-such-framework") == nullptr);
  CHECK(find_framework("") == nullptr);
}

TEST_CASE("every listed framework name resolves") {
  const std::vector<std::string> names = {
      // training
      "megatron", "megatron-lm", "megatron-core", "megatron-deepspeed", "megatron-bridge", "nemo", "megascale",
      "deepspeed", "gpt-neox", "xtuner", "colossalai", "fsdp", "torchtitan", "torchtune", "litgpt", "lit-gpt",
      "llm-foundry", "composer", "accelerate", "axolotl", "ms-swift", "llama-factory", "unsloth", "internlm",
      "internevo", "hf", "transformers", "huggingface", "peft", "trl", "flash-attention",
      // inference
      "vllm", "sglang", "lmdeploy", "turbomind", "tgi", "text-generation-inference", "lightllm", "trt-llm",
      "tensorrt-llm", "fastertransformer", "deepspeed-fastgen", "deepspeed-mii", "mii", "gpt-fast", "llama.cpp",
      "exllama", "exllamav2", "mlc-llm", "autoawq", "tinychat", "llm-awq", "deepspeed-inference"};
  for (const auto& n : names) CHECK_MESSAGE(find_framework(n) != nullptr, n);

  // Spellings users write: case, '_' and ' ' for '-', aliases.
  CHECK(find_framework("TensorRT-LLM")->name == "trt-llm");
  CHECK(find_framework("TRT_LLM")->name == "trt-llm");
  CHECK(find_framework("Megatron_DeepSpeed")->name == "megatron-deepspeed");
  CHECK(find_framework("Megatron Core")->name == "megatron-core");
  CHECK(find_framework("NVIDIA NeMo")->name == "nemo");
  CHECK(find_framework("HuggingFace")->name == "hf");
  CHECK(find_framework("Lit_GPT")->name == "litgpt");
  CHECK(find_framework("LLaMA-Factory")->name == "llama-factory");
  CHECK(find_framework("Composer")->name == "llm-foundry");
  CHECK(find_framework("InternEvo")->name == "internlm");
  CHECK(find_framework("ExLlamaV2")->name == "exllamav2");
  CHECK(find_framework("llama-server")->name == "llama.cpp");
  CHECK(find_framework(" DeepSpeed-MII ")->name == "deepspeed-fastgen");
  CHECK(find_framework("Text Generation Inference")->name == "tgi");
  CHECK(find_framework("TurboMind")->name == "lmdeploy");
  CHECK(find_framework("flash_attn")->name == "flash-attention");
  CHECK(find_framework("ColossalAI")->name == "colossalai");
  CHECK(find_framework("GPT-NeoX")->name == "gpt-neox");
  CHECK(find_framework("llama_cpp")->name == "llama.cpp");
}

TEST_CASE("the CLI's own profile names map to their own profile") {
  for (auto [name, f] : std::vector<std::pair<const char*, Framework>>{{"megatron", Framework::Megatron},
                                                                       {"deepspeed", Framework::DeepSpeed},
                                                                       {"fsdp", Framework::Fsdp},
                                                                       {"hf", Framework::Hf}}) {
    const FrameworkEntry& e = entry(name);
    CHECK(e.name == name);
    CHECK(e.training == f);
    CHECK(e.inference == f);
  }
  for (auto [name, f] :
       std::vector<std::pair<const char*, Framework>>{{"vllm", Framework::Vllm},
                                                      {"tgi", Framework::Tgi},
                                                      {"lightllm", Framework::LightLlm},
                                                      {"trt-llm", Framework::TrtLlm},
                                                      {"fastertransformer", Framework::FasterTransformer}}) {
    const FrameworkEntry& e = entry(name);
    CHECK(e.name == name);
    CHECK(e.inference == f);
    CHECK_FALSE(e.training.has_value());
    CHECK(e.unsupported_reason == std::string(name) + " is an inference engine; it does not train");
  }
  // The mappings sim/run/run_spec.cpp parse_name already makes.
  CHECK(entry("megatron-lm").training == Framework::Megatron);
  CHECK(entry("nemo").training == Framework::Megatron);
  CHECK(entry("fastertransformer").inference == Framework::FasterTransformer);
}

TEST_CASE("each mapping class") {
  // Megatron: TP/PP with fused kernels.
  CHECK(entry("megatron-deepspeed").training == Framework::Megatron);
  CHECK(entry("megatron-deepspeed").training_mapping.find("DeepSpeed ZeRO") != std::string::npos);
  CHECK(entry("gpt-neox").training == Framework::Megatron);
  CHECK(entry("internlm").training == Framework::Megatron);
  CHECK(entry("megatron-bridge").training == Framework::Megatron);
  // DeepSpeed: ZeRO over HF modelling code.
  CHECK(entry("xtuner").training == Framework::DeepSpeed);
  CHECK(entry("colossalai").training == Framework::DeepSpeed);
  // FSDP.
  CHECK(entry("torchtitan").training == Framework::Fsdp);
  CHECK(entry("torchtune").training == Framework::Fsdp);
  CHECK(entry("litgpt").training == Framework::Fsdp);
  CHECK(entry("llm-foundry").training == Framework::Fsdp);
  // HF Trainer / DDP.
  CHECK(entry("transformers").training == Framework::Hf);
  CHECK(entry("trl").training == Framework::Hf);
  CHECK(entry("axolotl").training == Framework::Hf);
  CHECK(entry("ms-swift").training == Framework::Hf);
  CHECK(entry("llama-factory").training == Framework::Hf);
  CHECK(entry("accelerate").training == Framework::Hf);
  CHECK(entry("flash-attention").training == Framework::Hf);

  // Inference: static batching (HF generate style), and each continuous-batching engine class.
  CHECK(entry("huggingface").inference == Framework::Hf);
  CHECK(entry("deepspeed-inference").inference == Framework::DeepSpeed);
  CHECK(entry("megatron-lm").inference == Framework::Megatron);
  CHECK(entry("sglang").inference == Framework::Sglang);
  CHECK(entry("deepspeed-fastgen").inference == Framework::Vllm);
  CHECK(entry("text-generation-inference").inference == Framework::Tgi);
  CHECK(entry("lightllm").inference == Framework::LightLlm);
  CHECK(entry("tensorrt-llm").inference == Framework::TrtLlm);
  CHECK(entry("lmdeploy").inference == Framework::LmDeploy);
  CHECK(entry("gpt-fast").inference == Framework::TrtLlm);

  // Engines do not train.
  for (const char* n : {"sglang", "lmdeploy", "deepspeed-fastgen", "fastertransformer", "gpt-fast"}) {
    CHECK_MESSAGE(!entry(n).training.has_value(), n);
    CHECK_MESSAGE(!entry(n).unsupported_reason.empty(), n);
  }

  // The local engines (issue 40) run inference as their own profiles and say why they do not train.
  CHECK(entry("llama.cpp").inference == Framework::LlamaCpp);
  CHECK(entry("exllamav2").inference == Framework::ExLlamaV2);
  CHECK(entry("mlc-llm").inference == Framework::MlcLlm);
  CHECK(entry("tinychat").inference == Framework::TinyChat);
  CHECK(entry("llm-awq").inference == Framework::TinyChat);
  CHECK(entry("autoawq").inference == Framework::AutoAwq);
  // ExLlama v1 runs as ExLlamaV2 before its CUDA graphs.
  CHECK(entry("exllama").inference == Framework::ExLlamaV2);
  REQUIRE(entry("exllama").inference_release.has_value());
  CHECK(*entry("exllama").inference_release < llmsim::Version{0, 1, 9});
  for (const char* n : {"llama.cpp", "exllamav2", "exllama", "mlc-llm", "autoawq", "tinychat", "llm-awq"}) {
    CHECK_MESSAGE(!entry(n).training.has_value(), n);
    CHECK_MESSAGE(!entry(n).unsupported_reason.empty(), n);
  }
  // Unsupported: no fair stand-in, with the reason.
  for (const char* n : {"unsloth", "megascale"}) {
    const FrameworkEntry& e = entry(n);
    CHECK_MESSAGE(!e.training.has_value(), n);
    CHECK_MESSAGE(!e.inference.has_value(), n);
    CHECK_MESSAGE(!e.unsupported_reason.empty(), n);
  }
  // Training frameworks without an inference stand-in say why.
  CHECK_FALSE(entry("torchtitan").inference.has_value());
  CHECK(entry("nemo").unsupported_reason.find("TensorRT-LLM") != std::string::npos);
}

TEST_CASE("catalog invariants: unique names, sources, reasons") {
  std::set<std::string> seen;
  for (const FrameworkEntry& e : framework_catalog()) {
    CHECK_MESSAGE(e.name == normalize_framework_name(e.name), e.name);
    CHECK_MESSAGE(seen.insert(e.name).second, "duplicate name " << e.name);
    for (const auto& a : e.aliases) {
      CHECK_MESSAGE(a == normalize_framework_name(a), a);
      CHECK_MESSAGE(seen.insert(a).second, "duplicate alias " << a);
    }
    CHECK_MESSAGE(!e.source.empty(), e.name);
    if (any_recipe_field(e.recipe)) {
      CHECK_MESSAGE(!e.recipe.source.empty(), e.name);
      CHECK_MESSAGE(e.training.has_value(), "recipe defaults without a training profile: " << e.name);
    }
    if (!e.training || !e.inference) CHECK_MESSAGE(!e.unsupported_reason.empty(), e.name);
    if (e.training) CHECK_MESSAGE(!e.training_mapping.empty(), e.name);
    if (e.inference) CHECK_MESSAGE(!e.inference_mapping.empty(), e.name);
    if (e.recipe.zero_stage) CHECK((*e.recipe.zero_stage >= 0 && *e.recipe.zero_stage <= 3));
    if (e.recipe.attn_kernel) CHECK(e.recipe.flash_attn.value_or(true));
    // Earlier recipes: ascending, each cited, only beside a training profile.
    for (std::size_t i = 0; i < e.earlier_recipes.size(); ++i) {
      CHECK_MESSAGE(!e.earlier_recipes[i].recipe.source.empty(), e.name);
      CHECK_MESSAGE(e.training.has_value(), e.name);
      if (i > 0) CHECK(e.earlier_recipes[i - 1].before < e.earlier_recipes[i].before);
    }
  }
  // Training frameworks first, then inference engines.
  const auto& c = framework_catalog();
  CHECK(c.front().name == "megatron");
  CHECK(c.back().training == std::nullopt);
  // Every name resolves to its own entry.
  for (const FrameworkEntry& e : c) {
    CHECK(find_framework(e.name) == &e);
    for (const auto& a : e.aliases) CHECK(find_framework(a) == &e);
  }
}

TEST_CASE("recipe defaults that matter") {
  const RecipeDefaults& mlm = entry("megatron-lm").recipe;
  CHECK(mlm.zero_stage == 1);            // --use-distributed-optimizer
  CHECK(mlm.sequence_parallel == true);  // --sequence-parallel with TP > 1
  CHECK(mlm.overlap_grad_reduce == true);
  CHECK(mlm.overlap_param_gather == true);
  CHECK(mlm.source.find("--use-distributed-optimizer") != std::string::npos);

  const RecipeDefaults& titan = entry("torchtitan").recipe;
  CHECK(titan.zero_stage == 3);  // FSDP2 over all data-parallel ranks
  CHECK(titan.recompute == Recompute::Selective);

  const RecipeDefaults& tune = entry("torchtune").recipe;
  CHECK(tune.master_weights == false);  // dtype: bf16
  CHECK(tune.recompute == Recompute::Full);
  CHECK(tune.zero_stage == 3);

  CHECK(entry("litgpt").recipe.master_weights == false);    // bf16-true
  CHECK(entry("ms-swift").recipe.master_weights == false);  // select_dtype: a bf16 model trains as loaded
  CHECK(entry("ms-swift").recipe.master_weights_at == llmsim::DType::BF16);
  CHECK(entry("ms-swift").recipe.optimizer_impl == llmsim::sim::OptimizerImpl::Foreach);  // optim adamw_torch
  CHECK_FALSE(entry("hf").recipe.optimizer_impl.has_value());  // the profile's: adamw_torch_fused today
  CHECK(entry("nemo").recipe.zero_stage == 1);                 // distributed_fused_adam
  CHECK(entry("llm-foundry").recipe.zero_stage == 3);          // FULL_SHARD
  // llm-foundry before v0.7.0 ran Triton FlashAttention (attn_impl: triton); a release picks its era's recipe.
  CHECK_FALSE(entry("llm-foundry").recipe.attn_kernel.has_value());
  CHECK(recipe_for(entry("llm-foundry"), llmsim::Version{0, 3, 0}).attn_kernel == llmsim::AttentionKernel::Fa1);
  CHECK(recipe_for(entry("llm-foundry"), llmsim::Version{0, 6, 9}).attn_kernel == llmsim::AttentionKernel::Fa1);
  CHECK(&recipe_for(entry("llm-foundry"), llmsim::Version{0, 7, 0}) == &entry("llm-foundry").recipe);
  CHECK(&recipe_for(entry("llm-foundry"), std::nullopt) == &entry("llm-foundry").recipe);
  CHECK(&recipe_for(entry("megatron-lm"), llmsim::Version{0, 1, 0}) == &entry("megatron-lm").recipe);
  CHECK(entry("llm-foundry").recipe.dropout == 0.0);
  CHECK(entry("internlm").recipe.zero_stage == 1);  // hybrid ZeRO-1
  CHECK(entry("internlm").recipe.flash_attn == true);
  CHECK(entry("deepspeed").recipe.zero_stage == 0);        // no zero_optimization block
  CHECK(entry("hf").recipe.recompute == Recompute::None);  // gradient_checkpointing=False
  CHECK(entry("gpt-neox").recipe.zero_stage == 1);

  // No recipe where the framework's own examples disagree, or where it is a library with the simulator's
  // defaults: the row's stated settings (or the simulator's defaults) apply.
  CHECK_FALSE(entry("megatron-deepspeed").recipe.zero_stage.has_value());
  CHECK_FALSE(entry("megatron-bridge").recipe.zero_stage.has_value());
  CHECK_FALSE(entry("megatron").recipe.zero_stage.has_value());
  // PyTorch FSDP's own default sharding strategy is FULL_SHARD.
  CHECK(entry("fsdp").recipe.zero_stage == 3);
  // torchtune's one-GPU full fine-tuning configs: PagedAdamW8bit stepped inside backward.
  CHECK(entry("torchtune").recipe.single_device_full_optimizer == Optimizer::Adam8bit);
  CHECK(entry("torchtune").recipe.single_device_full_optimizer_in_backward == true);
  // Inference engines carry no training recipe.
  for (const char* n : {"vllm", "sglang", "lmdeploy", "tgi", "trt-llm"}) CHECK_FALSE(any_recipe_field(entry(n).recipe));
}

TEST_CASE("describe() names every recipe field that is set") {
  CHECK(describe(RecipeDefaults{}).empty());
  RecipeDefaults r;
  r.zero_stage = 1;
  r.sequence_parallel = true;
  r.recompute = Recompute::Full;
  r.flash_attn = true;
  r.attn_kernel = llmsim::AttentionKernel::Fa2;
  r.overlap_grad_reduce = true;
  r.overlap_param_gather = false;
  r.master_weights = false;
  r.master_weights_at = llmsim::DType::BF16;
  r.fused_loss = true;
  r.precision = llmsim::DType::BF16;
  r.single_device_full_optimizer = Optimizer::Adam8bit;
  r.single_device_full_optimizer_in_backward = true;
  r.optimizer_impl = llmsim::sim::OptimizerImpl::Foreach;
  r.dropout = 0.0;
  const std::string d = describe(r);
  for (const char* key :
       {"zero_stage=1", "sequence_parallel=yes", "recompute=full", "flash_attn=yes", "attn_kernel=fa2",
        "overlap_grad_reduce=yes", "overlap_param_gather=no", "master_weights=none (at bf16)", "fused_loss=yes",
        "precision=bf16", "optimizer=adam8bit", "optimizer_in_backward=yes", "optimizer_impl=foreach", "dropout=0"})
    CHECK_MESSAGE(d.find(key) != std::string::npos, key << " in " << d);
}

TEST_CASE("the training frameworks come first in Framework, and the aliases parse to what they name") {
  const auto names = training_framework_names();
  REQUIRE(names.size() == 4);
  for (std::size_t i = 0; i < names.size(); ++i) {
    const auto f = static_cast<Framework>(i);
    CHECK(is_training_framework(f));
    CHECK(names[i] == name_of(f));
  }
  CHECK_FALSE(is_training_framework(Framework::Vllm));
  for (const auto& [alias, name] : framework_aliases()) {
    Framework a{}, n{};
    REQUIRE(parse_name(alias, a));
    REQUIRE(parse_name(name, n));
    CHECK(a == n);
  }
  Framework f{};
  CHECK((parse_name("nemo", f) && f == Framework::Megatron));
  CHECK((parse_name("fastertransformer", f) && f == Framework::FasterTransformer));
}

TEST_CASE("serving engines: static (hf) and the inference engines, by one list") {
  CHECK(serving_engine_names() == std::vector<std::string>{"static", "vllm", "tgi", "lightllm", "trt-llm",
                                                           "fastertransformer", "lmdeploy", "sglang", "llama.cpp",
                                                           "exllamav2", "mlc-llm", "tinychat", "autoawq"});
  for (const std::string& name : serving_engine_names()) {
    Framework f{};
    REQUIRE(parse_serving_engine(name, f));
    CHECK(serving_engine_name(f) == name);
  }
  Framework f{};
  CHECK_FALSE(parse_serving_engine("megatron", f));
  // serve --engine hf (the run setting's name) and plan serve --engine hf name the same engine as static.
  CHECK((parse_serving_engine("hf", f) && f == Framework::Hf && serving_engine_name(f) == "static"));
  CHECK_FALSE(parse_serving_engine("nemo", f));  // an alias parse_name accepts, not an engine name
}

TEST_CASE("chunked prefill as overridden: one rule for serve and plan serve") {
  EngineProfile vllm = engine_profile(Framework::Vllm);
  vllm.chunked_prefill = true;
  CHECK_FALSE(chunked_prefill_problem(vllm));
  EngineProfile tgi = engine_profile(Framework::Tgi);
  CHECK_FALSE(chunked_prefill_problem(tgi));  // off: nothing to refuse
  tgi.chunked_prefill = true;
  REQUIRE(chunked_prefill_problem(tgi));
  CHECK(chunked_prefill_problem(tgi)->find("the tgi profile prefills new batches in their own iterations") == 0);
  EngineProfile st = static_engine_profile();
  st.chunked_prefill = true;
  REQUIRE(chunked_prefill_problem(st));
  CHECK(chunked_prefill_problem(st)->find("static batching prefills whole prompts") == 0);
}

TEST_CASE("selective recomputation is offered where the software has a selective policy") {
  const auto modes = [](const char* name) { return recompute_modes(entry(name)); };
  const std::vector<Recompute> all{Recompute::None, Recompute::Selective, Recompute::Full};
  const std::vector<Recompute> whole_layers{Recompute::None, Recompute::Full};
  CHECK(modes("megatron-lm") == all);
  CHECK(modes("torchtitan") == all);  // op-level SAC
  CHECK(modes("accelerate") == whole_layers);
  CHECK(modes("fsdp") == whole_layers);
  CHECK(modes("hf") == whole_layers);
  CHECK(modes("deepspeed") == whole_layers);
}
