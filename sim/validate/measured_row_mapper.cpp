#include <cctype>
#include <cmath>
#include <filesystem>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "llmsim/hardware/system_toml.h"
#include "llmsim/model/custom_model.h"
#include "llmsim/model/presets.h"
#include "llmsim/run/engine_profile.h"
#include "llmsim/run/framework_catalog.h"
#include "llmsim/run/stage_layout.h"
#include "llmsim/validate/measured_row.h"
#include "llmsim/validate/validation.h"

namespace llmsim::sim::measured {

namespace {

namespace fs = std::filesystem;

// Row -> MeasuredRun

const std::vector<std::string> kWorkloads{"pretrain", "finetune", "inference", "serving"};
const std::vector<std::string> kPrecisions = compute_precision_names();
const std::vector<std::string> kWeightQuants = model::weight_quant_spellings();
// The values of the columns that are run settings too: the settings' own lists (one spelling for a row and a
// flag).
const std::vector<std::string>& setting_choices(const char* name) { return find_setting(name)->choices; }
const std::vector<std::string> kKvDtypes = setting_choices("kv-dtype");
const std::vector<std::string> kMasterWeights = setting_choices("master-weights");

// The framework column's name and release: "vllm 0.4.2", "vLLM v0.6.3", "deepspeed==0.14.2" (the release is
// the text after "==", or a last word that starts with a digit, or with v and a digit); "" when none.
std::pair<std::string, std::string> split_release(const std::string& text) {
  if (const auto eq = text.find("=="); eq != std::string::npos)
    return {std::string(trim_blanks(text.substr(0, eq))), std::string(trim_blanks(text.substr(eq + 2)))};
  const auto space = text.find_last_of(" \t");
  if (space == std::string::npos) return {text, ""};
  const std::string last = text.substr(space + 1);
  const bool digit = !last.empty() && std::isdigit(static_cast<unsigned char>(last[0]));
  const bool v_digit =
      last.size() > 1 && (last[0] == 'v' || last[0] == 'V') && std::isdigit(static_cast<unsigned char>(last[1]));
  if (!digit && !v_digit) return {text, ""};
  return {std::string(trim_blanks(text.substr(0, space))), last};
}

// A path relative to the CSV's folder when such a file exists there, otherwise nullopt.
std::optional<std::string> beside_csv(const FileContext& ctx, const std::string& text) {
  const fs::path p(text);
  const fs::path full = p.is_absolute() ? p : ctx.folder / p;
  std::error_code ec;
  if (fs::exists(full, ec)) return full.string();
  return std::nullopt;
}

Workload to_workload(const std::string& w) {
  if (w == "pretrain") return Workload::Pretrain;
  if (w == "finetune") return Workload::Finetune;
  return Workload::Inference;  // inference and serving share the memory model
}

// Builds the rows' records while recording what it filled in.
class RowMapper {
 public:
  RowMapper(const FileContext& ctx, const RowReader& row, MeasuredRun& out) : ctx_(ctx), row_(row), out_(out) {}

  void map() {
    out_.file = ctx_.file;
    out_.line = row_.line();
    out_.run_id = row_.required("run_id");
    out_.source = row_.text("source");
    out_.model_column = row_.text("model");
    out_.finetune_column = row_.text("finetune");
    out_.num_gpus_column = row_.text("num_gpus");
    fact_ = fact_for(ctx_.facts, {out_.source, out_.model_column, out_.finetune_column, out_.num_gpus_column});
    out_.notes = row_.text("notes");
    out_.workload = *required_choice("workload", kWorkloads);
    out_.run.workload = to_workload(out_.workload);
    out_.metric = *required_choice("metric", measured_run_metrics());
    out_.value = *required_number("value");
    // Utilisations are fractions of the peak: a value above 1 is a percentage or a transcription slip.
    if ((out_.metric == "mfu" || out_.metric == "hfu") && out_.value > 1)
      row_.fail("value", fmt::format("{} must be a fraction of the peak in [0, 1] (a percentage? write {:g})",
                                     out_.metric, out_.value / 100));
    out_.request_rate = row_.number("request_rate", true).value_or(0.0);
    map_common();
    map_parallel();
    // Both halves are read so that every column is checked; only the workload's own defaults are noted.
    const bool inference = out_.run.workload == Workload::Inference;
    quiet_ = inference;
    map_training();
    quiet_ = !inference;
    map_inference();
    quiet_ = false;
    map_model();
    lengths_in_model_tokens();
    if (embedding_loss_split(out_.run.par.pp, out_.run.par.vp, out_.model.num_layers))
      note_default(
          fmt::format("pipeline split: the embedding and the loss counted as layers ({} + 2 over pp {} x vp {}; "
                      "Megatron account_for_embedding/loss_in_pipeline_split, the only split it runs)",
                      out_.model.num_layers, out_.run.par.pp, out_.run.par.vp));
    map_system();
    apply_run_facts();
    map_memory_measure();
    if (out_.workload == "serving") map_offline();
    if (out_.run.workload != Workload::Inference) check_batch_stated();
  }

