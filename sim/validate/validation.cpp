#include "llmsim/validate/validation.h"

#include "llmsim/infer/infer_sim.h"
#include "llmsim/serve/request_stream.h"
#include "llmsim/serve/serving_sim.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "llmsim/core/error.h"
#include "llmsim/core/interval.h"
#include "llmsim/core/strings.h"
#include "llmsim/core/suggest.h"
#include "llmsim/core/units.h"
#include "llmsim/hardware/system_toml.h"
#include "llmsim/memory/memory_model.h"
#include "llmsim/search/recipe_fill.h"
#include "llmsim/train/train_sim.h"

namespace llmsim::sim {

std::string source_document(const std::string& source) {
  std::size_t cut = source.size();
  for (const char* sep : {" @", " (", ","}) cut = std::min(cut, source.find(sep));
  return source.substr(0, cut);
}

namespace {

// The system's name for grouping: the preset name, or the file name without .toml for a path.
std::string system_label(const std::string& system) {
  if (system.find('/') == std::string::npos && !system.ends_with(".toml")) return system;
  return std::filesystem::path(system).stem().string();
}

// A prediction with its band ordered low <= high.
void set_prediction(ValidationRow& row, const Interval& iv) {
  row.predicted = iv.value;
  row.low = std::min({iv.low, iv.high, iv.value});
  row.high = std::max({iv.low, iv.high, iv.value});
  row.status = kValidationOk;
}

void set_fits(ValidationRow& row, bool fits) { set_prediction(row, Interval::exact(fits ? 1.0 : 0.0)); }

void set_unsupported(ValidationRow& row, const std::string& reason) {
  row.status = std::string(kValidationUnsupportedPrefix) + reason;
  row.predicted = row.low = row.high = row.error_pct = 0;
}

// The relative error of an ok row (fits: agreement); a measured 0 has no relative error.
void finish_error(ValidationRow& row) {
  if (!row.ok()) return;
  if (row.metric == "fits") {
    row.error_pct = (row.predicted == row.measured) ? 0.0 : 100.0;
    return;
  }
  if (row.measured == 0) {
    set_unsupported(row, "the measured value is 0; a relative error is undefined");
    return;
  }
  row.error_pct = (row.predicted - row.measured) / row.measured * 100.0;
}

// "predicted OOM (…)" when the memory model says the run does not fit; empty when it fits.
std::string oom_note(const MemoryResult& m) {
  if (!m.valid() || m.fits()) return "";
  if (!m.gpu_fits())
    return fmt::format("predicted OOM ({:.2f} of {:.2f} GiB per GPU)", m.gpu_bytes / units::GiB,
                       m.gpu_capacity_bytes / units::GiB);
  return fmt::format("predicted host OOM ({:.2f} of {:.2f} GiB per node)", m.host_bytes / units::GiB,
                     m.host_capacity_bytes / units::GiB);
}

// fits / peak_mem_gib from the memory model (any workload). False when the metric is not a memory one.
// The peak is counted as the row's memory_measure says the source counted it (peak_gpu_bytes_as).
bool predict_memory_metric(ValidationRow& row, const MemoryResult& m, MemoryMeasure measure) {
  if (row.metric != "fits" && row.metric != "peak_mem_gib") return false;
  if (!m.valid()) {
    set_unsupported(row, m.problems.front());
    return true;
  }
  if (row.metric == "fits") {
    set_fits(row, m.fits());
    return true;
  }
  set_prediction(row, Interval::exact(peak_gpu_bytes_as(m, measure) / units::GiB));
  return true;
}

// A measured run ran: when the recipe's settings for what the row leaves unstated do not fit, the run is
// predicted with the feasible setting of those axes that trains fastest (sim/search/recipe_fill.h), listed in
// the row's defaults. A `fits = 0` row recorded an out-of-memory run: its stated recipe stands.
// nullopt: the row's own run stands.
std::optional<RecipeFill> fill_unstated(ValidationRow& row, const MeasuredRun& mr, const hardware::SystemSpec& sys) {
  if (mr.free_axes.empty() || (row.metric == "fits" && row.measured == 0)) return std::nullopt;
  const MemoryResult mem = evaluate_memory(mr.model, sys, mr.run);
  if (!mem.valid() || mem.fits()) return std::nullopt;
  auto fill = best_feasible_fill(mr.model, sys, mr.run, mr.free_axes, mr.recompute_modes);
  if (!fill) {
    row.defaults.push_back(fmt::format("best feasible: no setting of the unstated {} fits", join_axes(mr.free_axes)));
    return std::nullopt;
  }
  row.defaults.push_back(fmt::format(
      "best feasible: {} (the recipe's settings need {:.2f} of {:.2f} GiB per GPU: the fastest that fits of {} "
      "settings of the unstated {})",
      fill->chosen.empty() ? "unchanged" : join(fill->chosen, ", "), mem.gpu_bytes / units::GiB,
      mem.gpu_capacity_bytes / units::GiB, fill->candidates, join_axes(mr.free_axes)));
  return fill;
}

// Defaults that depend on the system: an unstated precision is bf16 where the GPU has it and fp16
// otherwise (V100 has no bf16 path; its mixed-precision runs are fp16).
MeasuredRun with_system_defaults(const MeasuredRun& mr, const hardware::SystemSpec& sys,
                                 std::vector<std::string>& notes) {
  MeasuredRun out = mr;
  for (auto& d : notes)
    if (d.rfind("precision=", 0) == 0 && sys.gpu.peak(out.run.train.precision) <= 0 && sys.gpu.peak(DType::FP16) > 0) {
      out.run.train.precision = out.run.infer.precision = DType::FP16;
      d = "precision=fp16 (not stated; the GPU has no bf16)";
    }
  return out;
}

void predict_training(ValidationRow& row, const MeasuredRun& mr, const hardware::SystemSpec& sys) {
  std::optional<RecipeFill> fill = fill_unstated(row, mr, sys);
  const RunSpec& run = fill ? fill->run : mr.run;
  row.framework_profile = std::string(name_of(run.train.framework));  // the fill may choose another
  // The fill's search already simulated the step it chose.
  const TrainResult r = fill ? std::move(fill->result) : simulate_training(mr.model, sys, run);
  // Memory metrics need only the memory model; a framework or schedule problem of the time simulator
  // does not stop them (a structural problem does: the memory model reports it).
  if (predict_memory_metric(row, r.memory, mr.memory_measure)) return;
  if (!r.valid()) return set_unsupported(row, r.problems.front());
  const std::string& k = row.metric;
  if (k == "step_time_s")
    set_prediction(row, r.step_time_s);
  else if (k == "tokens_per_s")
    set_prediction(row, r.tokens_per_s);
  else if (k == "tokens_per_s_per_gpu")
    set_prediction(row, r.tokens_per_s_per_gpu);
  else if (k == "samples_per_s")
    set_prediction(row, r.samples_per_s);
  else if (k == "mfu")
    set_prediction(row, r.mfu);
  else if (k == "hfu")
    set_prediction(row, r.hfu);
  else if (k == "tflops_per_gpu") {
    // The FLOPs as the source counts them: with the recomputation when its notes say so, and the attention
    // halved for the causal mask when they say that.
    const bool hardware = notes_count_recompute_flops(mr.notes);
    const bool halved = notes_halve_causal_attention(mr.notes);
    double flops = hardware ? r.hardware_flops_per_step : r.model_flops_per_step;
    if (halved) flops -= 0.5 * (hardware ? r.attention_hardware_flops_per_step : r.attention_flops_per_step);
    set_prediction(row, per_second(flops / static_cast<double>(mr.run.par.gpus) / 1e12, r.step_time_s));
    if (hardware) row.note = "hardware TFLOP/s (the source counts recomputation)";
    if (halved) row.note += std::string(hardware ? ", " : "") + "causal attention halved as the source counts it";
  } else {
    return set_unsupported(row, fmt::format("metric {} is not predicted for {} rows", k, row.workload));
  }
  const std::string oom = oom_note(r.memory);
  if (!oom.empty()) row.note = row.note.empty() ? oom : oom + "; " + row.note;
}

// Serving rows: the engine's scheduler over a request stream. Offline (request_rate inf, or neither a
// rate nor a concurrency): all `offline_requests` at t = 0, as vLLM's benchmark_throughput, trtllm-bench
// and SGLang's offline benchmark send them (`llmsim serve --rate inf`). An open loop at `request_rate`
// (Poisson, 500 requests) when the row states a rate, otherwise a closed loop of `global_batch` clients,
// each sending its next request when the previous completes, for max(4 x clients, 100) requests (or as
// many as a source fact says the benchmark sent: the start-up wave weighs as much as it did there); fixed
// input/output lengths, or the benchmark's own length sample where the row's `lengths` (or a source fact)
// names one; the latency statistic the row's `statistic` names (the mean by default).
// The statistic a latency row states (MeasuredRun::statistic).
double statistic(const LatencyStats& s, LatencyStatistic which) {
  switch (which) {
    case LatencyStatistic::Median: return s.p50;
    case LatencyStatistic::P90: return s.p90;
    case LatencyStatistic::P99: return s.p99;
    case LatencyStatistic::Mean: break;
  }
  return s.mean;
}

void predict_serving(ValidationRow& row, const MeasuredRun& mr, const hardware::SystemSpec& sys) {
  StreamSpec spec;
  spec.input = LengthDist{LengthKind::Fixed, static_cast<double>(mr.run.infer.input_len), 0};
  spec.output = LengthDist{LengthKind::Fixed, static_cast<double>(mr.run.infer.output_len), 0};
  if (mr.lengths) {  // the benchmark's own lengths (a source fact), paired and in its order
    spec.input = LengthDist{.kind = LengthKind::Sample, .sample = mr.lengths};
    spec.output = LengthDist{.kind = LengthKind::Sample, .sample = mr.lengths, .sample_output = true};
  }
  ServingConfig cfg;
  cfg.engine = serving_profile(mr.run.infer.framework, sys, mr.run.infer.engine_version,
                               served_context(mr.model.max_positions, mr.run.infer), mr.run.par.tp);
  if (mr.engine_max_num_seqs > 0) cfg.engine.max_num_seqs = mr.engine_max_num_seqs;
  if (mr.engine_kv_blocks > 0) cfg.engine.kv_cache_blocks = mr.engine_kv_blocks;
  if (mr.engine_scheduler_steps > 0) cfg.engine.scheduler_steps = mr.engine_scheduler_steps;
  if (mr.offline) {
    spec.kind = ArrivalKind::Burst;
    spec.requests = mr.offline_requests;
  } else if (mr.request_rate > 0) {
    spec.kind = ArrivalKind::Poisson;
    spec.rate = mr.request_rate;
    spec.requests = mr.stream_requests > 0 ? mr.stream_requests : 500;
  } else {
    spec.kind = ArrivalKind::Closed;
    spec.concurrency = std::max<std::int64_t>(1, mr.run.infer.batch);
    spec.requests = mr.stream_requests > 0 ? mr.stream_requests : std::max<std::int64_t>(4 * spec.concurrency, 100);
    cfg.closed_loop = true;
    cfg.concurrency = spec.concurrency;
  }
  const ServingResult r = simulate_serving(mr.model, sys, mr.run, cfg, generate_requests(spec));
  if (!r.valid()) return set_unsupported(row, r.problems.front());
  const auto band = [&](double v) { return Interval{v, v * r.time_ratio_low, v * r.time_ratio_high}; };
  const std::string& k = row.metric;
  if (k == "output_tokens_per_s")
    set_prediction(row, r.output_tokens_per_s);
  else if (k == "samples_per_s")
    set_prediction(row, r.requests_per_s);  // completed requests per second
  else if (k == "ttft_ms")
    set_prediction(row, band(statistic(r.ttft, mr.statistic) * 1e3));
  else if (k == "tpot_ms")  // the schema's inter-token latency, over tokens (equals the per-request mean when
                            // requests are alike)
    set_prediction(row, band(statistic(r.itl, mr.statistic) * 1e3));
  else if (k == "e2e_latency_ms")
    set_prediction(row, band(statistic(r.e2e, mr.statistic) * 1e3));
  else
    set_unsupported(row, "metric " + k + " is not predicted for serving");
}

// Fixed-batch inference rows (workload `inference`) through the static-batch simulator; `serving`
// rows (request streams) through the serving simulator.
void predict_inference(ValidationRow& row, const MeasuredRun& mr, const hardware::SystemSpec& sys) {
  if (row.metric == "fits" || row.metric == "peak_mem_gib") {
    predict_memory_metric(row, evaluate_memory(mr.model, sys, mr.run), mr.memory_measure);
    return;
  }
  if (mr.workload == "serving") return predict_serving(row, mr, sys);
  const InferResult r = simulate_inference(mr.model, sys, mr.run);
  if (!r.valid()) return set_unsupported(row, r.problems.front());
  const std::string& k = row.metric;
  if (k == "output_tokens_per_s")
    set_prediction(row, r.output_tokens_per_s);
  else if (k == "samples_per_s") {
    // Sequences completed per second: every replica finishes its batch after one end-to-end latency.
    const double n = static_cast<double>(r.replicas * mr.run.infer.batch);
    set_prediction(row, Interval{n / r.e2e_s.value, n / r.e2e_s.high, n / r.e2e_s.low});
  } else if (k == "ttft_ms")
    set_prediction(row, r.ttft_s * 1e3);
  else if (k == "tpot_ms")
    set_prediction(row, r.tpot_s * 1e3);
  else if (k == "e2e_latency_ms")
    set_prediction(row, r.e2e_s * 1e3);
  else
    set_unsupported(row, "metric " + k + " is not predicted for fixed-batch inference");
  if (!r.memory.fits())
    row.note = fmt::format("predicted OOM ({:.2f} of {:.2f} GiB per GPU)", r.memory.gpu_bytes / units::GiB,
                           r.memory.gpu_capacity_bytes / units::GiB);
}

}  // namespace

std::vector<std::string> run_features(const RunSpec& run_in) {
  const RunSpec run = with_defaults(run_in);
  const auto& p = run.par;
  std::vector<std::string> f;
  if (p.tp > 1) f.emplace_back("tp");
  if (p.pp > 1) f.emplace_back("pp");
  if (run.workload == Workload::Inference) {
    if (run.infer.weight_quant != model::WeightQuant::None) f.push_back("quant-" + weight_format_name(run.infer));
    if (run.infer.kv_dtype == DType::FP8) f.emplace_back("kv-fp8");
    return f;
  }
  const auto& t = run.train;
  if (p.pp > 1 && p.vp > 1) f.emplace_back("vp");
  if (p.cp > 1) f.emplace_back("cp");
  if (p.ep > 1) f.emplace_back("ep");
  if (p.dp > 1) f.emplace_back("dp");
  if (p.sequence_parallel && p.tp > 1) f.emplace_back("sp");
  if (t.zero_stage > 0) f.push_back(fmt::format("zero{}", t.zero_stage));
  if (t.recompute == Recompute::Selective) f.emplace_back("recompute-selective");
  if (t.recompute == Recompute::Full) f.emplace_back("recompute-full");
  if (t.offload != Offload::None) f.emplace_back("offload");
  if (t.offload == Offload::OptimizerParams) f.emplace_back("offload-params");
  if (t.finetune == FinetuneKind::Lora) f.emplace_back("lora");
  if (t.finetune == FinetuneKind::Qlora) f.emplace_back("qlora");
  if (t.flash_attn) f.emplace_back("flash");
  if (p.pp > 1 && t.schedule == PipelineSchedule::GPipe) f.emplace_back("gpipe");
  return f;
}

namespace {
// Whether the lower-cased notes say one of `phrases`, not right after a negation ("not including recompute",
// "without counting recomputation" say the opposite).
bool notes_say(const std::string& notes, std::initializer_list<const char*> phrases) {
  const std::string n = to_lower(notes);
  constexpr const char* negations[] = {"not ", "no ", "without ", "n't "};
  for (const char* phrase : phrases)
    for (std::size_t at = n.find(phrase); at != std::string::npos; at = n.find(phrase, at + 1)) {
      const std::string before = n.substr(at >= 12 ? at - 12 : 0, at >= 12 ? 12 : at);
      bool negated = false;
      for (const char* neg : negations) negated = negated || before.ends_with(neg);
      if (!negated) return true;
    }
  return false;
}
}  // namespace

bool notes_halve_causal_attention(const std::string& notes) {
  return notes_say(notes, {"causal attention halved", "attention halved for causal", "halves causal attention",
                           "halves the causal attention"});
}

bool notes_count_recompute_flops(const std::string& notes) {
  // The phrasings the schema's "say in notes if it counts recomputation" takes in the development files.
  return notes_say(notes, {"includes the activation-recomputation", "includes the activation recomputation",
                           "includes recompute", "including the recompute", "including recompute", "counts recompute",
                           "counts the recompute", "counting recompute", "recompute flops are counted",
                           "recomputation flops are counted", "hardware flops", "eq.3", "eq. 3"});
}

namespace {

// Systems resolved once per distinct name, with the overlay applied once (a file of 1,600 rows names a
// dozen systems): each row gets its own copy; a name that fails to resolve fails every row naming it
// with the same error.
class SystemCache {
 public:
  SystemCache(std::string data_dir, std::string overlay)
      : data_dir_(std::move(data_dir)), overlay_(std::move(overlay)) {}
  hardware::SystemSpec get(const std::string& name) {
    auto it = cache_.find(name);
    if (it == cache_.end()) {
      Entry e;
      try {
        e.spec = hardware::resolve_system(name, data_dir_);
        if (!overlay_.empty()) hardware::apply_efficiency_overlay(e.spec, overlay_);
      } catch (const Error&) {
        e.error = std::current_exception();
      }
      it = cache_.emplace(name, std::move(e)).first;
    }
    if (it->second.error) std::rethrow_exception(it->second.error);
    return it->second.spec;
  }

