#pragma once
// Software as its users name it -> the simulator's profiles. A measured run's `framework` column is
// free text ("megatron-deepspeed", "torchtitan", "TensorRT-LLM", "llama.cpp"); each common name is an
// entry here that says which framework profile (sim/run/framework_profile.h) or engine profile
// (sim/run/engine_profile.h) shares its documented behaviour, in words for reports ("megatron-deepspeed ->
// megatron TP/PP + DeepSpeed ZeRO-1 DP"), and what its documented recipes set when a run does not state
// it (Megatron-LM's example scripts use the distributed optimizer and sequence parallelism with TP > 1;
// torchtitan's configs shard with FSDP2 and checkpoint activations selectively; …). Where no profile is a
// fair stand-in the entry says so with the reason: the row is then unsupported, never guessed. Every
// mapping and every recipe default cites the framework's own docs or code (framework_catalog.cpp).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "llmsim/core/dtype.h"
#include "llmsim/core/version.h"
#include "llmsim/hardware/attention_kernel.h"
#include "llmsim/run/run_spec.h"

namespace llmsim::sim {

// Settings a framework's documented default recipe uses for a training run (pretrain / finetune) that
// leaves them unstated. Each field unset = the simulator's own default. Applied by the measured-run
// reader only where the row's column is empty and no source fact settles it.
struct RecipeDefaults {
  std::optional<int> zero_stage;          // 0..3 (Megatron's distributed optimizer = 1, FSDP FULL_SHARD = 3)
  std::optional<bool> sequence_parallel;  // applied only when tp > 1
  std::optional<Recompute> recompute;
  std::optional<bool> flash_attn;
  std::optional<AttentionKernel> attn_kernel;  // with flash_attn
  std::optional<bool> overlap_grad_reduce;     // TrainSpec::overlap_grad_reduce
  std::optional<bool> overlap_param_gather;    // TrainSpec::overlap_param_gather
  std::optional<bool> master_weights;          // false = pure 16-bit training (torchtune dtype=bf16, litgpt bf16-true)
  // When set, master_weights applies only to runs at this precision: ms-swift trains a bf16-loaded model
  // as it is, but turns full fp16 fine-tuning into fp32 weights with AMP.
  std::optional<DType> master_weights_at;
  std::optional<bool> fused_loss;         // a fused / chunked cross-entropy
  std::optional<DType> precision;         // compute precision when the row leaves it empty
  std::optional<std::int64_t> lora_rank;  // LoRA rank of a LoRA row that states none (the recipe's r / dim)
  // One-GPU full fine-tuning recipes that differ from the distributed ones (torchtune's
  // *_full_single_device configs step bitsandbytes' PagedAdamW8bit inside backward).
  std::optional<Optimizer> single_device_full_optimizer;
  std::optional<bool> single_device_full_optimizer_in_backward;
  std::optional<OptimizerImpl> optimizer_impl;  // how its AdamW steps (TrainSpec::optimizer_impl)
  // Dropout of the recipe's own model code, for a row that describes its model by dimensions (a named
  // model's config states its own).
  std::optional<double> dropout;
  std::string source;  // citation of every default above (required when any is set)
};

// A recipe of earlier releases: a default the entry's recipe cites changed at `before`, and a training row
// that states a release below it runs these settings instead (llm-foundry's benchmark and pretraining
// configs named Triton attention until v0.7.0, FlashAttention after).
struct EarlierRecipe {
  Version before;
  RecipeDefaults recipe;
};

struct FrameworkEntry {
  std::string name;                  // canonical spelling, lower case ("megatron-deepspeed")
  std::vector<std::string> aliases;  // other spellings users write ("megatron_deepspeed", "nvidia nemo")
  // The profile that stands in for training (pretrain / finetune) rows, and the one for inference and
  // serving rows; nullopt = no fair stand-in for that kind of workload (see unsupported_reason).
  std::optional<Framework> training;
  std::optional<Framework> inference;
  // The release of the inference profile the name runs as when a row states none (ExLlama v1 runs as ExLlamaV2
  // before its CUDA graphs); nullopt: the profile's own (current) release.
  std::optional<Version> inference_release;
  std::string training_mapping;                // for reports: "megatron TP/PP + DeepSpeed ZeRO-1 DP"
  std::string inference_mapping;               // "static batching, HF generate loop"
  std::string unsupported_reason;              // why a workload without a profile has none
  RecipeDefaults recipe;                       // training recipe defaults (the latest release's)
  std::vector<EarlierRecipe> earlier_recipes;  // ascending `before`; empty when every release runs alike
  std::string source;                          // the framework's docs or code showing the shared behaviour
};

// Every entry, in a fixed order (training frameworks first, then inference engines).
const std::vector<FrameworkEntry>& framework_catalog();

// The recomputation modes the software offers a user: all three where it has a selective policy to
// switch on (every Megatron-based entry: --recompute-granularity selective; an entry whose recipe
// selects it: torchtitan's op-level SAC), none and full elsewhere (HF gradient_checkpointing, DeepSpeed
// activation checkpointing and FSDP checkpoint_wrapper checkpoint whole layers).
std::vector<Recompute> recompute_modes(const FrameworkEntry& e);

// The spelling used for lookup: lower case, surrounding blanks dropped, '_' and ' ' read as '-'.
std::string normalize_framework_name(std::string_view text);

// The recipe's settings as text, "zero_stage=1, sequence_parallel=yes (tp > 1), …"; "" when it sets none.
std::string describe(const RecipeDefaults& r);

// The recipe a training row of `release` runs: the first earlier recipe whose `before` lies above the
// release, else the entry's own (also when no release is stated: today's recipe is what a user gets).
const RecipeDefaults& recipe_for(const FrameworkEntry& e, const std::optional<Version>& release);

// The entry whose name or alias equals `text` after normalize_framework_name; nullptr when unknown.
const FrameworkEntry* find_framework(std::string_view text);

}  // namespace llmsim::sim