  // A training row's time depends on how many sequences a step holds, so a default cannot stand in for
  // it where that is the quantity measured: a step time scales with the batch, and with pipeline
  // parallelism the bubble, (pp - 1) / (micro-batches + pp - 1) of the step under 1F1B, is set by the
  // micro-batches per step. Such rows are unsupported with the reason, not predicted at an arbitrary batch.
  void check_batch_stated() {
    if (!out_.unsupported.empty() || out_.metric == "fits" || metric_kind(out_.metric) == MetricKind::Memory) return;
    const bool global = row_.stated("global_batch");
    if (out_.metric == "step_time_s" && !global && !row_.stated("micro_batch")) {
      out_.unsupported =
          "step_time_s scales with the sequences per step, and the row states neither global_batch nor micro_batch";
      return;
    }
    // Samples of their own lengths (padded per batch, not to seq_len) run at those lengths: without their mean the
    // step's time is unknown, and seq_len only bounds it (sample_lengths.h needs tokens_per_sample).
    if (out_.run.train.padding == SamplePadding::Batch && out_.run.train.tokens_per_sample <= 0) {
      out_.unsupported =
          "the samples vary in length (padding batch) and the row does not state their mean (tokens_per_sample): a "
          "step runs the lengths it holds, which seq_len only bounds";
      return;
    }
    if (out_.run.par.pp > 1 && !global)
      out_.unsupported = fmt::format(
          "with pp {} the pipeline bubble depends on the micro-batches per step (global_batch / (micro_batch x dp)), "
          "and the row does not state global_batch",
          out_.run.par.pp);
  }

  // Facts without a schema column that describe the run itself (source_facts.h).
  void apply_run_facts() {
    if (fact_ && fact_->fused_loss && out_.run.workload != Workload::Inference) {
      out_.run.train.fused_loss = *fact_->fused_loss;
      note_fact(fmt::format("fused_loss={}", *fact_->fused_loss ? "yes" : "no"));
    } else if (const RecipeDefaults* r = recipe(); r && r->fused_loss) {
      out_.run.train.fused_loss = *r->fused_loss;
      note_recipe(fmt::format("fused_loss={}", *r->fused_loss ? "yes" : "no"));
    }
    if (fact_ && fact_->dropout) {
      out_.model.dropout = *fact_->dropout;
      note_fact(fmt::format("dropout={:g}", *fact_->dropout));
    } else if (const RecipeDefaults* r = recipe(); r && r->dropout && row_.text("model") == "custom") {
      out_.model.dropout = *r->dropout;
      note_recipe(fmt::format("dropout={:g}", *r->dropout));
    }
  }

  // What peak_mem_gib counts: the column, then a source fact, then device memory (the schema's default).
  void map_memory_measure() {
    const bool memory_row = out_.metric == "peak_mem_gib";
    if (auto m = row_.named<MemoryMeasure>("memory_measure", memory_measure_names())) {
      out_.memory_measure = *m;
    } else if (fact_ && fact_->memory_measure) {
      out_.memory_measure = *fact_->memory_measure;
      if (memory_row) note_fact(fmt::format("memory_measure={}", name_of(out_.memory_measure)));
    } else if (memory_row) {
      note_default("memory_measure=device (not stated)");
    }
  }

  // Serving rows: request_rate inf, or neither a rate nor a concurrency, is an offline run (all requests
  // at t = 0, global_batch of them).
  void map_offline() {
    const bool inf_rate = std::isinf(out_.request_rate);
    const bool neither = out_.request_rate == 0 && !row_.stated("global_batch");
    if (!inf_rate && !neither) return;
    out_.offline = true;
    out_.request_rate = 0;
    if (row_.stated("requests"))
      row_.fail("requests", "is for open and closed loops: an offline row's request count is its global_batch");
    if (auto gb = row_.integer("global_batch", 1)) {
      out_.offline_requests = *gb;
    } else {
      out_.offline_requests = kDefaultOfflineRequests;
      note_default(
          fmt::format("requests={} (offline: benchmark_throughput's default --num-prompts, global_batch "
                      "not stated)",
                      kDefaultOfflineRequests));
    }
    note_default(fmt::format("arrivals=offline ({} requests at t = 0{})", out_.offline_requests,
                             inf_rate ? ", request_rate inf" : ", neither request_rate nor global_batch stated"));
  }

 private:
  void note_default(const std::string& text) {
    if (!quiet_) out_.defaults.push_back(text);
  }
  // A setting taken from the framework's recipe: "zero_stage=1 (megatron-lm recipe)".
  void note_recipe(const std::string& setting) { note_default(fmt::format("{} ({} recipe)", setting, entry_->name)); }
  const RecipeDefaults* recipe() const {
    return entry_ && out_.run.workload != Workload::Inference ? &recipe_for(*entry_, training_release_) : nullptr;
  }
  // A column the row leaves empty that no fact settles: the best-feasible fill may choose it.
  void free_axis(FillAxis a) {
    if (!quiet_) out_.free_axes.push_back(a);
  }

  // A setting taken from the row's source fact (fact_ is set): "flash_attn=no (source fact, file:line)".
  void note_fact(const std::string& setting) {
    if (quiet_) return;
    note_default(fmt::format("{} (source fact, {})", setting, fact_label(*fact_)));
    ++out_.source_facts;
  }

