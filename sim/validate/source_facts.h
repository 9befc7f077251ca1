#pragma once
// Facts about a measured-run source that its rows cannot state: the schema has no column for them
// (which FlashAttention generation a benchmark harness ran), or the source states them outside the
// row (a run published before FlashAttention existed). They live in `<csv stem>.facts.toml` beside
// the CSV, each fact naming the rows it covers by a prefix of their `source` column and citing its
// evidence, so that the CSV itself stays an unchanged copy of the published collection.
//
//   schema_version = 1
//   [[fact]]
//   source_prefix = "Narayanan et al. 2021"
//   flash_attn = false          # applies only where the row leaves flash_attn empty
//   zero_stage = 1              # likewise (e.g. a framework recipe's distributed optimizer)
//   sequence_parallel = false   # likewise (a run published before Megatron's sequence parallelism)
//   overlap_grad_reduce = false # no schema column: the framework recipe's overlap flags do not apply
//   overlap_param_gather = false
//   attn_kernel = "fa1"         # fused attention kernel generation (no schema column)
//   memory_measure = "allocated" # what peak_mem_gib counts, for rows that leave memory_measure empty
//   fused_loss = true           # a fused cross-entropy (no fp32 logits copy; no schema column)
//   dropout = 0.0               # the model's training dropout probability (no schema column)
//   input_len = 10              # prompt tokens, for inference rows that leave input_len empty
//   engine_version = "0.6.3"    # the inference engine's release (no schema column; engine_profile.h) ...
//   engine = "vllm"             # ... for the rows run by this engine profile (required with engine_version)
//   lengths = "sharegpt"        # serving rows that leave input_len and output_len empty: a length sample
//                               # (<data_dir>/lengths/NAME.csv or a path; sim/serve/length_sample.h)
//   max_model_len = 2000        # the context the engine served (InferSpec::max_model_len; no schema column)
//   requests = 3000             # serving rows with a rate or a concurrency: how many requests the benchmark sent
//   tpot_statistic = "median"   # what the serving rows' tpot_ms is: "mean" (the default) or "median" of the
//                               # inter-token latencies
//   model = "llama2-7b"         # the fact covers only the rows of this model (a source configured each model apart)
//   finetune = "full"           # ... only the rows of this fine-tuning method (each method ran its own script)
//   distributed = true          # ... only the rows on more than one GPU (true) or on one (false), by num_gpus
//   max_num_seqs = 256          # the engine's batch limit as the benchmark configured it (EngineProfile::max_num_seqs)
//   kv_blocks = 1000            # the engine's KV cache as a count of blocks (TurboMind cache_max_entry_count >= 1)
//   length_scale = 1.243        # the length sample's token counts (the fact's `lengths` or the rows' lengths
//                               # column) times this: the runs counted tokens with another tokenizer (its
//                               # compression over the sample's, with the evidence)
//   evidence = "why this is so, with its citation"
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "llmsim/core/error.h"
#include "llmsim/core/version.h"
#include "llmsim/hardware/attention_kernel.h"
#include "llmsim/memory/memory_model.h"
#include "llmsim/run/run_spec.h"

namespace llmsim::sim {

struct SourceFact {
  Location where;                              // the [[fact]] table in its file
  std::string source_prefix;                   // rows whose `source` starts with this
  std::optional<bool> flash_attn;              // for rows that leave flash_attn empty
  std::optional<int> zero_stage;               // for rows that leave zero_stage empty (0..3)
  std::optional<bool> sequence_parallel;       // for rows that leave sequence_parallel empty
  std::optional<bool> overlap_grad_reduce;     // TrainSpec::overlap_grad_reduce of every covered row
  std::optional<bool> overlap_param_gather;    // TrainSpec::overlap_param_gather of every covered row
  std::optional<AttentionKernel> attn_kernel;  // for every covered row that uses fused attention
  // What the source's peak_mem_gib counts (the schema's memory_measure), for rows that leave it empty.
  std::optional<MemoryMeasure> memory_measure;
  std::optional<bool> fused_loss;             // TrainSpec::fused_loss of every covered row
  std::optional<double> dropout;              // ModelSpec::dropout of every covered row, in [0, 1)
  std::optional<std::int64_t> input_len;      // prompt tokens of inference rows that leave input_len empty
  std::optional<Version> engine_version;      // InferSpec::engine_version of the covered rows whose engine is `engine`
  std::optional<Framework> engine;            // the engine profile the release belongs to
  std::optional<std::string> lengths;         // a length sample for serving rows without input_len/output_len
  std::optional<std::int64_t> max_model_len;  // InferSpec::max_model_len of the covered inference/serving rows
  std::optional<bool> tpot_median;            // serving tpot_ms rows report the median inter-token latency
  std::optional<std::int64_t> requests;       // serving open/closed loops: the requests the benchmark sent
  std::string model;                          // only rows of this model (empty: every row of the source)
  std::string finetune;                       // only rows whose finetune column is this (full, lora, qlora)
  std::optional<bool> distributed;            // only rows whose num_gpus is > 1 (true) or 1 (false)
  std::optional<std::int64_t> max_num_seqs;   // the engine's batch limit as configured (serving rows)
  std::optional<std::int64_t> kv_blocks;      // the engine's KV cache in blocks as configured (serving rows)
  std::optional<double> length_scale;         // the length sample's token counts scaled to the runs' tokenizer
  std::string evidence;                       // citation (required)
};

// "<folder>/<stem>.facts.toml" for "<folder>/<stem>.csv".
std::string source_facts_path(const std::string& csv_path);
// The facts file for a CSV: the one beside it, else the one the data folder ships for a measured-run
// collection of that name ("<data_dir>/validation/<stem>.facts.toml": the facts of the development files
// kept outside this repository); "" when neither exists.
std::string find_source_facts(const std::string& csv_path, const std::string& data_dir);

// Reads a facts file. Unknown keys, a missing evidence, an empty prefix, an unknown kernel name or a
// fact that sets nothing are Input errors naming file:line.
std::vector<SourceFact> load_source_facts(const std::string& path);

// Which rows a fact may cover: their source, model, finetune and num_gpus columns as written.
struct FactRow {
  const std::string& source;
  const std::string& model;
  const std::string& finetune;
  const std::string& num_gpus;
};

// The fact with the longest prefix of the row's source among those whose model, finetune and distributed
// selectors are unset or match the row; on equal prefixes the fact that selects more wins. A row whose
// num_gpus is not a whole number matches no `distributed` fact. nullptr when none covers the row.
const SourceFact* fact_for(const std::vector<SourceFact>& facts, const FactRow& row);

// "published.facts.toml:12" for messages and row notes.
std::string fact_label(const SourceFact& f);

}  // namespace llmsim::sim
