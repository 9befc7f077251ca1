#include "llmsim/run/framework_catalog.h"

#include <algorithm>

#include <fmt/format.h>

#include "llmsim/core/strings.h"

namespace llmsim::sim {

// GCC 12 at -O2/-O3 reports -Wmaybe-uninitialized false positives for the std::string members of the
// aggregates below when a designated initializer leaves a nested aggregate (recipe) defaulted; every
// member has a default member initializer, so nothing is read uninitialized.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace {

// The rule (docs/frameworks.md): a profile stands in for a framework only where it shares the framework's
// memory recipe (bytes per parameter, what is sharded), its kind of kernels (fused vs Hugging Face eager
// modelling code) and, for inference, its batching policy (static vs continuous, chunked prefill, CUDA
// graphs). Known gaps that stay within that rule are written into the mapping text; anything else is
// unsupported with the reason. Recipe defaults are what the framework's own example scripts / configs /
// config defaults set, each cited in recipe.source; commits are the snapshots read.

// Reasons shared by several entries.
std::string engine_only(const std::string& name) { return name + " is an inference engine; it does not train"; }

std::vector<FrameworkEntry> training_frameworks() {
  std::vector<FrameworkEntry> c;

  // ---- Megatron family -------------------------------------------------------------------------------
  c.push_back(FrameworkEntry{
      .name = "megatron",
      .training = Framework::Megatron,
      .inference = Framework::Megatron,
      .training_mapping =
          "megatron profile (bf16 weights, fp32 main_grad, fused kernels; its distributed optimizer is zero_stage 1)",
      .inference_mapping =
          "static batching (the static engine profile: one padded batch prefilled, then decoded in lockstep)",
      .source = "the CLI's own profile name: sim/run/framework_profile.cpp megatron(), "
                "sim/run/engine_profile.cpp static_profile()"});

  c.push_back(FrameworkEntry{
      .name = "megatron-lm",
      .aliases = {"nvidia-megatron-lm", "megatronlm"},
      .training = Framework::Megatron,
      .inference = Framework::Megatron,
      .training_mapping = "megatron TP/PP/SP with the distributed optimizer (ZeRO-1) and apex/TE fused kernels",
      .inference_mapping =
          "static batching (Megatron-LM text generation runs one batch prefilled, then decoded in lockstep; "
          "the static profile counts HF eager glue kernels where Megatron fuses them, which matters for "
          "RMSNorm/RoPE/SwiGLU models, not for GPT-style ones)",
      .recipe =
          {.zero_stage = 1,
           .sequence_parallel = true,
           .overlap_grad_reduce = true,
           .overlap_param_gather = true,
           .fused_loss = true,
           .source =
               "NVIDIA/Megatron-LM examples/llama/train_llama3_8b_h100_fp8.sh @d98e8a6: --use-distributed-optimizer "
               "(zero_stage 1), --sequence-parallel (with --tensor-model-parallel-size 2), --overlap-grad-reduce, "
               "--overlap-param-gather, --cross-entropy-loss-fusion (examples/gpt3/train_gpt3_175b_distributed.sh sets "
               "none of them). The flags entered megatron/arguments.py in 2022-02 (329fe58, distributed optimizer), "
               "2022-04 (sequence parallel) and 2023-08 (2d5220a, --overlap-grad-reduce): runs published before "
               "then (Shoeybi 2019 tables, Narayanan et al. 2021, Korthikanti et al. 2022) need source facts that "
               "turn them off"},
      .source =
          "Megatron-LM docs/user-guide/features/dist_optimizer.md (distributed optimizer shards fp32 master + Adam "
          "states over DP), megatron/training/arguments.py; megatron/inference text generation (static batch); "
          "sim/run/framework_profile.cpp megatron()"});

  c.push_back(FrameworkEntry{
      .name = "megatron-core",
      .aliases = {"mcore", "megatron-core-lm"},
      .training = Framework::Megatron,
      .training_mapping =
          "megatron profile (Megatron Core DistributedDataParallel, distributed optimizer, TE/apex fused layers)",
      .unsupported_reason =
          "inference: Megatron Core has a static and a dynamic (continuous-batching, CUDA-graph) inference engine "
          "(megatron/core/inference/engines/static_engine.py, dynamic_engine.py); the name does not say which ran",
      .source = "NVIDIA/Megatron-LM megatron/core/distributed/distributed_data_parallel_config.py @d98e8a6 "
                "(use_distributed_optimizer, overlap_grad_reduce, overlap_param_gather all default False = the "
                "simulator's defaults, so no recipe defaults); megatron/core/inference/engines/"});

  c.push_back(FrameworkEntry{
      .name = "megatron-deepspeed",
      .aliases = {"megatron-ds", "megatrondeepspeed"},
      .training = Framework::Megatron,
      .training_mapping =
          "megatron TP/PP model code (fused kernels) + DeepSpeed ZeRO DP at the row's stage; DeepSpeed's fp16 ZeRO "
          "keeps 16-bit gradients where the megatron profile counts a 4-byte fp32 main_grad (memory up to 2 B/param "
          "high)",
      .unsupported_reason =
          "inference: Megatron-DeepSpeed's inference scripts run DeepSpeed-Inference or HF Accelerate "
          "(bigscience-workshop/Megatron-DeepSpeed scripts/inference); name deepspeed-inference or hf",
      .source = "deepspeedai/Megatron-DeepSpeed @4efb479: megatron/model (Megatron-LM layers with fused softmax / "
                "layernorm), examples_deepspeed/*.sh pass a ds_config with zero_optimization.stage; no recipe "
                "zero_stage: the example scripts set ZERO_STAGE 0 (24 scripts), 1 (14), 2 (1) or 3 (5)"});

  c.push_back(FrameworkEntry{
      .name = "megatron-bridge",
      .aliases = {"megatronbridge", "nemo-megatron-bridge"},
      .training = Framework::Megatron,
      .training_mapping = "megatron profile (Megatron Core models, DDP and distributed optimizer set by its recipes)",
      .unsupported_reason =
          "inference: Megatron-Bridge trains and converts checkpoints (HF <-> Megatron); serving runs "
          "in another engine, which the row should name",
      .source =
          "NVIDIA-NeMo/Megatron-Bridge src/megatron/bridge/recipes/llama/h100/llama3.py @067f987 (ConfigContainer "
          "of Megatron Core model/ddp/optimizer configs). No recipe defaults: its pretrain recipes set "
          "ddp.use_distributed_optimizer/overlap_grad_reduce/overlap_param_gather = True, its SFT/PEFT recipes "
          "False, and sequence_parallel varies at TP > 1 (10 True, 6 False)"});

  c.push_back(FrameworkEntry{
      .name = "flagscale",
      .aliases = {"flag-scale", "flagopen-flagscale", "baai-flagscale"},
      .training = Framework::Megatron,
      .inference = Framework::Vllm,
      .training_mapping = "megatron profile (FlagScale's training is a Megatron-LM fork with BAAI's recipes; the row "
                          "should state what its recipe sets)",
      .inference_mapping = "vllm profile (FlagScale's inference and serving wrap vLLM)",
      .source = "FlagOpen/FlagScale README: 'builds upon open-source projects such as Megatron-LM and vllm' and keeps "
                "in sync with them; assumption: its own patches (heterogeneous training, other chips) do not change "
                "a step on NVIDIA GPUs"});

  c.push_back(FrameworkEntry{
      .name = "nemo",
      .aliases = {"nvidia-nemo", "nemo-framework", "nemo-megatron", "nemo2"},
      .training = Framework::Megatron,
      .training_mapping =
          "megatron profile (NeMo MegatronStrategy = Megatron Core TP/PP/CP/SP + distributed optimizer)",
      .unsupported_reason = "inference: NeMo serves models by exporting them to TensorRT-LLM or vLLM (nemo.export / "
                            "NeMo deploy); the row should name that engine",
      .recipe =
          {.zero_stage = 1,
           .sequence_parallel = true,
           .overlap_grad_reduce = true,
           .overlap_param_gather = true,
           .lora_rank = 32,
           .source =
               "NVIDIA/NeMo nemo/collections/llm/recipes/optim/adam.py distributed_fused_adam_with_cosine_annealing: "
               "OptimizerConfig(use_distributed_optimizer=True) (zero_stage 1); recipes/llama3_70b.py trainer(): "
               "MegatronStrategy(tensor_parallelism=4, sequence_parallel=True, ddp=DistributedDataParallelConfig("
               "overlap_grad_reduce=True, overlap_param_gather=True)); finetune_recipe() reuses pretrain_recipe's "
               "trainer and optimizer; nemo/collections/llm/peft/lora.py @0044d77 class LoRA: dim: int = 32 "
               "(lora_rank 32) on linear_qkv, linear_proj, linear_fc1, linear_fc2. NeMo 2.0 recipes; assumption: "
               "NeMo 1.x yamls (megatron_gpt_config.yaml) were not re-read"},
      .source = "NVIDIA/NeMo nemo/collections/llm/recipes/llama3_70b.py (nl.MegatronStrategy over Megatron Core); "
                "sim/run/run_spec.cpp parse_name (nemo -> megatron)"});

  c.push_back(FrameworkEntry{
      .name = "megascale",
      .aliases = {"mega-scale", "bytedance-megascale"},
      .unsupported_reason =
          "megascale: closed-source ByteDance system whose parallel transformer block, sliding-window attention, "
          "LAMB optimizer and co-designed fused operators (55.2% MFU at 175B on 12,288 GPUs, 1.34x Megatron-LM) are "
          "not what the megatron profile models, with no config to cite; it is a training system (no inference)",
      .source = "Jiang et al., MegaScale, NSDI 2024 (arXiv:2402.15627), abstract: co-design across operator "
                "optimization, model block and optimizer design, computation/communication overlapping"});

  // ---- DeepSpeed family ------------------------------------------------------------------------------
  c.push_back(FrameworkEntry{
      .name = "deepspeed",
      .aliases = {"deepspeed-zero", "microsoft-deepspeed"},
      .training = Framework::DeepSpeed,
      .inference = Framework::DeepSpeed,
      .training_mapping = "deepspeed profile (ZeRO 0-3 over HF transformers modelling code, 16-bit params and grads, "
                          "fp32 master + Adam)",
      .inference_mapping =
          "deepspeed-inference profile: static batching (DeepSpeed-Inference: HF generate loop around its kernels, KV "
          "workspace for max_out_tokens 1024; the static profile counts HF eager glue where kernel injection fuses "
          "it); int8 weights dequantized into a 16-bit copy before each GEMM (quantized_gemm)",
      .recipe = {.zero_stage = 0,
                 .source = "deepspeedai/DeepSpeed deepspeed/runtime/zero/config.py DeepSpeedZeroConfig: stage: "
                           "ZeroStageEnum = 0 (no zero_optimization block = stage 0); overlap_comm left to the profile "
                           "(its validator sets it to stage == 3)"},
      .source = "the CLI's own profile name: sim/run/framework_profile.cpp deepspeed(); DeepSpeed zero/config.py "
                "(reduce_bucket_size 5e8, overlap_comm default), DeepSpeed inference config (max_out_tokens 1024)"});

  c.push_back(FrameworkEntry{
      .name = "gpt-neox",
      .aliases = {"gptneox", "neox", "eleutherai-gpt-neox"},
      .training = Framework::Megatron,
      .training_mapping =
          "megatron TP/PP model code (GPT-NeoX's Megatron-derived layers, fused softmax) + DeepSpeed ZeRO-1 DP; "
          "DeepSpeed's fp16 optimizer keeps 16-bit gradients where the megatron profile counts fp32 main_grad",
      .unsupported_reason = "inference: GPT-NeoX's generate.py is a sampling script, not a serving engine; no profile "
                            "was checked against it",
      .recipe = {.zero_stage = 1,
                 .recompute = Recompute::Full,
                 .overlap_grad_reduce = true,
                 .source =
                     "EleutherAI/gpt-neox configs/{19M,49M,125M,350M,760M,800M,1-3B,2-7B,6-7B,13B,20B,175B}.yml "
                     "@ea7aefd: zero_optimization {\"stage\": 1, \"overlap_comm\": True}, \"checkpoint_activations\": "
                     "true (bf16_125M.yml, bnb_125M.yml, slurm_125M.yml use stage 0)"},
      .source = "EleutherAI/gpt-neox megatron/model (Megatron-LM-derived ParallelTransformer, fused softmax) trained "
                "by DeepSpeed (configs/*.yml zero_optimization)"});

  c.push_back(FrameworkEntry{
      .name = "xtuner",
      .aliases = {"internlm-xtuner"},
      .training = Framework::DeepSpeed,
      .training_mapping = "deepspeed profile (DeepSpeed ZeRO over HF transformers models in the MMEngine runner)",
      .unsupported_reason = "inference: xtuner chat runs HF generate or hands models to LMDeploy; the row should name "
                            "hf or lmdeploy",
      .recipe = {.zero_stage = 2,
                 .recompute = Recompute::Full,
                 .source =
                     "InternLM/xtuner README.md quick start: 'xtuner train internlm2_chat_7b_qlora_oasst1_e3 "
                     "--deepspeed deepspeed_zero2' (zero_stage 2); xtuner/model/sft.py SupervisedFinetune("
                     "use_activation_checkpointing=True) calls llm.gradient_checkpointing_enable() (recompute full)"},
      .source = "InternLM/xtuner xtuner/model/sft.py (HF PreTrainedModel + PEFT, dispatch_modules patches attention "
                "to FlashAttention where installed), README --deepspeed deepspeed_zero2/zero3"});

  c.push_back(FrameworkEntry{
      .name = "colossalai",
      .aliases = {"colossal-ai", "colossal"},
      .training = Framework::DeepSpeed,
      .training_mapping =
          "deepspeed profile (ZeRO-style sharding of HF models: Gemini = chunked ZeRO-3, LowLevelZero = "
          "ZeRO-1/2); assumption: Gemini's reuse of fp16 chunks for gradients is not modelled",
      .unsupported_reason = "inference: Colossal-Inference is its own continuous-batching engine with a paged KV "
                            "cache; no profile was checked against it",
      .recipe = {.zero_stage = 3,
                 .source =
                     "hpcaitech/ColossalAI examples/language/llama/benchmark.py @a616e91: --plugin default \"gemini\" "
                     "(GeminiPlugin shards params, grads and optimizer states = ZeRO-3)"},
      .source = "hpcaitech/ColossalAI colossalai/booster/plugin (GeminiPlugin, LowLevelZeroPlugin over HF models), "
                "examples/language/llama/benchmark.py"});

  // ---- PyTorch FSDP family ---------------------------------------------------------------------------
  c.push_back(FrameworkEntry{
      .name = "fsdp",
      .aliases = {"pytorch-fsdp", "torch-fsdp", "fsdp2"},
      .training = Framework::Fsdp,
      .inference = Framework::Fsdp,
      .training_mapping = "fsdp profile (FULL_SHARD flat fp32 params with bf16 compute copies, fp32 grads and Adam)",
      .inference_mapping = "static batching (the static engine profile, HF generate style)",
      .recipe = {.zero_stage = 3,
                 .source =
                     "PyTorch docs torch.distributed.fsdp.FullyShardedDataParallel: sharding_strategy defaults to "
                     "ShardingStrategy.FULL_SHARD (parameters, gradients and optimizer states sharded = zero_stage "
                     "3); FSDP2 fully_shard(reshard_after_forward=True) is the same"},
      .source = "the CLI's own profile name: sim/run/framework_profile.cpp fsdp(); PyTorch FSDP docs (MixedPrecision, "
                "per-unit reduce-scatter, backward prefetch)"});

  c.push_back(FrameworkEntry{
      .name = "torchtitan",
      .aliases = {"torch-titan", "pytorch-torchtitan"},
      .training = Framework::Fsdp,
      .training_mapping =
          "fsdp profile (FSDP2 fully_shard over torchtitan's own Llama code, bf16 params with fp32 sharded master, "
          "SDPA attention); eager runs have more elementwise kernels (RoPE, SwiGLU) than the profile counts, "
          "torch.compile runs fuse them",
      .unsupported_reason = "inference: torchtitan trains only; it has no generation engine",
      .recipe = {.zero_stage = 3,
                 .recompute = Recompute::Selective,
                 .precision = DType::BF16,
                 .source = "pytorch/torchtitan torchtitan/models/llama3/train_configs/llama3_8b.toml @01424cb: "
                           "[parallelism] data_parallel_shard_degree = -1 (FSDP over all GPUs, zero_stage 3), "
                           "[activation_checkpoint] mode = 'selective'; @b5bcd76 models/llama3/config_registry.py "
                           "llama3_8b(): SelectiveAC.Config() (llama3_70b/405b: FullAC), config/configs.py "
                           "data_parallel_shard_degree = -1, fsdp_reshard_after_forward = 'default', "
                           "mixed_precision_param = 'bfloat16' (precision bf16)"},
      .source = "pytorch/torchtitan torchtitan/config/configs.py (FSDP2 via data_parallel_shard_degree, "
                "mixed_precision_param bf16 / reduce fp32), torchtitan/models/common/attention.py (SDPA)"});

  c.push_back(FrameworkEntry{
      .name = "torchtune",
      .aliases = {"torch-tune", "pytorch-torchtune"},
      .training = Framework::Fsdp,
      .training_mapping = "fsdp profile (FSDP2 FULL_SHARD in the distributed recipes, pure bf16 = no master copy, "
                          "optimizer_in_bwd available)",
      .unsupported_reason = "inference: torchtune's generate recipe is a single-prompt evaluation utility, not an "
                            "engine; no profile was checked against it",
      .recipe = {.zero_stage = 3,
                 .recompute = Recompute::Full,
                 .master_weights = false,
                 .fused_loss = true,
                 .precision = DType::BF16,
                 .single_device_full_optimizer = Optimizer::Adam8bit,
                 .single_device_full_optimizer_in_backward = true,
                 .source =
                     "pytorch/torchtune recipes/configs/llama3_1/8B_full_single_device.yaml @02d7035: optimizer "
                     "bitsandbytes.optim.PagedAdamW8bit, optimizer_in_bwd: True (one-GPU full fine-tuning; the "
                     "paging of its states to host memory under pressure is not modelled); "
                     "@bd2a0fc recipes/configs/llama3_1/8B_full.yaml: dtype: bf16 (pure bf16, "
                     "master_weights none; 196 of 197 configs), enable_activation_checkpointing: True (126 of 197 "
                     "configs; e.g. llama3_1/8B_lora.yaml sets False), loss: torchtune.modules.loss."
                     "LinearCrossEntropyLoss (chunked, fused_loss); recipes/full_finetune_distributed.py: "
                     "fully_shard with reshard_after_forward=cfg.get('fsdp_reshard_after_forward', True) = "
                     "FULL_SHARD (zero_stage 3)"},
      .source =
          "pytorch/torchtune recipes/full_finetune_distributed.py, torchtune/training/_distributed.py shard_model "
          "(fully_shard); sim/run/framework_profile.cpp fsdp() (pure_16bit, optimizer_in_backward for "
          "torchtune)"});

  c.push_back(FrameworkEntry{
      .name = "litgpt",
      .aliases = {"lit-gpt", "lightning-litgpt"},
      .training = Framework::Fsdp,
      .inference = Framework::Hf,
      .training_mapping = "fsdp profile (Lightning Fabric FSDPStrategy on several GPUs over litgpt's own eager model "
                          "code; bf16-true = pure bf16)",
      .inference_mapping = "static batching (litgpt generate: a Python loop of next_token over its eager model with a "
                           "preallocated KV cache)",
      .recipe = {.zero_stage = 3,
                 .master_weights = false,
                 .precision = DType::BF16,
                 .source = "Lightning-AI/litgpt @2685705 config_hub/finetune/*/*.yaml: precision: bf16-true (42 of 43, "
                           "e.g. llama-2-7b/lora.yaml; weights, grads and AdamW states bf16: master_weights none); "
                           "litgpt/finetune/full.py: FSDPStrategy(auto_wrap_policy={Block}, "
                           "activation_checkpointing_policy={Block}) when devices > 1 (Lightning's default "
                           "sharding_strategy FULL_SHARD: zero_stage 3). The bare CLI without --precision uses "
                           "get_default_supported_precision(training=True) = bf16-mixed (litgpt/utils.py)"},
      .source = "Lightning-AI/litgpt litgpt/finetune/{full,lora}.py (Fabric FSDPStrategy), litgpt/generate/base.py "
                "(next_token loop, set_kv_cache)"});

  c.push_back(FrameworkEntry{
      .name = "llm-foundry",
      .aliases = {"llmfoundry", "composer", "mosaicml-composer", "mosaicml-llm-foundry", "mosaicml"},
      .training = Framework::Fsdp,
      .inference = Framework::Hf,
      .training_mapping = "fsdp profile (Composer FSDP FULL_SHARD, mixed_precision PURE, over MPT's fused model code)",
      .inference_mapping = "static batching (scripts/inference/hf_generate.py and benchmarking/benchmark.py call HF "
                           "generate())",
      .recipe = {.zero_stage = 3,
                 .flash_attn = true,
                 .fused_loss = true,
                 .precision = DType::BF16,
                 .dropout = 0.0,
                 .source =
                     "mosaicml/llm-foundry @8c8dd48 scripts/train/yamls/pretrain/mpt-*.yaml: fsdp_config."
                     "sharding_strategy: FULL_SHARD (zero_stage 3), model.attn_config.attn_impl: flash, precision: "
                     "amp_bf16; llmfoundry/models/mpt/modeling_mpt.py ComposerMPTCausalLM loss_fn default "
                     "'fused_crossentropy' (flash-attn CrossEntropyLoss); llmfoundry/models/mpt/"
                     "configuration_mpt.py resid_pdrop = emb_pdrop = 0.0, attn_config_defaults attn_pdrop 0.0 "
                     "(dropout 0). Not set: activation_checkpointing is true for mpt-3b and larger, false below"},
      // v0.7.0 (2024-03-26) switched the pretraining yamls from attn_impl: triton to flash (#1041), and
      // submit_benchmarks.py's --attn_impl default with them; the benchmark tables of 2023-24 ran before.
      .earlier_recipes = {{.before = {0, 7, 0},
                           .recipe = {.zero_stage = 3,
                                      .flash_attn = true,
                                      .attn_kernel = AttentionKernel::Fa1,
                                      .fused_loss = true,
                                      .precision = DType::BF16,
                                      .dropout = 0.0,
                                      .source = "mosaicml/llm-foundry v0.6.0 scripts/train/yamls/pretrain/"
                                                "mpt-*.yaml: model.attn_config.attn_impl: triton (v0.3.0 to "
                                                "v0.6.0 alike), scripts/train/benchmarking/submit_benchmarks.py "
                                                "--attn_impl default 'triton'; llmfoundry/models/layers/"
                                                "attention.py triton_flash_attn_fn -> llmfoundry/models/layers/"
                                                "flash_attn_triton.py (the Triton FlashAttention kernel, FA1 "
                                                "generation); FULL_SHARD, amp_bf16, fused_crossentropy and no "
                                                "dropout as in the entry's recipe"}}},
      .source = "mosaicml/llm-foundry scripts/train/yamls/pretrain/mpt-7b.yaml (fsdp_config), scripts/inference; "
                "sim/run/framework_profile.cpp fsdp() (checked against llm-foundry MPT)"});

  c.push_back(FrameworkEntry{
      .name = "llama-recipes",
      .aliases = {"llama-cookbook", "meta-llama-recipes"},
      .training = Framework::Fsdp,
      .inference = Framework::Hf,
      .training_mapping = "fsdp profile (finetuning.py --enable_fsdp wraps the HF model in FSDP; a one-GPU run "
                          "without it is plain HF + PEFT and should state zero_stage 0)",
      .inference_mapping = "static batching, HF generate loop (its inference scripts call model.generate)",
      .recipe = {.zero_stage = 3,
                 .recompute = Recompute::Full,
                 .source = "meta-llama/llama-recipes configs/fsdp.py: fsdp_config.sharding_strategy = "
                           "ShardingStrategy.FULL_SHARD (zero_stage 3), fsdp_activation_checkpointing = True "
                           "(recompute full)"},
      .source = "meta-llama/llama-recipes configs/fsdp.py and finetuning.py (FSDP over HF modelling code, PEFT)"});

  c.push_back(FrameworkEntry{
      .name = "metaseq",
      .aliases = {"facebookresearch-metaseq", "meta-seq"},
      .unsupported_reason =
          "metaseq (OPT's trainer) is fairseq with fairscale's FullyShardedDataParallel and Megatron tensor "
          "parallelism "
          "in one step; no profile combines FSDP sharding with tensor parallelism, and its fairseq loop differs from "
          "the profiles' (state the parts as fsdp with tp only if that is how the run was set up)",
      .source = "facebookresearch/metaseq README and metaseq/distributed (fairscale FSDP, Megatron model parallel); "
                "assumption: code not re-read for this entry"});

  c.push_back(FrameworkEntry{
      .name = "paxml",
      .aliases = {"pax", "praxis", "google-paxml", "saxml"},
      .unsupported_reason =
          "paxml is JAX/XLA (pjit-compiled steps, usually on TPUs): no profile models XLA's fused, compiled step or a "
          "TPU; the profiles are eager or CUDA-graph PyTorch and C++ engines on NVIDIA GPUs",
      .source = "google/paxml README (JAX, Praxis layers, pjit); assumption: code not re-read for this entry"});

  // ---- Hugging Face trainers -------------------------------------------------------------------------
  c.push_back(FrameworkEntry{
      .name = "hf",
      .aliases = {"transformers", "huggingface", "hugging-face", "hf-transformers", "huggingface-transformers",
                  "hf-trainer", "peft", "hf-peft"},
      .training = Framework::Hf,
      .inference = Framework::Hf,
      .training_mapping = "hf profile (plain PyTorch DDP over HF transformers modelling code: fp32 weights with AMP "
                          "or a bf16-loaded model; a stated ZeRO stage runs the DeepSpeed integration)",
      .inference_mapping = "static batching, HF generate loop (padded batch, eager modelling code, DynamicCache)",
      .recipe = {.zero_stage = 0,
                 .recompute = Recompute::None,
                 .source = "huggingface/transformers training_args.py TrainingArguments: gradient_checkpointing=False "
                           "(recompute none), deepspeed=None (no ZeRO: zero_stage 0)"},
      .source =
          "the CLI's own profile name: sim/run/framework_profile.cpp hf(), sim/run/engine_profile.cpp "
          "static_profile(); "
          "HF docs 'Model training anatomy', 'Generation strategies'; PEFT adapters train inside the same Trainer"});

  c.push_back(FrameworkEntry{
      .name = "trl",
      .aliases = {"hf-trl", "huggingface-trl"},
      .training = Framework::Hf,
      .training_mapping = "hf profile (TRL's SFTTrainer / DPOTrainer subclass HF Trainer over HF modelling code)",
      .unsupported_reason = "inference: TRL is a training library (its online methods generate through HF generate "
                            "or vLLM inside training); inference rows should name the engine",
      .recipe = {.recompute = Recompute::Full,
                 .precision = DType::BF16,
                 .source = "huggingface/trl trl/trainer/sft_config.py @016013e SFTConfig note: gradient_checkpointing "
                           "defaults to True and bf16 to True (instead of TrainingArguments' False); assumption: older "
                           "TRL releases inherited TrainingArguments' defaults"},
      .source = "huggingface/trl trl/trainer/sft_config.py (SFTConfig extends transformers.TrainingArguments)"});

  c.push_back(FrameworkEntry{
      .name = "ddp",
      .aliases = {"pytorch", "torch", "pytorch-ddp", "torch-ddp", "distributeddataparallel", "torchrun"},
      .training = Framework::Hf,
      .inference = Framework::Hf,
      .training_mapping = "hf profile (torch.nn.parallel.DistributedDataParallel over eager PyTorch modules: gradient "
                          "buckets all-reduced during backward; the hf profile is DDP over eager modelling code)",
      .inference_mapping = "static batching (an eager PyTorch generate loop)",
      .source = "PyTorch docs torch.nn.parallel.DistributedDataParallel (bucket_cap_mb 25, all-reduce overlapped "
                "with backward); assumption: a user's own module code launches about as many kernels per layer as "
                "transformers' modelling code"});

  c.push_back(FrameworkEntry{
      .name = "accelerate",
      .aliases = {"hf-accelerate", "huggingface-accelerate"},
      .training = Framework::Hf,
      .inference = Framework::Hf,
      .training_mapping = "hf profile (accelerate launch without a config = torch DDP over HF modelling code; its "
                          "FSDP / DeepSpeed plugins should be stated as fsdp / a ZeRO stage)",
      .inference_mapping = "static batching, HF generate loop (big-model inference with device_map places layers on "
                           "GPUs that run one after another)",
      .source =
          "huggingface/accelerate docs: Accelerator / accelerate launch (MULTI_GPU = DistributedDataParallel; "
          "FullyShardedDataParallelPlugin, DeepSpeedPlugin from accelerate config), 'Big Model Inference'; assumption: "
          "docs not re-read for this entry"});

  c.push_back(FrameworkEntry{
      .name = "axolotl",
      .aliases = {"axolotl-ai", "openaccess-ai-collective-axolotl"},
      .training = Framework::Hf,
      .training_mapping = "hf profile (HF Trainer over HF modelling code; its deepspeed: / fsdp: keys should be stated "
                          "as a ZeRO stage / fsdp)",
      .unsupported_reason = "inference: axolotl's inference CLI is a debugging loop; serving runs in another engine "
                            "the row should name",
      .recipe = {.recompute = Recompute::Full,
                 .flash_attn = true,
                 .source =
                     "axolotl-ai-cloud/axolotl examples/llama-3/lora-8b.yml @107c67a: gradient_checkpointing: true "
                     "(recompute full), flash_attention: true"},
      .source = "axolotl-ai-cloud/axolotl (HF Trainer with PEFT, DeepSpeed/FSDP configs in deepspeed_configs/)"});

  c.push_back(FrameworkEntry{
      .name = "ms-swift",
      .aliases = {"swift", "modelscope-swift", "msswift"},
      .training = Framework::Hf,
      .training_mapping =
          "hf profile (HF Seq2SeqTrainer over HF modelling code; --deepspeed should be stated as a ZeRO "
          "stage, Megatron-SWIFT runs as megatron-core)",
      .unsupported_reason = "inference: swift infer picks a backend per run (pt, vllm, sglang, lmdeploy); the row "
                            "should name the engine",
      .recipe = {.recompute = Recompute::Full,
                 .master_weights = false,
                 .master_weights_at = DType::BF16,
                 .optimizer_impl = OptimizerImpl::Foreach,
                 .source = "modelscope/ms-swift swift/trainers/arguments.py @7b70996 TrainArgumentsMixin: "
                           "gradient_checkpointing: bool = True (recompute full); @46922151 "
                           "swift/llm/utils/argument.py select_dtype: dtype AUTO = the model's torch_dtype (bf16) "
                           "where the GPU has bf16, the model loaded in it and trained as it is (weights, grads "
                           "and AdamW states bf16: master_weights none); fp16 full fine-tuning is switched to "
                           "'the fp32 & AMP approach' (fp32 weights), so the recipe applies at bf16 only; @46922151 "
                           "SftArguments optim = 'adamw_torch' (torch.optim.AdamW, whose step is foreach on CUDA "
                           "tensors unless fused is asked for: torch/optim/optimizer.py _default_to_fused_or_foreach)"},
      .source = "modelscope/ms-swift swift/trainers/arguments.py (TrainingArguments(SwiftArgumentsMixin, "
                "HfTrainingArguments))"});

  c.push_back(FrameworkEntry{
      .name = "llama-factory",
      .aliases = {"llamafactory", "llama-factory-cli", "hiyouga-llama-factory"},
      .training = Framework::Hf,
      .inference = Framework::Hf,
      .training_mapping = "hf profile (HF Trainer over HF modelling code; a stated ZeRO stage runs DeepSpeed)",
      .inference_mapping = "static batching, HF generate loop (infer_backend default huggingface)",
      .recipe = {.recompute = Recompute::Full,
                 .source = "hiyouga/LLaMA-Factory src/llamafactory/hparams/model_args.py @00577a8: "
                           "disable_gradient_checkpointing default False (checkpointing on: recompute full)"},
      .source = "hiyouga/LLaMA-Factory src/llamafactory/hparams/model_args.py (infer_backend default EngineName.HF, "
                "flash_attn default auto)"});

  c.push_back(FrameworkEntry{
      .name = "unsloth",
      .aliases = {"unsloth-ai"},
      .unsupported_reason =
          "unsloth: replaces HF modelling code with its own Triton kernels (fused RMSNorm, RoPE, SwiGLU, chunked cross "
          "entropy), a hand-written LoRA backward and host-offloaded gradient checkpointing; no profile has that "
          "kernel "
          "set or memory recipe, for training or for its fast generation",
      .source = "unslothai/unsloth README (Triton kernels, manual backprop, 'unsloth' gradient checkpointing offloads "
                "activations); assumption: kernel list from its README, code not re-read"});

  c.push_back(FrameworkEntry{
      .name = "internlm",
      .aliases = {"internevo", "intern-evo", "internlm-train"},
      .training = Framework::Megatron,
      .training_mapping =
          "megatron TP ('mtp') with fused kernels (FlashAttention, fused norm/dense) + hybrid ZeRO-1 over DP; "
          "InternEvo keeps and reduces bf16 gradients where the megatron profile counts fp32 main_grad (4 B/param) "
          "and reduces in fp32",
      .unsupported_reason = "inference: InternLM models are served by LMDeploy; the row should name lmdeploy",
      .recipe = {.zero_stage = 1,
                 .sequence_parallel = false,
                 .recompute = Recompute::None,
                 .flash_attn = true,
                 .overlap_grad_reduce = true,
                 .overlap_param_gather = false,
                 .precision = DType::BF16,
                 .source =
                     "InternLM/InternEvo configs/7B_sft.py @c628a8c: parallel zero1=dict(size=-1) (optimizer "
                     "states over all DP ranks: zero_stage 1), tensor=dict(size=1, mode='mtp') (megatron TP "
                     "without sequence parallel), model checkpoint=False (recompute none), use_flash_attn=True, "
                     "dtype='torch.bfloat16', hybrid_zero_optimizer overlap_sync_grad=True, overlap_sync_param=False"},
      .source = "InternLM/InternEvo internlm/solver/optimizer/hybrid_zero_optim.py (16-bit params and grads, fp32 "
                "flat master partition per rank, reduce_bucket_size 512M), configs/7B_sft.py"});

  c.push_back(FrameworkEntry{
      .name = "flash-attention",
      .aliases = {"flash-attn", "flashattention", "dao-ailab-flash-attention"},
      .training = Framework::Hf,
      .training_mapping =
          "hf profile (PyTorch Lightning DDP with AMP bf16 over fp32 weights, fp32 residual) with the repo's "
          "FlashAttention and fused cross entropy from its recipe; its fused MLP / dropout-add-LayerNorm / rotary "
          "kernels are counted as the hf profile's (GPT-2-style LayerNorm models have no RMSNorm or SwiGLU glue)",
      .unsupported_reason = "inference: the repo's training/ scripts train only; its generation utilities are not an "
                            "engine any profile was checked against",
      .recipe = {.zero_stage = 0,
                 .flash_attn = true,
                 .fused_loss = true,
                 .precision = DType::BF16,
                 .source = "Dao-AILab/flash-attention training/configs/experiment/pile/base.yaml @71befc1: "
                           "trainer.precision: bf16, trainer.strategy: null (Lightning DDP), optimizer adamw-apex "
                           "(unsharded: zero_stage 0; configs/optimizer/adamw-zero.yaml is opt-in), train.loss_fn "
                           "flash_attn.losses.cross_entropy.CrossEntropyLoss (fused_loss); pile/gpt3*-flash.yaml "
                           "model.config.use_flash_attn: True"},
      .source = "Dao-AILab/flash-attention training/configs/experiment/pile/gpt3s-flash.yaml (residual_in_fp32, "
                "fused_mlp, fused_dropout_add_ln, fused_bias_fc), base.yaml (Lightning trainer)"});
  return c;
}

std::vector<FrameworkEntry> inference_engines() {
  std::vector<FrameworkEntry> c;
  c.push_back(FrameworkEntry{
      .name = "vllm",
      .aliases = {"vllm-openai", "vllm-project"},
      .inference = Framework::Vllm,
      .inference_mapping = "vllm profile (continuous batching, chunked prefill, 16-token KV blocks, CUDA-graph decode)",
      .unsupported_reason = engine_only("vllm"),
      .source = "the CLI's own profile name: sim/run/engine_profile.cpp vllm_profile() (vllm engine/arg_utils.py, V1 "
                "scheduler, CacheConfig)"});

  c.push_back(FrameworkEntry{
      .name = "sglang",
      .aliases = {"sgl", "sglang-runtime", "sgl-project"},
      .inference = Framework::Sglang,
      .inference_mapping =
          "sglang profile (prefill batches first and apart from decode, chunked prefill by device, new-token-ratio "
          "admission with retraction, token-granular KV with RadixAttention reuse, CUDA-graph decode; "
          "sim/run/engine_profile.cpp)",
      .unsupported_reason = engine_only("sglang"),
      .source = "the CLI's own profile name: sim/run/engine_profile.cpp sglang_profile() (sgl-project/sglang "
                "server_args.py, managers/scheduler.py, managers/schedule_policy.py)"});

  c.push_back(FrameworkEntry{
      .name = "lmdeploy",
      .aliases = {"turbomind", "lmdeploy-turbomind", "internlm-lmdeploy"},
      .inference = Framework::LmDeploy,
      .inference_mapping =
          "lmdeploy profile (TurboMind: C++ loop without CUDA graphs, one fused prefill + decode pass per "
          "iteration, KV blocks allocated as sequences grow, later arrivals preempted; release rules for the "
          "KV share, block size, token budget and batch limit: sim/run/engine_profile.cpp)",
      .unsupported_reason = engine_only("lmdeploy"),
      .source = "InternLM/lmdeploy @1263d5cd lmdeploy/messages.py TurbomindEngineConfig (cache_max_entry_count 0.8, "
                "cache_block_seq_len 64, max_prefill_token_num 8192), src/turbomind/models/llama/LlamaBatch.cc"});

  c.push_back(FrameworkEntry{.name = "tgi",
                             .aliases = {"text-generation-inference", "hf-tgi", "huggingface-tgi"},
                             .inference = Framework::Tgi,
                             .inference_mapping =
                                 "tgi profile (router continuous batching, separate prefill, full-output token budget, "
                                 "paged KV, CUDA graphs up to batch 32)",
                             .unsupported_reason = engine_only("tgi"),
                             .source = "the CLI's own profile name: sim/run/engine_profile.cpp tgi_profile() "
                                       "(TGI launcher/src/main.rs, router "
                                       "batching_task)"});

  c.push_back(FrameworkEntry{
      .name = "lightllm",
      .aliases = {"light-llm", "modeltc-lightllm"},
      .inference = Framework::LightLlm,
      .inference_mapping = "lightllm profile (token-granular KV, router admission by future token use, separate "
                           "prefill)",
      .unsupported_reason = engine_only("lightllm"),
      .source = "the CLI's own profile name: sim/run/engine_profile.cpp lightllm_profile() (LightLLM api_server.py, "
                "router ReqQueue)"});

  c.push_back(FrameworkEntry{.name = "trt-llm",
                             .aliases = {"tensorrt-llm", "trtllm", "nvidia-tensorrt-llm", "trtllm-serve"},
                             .inference = Framework::TrtLlm,
                             .inference_mapping =
                                 "trt-llm profile (C++ executor, in-flight batching, GUARANTEED_NO_EVICT reservation, "
                                 "64-token KV blocks, CUDA graphs)",
                             .unsupported_reason = engine_only("trt-llm"),
                             .source = "the CLI's own profile name: sim/run/engine_profile.cpp trtllm_profile() "
                                       "(TensorRT-LLM perf tuning guide, "
                                       "KvCacheConfig)"});

  c.push_back(FrameworkEntry{
      .name = "fastertransformer",
      .aliases = {"faster-transformer", "nvidia-fastertransformer"},
      .inference = Framework::FasterTransformer,
      .inference_mapping =
          "fastertransformer profile (static batch, whole-session K/V buffer, kernels launched one by one from "
          "C++ without CUDA graphs, one cuBLASLt call per GEMM, one attention block per head and sequence)",
      .unsupported_reason = engine_only("fastertransformer"),
      .source = "the CLI's own profile name: sim/run/engine_profile.cpp fastertransformer_profile() "
                "(NVIDIA/FasterTransformer @df4a7534 ParallelGpt.cc, cublasMMWrapper.cc, docs/gpt_guide.md)"});

  c.push_back(FrameworkEntry{
      .name = "deepspeed-fastgen",
      .aliases = {"fastgen", "deepspeed-mii", "mii", "ds-fastgen", "ds-mii"},
      .inference = Framework::Vllm,
      .inference_mapping =
          "vllm profile (continuous batching; Dynamic SplitFuse splits long prompts into chunks and fills each "
          "forward pass to a token budget together with decode tokens = chunked prefill mixed with decodes; blocked "
          "KV cache); assumption: FastGen's CUDA-graph use and per-step overhead were not checked",
      .unsupported_reason = engine_only("deepspeed-fastgen"),
      .source = "Holmes et al., DeepSpeed-FastGen (arXiv:2401.08671), deepspeedai/DeepSpeed blogs/deepspeed-fastgen "
                "(Dynamic SplitFuse, blocked KV cache, continuous batching); DeepSpeed-MII mii/api.py (ragged batching "
                "and dynamic splitfuse)"});

  c.push_back(FrameworkEntry{
      .name = "gpt-fast",
      .aliases = {"gptfast", "pytorch-labs-gpt-fast"},
      .inference = Framework::TrtLlm,
      .inference_mapping =
          "trt-llm profile for fixed-batch runs (torch.compile(decode_one_token, mode='reduce-overhead', "
          "fullgraph=True): each decode step is one fused CUDA graph with little host overhead; KV cache "
          "preallocated by setup_caches); gpt-fast has no server, serving rows are not meaningful",
      .unsupported_reason = "gpt-fast is an inference script; it does not train",
      .source = "pytorch-labs/gpt-fast generate.py (decode_one_token compiled with mode='reduce-overhead', "
                "fullgraph=True; model.setup_caches(max_batch_size, max_seq_length))"});

  c.push_back(FrameworkEntry{
      .name = "llama.cpp",
      .aliases = {"llama-cpp", "llamacpp", "ggml", "llama.cpp-server", "llama-server", "llama-bench"},
      .inference = Framework::LlamaCpp,
      .inference_mapping = "llama.cpp profile (ggml graph node by node from C++, GGUF block types, CUDA graphs at "
                           "batch 1)",
      .unsupported_reason = "llama.cpp runs inference; it does not train",
      .source = "ggml-org/llama.cpp src/llama-model.cpp llm_build_llama, src/llama-quant.cpp (GGUF recipes)"});

  c.push_back(FrameworkEntry{
      .name = "exllamav2",
      .aliases = {"exllama-v2", "exllama2", "turboderp-exllamav2"},
      .inference = Framework::ExLlamaV2,
      .inference_mapping = "exllamav2 profile (one C++ extension call per module, q_gemm over EXL2 / GPTQ weights)",
      .unsupported_reason = "exllamav2 runs inference; it does not train",
      .source = "turboderp/exllamav2 v0.2.7 attn.py, mlp.py, exllamav2_ext"});

  c.push_back(FrameworkEntry{
      .name = "exllama",
      .aliases = {"exllama-v1", "turboderp-exllama"},
      .inference = Framework::ExLlamaV2,
      .inference_release = Version{0, 0, 1},
      .inference_mapping =
          "exllamav2 profile before CUDA graphs (ExLlama v1 runs the same structure: a Python loop over modules that "
          "call its CUDA extension, q4_matmul over GPTQ weights, a static cache; v2 rewrote the kernels)",
      .unsupported_reason = "exllama runs inference; it does not train",
      .source = "turboderp/exllama README (cuda_ext q4_matmul, per-layer extension calls) and turboderp/exllamav2 "
                "(its successor's structure)"});

  c.push_back(FrameworkEntry{
      .name = "mlc-llm",
      .aliases = {"mlc", "mlcllm", "mlc-ai"},
      .inference = Framework::MlcLlm,
      .inference_mapping = "mlc-llm profile (TVM-compiled fused kernels run from C++, CUDA graphs at --opt O2)",
      .unsupported_reason = "mlc-llm runs inference; it does not train",
      .source = "mlc-ai/mlc-llm python/mlc_llm/interface/compiler_flags.py"});

  c.push_back(FrameworkEntry{
      .name = "autoawq",
      .aliases = {"auto-awq", "casper-hansen-autoawq"},
      .inference = Framework::AutoAwq,
      .inference_mapping = "autoawq profile (fused modules with a preallocated cache under HF generate, eager)",
      .unsupported_reason = "autoawq quantizes and runs inference; it does not train",
      .source = "casper-hansen/AutoAWQ awq/models/auto.py / base.py from_quantized: fuse_layers: ... = True; "
                "awq/modules/fused"});

  c.push_back(FrameworkEntry{
      .name = "tinychat",
      .aliases = {"tiny-chat", "awq-tinychat"},
      .inference = Framework::TinyChat,
      .inference_mapping = "tinychat profile (fused W4A16 modules run eagerly from Python, no CUDA graphs)",
      .unsupported_reason = "tinychat runs inference; it does not train",
      .source = "mit-han-lab/llm-awq tinychat/benchmark.py, tinychat/modules"});

  c.push_back(FrameworkEntry{
      .name = "llm-awq",
      .aliases = {"mit-han-lab-llm-awq", "awq-kernels"},
      .inference = Framework::TinyChat,
      .inference_mapping = "tinychat profile (llm-awq runs inference through its TinyChat runtime and kernels)",
      .unsupported_reason = "llm-awq quantizes and runs inference through TinyChat; it does not train",
      .source = "mit-han-lab/llm-awq README and tinychat/README.md"});

  c.push_back(FrameworkEntry{
      .name = "deepspeed-inference",
      .aliases = {"ds-inference", "deepspeed-inference-v1", "deepspeed-kernel-inject"},
      .inference = Framework::DeepSpeed,
      .inference_mapping =
          "deepspeed-inference profile, static batching (init_inference(replace_with_kernel_inject=True), "
          "as Megatron-DeepSpeed's bloom-ds-inference.py calls it, puts fused kernels into an HF model "
          "whose generate loop runs the batch; KV workspace for max_out_tokens 1024; the static "
          "profile counts HF eager glue where kernel injection fuses it; int8 weights dequantized "
          "into a 16-bit copy before each GEMM, quantized_gemm)",
      .unsupported_reason = "deepspeed-inference is DeepSpeed's inference path; training rows should name deepspeed",
      .source = "deepspeedai/DeepSpeed deepspeed/inference/config.py DeepSpeedInferenceConfig (max_out_tokens 1024; "
                "assumption: replace_with_kernel_inject and enable_cuda_graph default False, not re-read); "
                "sim/run/framework_profile.cpp deepspeed() kv_prealloc_tokens"});
  return c;
}

std::vector<FrameworkEntry> make_catalog() {
  std::vector<FrameworkEntry> c = training_frameworks();
  for (auto& e : inference_engines()) c.push_back(std::move(e));
  return c;
}

}  // namespace

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