  std::optional<std::string> required_choice(const std::string& col, const std::vector<std::string>& allowed) {
    row_.required(col);
    return row_.choice(col, allowed);
  }
  std::optional<double> required_number(const std::string& col) {
    row_.required(col);
    return row_.number(col);
  }

  // A positive size that defaults to 1 when not stated.
  std::int64_t size_or_one(const std::string& col) {
    if (auto v = row_.integer(col, 1)) return *v;
    note_default(col + "=1 (not stated)");
    return 1;
  }

  void map_parallel() {
    auto& p = out_.run.par;
    p.tp = size_or_one("tp");
    p.pp = size_or_one("pp");
    p.cp = size_or_one("cp");
    p.ep = size_or_one("ep");
    p.vp = size_or_one("vp");
    const auto dp = row_.integer("dp", 1);
    p.dp = dp.value_or(0);  // 0: with_defaults derives gpus / (tp*pp*cp)
    if (auto g = row_.integer("num_gpus", 1)) {
      p.gpus = *g;
    } else {
      p.gpus = p.tp * p.pp * p.cp * dp.value_or(1);
      note_default(fmt::format("num_gpus={} (tp*pp*cp*dp, not stated)", p.gpus));
    }
    if (!dp) note_default(fmt::format("dp={} (num_gpus/(tp*pp*cp), not stated)", with_defaults(out_.run).par.dp));
    if (auto sp = row_.yes_no("sequence_parallel")) {
      p.sequence_parallel = *sp;
    } else if (out_.run.workload != Workload::Inference && fact_ && fact_->sequence_parallel) {
      p.sequence_parallel = *fact_->sequence_parallel;
      note_fact(fmt::format("sequence_parallel={}", p.sequence_parallel ? "yes" : "no"));
    } else if (out_.run.workload != Workload::Inference) {
      if (p.tp > 1) free_axis(FillAxis::SequenceParallel);
      if (const RecipeDefaults* r = recipe(); r && r->sequence_parallel && p.tp > 1) {
        p.sequence_parallel = *r->sequence_parallel;
        note_recipe(fmt::format("sequence_parallel={}", p.sequence_parallel ? "yes" : "no"));
      } else {
        note_default("sequence_parallel=no (not stated)");
      }
    }
  }

  // Columns that mean the same for training and inference.
  void map_common() {
    auto& t = out_.run.train;
    auto& in = out_.run.infer;
    map_framework();
    if (auto pr = row_.choice("precision", kPrecisions)) {
      parse_dtype(*pr, t.precision);
      in.precision = t.precision;
    } else if (const RecipeDefaults* r = recipe(); r && r->precision) {
      t.precision = in.precision = *r->precision;
      note_recipe(fmt::format("precision={}", dtype_name(t.precision)));
    } else if (const auto& e = engine_profile(in.framework);
               out_.run.workload == Workload::Inference && e.compute_precision) {
      t.precision = in.precision = *e.compute_precision;
      note_default(fmt::format("precision={} (not stated; {} computes in it)", dtype_name(in.precision), e.name));
    } else {
      note_default(fmt::format("precision={} (not stated)", dtype_name(t.precision)));
    }
  }

  // The framework column is free text: the catalog (sim/run/framework_catalog.h) maps the name to the profile
  // that shares its documented behaviour, or says that none does (the row is then unsupported).
  void map_framework() {
    auto& t = out_.run.train;
    auto& in = out_.run.infer;
    const bool inference = out_.run.workload == Workload::Inference;
    out_.framework = row_.text("framework");
    const auto [name, release_in_text] = split_release(out_.framework);
    const std::string version_column = row_.text("framework_version");
    if (!release_in_text.empty() && !version_column.empty() &&
        parse_version(release_in_text) != parse_version(version_column))
      row_.fail("framework_version",
                fmt::format("differs from the release the framework column names ('{}')", release_in_text));
    const std::string release_text = release_in_text.empty() ? version_column : release_in_text;
    const std::string release_column = release_in_text.empty() ? "framework_version" : "framework";
    if (out_.framework.empty()) {
      if (!release_text.empty()) row_.fail("framework_version", "names a release of no framework (framework is empty)");
      note_default(fmt::format("framework={} (not stated)", name_of(inference ? in.framework : t.framework)));
      return;
    }
    entry_ = find_framework(name);
    if (!entry_) {
      out_.unsupported =
          fmt::format("no profile for framework '{}' (docs/frameworks.md lists the known names)", out_.framework);
      return;
    }
    const std::optional<Framework> profile = inference ? entry_->inference : entry_->training;
    out_.recompute_modes = recompute_modes(*entry_);
    if (!profile) {
      out_.unsupported =
          entry_->unsupported_reason.empty()
              ? fmt::format("no {} profile for framework '{}'", inference ? "inference" : "training", out_.framework)
              : entry_->unsupported_reason;
      entry_ = nullptr;
      return;
    }
    if (inference)
      in.framework = *profile;
    else
      t.framework = *profile;
    if (!release_text.empty()) {
      map_release(*profile, release_text, release_column);
    } else if (inference && entry_->inference_release) {
      in.engine_version = *entry_->inference_release;
      note_default(
          fmt::format("engine_version={} ({} runs as that release)", to_string(*in.engine_version), entry_->name));
    }
    // The row's defaults are listed "; "-separated: the mapping's own "; " become ", ".
    std::string mapping = inference ? entry_->inference_mapping : entry_->training_mapping;
    for (std::size_t at = mapping.find("; "); at != std::string::npos; at = mapping.find("; ", at))
      mapping.replace(at, 2, ", ");
    out_.framework_mapping = fmt::format("{} -> {}", out_.framework, mapping);
  }