 private:
  struct Entry {
    hardware::SystemSpec spec;
    std::exception_ptr error;
  };
  std::string data_dir_, overlay_;
  std::map<std::string, Entry> cache_;
};

ValidationRow predict_row_with(const MeasuredRun& mr, SystemCache& systems);

}  // namespace

ValidationRow predict_row(const MeasuredRun& mr, const std::string& data_dir, const std::string& overlay) {
  SystemCache systems(data_dir, overlay);
  return predict_row_with(mr, systems);
}

namespace {

ValidationRow predict_row_with(const MeasuredRun& mr, SystemCache& systems) {
  ValidationRow row;
  row.file = mr.file;
  row.line = mr.line;
  row.run_id = mr.run_id;
  row.workload = mr.workload;
  row.metric = mr.metric;
  row.system = system_label(mr.system);
  row.framework = mr.framework;
  row.source = source_document(mr.source);
  row.measured = mr.value;
  row.defaults = mr.defaults;
  if (!mr.error.empty()) {
    row.status = std::string(kValidationErrorPrefix) + mr.error;
    row.error_column = mr.error_where.key;
    return row;
  }
  if (!mr.framework_mapping.empty()) row.defaults.insert(row.defaults.begin(), "framework: " + mr.framework_mapping);
  if (!mr.unsupported.empty()) {
    set_unsupported(row, mr.unsupported);
    return row;
  }
  row.framework_profile =
      std::string(name_of(mr.run.workload == Workload::Inference ? mr.run.infer.framework : mr.run.train.framework));
  try {
    row.features = run_features(mr.run);
    // The reader already resolved relative paths against the CSV's folder; a preset name stays a name.
    hardware::SystemSpec sys = systems.get(mr.system);
    const MeasuredRun run = with_system_defaults(mr, sys, row.defaults);
    if (run.run.workload == Workload::Inference)
      predict_inference(row, run, sys);
    else
      predict_training(row, run, sys);
  } catch (const Error& e) {
    set_unsupported(row, e.what());
  }
  finish_error(row);
  return row;
}

}  // namespace

std::vector<ValidationRow> predict_rows(const std::vector<MeasuredRun>& runs, const std::string& data_dir,
                                        const std::string& overlay) {
  SystemCache systems(data_dir, overlay);
  std::vector<ValidationRow> rows;
  rows.reserve(runs.size());
  for (const auto& r : runs) rows.push_back(predict_row_with(r, systems));
  return rows;
}

namespace {

GroupStats stats_of(const std::string& key, const std::vector<const ValidationRow*>& rows) {
  GroupStats g;
  g.key = key;
  g.rows = rows.size();
  std::vector<double> abs_err;
  double sum_abs = 0, sum = 0;
  std::vector<const ValidationRow*> scored;
  for (const auto* r : rows) {
    if (r->is_error()) {
      ++g.errors;
      continue;
    }
    if (!r->ok()) {
      ++g.unsupported;
      continue;
    }
    if (r->metric == "fits") {
      ++g.fits_total;
      if (r->error_pct == 0) ++g.fits_agree;
      continue;
    }
    // The printed interval holds the measurement (a degenerate band, low == high, only when exact).
    if (r->measured >= std::min(r->low, r->high) && r->measured <= std::max(r->low, r->high)) ++g.in_band;
    abs_err.push_back(std::fabs(r->error_pct));
    sum_abs += std::fabs(r->error_pct);
    sum += r->error_pct;
    scored.push_back(r);
  }
  g.count = abs_err.size();
  if (g.count > 0) {
    g.median_abs_pct = median(abs_err);
    g.mape = sum_abs / static_cast<double>(g.count);
    g.mean_pct = sum / static_cast<double>(g.count);
  }
  // Largest |error| first; ties keep file order.
  std::stable_sort(scored.begin(), scored.end(), [](const ValidationRow* a, const ValidationRow* b) {
    return std::fabs(a->error_pct) > std::fabs(b->error_pct);
  });
  for (std::size_t i = 0; i < scored.size() && i < 5; ++i)
    g.worst.push_back(WorstRow{scored[i]->run_id, scored[i]->metric, scored[i]->error_pct});
  return g;
}

}  // namespace

ValidationSummary summarize(const std::vector<ValidationRow>& rows) {
  ValidationSummary s;
  std::vector<const ValidationRow*> all;
  for (const auto& r : rows) all.push_back(&r);
  s.overall = stats_of("all", all);

  using KeysOf = std::vector<std::string> (*)(const ValidationRow&);
  const std::vector<std::pair<std::string, KeysOf>> keys = {
      {"workload", [](const ValidationRow& r) { return std::vector<std::string>{r.workload}; }},
      {"metric", [](const ValidationRow& r) { return std::vector<std::string>{r.metric}; }},
      {"system", [](const ValidationRow& r) { return std::vector<std::string>{r.system}; }},
      {"source", [](const ValidationRow& r) { return std::vector<std::string>{r.source.empty() ? "-" : r.source}; }},
      // As the row states it (megatron-lm, nemo, deepspeed, …), with the profile that stood in for it:
      // which software the errors belong to and how it was mapped.
      {"framework",
       [](const ValidationRow& r) {
         const std::string name = r.framework.empty() ? "-" : r.framework;
         if (r.framework_profile.empty()) return std::vector<std::string>{name};
         return std::vector<std::string>{name + " -> " + r.framework_profile};
       }},
      {"feature",
       [](const ValidationRow& r) { return r.features.empty() ? std::vector<std::string>{"none"} : r.features; }},
  };
  for (const auto& [by, keys_of] : keys) {
    std::map<std::string, std::vector<const ValidationRow*>> members;
    for (const auto& r : rows)
      for (const auto& k : keys_of(r)) members[k].push_back(&r);
    Grouping grouping{.by = by, .groups = {}};
    for (const auto& [k, m] : members) grouping.groups.push_back(stats_of(k, m));
    s.groupings.push_back(std::move(grouping));
  }
  return s;
}

}  // namespace llmsim::sim