const std::vector<FrameworkEntry>& framework_catalog() {
  static const std::vector<FrameworkEntry> catalog = make_catalog();
  return catalog;
}

std::string normalize_framework_name(std::string_view text) {
  std::string s = to_lower(trim_blanks(text));
  for (char& c : s)
    if (c == '_' || c == ' ') c = '-';
  return s;
}

std::vector<Recompute> recompute_modes(const FrameworkEntry& e) {
  if (e.training == Framework::Megatron || e.recipe.recompute == Recompute::Selective)
    return {Recompute::None, Recompute::Selective, Recompute::Full};
  return {Recompute::None, Recompute::Full};
}

std::string describe(const RecipeDefaults& r) {
  std::vector<std::string> parts;
  const auto yes_no = [](bool b) { return std::string(b ? "yes" : "no"); };
  if (r.zero_stage) parts.push_back("zero_stage=" + std::to_string(*r.zero_stage));
  if (r.sequence_parallel) parts.push_back("sequence_parallel=" + yes_no(*r.sequence_parallel) + " (tp > 1)");
  if (r.recompute) parts.push_back("recompute=" + std::string(name_of(*r.recompute)));
  if (r.flash_attn) parts.push_back("flash_attn=" + yes_no(*r.flash_attn));
  if (r.attn_kernel) parts.push_back("attn_kernel=" + std::string(name_of(*r.attn_kernel)));
  if (r.overlap_grad_reduce) parts.push_back("overlap_grad_reduce=" + yes_no(*r.overlap_grad_reduce));
  if (r.overlap_param_gather)
    parts.push_back("overlap_param_gather=" + yes_no(*r.overlap_param_gather) + " (ZeRO-1/2)");
  if (r.master_weights)
    parts.push_back(std::string("master_weights=") + (*r.master_weights ? "fp32" : "none") +
                    (r.master_weights_at ? fmt::format(" (at {})", dtype_name(*r.master_weights_at)) : ""));
  if (r.fused_loss) parts.push_back("fused_loss=" + yes_no(*r.fused_loss));
  if (r.precision) parts.push_back("precision=" + std::string(dtype_name(*r.precision)));
  if (r.single_device_full_optimizer)
    parts.push_back("optimizer=" + std::string(name_of(*r.single_device_full_optimizer)) + " (1 GPU, full)");
  if (r.lora_rank) parts.push_back("lora_rank=" + std::to_string(*r.lora_rank));
  if (r.single_device_full_optimizer_in_backward)
    parts.push_back("optimizer_in_backward=" + yes_no(*r.single_device_full_optimizer_in_backward) + " (1 GPU, full)");
  if (r.optimizer_impl) parts.push_back("optimizer_impl=" + std::string(name_of(*r.optimizer_impl)));
  if (r.dropout) parts.push_back(fmt::format("dropout={:g} (model by dimensions)", *r.dropout));
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

const RecipeDefaults& recipe_for(const FrameworkEntry& e, const std::optional<Version>& release) {
  if (release)
    for (const EarlierRecipe& r : e.earlier_recipes)
      if (*release < r.before) return r.recipe;
  return e.recipe;
}

const FrameworkEntry* find_framework(std::string_view text) {
  const std::string key = normalize_framework_name(text);
  for (const FrameworkEntry& e : framework_catalog()) {
    if (e.name == key) return &e;
    if (std::find(e.aliases.begin(), e.aliases.end(), key) != e.aliases.end()) return &e;
  }
  return nullptr;
}

}  // namespace llmsim::sim