  // The framework's release, from the framework column or framework_version: an engine's release selects the
  // rules of that release (released_profile) and must be one its profile describes; a training framework's
  // profile has no release rules, which the row's defaults say.
  void map_release(Framework profile, const std::string& text, const std::string& column) {
    const std::optional<Version> v = parse_version(text);
    if (!v) row_.fail(column, fmt::format("release '{}' is not a release number such as 0.4.2 or v2.0", text));
    if (const std::string why = release_problem(profile, *v); !why.empty()) row_.fail(column, why);
    if (out_.run.workload == Workload::Inference) {
      out_.run.infer.engine_version = *v;
      release_stated_ = true;
      note_default(fmt::format("engine_version={} ({} column)", to_string(*v), column));
      return;
    }
    if (entry_ && !entry_->earlier_recipes.empty()) {
      training_release_ = v;
      const auto later = std::find_if(entry_->earlier_recipes.begin(), entry_->earlier_recipes.end(),
                                      [&](const EarlierRecipe& r) { return *v < r.before; });
      note_default(later == entry_->earlier_recipes.end()
                       ? fmt::format("release {}: the {} recipe of today's releases", to_string(*v), entry_->name)
                       : fmt::format("release {}: the {} recipe of releases before {}", to_string(*v), entry_->name,
                                     to_string(later->before)));
      return;
    }
    note_default(fmt::format("release {}: the {} profile has no release-specific rules (every release runs alike)",
                             to_string(*v), name_of(profile)));
  }

  // The weight_quant column: a format or method of model_spec.h, or a block format stated with its exact storage
  // (gguf:TYPE, exl2:BITS; model/block_format.h), returned as the kernel format that runs it and kept in
  // block_format_ for inference rows.
  std::optional<std::string> weight_quant_column() {
    if (const std::string text = row_.text("weight_quant"); model::is_block_format_text(text)) {
      std::string why;
      block_format_ = model::parse_block_format(text, why);
      if (!block_format_) row_.fail("weight_quant", why);
      return std::string(model::weight_quant_name(model::kernel_format(*block_format_)));
    }
    auto q = row_.choice("weight_quant", kWeightQuants);
    if (q) {
      model::WeightQuant w{};
      model::parse_weight_quant(*q, w);
      if (model::weight_quant_name(w) != *q)
        note_default(fmt::format("weight_quant={} -> {} (the format it stores; its own kernels are not priced apart)",
                                 *q, model::weight_quant_name(w)));
    }
    return q;
  }

  // Hugging Face training stacks (Trainer, Accelerate, TRL, …) with a stated ZeRO stage or offload run the
  // DeepSpeed engine around the same HF modelling code (transformers' integrations/deepspeed.py hands
  // the model to deepspeed.initialize), which is the deepspeed profile; the plain hf profile is DDP.
  void map_hf_zero() {
    auto& t = out_.run.train;
    if (t.framework != Framework::Hf || (t.zero_stage == 0 && t.offload == Offload::None)) return;
    t.framework = Framework::DeepSpeed;
    out_.framework_mapping += fmt::format(" + DeepSpeed ZeRO-{}{} (transformers' DeepSpeed integration) -> deepspeed",
                                          t.zero_stage, t.offload == Offload::None ? "" : " with offload");
  }

