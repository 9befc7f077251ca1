#include "llmsim/validate/source_facts.h"

#include <charconv>
#include <filesystem>

#include <fmt/format.h>

#include "llmsim/core/toml_reader.h"

namespace llmsim::sim {

namespace fs = std::filesystem;

std::string source_facts_path(const std::string& csv_path) {
  const fs::path p(csv_path);
  return (p.parent_path() / (p.stem().string() + ".facts.toml")).string();
}

std::string find_source_facts(const std::string& csv_path, const std::string& data_dir) {
  std::error_code ec;
  if (const std::string beside = source_facts_path(csv_path); fs::exists(beside, ec)) return beside;
  if (data_dir.empty()) return "";
  const fs::path shipped = fs::path(data_dir) / "validation" / (fs::path(csv_path).stem().string() + ".facts.toml");
  return fs::exists(shipped, ec) ? shipped.string() : "";
}

namespace {

// One [[fact]] table: its prefix and evidence, and at least one setting.
SourceFact read_fact(const toml::table& tbl, const std::string& path, std::size_t index) {
  TomlReader r(tbl, path, "fact[" + std::to_string(index) + "]");
  SourceFact f;
  f.where = Location{.file = path, .line = static_cast<int>(tbl.source().begin.line)};
  f.source_prefix = r.string("source_prefix");
  if (f.source_prefix.empty()) throw_input(r.where("source_prefix"), "source_prefix must not be empty");
  f.evidence = r.string("evidence");
  if (f.evidence.empty()) throw_input(r.where("evidence"), "evidence must cite why the fact holds");
  f.flash_attn = r.opt_boolean("flash_attn");
  if (auto z = r.opt_integer("zero_stage")) {
    if (*z < 0 || *z > 3) throw_input(r.where("zero_stage"), fmt::format("zero_stage = {}: must be 0, 1, 2 or 3", *z));
    f.zero_stage = static_cast<int>(*z);
  }
  f.sequence_parallel = r.opt_boolean("sequence_parallel");
  f.overlap_grad_reduce = r.opt_boolean("overlap_grad_reduce");
  f.overlap_param_gather = r.opt_boolean("overlap_param_gather");
  if (auto k = r.opt_choice("attn_kernel", attention_kernel_names())) {
    AttentionKernel kernel{};
    parse_name(*k, kernel);
    f.attn_kernel = kernel;
  }
  if (auto mm = r.opt_choice("memory_measure", memory_measure_names())) parse_name(*mm, f.memory_measure.emplace());
  f.fused_loss = r.opt_boolean("fused_loss");
  f.dropout = r.opt_non_negative("dropout");
  if (f.dropout && *f.dropout >= 1)
    throw_input(r.where("dropout"), fmt::format("dropout = {}: must be a probability below 1", *f.dropout));
  if (auto n = r.opt_integer("input_len")) {
    if (*n < 1) throw_input(r.where("input_len"), fmt::format("input_len = {}: must be >= 1", *n));
    f.input_len = *n;
  }
  if (auto v = r.opt_string("engine_version")) {
    f.engine_version = parse_version(*v);
    if (!f.engine_version)
      throw_input(r.where("engine_version"),
                  fmt::format("engine_version = '{}': must be a release number such as 0.6.3", *v));
    const auto e = r.opt_choice("engine", inference_framework_names());
    if (!e) throw_input(r.where("engine"), "engine_version needs engine: the engine profile whose release it is");
    parse_name(*e, f.engine.emplace());
  }
  if (auto l = r.opt_string("lengths")) {
    if (l->empty()) throw_input(r.where("lengths"), "lengths must name a length sample (e.g. sharegpt)");
    f.lengths = *l;
  }
  if (auto n = r.opt_integer("max_model_len")) {
    if (*n < 1) throw_input(r.where("max_model_len"), fmt::format("max_model_len = {}: must be >= 1", *n));
    f.max_model_len = *n;
  }
  if (auto st = r.opt_choice("tpot_statistic", {"mean", "median"})) f.tpot_median = *st == "median";
  // A count from 1 to `most` (written `most_text` in the message).
  const auto count = [&r](const char* key, std::int64_t most, const char* most_text) -> std::optional<std::int64_t> {
    const auto n = r.opt_integer(key);
    if (n && (*n < 1 || *n > most))
      throw_input(r.where(key), fmt::format("{} = {}: must be from 1 to {}", key, *n, most_text));
    return n;
  };
  f.requests = count("requests", 1'000'000, "1,000,000");
  if (auto m = r.opt_string("model")) {
    if (m->empty()) throw_input(r.where("model"), "model must name the rows' model (as their model column writes it)");
    f.model = *m;
  }
  if (auto ft = r.opt_choice("finetune", {"full", "lora", "qlora"})) f.finetune = *ft;
  f.distributed = r.opt_boolean("distributed");
  f.max_num_seqs = count("max_num_seqs", 1'000'000'000, "1,000,000,000");
  f.kv_blocks = count("kv_blocks", 1'000'000'000, "1,000,000,000");
  if (auto x = r.opt_non_negative("length_scale")) {
    if (*x < 0.25 || *x > 4)
      throw_input(r.where("length_scale"),
                  fmt::format("length_scale = {}: must be from 0.25 to 4 (a ratio of two tokenizers' tokens)", *x));
    f.length_scale = *x;
  }
  r.finish();
  if (!f.flash_attn && !f.zero_stage && !f.sequence_parallel && !f.overlap_grad_reduce && !f.overlap_param_gather &&
      !f.attn_kernel && !f.memory_measure && !f.fused_loss && !f.dropout && !f.input_len && !f.engine_version &&
      !f.lengths && !f.max_model_len && !f.tpot_median && !f.requests && !f.max_num_seqs && !f.kv_blocks &&
      !f.length_scale)
    throw_input(f.where,
                "the fact sets nothing: give flash_attn, zero_stage, sequence_parallel, overlap_grad_reduce, "
                "overlap_param_gather, attn_kernel, memory_measure, fused_loss, dropout, input_len, engine_version, "
                "lengths, length_scale, max_model_len, tpot_statistic, requests, max_num_seqs or kv_blocks");
  return f;
}

}  // namespace

std::vector<SourceFact> load_source_facts(const std::string& path) {
  const toml::table root = parse_toml_file(path);
  TomlReader top(root, path);
  top.require_schema_version(1, "facts files");
  top.ignore("fact");
  top.finish();

  std::vector<SourceFact> facts;
  const toml::node* node = root.get("fact");
  if (!node) return facts;
  const toml::array* list = node->as_array();
  if (!list || !list->is_array_of_tables())
    throw_input(top.where("fact"), "'fact' must be an array of tables ([[fact]])");
  for (std::size_t i = 0; i < list->size(); ++i) facts.push_back(read_fact(*list->get(i)->as_table(), path, i));
  return facts;
}

const SourceFact* fact_for(const std::vector<SourceFact>& facts, const FactRow& row) {
  std::int64_t gpus = 0;
  const char* end = row.num_gpus.data() + row.num_gpus.size();
  if (auto [p, ec] = std::from_chars(row.num_gpus.data(), end, gpus); ec != std::errc{} || p != end) gpus = 0;
  const auto selects = [](const SourceFact& f) {
    return int(!f.model.empty()) + int(!f.finetune.empty()) + int(f.distributed.has_value());
  };
  const auto covers = [&](const SourceFact& f) {
    return row.source.starts_with(f.source_prefix) && (f.model.empty() || f.model == row.model) &&
           (f.finetune.empty() || f.finetune == row.finetune) &&
           (!f.distributed || (gpus >= 1 && *f.distributed == (gpus > 1)));
  };
  const SourceFact* best = nullptr;
  for (const SourceFact& f : facts) {
    if (!covers(f)) continue;
    if (!best || f.source_prefix.size() > best->source_prefix.size() ||
        (f.source_prefix.size() == best->source_prefix.size() && selects(f) > selects(*best)))
      best = &f;
  }
  return best;
}

std::string fact_label(const SourceFact& f) {
  return fs::path(f.where.file).filename().string() + ":" + std::to_string(f.where.line);
}

}  // namespace llmsim::sim