namespace llmsim::sim {

namespace {

struct LosoBandInput {
  const ValidationRow* row;
  std::vector<std::string> keys;
  double ratio;  // time_ratio()
};

}  // namespace

bool band_scored(const ValidationRow& r) { return r.ok() && r.metric != "fits" && r.measured > 0 && r.predicted > 0; }

MetricKind metric_kind(const std::string& metric) {
  static const std::set<std::string> rates = {
      "tokens_per_s", "tokens_per_s_per_gpu", "samples_per_s", "tflops_per_gpu", "mfu", "hfu", "output_tokens_per_s"};
  if (metric == "peak_mem_gib") return MetricKind::Memory;
  return rates.count(metric) ? MetricKind::Rate : MetricKind::Time;
}

double time_ratio(const ValidationRow& r) {
  return metric_kind(r.metric) == MetricKind::Rate ? r.predicted / r.measured : r.measured / r.predicted;
}

std::pair<double, double> band_interval(const std::string& metric, double value, double low, double high) {
  if (metric_kind(metric) == MetricKind::Rate) return {value / high, value / low};
  return {value * low, value * high};
}

std::vector<std::string> regime_keys(const std::string& workload, const std::string& profile,
                                     const std::string& metric) {
  const std::string kind = metric_kind(metric) == MetricKind::Memory ? "memory" : "time";
  return {workload + " / " + profile + " / " + metric, workload + " / " + profile + " / " + kind,
          workload + " / " + metric, workload + " / " + kind, kind};
}

std::vector<std::string> regime_keys(const ValidationRow& r) {
  return regime_keys(r.workload, r.framework_profile.empty() ? r.framework : r.framework_profile, r.metric);
}

double weighted_quantile(std::vector<std::pair<double, double>> vw, double q) {
  if (vw.empty()) return 0;
  std::sort(vw.begin(), vw.end());
  double total = 0;
  for (const auto& [v, w] : vw) total += w;
  // Each value stands at the middle of its weight: with equal weights the positions (i + 0.5) / n (Hazen's
  // rule), not the q (n - 1) interpolation of the unweighted quantile(); below the first position the first
  // value, above the last the last.
  double below = 0;
  double prev_pos = -1, prev_v = vw.front().first;
  for (const auto& [v, w] : vw) {
    const double pos = (below + 0.5 * w) / total;
    if (pos >= q) {
      if (prev_pos < 0) return v;
      return prev_v + (v - prev_v) * (q - prev_pos) / (pos - prev_pos);
    }
    below += w;
    prev_pos = pos;
    prev_v = v;
  }
  return vw.back().first;
}

std::pair<double, double> band_quantiles(const std::vector<BandSample>& samples, const LosoOptions& options) {
  if (!options.weigh_sources) {
    std::vector<double> v;
    for (const BandSample& s : samples) v.push_back(s.ratio);
    return {quantile(v, options.low_quantile), quantile(v, options.high_quantile)};
  }
  std::map<std::string, double> rows_of;
  for (const BandSample& s : samples) rows_of[*s.source] += 1;
  std::vector<std::pair<double, double>> vw;
  for (const BandSample& s : samples) vw.emplace_back(std::log(s.ratio), 1.0 / rows_of[*s.source]);
  const double mid = weighted_quantile(vw, 0.5);
  const double widen = std::sqrt(1.0 + 1.0 / static_cast<double>(rows_of.size()));
  const double lo = mid - (mid - weighted_quantile(vw, options.low_quantile)) * widen;
  const double hi = mid + (weighted_quantile(vw, options.high_quantile) - mid) * widen;
  return {std::exp(lo), std::exp(hi)};
}

std::size_t distinct_sources(const std::vector<BandSample>& samples) {
  std::set<std::string> s;
  for (const BandSample& b : samples) s.insert(*b.source);
  return s.size();
}

void apply_loso_intervals(std::vector<ValidationRow>& rows, const LosoOptions& options) {
  const auto keys = [](const ValidationRow& r) { return regime_keys(r); };
  std::vector<LosoBandInput> scored;
  for (const ValidationRow& r : rows)
    if (band_scored(r)) scored.push_back({&r, keys(r), time_ratio(r)});
  std::vector<std::pair<double, double>> bands(rows.size(), {0, 0});
  std::vector<std::string> notes(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    ValidationRow& r = rows[i];
    if (!band_scored(r)) continue;
    const auto mine = keys(r);
    for (std::size_t level = 0; level < mine.size(); ++level) {
      std::vector<BandSample> samples;
      for (const LosoBandInput& s : scored)
        if (s.row->source != r.source && s.keys[level] == mine[level]) samples.push_back({s.ratio, &s.row->source});
      const std::size_t sources = distinct_sources(samples);
      if ((samples.size() < options.min_rows || sources < options.min_sources) && level + 1 < mine.size()) continue;
      if (samples.empty()) break;
      const auto [lo, hi] = band_quantiles(samples, options);
      bands[i] = band_interval(r.metric, r.predicted, lo, hi);
      notes[i] = fmt::format("loso band from {} rows of {} other sources ({})", samples.size(), sources, mine[level]);
      break;
    }
  }
  // Replace after every band is drawn, so that no band depends on another row's new band.
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (notes[i].empty()) continue;
    rows[i].low = std::min(bands[i].first, rows[i].predicted);
    rows[i].high = std::max(bands[i].second, rows[i].predicted);
    rows[i].note = rows[i].note.empty() ? notes[i] : rows[i].note + "; " + notes[i];
  }
}

}  // namespace llmsim::sim