  void map_training() {
    auto& t = out_.run.train;
    if (auto mb = row_.integer("micro_batch", 1)) {
      t.micro_batch = *mb;
    } else {
      free_axis(FillAxis::MicroBatch);
      note_default("micro_batch=1 (not stated)");
    }
    if (auto gb = row_.integer("global_batch", 1)) {
      t.global_batch = *gb;
    } else {
      // Left 0 so that with_defaults derives it from the final dp.
      note_default(
          fmt::format("global_batch={} (micro_batch*dp, not stated)", with_defaults(out_.run).train.global_batch));
    }
    if (auto s = row_.integer("seq_len", 1))
      t.seq_len = *s;
    else
      note_default(fmt::format("seq_len={} (not stated)", t.seq_len));
    if (auto r = row_.named<Recompute>("recompute", recompute_names())) {
      t.recompute = *r;
    } else {
      free_axis(FillAxis::Recompute);
      if (const RecipeDefaults* rc = recipe(); rc && rc->recompute) {
        t.recompute = *rc->recompute;
        note_recipe(fmt::format("recompute={}", name_of(t.recompute)));
      } else {
        note_default(fmt::format("recompute={} (not stated)", name_of(t.recompute)));
      }
    }
    if (auto n = row_.integer("recompute_layers", 1)) t.recompute_layers = *n;
    map_sample_lengths();
    // The field decides, then a source fact (facts file beside the CSV); free-text notes such as
    // "predates FlashAttention" are never interpreted.
    if (auto fa = row_.yes_no("flash_attn")) {
      t.flash_attn = *fa;
    } else if (fact_ && fact_->flash_attn) {
      t.flash_attn = *fact_->flash_attn;
      note_fact(fmt::format("flash_attn={}", t.flash_attn ? "yes" : "no"));
    } else if (const RecipeDefaults* r = recipe(); r && r->flash_attn) {
      t.flash_attn = *r->flash_attn;
      note_recipe(fmt::format("flash_attn={}", t.flash_attn ? "yes" : "no"));
    } else {
      note_default(fmt::format("flash_attn={} (not stated)", t.flash_attn ? "yes" : "no"));
    }
    if (auto k = attn_kernel_column(t.flash_attn)) {
      t.attn_kernel = *k;
    } else if (fact_ && fact_->attn_kernel && t.flash_attn) {
      t.attn_kernel = *fact_->attn_kernel;
      note_fact(fmt::format("attn_kernel={}", name_of(t.attn_kernel)));
    } else if (const RecipeDefaults* r = recipe(); r && r->attn_kernel && t.flash_attn) {
      t.attn_kernel = *r->attn_kernel;
      note_recipe(fmt::format("attn_kernel={}", name_of(t.attn_kernel)));
    }
    if (auto z = row_.choice("zero_stage", {"0", "1", "2", "3"})) {
      t.zero_stage = *z->c_str() - '0';
    } else if (fact_ && fact_->zero_stage) {
      t.zero_stage = *fact_->zero_stage;
      note_fact(fmt::format("zero_stage={}", t.zero_stage));
    } else {
      free_axis(FillAxis::ZeroStage);
      if (const RecipeDefaults* r = recipe(); r && r->zero_stage) {
        t.zero_stage = *r->zero_stage;
        note_recipe(fmt::format("zero_stage={}", t.zero_stage));
      } else {
        note_default(fmt::format("zero_stage={} (not stated)", t.zero_stage));
      }
    }
    if (auto o = row_.named<Offload>("offload", offload_names()))
      t.offload = *o;
    else
      note_default(fmt::format("offload={} (not stated)", name_of(t.offload)));
    if (out_.run.workload != Workload::Inference) map_hf_zero();
    if (fact_ && fact_->overlap_grad_reduce && out_.run.workload != Workload::Inference) {
      t.overlap_grad_reduce = *fact_->overlap_grad_reduce;
      note_fact(fmt::format("overlap_grad_reduce={}", *fact_->overlap_grad_reduce ? "yes" : "no"));
    }
    if (fact_ && fact_->overlap_param_gather && out_.run.workload != Workload::Inference) {
      t.overlap_param_gather = *fact_->overlap_param_gather;
      note_fact(fmt::format("overlap_param_gather={}", *fact_->overlap_param_gather ? "yes" : "no"));
    }
    if (const RecipeDefaults* r = recipe()) {
      // No columns for these: the recipe's settings apply to every row of the framework, unless a source
      // fact settles them.
      if (r->overlap_grad_reduce && !(fact_ && fact_->overlap_grad_reduce)) {
        t.overlap_grad_reduce = *r->overlap_grad_reduce;
        note_recipe(fmt::format("overlap_grad_reduce={}", *r->overlap_grad_reduce ? "yes" : "no"));
      }
      // Megatron's --overlap-param-gather needs the distributed optimizer's all-gather (ZeRO-1/2); a run
      // that shards further (Megatron-FSDP) or not at all has none to overlap.
      if (r->overlap_param_gather && !(fact_ && fact_->overlap_param_gather) &&
          (t.zero_stage == 1 || t.zero_stage == 2)) {
        t.overlap_param_gather = *r->overlap_param_gather;
        note_recipe(fmt::format("overlap_param_gather={}", *r->overlap_param_gather ? "yes" : "no"));
      }
    }
    map_finetune();
    if (auto mw = row_.choice("master_weights", kMasterWeights)) {
      t.master_weights = *mw == "fp32";
    } else if (const RecipeDefaults* r = recipe(); r && r->master_weights && t.finetune != FinetuneKind::Qlora &&
                                                   (!r->master_weights_at || *r->master_weights_at == t.precision)) {
      t.master_weights = *r->master_weights;
      note_recipe(fmt::format("master_weights={}", *r->master_weights ? "fp32" : "none (pure 16-bit)"));
    }
    // No column for how AdamW steps: the recipe's, else the profile's.
    if (const RecipeDefaults* r = recipe(); r && r->optimizer_impl) {
      t.optimizer_impl = *r->optimizer_impl;
      note_recipe(fmt::format("optimizer_impl={}", name_of(*r->optimizer_impl)));
    }
    // No columns for the optimizer: a recipe for one-GPU full fine-tuning may name its own.
    if (const RecipeDefaults* r = recipe(); r && out_.run.par.gpus == 1 && t.finetune == FinetuneKind::Full) {
      if (r->single_device_full_optimizer) {
        t.optimizer = *r->single_device_full_optimizer;
        note_recipe(fmt::format("optimizer={} (one GPU, full fine-tuning)", name_of(t.optimizer)));
      }
      if (r->single_device_full_optimizer_in_backward) {
        t.optimizer_in_backward = *r->single_device_full_optimizer_in_backward;
        note_recipe(fmt::format("optimizer_in_backward={} (one GPU, full fine-tuning)",
                                t.optimizer_in_backward ? "yes" : "no"));
      }
    }
  }

  // Variable-length samples (sim/run/sample_lengths.h): their mean and how they were batched.
  void map_sample_lengths() {
    auto& t = out_.run.train;
    if (auto n = row_.number("tokens_per_sample")) {
      if (*n <= 0) row_.fail("tokens_per_sample", "must be > 0");
      t.tokens_per_sample = *n;
    }
    if (auto p = row_.named<SamplePadding>("padding", sample_padding_names())) {
      t.padding = *p;
    } else if (t.tokens_per_sample > 0) {
      t.padding = SamplePadding::Batch;
      note_default(
          "padding=batch (not stated; tokens_per_sample says the samples vary, and a padding collator pads "
          "each batch to its longest)");
    }
    if (t.padding == SamplePadding::None && t.tokens_per_sample <= 0)
      note_default(fmt::format("tokens_per_sample not stated: packed sequences of seq_len={} tokens", t.seq_len));
  }

  void map_finetune() {
    auto& t = out_.run.train;
    if (auto f = row_.named<FinetuneKind>("finetune", finetune_names()))
      t.finetune = *f;
    else if (out_.run.workload == Workload::Finetune)
      note_default(fmt::format("finetune={} (not stated)", name_of(t.finetune)));
    // The frozen base's format, as --weight-quant sets it for training (int4: a GPTQ checkpoint; nf4:
    // bitsandbytes, QLoRA's default when the row states none).
    if (auto q = weight_quant_column()) model::parse_weight_quant(*q, t.base_quant);
    if (row_.stated("lora_targets")) {
      const std::string text = row_.text("lora_targets");
      std::vector<std::string> names;
      for (const auto n : split_fields(text, ',')) names.emplace_back(trim_blanks(n));
      const auto targets = canonical_lora_targets(names);
      if (!targets)
        row_.fail("lora_targets", "each must be one of " + join(lora_target_spellings()) +
                                      " (a projection, a model's own module name, or all-linear)");
      t.lora_targets = *targets;
    }
    if (auto r = row_.integer("lora_rank", 1)) {
      t.lora_rank = *r;
    } else if (const RecipeDefaults* rc = recipe(); rc && rc->lora_rank && t.finetune == FinetuneKind::Lora) {
      t.lora_rank = *rc->lora_rank;
      note_recipe(fmt::format("lora_rank={}", t.lora_rank));
    } else if (t.finetune == FinetuneKind::Qlora) {
      t.lora_rank = kQloraDefaultRank;  // as the CLI's --qlora
      note_default(fmt::format("lora_rank={} (QLoRA default, not stated)", kQloraDefaultRank));
    }
  }

  void map_inference() {
    auto& in = out_.run.infer;
    if (auto gb = row_.integer("global_batch", 1)) {
      in.batch = *gb;
    } else if (auto mb = row_.integer("micro_batch", 1)) {
      in.batch = *mb;
      note_default(fmt::format("batch={} (micro_batch; global_batch not stated)", in.batch));
    } else {
      in.batch = 1;
      note_default("batch=1 (not stated)");
    }
    if (fact_ && fact_->engine_version && fact_->engine == in.framework && !release_stated_) {
      in.engine_version = fact_->engine_version;
      note_fact("engine_version=" + to_string(*in.engine_version));
    }
    if (row_.stated("lengths")) {
      if (out_.workload != "serving") row_.fail("lengths", "a length distribution is for serving rows");
      map_lengths_column();
    }
    if (out_.lengths) {
      runs_at_sample_means();
    } else if (fact_ && fact_->lengths && out_.workload == "serving" && !row_.stated("input_len") &&
               !row_.stated("output_len")) {
      // The benchmark's own request lengths: a length sample, paired as it sent them.
      out_.lengths = load_length_sample(*fact_->lengths, ctx_.data_dir);
      if (fact_->length_scale) {
        out_.lengths = scaled_length_sample(*out_.lengths, *fact_->length_scale);
        lengths_scaled_by_fact_ = true;
      }
      note_fact(fmt::format("lengths={} ({} requests in order)", out_.lengths->name, out_.lengths->size()));
      runs_at_sample_means();
    } else if (auto i = row_.integer("input_len", 1)) {
      in.input_len = *i;
    } else if (fact_ && fact_->input_len) {
      in.input_len = *fact_->input_len;
      note_fact(fmt::format("input_len={}", in.input_len));
    } else {
      note_default(fmt::format("input_len={} (not stated)", in.input_len));
    }
    if (!out_.lengths) {  // else set from the sample above
      if (auto o = row_.integer("output_len", 1))
        in.output_len = *o;
      else
        note_default(fmt::format("output_len={} (not stated)", in.output_len));
    }
    if (auto st = row_.choice("statistic", latency_statistic_names())) {
      parse_latency_statistic(*st, out_.statistic);
    } else if (fact_ && fact_->tpot_median && out_.workload == "serving" && out_.metric == "tpot_ms") {
      out_.statistic = *fact_->tpot_median ? LatencyStatistic::Median : LatencyStatistic::Mean;
      note_fact(fmt::format("tpot_ms=the {} inter-token latency", name_of(out_.statistic)));
    }
    // The engine as its run configured it: the column decides, then a source fact (serve's --requests,
    // --max-num-seqs, --kv-cache-blocks; infer's and serve's --max-model-len).
    if (auto n = serving_column("requests")) {
      out_.stream_requests = *n;
    } else if (fact_ && fact_->requests && out_.workload == "serving") {
      out_.stream_requests = *fact_->requests;
      note_fact(fmt::format("requests={}", out_.stream_requests));
    }
    if (auto n = serving_column("max_num_seqs")) {
      out_.engine_max_num_seqs = *n;
    } else if (fact_ && fact_->max_num_seqs && out_.workload == "serving") {
      out_.engine_max_num_seqs = *fact_->max_num_seqs;
      note_fact(fmt::format("max_num_seqs={}", out_.engine_max_num_seqs));
    }
    if (auto n = serving_column("kv_cache_blocks")) {
      out_.engine_kv_blocks = *n;
    } else if (fact_ && fact_->kv_blocks && out_.workload == "serving") {
      out_.engine_kv_blocks = *fact_->kv_blocks;
      note_fact(fmt::format("kv_blocks={}", out_.engine_kv_blocks));
    }
    if (auto n = serving_column("scheduler_steps")) out_.engine_scheduler_steps = *n;
    if (auto n = row_.integer("max_model_len", 1)) {
      if (out_.run.workload != Workload::Inference) row_.fail("max_model_len", "is for inference and serving rows");
      in.max_model_len = *n;
    } else if (fact_ && fact_->max_model_len) {
      in.max_model_len = *fact_->max_model_len;
      note_fact(fmt::format("max_model_len={}", in.max_model_len));
    }
    if (auto q = weight_quant_column()) {
      model::parse_weight_quant(*q, in.weight_quant);
      in.block_format = block_format_;
    } else if (!row_.stated("weight_quant"))
      note_default("weight_quant=none (not stated)");
    if (auto k = attn_kernel_column(true)) {
      in.attn_kernel = *k;
    } else if (fact_ && fact_->attn_kernel) {
      in.attn_kernel = *fact_->attn_kernel;
      note_fact(fmt::format("attn_kernel={}", name_of(in.attn_kernel)));
    }
    if (auto kv = row_.choice("kv_dtype", kKvDtypes)) {
      parse_dtype(*kv, in.kv_dtype);
    } else {
      // Not stated: the KV cache is stored at the compute precision (tf32 computes on fp32 data).
      in.kv_dtype = in.precision == DType::TF32 ? DType::FP32 : in.precision;
      note_default(fmt::format("kv_dtype={} (not stated; the compute precision)", dtype_name(in.kv_dtype)));
    }
  }

  // A setting of the serving engine or its benchmark (an integer >= 1) that only serving rows may state.
  std::optional<std::int64_t> serving_column(const std::string& col) {
    auto n = row_.integer(col, 1);
    if (n && out_.workload != "serving") row_.fail(col, "is a setting of a serving run (workload serving)");
    return n;
  }

  // The attn_kernel column: which fused attention kernel ran (the same names as --attn-kernel). A row that
  // says its attention ran unfused (flash_attn = no) cannot name a fused kernel.
  std::optional<AttentionKernel> attn_kernel_column(bool fused) {
    auto k = row_.named<AttentionKernel>("attn_kernel", attention_kernel_names());
    if (k && !fused) row_.fail("attn_kernel", "names a fused attention kernel, and the row says flash_attn = no");
    return k;
  }

  // The lengths column: "sharegpt" or another sample of <data_dir>/lengths, or "sample:FILE.csv" beside the
  // measured-run file (sim/serve/length_sample.h). Lengths the row also states as input_len/output_len are
  // the sample's means (SCHEMA.md); the sample decides.
  void map_lengths_column() {
    const std::string text = row_.text("lengths");
    std::string target = text;
    if (text.rfind("sample:", 0) == 0) {
      const auto path = beside_csv(ctx_, text.substr(7));
      if (!path) row_.fail("lengths", "no such file beside the measured-run file");
      target = *path;
    } else {
      const auto names = shipped_length_samples(ctx_.data_dir);
      if (std::find(names.begin(), names.end(), text) == names.end())
        row_.fail("lengths", "must be sample:FILE.csv or one of " + join(names) + did_you_mean(text, names));
    }
    out_.lengths = load_length_sample(target, ctx_.data_dir);
    if (fact_ && fact_->length_scale) {
      out_.lengths = scaled_length_sample(*out_.lengths, *fact_->length_scale);
      lengths_scaled_by_fact_ = true;
      note_fact(fmt::format("length_scale={:g}", *fact_->length_scale));
    }
  }

  // A length sample counted in another tokenizer than the model's holds the model's tokens of the same text
  // (sim/serve/length_sample.h in_model_tokens), unless a source fact scaled it already; the request lengths
  // the row runs at are the scaled sample's means.
  void lengths_in_model_tokens() {
    if (!out_.lengths || lengths_scaled_by_fact_) return;
    const ModelTokens t = in_model_tokens(out_.lengths, out_.model);
    if (!t.note.empty()) note_default(t.note);
    if (t.sample == out_.lengths) return;
    out_.lengths = t.sample;
    runs_at_sample_means();
  }

  // The request lengths a row with a length sample runs at: the sample's means (SCHEMA.md, `lengths`).
  void runs_at_sample_means() {
    out_.run.infer.input_len = std::max<std::int64_t>(1, std::llround(out_.lengths->mean_input()));
    out_.run.infer.output_len = std::max<std::int64_t>(1, std::llround(out_.lengths->mean_output()));
  }

  // The sequence length a custom gpt's learned position table must cover.
  std::int64_t custom_positions() {
    if (auto s = row_.integer("seq_len", 1)) return *s;
    const std::int64_t request_len = out_.run.infer.input_len + out_.run.infer.output_len;
    if (out_.run.workload == Workload::Inference && (row_.stated("input_len") || row_.stated("output_len"))) {
      note_default(fmt::format("max_positions={} (input_len+output_len; seq_len not stated)", request_len));
      return request_len;
    }
    if (out_.run.workload != Workload::Inference) return out_.run.train.seq_len;  // its default is already noted
    note_default("max_positions=2048 (not stated)");
    return 2048;
  }

  void map_custom() {
    model::CustomDims d;
    d.arch = row_.required("arch");
    for (const char* col : {"layers", "hidden", "heads"}) row_.required(col);
    d.layers = *row_.integer("layers", 1);
    d.hidden = *row_.integer("hidden", 1);
    d.heads = *row_.integer("heads", 1);
    if (auto v = row_.integer("vocab", 1)) {
      d.vocab = *v;
    } else {
      // Sources often omit the vocabulary; take the tokenizer of the family: GPT-2 BPE for gpt, the
      // Llama 1/2 SentencePiece vocabulary for llama.
      const bool llama = d.arch == "llama";
      d.vocab = llama ? 32000 : 50257;
      note_default(fmt::format("vocab={} ({} tokenizer, not stated)", d.vocab, llama ? "Llama 2" : "GPT-2 BPE"));
    }
    if (auto kv = row_.integer("kv_heads", 1))
      d.kv_heads = *kv;
    else
      note_default(fmt::format("kv_heads={} (= heads, not stated)", d.heads));
    const auto ffn = row_.integer("ffn", 1);
    if (ffn) d.ffn = *ffn;
    d.max_positions = custom_positions();
    // The model's rules (sizes within bounds, heads dividing hidden) come first: the default's note is
    // computed from the model they accepted (4 x a 2^62 hidden would overflow).
    out_.model = model::make_custom_model(d, Location{.file = ctx_.file, .line = row_.line()});
    if (!ffn) note_default(fmt::format("ffn={} (4*hidden, not stated)", out_.model.ffn_hidden));
  }

  void map_model() {
    const std::string name = row_.required("model");
    if (name == "custom") return map_custom();
    // A config.json beside the CSV wins; otherwise a preset name (or an absolute path).
    const std::string target = beside_csv(ctx_, name).value_or(name);
    try {
      out_.model = model::resolve_model(target, ctx_.data_dir);
    } catch (const Error& e) {
      // Keep the inner location when it points into a config.json; the row locates the rest.
      const std::string inner = e.where().file.empty() ? e.message() : e.what();
      throw Error(e.kind(), row_.where("model"), fmt::format("model = '{}': {}", name, inner));
    }
  }

  void map_system() {
    const std::string name = row_.required("system");
    if (auto path = beside_csv(ctx_, name); path && fs::is_regular_file(*path)) {
      out_.system = *path;
      return;
    }
    const auto& presets = ctx_.system_presets;
    if (std::find(presets.begin(), presets.end(), name) == presets.end())
      throw_not_found(row_.where("system"),
                      fmt::format("system = '{}': not a file beside the measured-run file nor a system preset{}; "
                                  "presets: {}",
                                  name, did_you_mean(name, presets), join(presets)));
    out_.system = name;
  }

  const FileContext& ctx_;
  const RowReader& row_;
  MeasuredRun& out_;
  bool quiet_ = false;                       // reading the other workload's columns: check them, note nothing
  bool lengths_scaled_by_fact_ = false;      // a source fact's length_scale applied to out_.lengths
  bool release_stated_ = false;              // the row names its engine's release (a fact's release yields)
  const SourceFact* fact_ = nullptr;         // the facts file's entry for this row's source, if any
  const FrameworkEntry* entry_ = nullptr;    // the catalog's entry for the row's framework, when it has a profile
  std::optional<Version> training_release_;  // a training row's stated release: picks the recipe of its era
  std::optional<model::BlockFormat> block_format_;  // the weight_quant column as a block format (gguf:, exl2:)
};

}  // namespace

void map_measured_row(const FileContext& ctx, const RowReader& row, MeasuredRun& out) {
  RowMapper(ctx, row, out).map();
}

}  // namespace llmsim::sim::measured
