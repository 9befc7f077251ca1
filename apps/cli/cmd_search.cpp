// `llmsim search train` (what-if search over a training configuration space) and `llmsim plan train`
// (capacity planning: the fewest GPUs that train N tokens by a deadline). Serving variants will sit
// next to `train` under the same two commands.
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <csignal>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "llmsim/hardware/system_toml.h"
#include "llmsim/model/presets.h"
#include "llmsim/core/error.h"
#include "llmsim/core/suggest.h"
#include "llmsim/core/units.h"
#include "cli_context.h"
#include "commands.h"
#include "llmsim/search/search.h"

namespace llmsim::cli {

namespace {

// Exit codes of the search commands beyond main()'s: an empty space, and an interrupted search.
constexpr int kExitEmptySpace = 6;
constexpr int kExitInterrupted = 130;

// ---- SIGINT: a flag the workers check; the first Ctrl-C stops the search, a second one kills. ----
std::atomic<bool> g_interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free);
extern "C" void on_sigint(int) { g_interrupted.store(true); }

struct SigintGuard {
  struct sigaction old {};
  SigintGuard() {
    g_interrupted = false;
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    sigaction(SIGINT, &sa, &old);
  }
  ~SigintGuard() { sigaction(SIGINT, &old, nullptr); }
};

// ---- flags ------------------------------------------------------------------------------------------

// Settings that make no sense for a training search (inference-only).
bool inference_only(const std::string& name) {
  return name == "batch" || name == "input-len" || name == "output-len" || name == "kv-dtype";
}

bool is_axis(const std::string& name) {
  const auto& a = sim::train_axis_names();
  return std::find(a.begin(), a.end(), name) != a.end() || name == "dp" || name == "global-batch";
}

struct SearchCommand {
  bool plan = false;
  CommonOptions common;
  std::string config;
  std::map<std::string, std::string> values;  // fixed settings and axes, as given
  std::map<std::string, bool> flags;          // boolean fixed settings (qlora)
  std::map<std::string, bool> negated;        // --no-sequence-parallel, --no-flash-attn
  std::string objective;
  std::string tokens;
  std::string deadline;
  std::string price;
  std::int64_t max_gpus = 0;
  std::int64_t min_gpus = 0;
  double min_headroom_gib = 0;
  std::size_t top = 10;
  std::size_t verify = 20;
  std::string all_csv;
  bool explain = false;
  int threads = 0;
};

void add_flags(CLI::App& app, SearchCommand& c) {
  add_common_options(app, c.common);
  app.add_option("--config", c.config, "run-config TOML (flag names as keys) for the fixed settings; flags override it");
  for (const auto& s : sim::run_settings()) {
    if (inference_only(s.name)) continue;
    const std::string flag = "--" + s.name;
    if (s.name == "sequence-parallel" || s.name == "flash-attn") {
      app.add_option(flag, c.values[s.name], "axis: on, off, on,off or any (alone: on)")->expected(0, 1);
      app.add_flag_callback("--no-" + s.name, [&c, n = s.name] { c.negated[n] = true; }, "axis fixed at off");
      continue;
    }
    if (is_axis(s.name)) {
      std::string help;
      if (s.name == "system")
        help = "axis: system presets or TOML paths, comma-separated, or any (every preset)";
      else if (s.name == "global-batch")
        help = "sequences per step: a number, or a range a-b (the largest multiple of micro-batch x dp in it)";
      else if (s.name == "framework")
        help = "axis: training frameworks {megatron,deepspeed,fsdp,hf}, comma-separated, or any";
      else if (!s.choices.empty() && s.name != "zero-stage")
        help = "axis: " + s.help + " {" + join(s.choices, ",") + "}, comma-separated, or any";
      else
        help = "axis: " + s.help + "; a value, a list a,b, a range a-b, pow2:a-b or any";
      app.add_option(flag, c.values[s.name], help);
      continue;
    }
    std::string help = s.help;
    if (!s.choices.empty()) help += " {" + join(s.choices, ",") + "}";
    if (s.kind == sim::SettingKind::Flag)
      app.add_flag_callback(flag, [&c, n = s.name] { c.flags[n] = true; }, help);
    else
      app.add_option(flag, c.values[s.name], help);
  }
  app.add_option("--objective", c.objective,
                 "what to optimise {" + join(sim::objective_names(), ",") +
                     "} (default tokens-per-s; time/cost need --tokens, per-dollar/cost --price-per-gpu-hour)");
  app.add_option("--tokens", c.tokens, "tokens to train, e.g. 1e12 or 1T: time, cost and energy of the run");
  app.add_option("--deadline", c.deadline, "time the training must fit in, e.g. 30d, 720h");
  app.add_option("--price-per-gpu-hour", c.price, "price of a GPU-hour: X, or per system sys=X,sys2=Y");
  app.add_option("--max-gpus", c.max_gpus, "at most this many GPUs (bounds a free --gpus axis)")->check(CLI::PositiveNumber);
  app.add_option("--min-gpus", c.min_gpus, "at least this many GPUs")->check(CLI::PositiveNumber);
  app.add_option("--min-headroom-gib", c.min_headroom_gib, "free GPU memory a configuration must leave (GiB)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--top", c.top, "configurations to report (default 10)")->check(CLI::PositiveNumber);
  app.add_option("--verify", c.verify, "best configurations re-evaluated with the full simulator (default 20)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--all-csv", c.all_csv, "write every evaluated configuration (fast estimates) as CSV to FILE");
  app.add_flag("--explain", c.explain, "why the best configuration beats the runner-up (time by phase)");
  app.add_option("--threads", c.threads, "worker threads (default: hardware concurrency)")->check(CLI::PositiveNumber);
}

double parse_tokens(const std::string& text) {
  std::string t = text;
  double mult = 1;
  if (!t.empty()) {
    const char s = static_cast<char>(std::toupper(static_cast<unsigned char>(t.back())));
    if (s == 'K' || s == 'M' || s == 'B' || s == 'G' || s == 'T') {
      mult = s == 'K' ? 1e3 : s == 'M' ? 1e6 : s == 'T' ? 1e12 : 1e9;
      t.pop_back();
    }
  }
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(t, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != t.size() || !(v > 0) || !std::isfinite(v))
    throw_usage("--tokens", fmt::format("--tokens '{}': must be a positive number such as 1e12, 300B or 2T", text));
  return v * mult;
}

double parse_duration(const std::string& text) {
  std::string t = text;
  const std::map<std::string, double> units = {{"s", 1},     {"m", 60},       {"min", 60}, {"h", 3600},
                                                {"d", 86400}, {"w", 7 * 86400}};
  std::size_t k = t.size();
  while (k > 0 && std::isalpha(static_cast<unsigned char>(t[k - 1]))) --k;
  const std::string unit = t.substr(k);
  t = t.substr(0, k);
  std::vector<std::string> names;
  for (const auto& [u, f] : units) names.push_back(u);
  const auto it = units.find(unit);
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(t, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (it == units.end() || used == 0 || used != t.size() || !(v > 0))
    throw_usage("--deadline", fmt::format("--deadline '{}': must be a duration with a unit, e.g. 30d, 720h, 90m{}", text,
                                          unit.empty() ? "" : did_you_mean(unit, names)));
  return v * it->second;
}

std::vector<double> parse_prices(const std::string& text, const std::vector<std::string>& systems) {
  if (text.empty()) return {};
  std::vector<double> out(systems.size(), -1);
  auto number = [&](const std::string& s) {
    std::size_t used = 0;
    double v = -1;
    try {
      v = std::stod(s, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != s.size() || v < 0)
      throw_usage("--price-per-gpu-hour",
                  fmt::format("--price-per-gpu-hour '{}': '{}' is not a price (X, or sys=X,sys2=Y)", text, s));
    return v;
  };
  if (text.find('=') == std::string::npos) {
    const double v = number(text);
    std::fill(out.begin(), out.end(), v);
    return out;
  }
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, end - start);
    const auto eq = item.find('=');
    if (eq == std::string::npos)
      throw_usage("--price-per-gpu-hour", fmt::format("--price-per-gpu-hour '{}': '{}' is not sys=X", text, item));
    const std::string sys = item.substr(0, eq);
    const auto it = std::find(systems.begin(), systems.end(), sys);
    if (it == systems.end())
      throw_usage("--price-per-gpu-hour", fmt::format("--price-per-gpu-hour: '{}' is not a searched system ({}){}", sys,
                                                      join(systems), did_you_mean(sys, systems)));
    out[static_cast<std::size_t>(it - systems.begin())] = number(item.substr(eq + 1));
    start = end + 1;
  }
  for (std::size_t i = 0; i < out.size(); ++i)
    if (out[i] < 0)
      throw_usage("--price-per-gpu-hour", fmt::format("--price-per-gpu-hour gives no price for {}", systems[i]));
  return out;
}

// ---- building the problem ---------------------------------------------------------------------------

struct Built {
  std::unique_ptr<model::ModelSpec> model;
  sim::SearchProblem problem;
};

Built build_problem(const CLI::App& app, SearchCommand& c) {
  sim::RunRequest req;
  if (!c.config.empty()) sim::apply_run_toml(req, c.config);
  for (const auto& s : sim::run_settings()) {
    if (inference_only(s.name) || is_axis(s.name) || s.name == "sequence-parallel" || s.name == "flash-attn") continue;
    const std::string flag = "--" + s.name;
    if (s.kind == sim::SettingKind::Flag) {
      if (auto it = c.flags.find(s.name); it != c.flags.end())
        sim::apply_setting(req, s.name, it->second ? "true" : "false", Location{.key = flag}, ErrorKind::Usage);
      continue;
    }
    if (app.count(flag) == 0) continue;
    sim::apply_setting(req, s.name, c.values.at(s.name), Location{.key = flag}, ErrorKind::Usage);
  }
  if (req.model.empty()) throw_usage("--model", "--model is required (a preset name or a config.json path)");
  if (req.run.workload == sim::Workload::Inference)
    throw_usage("--workload", "training search: the workload is pretrain or finetune (serving search comes later)");

  sim::TrainSpace space = sim::TrainSpace::defaults(req.run);
  // Axes set in the --config file are fixed at their values.
  using A = sim::TrainAxis;
  const std::pair<const char*, A> from_toml[] = {{"gpus", A::Gpus}, {"tp", A::Tp}, {"pp", A::Pp}, {"vp", A::Vp},
                                                 {"zero-stage", A::ZeroStage}, {"recompute", A::Recompute},
                                                 {"sequence-parallel", A::SequenceParallel},
                                                 {"micro-batch", A::MicroBatch}};
  for (const auto& [name, a] : from_toml) {
    if (!req.was_given(name)) continue;
    sim::Axis fixed;
    const auto& r = req.run;
    fixed.values = {a == A::Gpus ? r.par.gpus : a == A::Tp ? r.par.tp : a == A::Pp ? r.par.pp : a == A::Vp ? r.par.vp
                    : a == A::ZeroStage ? r.train.zero_stage : a == A::Recompute ? static_cast<std::int64_t>(r.train.recompute)
                    : a == A::SequenceParallel ? (r.par.sequence_parallel ? 1 : 0) : r.train.micro_batch};
    space.axis(a) = fixed;
  }
  if (req.was_given("precision")) space.precision_given = true;
  if (req.was_given("dp")) space.dp = sim::parse_int_axis("--dp", std::to_string(req.run.par.dp));
  if (req.was_given("global-batch")) space.global_batch_min = space.global_batch_max = req.run.train.global_batch;
  if (!req.system.empty()) sim::set_train_axis(space, "system", req.system);

  const std::string data = c.common.resolved_data_dir();
  // Axes from the command line, in the table's order.
  for (const auto& name : std::vector<std::string>{"system", "gpus", "tp", "pp", "cp", "ep", "vp", "framework",
                                                   "zero-stage", "offload", "precision", "flash-attn", "recompute",
                                                   "sequence-parallel", "pipeline-schedule", "micro-batch", "dp",
                                                   "global-batch"}) {
    const std::string flag = "--" + name;
    if (c.negated.count(name)) {
      if (app.count(flag) > 0) throw_usage(flag, fmt::format("give {} or --no-{}, not both", flag, name));
      sim::set_train_axis(space, name, "off");
      continue;
    }
    if (app.count(flag) == 0) continue;
    std::string text = c.values.at(name);
    if ((name == "sequence-parallel" || name == "flash-attn") && text.empty()) text = "on";
    if (name == "system" && (text == "any" || text == "*")) text = join(hardware::list_system_presets(data), ",");
    sim::set_train_axis(space, name, text);
  }
  if (space.systems.empty()) throw_usage("--system", "--system is required (one or more presets or TOML paths, or any)");

  Built b;
  b.model = std::make_unique<model::ModelSpec>(model::resolve_model(req.model, data));
  auto& p = b.problem;
  p.model = b.model.get();
  for (const auto& s : space.systems) p.systems.push_back(hardware::resolve_system(s, data));
  space.max_gpus = c.max_gpus;
  space.min_gpus = c.min_gpus;
  space.min_headroom_bytes = c.min_headroom_gib * units::GiB;
  if (c.max_gpus > 0 && c.min_gpus > c.max_gpus)
    throw_usage("--min-gpus", fmt::format("--min-gpus {} is larger than --max-gpus {}", c.min_gpus, c.max_gpus));
  p.space = std::move(space);
  if (!c.tokens.empty()) p.train_tokens = parse_tokens(c.tokens);
  if (!c.deadline.empty()) p.deadline_s = parse_duration(c.deadline);
  p.price_per_gpu_hour = parse_prices(c.price, p.space.systems);
  if (!c.objective.empty() && !sim::parse_name(c.objective, p.objective))
    throw_usage("--objective", fmt::format("--objective '{}': must be one of {}{}", c.objective,
                                           join(sim::objective_names()), did_you_mean(c.objective, sim::objective_names())));
  if (c.plan) {
    if (p.train_tokens <= 0) throw_usage("--tokens", "llmsim plan train needs --tokens (e.g. 1e12)");
    if (p.deadline_s <= 0) throw_usage("--deadline", "llmsim plan train needs --deadline (e.g. 30d)");
    if (!c.objective.empty()) throw_usage("--objective", "plan minimises GPUs, then cost (or time without prices)");
    p.objective = p.price_per_gpu_hour.empty() ? sim::Objective::Time : sim::Objective::Cost;
    if (p.space.global_batch_min <= 0 && !p.space.base.train.optimizer_in_backward) {
      // Default: 2-4 Mi tokens per step, so that GPU counts that are not powers of two find a batch
      // (with the optimizer in backward each configuration takes micro-batch x dp instead).
      const std::int64_t g = std::max<std::int64_t>(1, (4LL << 20) / std::max<std::int64_t>(1, p.space.base.train.seq_len));
      p.space.global_batch_min = std::max<std::int64_t>(1, g / 2);
      p.space.global_batch_max = g;
    }
    if (p.space.max_gpus <= 0) p.space.max_gpus = 4096;
  }
  if ((p.objective == sim::Objective::Time || p.objective == sim::Objective::Cost) && p.train_tokens <= 0)
    throw_usage("--objective", fmt::format("--objective {} needs --tokens", sim::name_of(p.objective)));
  if ((p.objective == sim::Objective::TokensPerDollar || p.objective == sim::Objective::Cost) &&
      p.price_per_gpu_hour.empty())
    throw_usage("--objective", fmt::format("--objective {} needs --price-per-gpu-hour", sim::name_of(p.objective)));
  if (p.deadline_s > 0 && p.train_tokens <= 0) throw_usage("--deadline", "--deadline needs --tokens");
  return b;
}

// ---- output helpers -----------------------------------------------------------------------------------

std::string thousands(double v) {
  const auto n = static_cast<long long>(std::llround(v));
  std::string s = std::to_string(n < 0 ? -n : n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<std::size_t>(i), ",");
  return n < 0 ? "-" + s : s;
}

std::string duration(double s) {
  if (s >= 2 * 86400) return fmt::format("{:.1f} days", s / 86400);
  if (s >= 7200) return fmt::format("{:.1f} h", s / 3600);
  if (s >= 1) return fmt::format("{:.2f} s", s);
  return fmt::format("{:.1f} ms", s * 1e3);
}

const char* on_off(bool b) { return b ? "on" : "off"; }

std::vector<std::string> names_of(const sim::SearchProblem& p) {
  std::vector<std::string> v;
  for (const auto& s : p.systems) v.push_back(s.name);
  return v;
}

struct Row {
  double step = 0, tps = 0, per_gpu = 0, mfu = 0, mem = 0, time = 0, cost = 0, energy = 0;
  bool full = false;
};

Row row_of(const sim::SearchProblem& p, const sim::SearchEntry& e) {
  Row r;
  if (e.full && e.full->valid()) {
    const auto& f = *e.full;
    r.full = true;
    r.step = f.step_time_s.value;
    r.tps = f.tokens_per_s.value;
    r.per_gpu = f.tokens_per_s_per_gpu.value;
    r.mfu = f.mfu.value;
    r.mem = f.memory.gpu_bytes;
    r.time = f.total_time_s.value;
    r.cost = f.total_cost;
    r.energy = f.total_energy_J;
  } else {
    r.step = e.fast.step_time_s;
    r.tps = e.fast.tokens_per_s;
    r.per_gpu = r.tps / static_cast<double>(e.run.par.gpus);
    r.mem = e.gpu_bytes;
    if (p.train_tokens > 0) {
      r.time = std::ceil(p.train_tokens / e.fast.tokens_per_step) * r.step;
      const double price = p.price_per_gpu_hour.empty() ? 0 : p.price_per_gpu_hour[static_cast<std::size_t>(e.system)];
      r.cost = price * static_cast<double>(e.run.par.gpus) * r.time / 3600.0;
      r.energy = static_cast<double>(e.run.par.gpus) * p.systems[static_cast<std::size_t>(e.system)].gpu.tdp_W * r.time;
    }
  }
  return r;
}

std::string objective_text(const sim::SearchProblem& p) {
  switch (p.objective) {
    case sim::Objective::TokensPerS: return "maximise tokens/s";
    case sim::Objective::TokensPerSPerGpu: return "maximise tokens/s per GPU";
    case sim::Objective::TokensPerDollar: return "maximise tokens per unit of cost";
    case sim::Objective::Time: return fmt::format("minimise the time to train {:.3g} tokens", p.train_tokens);
    case sim::Objective::Cost: return fmt::format("minimise the cost to train {:.3g} tokens", p.train_tokens);
  }
  return "";
}

void print_entries(const sim::SearchProblem& p, const std::vector<sim::SearchEntry>& v, bool with_system,
                   std::size_t first_rank = 1) {
  const bool totals = p.train_tokens > 0;
  const bool cost = totals && !p.price_per_gpu_hour.empty();
  std::cout << fmt::format("{:>3}  {}{:>5} {:>3} {:>3} {:>4} {:>3} {:>3} {:>3} {:>3}  {:<9} {:>3} {:>4}  {:<9}  {:>10} {:>11} {:>7} {:>6} {:>7}",
                           "#", with_system ? fmt::format("{:<16}", "system") : "", "gpus", "tp", "pp", "dp", "cp",
                           "vp", "mb", "m", "recompute", "sp", "zero", "framework", "step", "tokens/s", "/GPU", "MFU",
                           "mem GiB");
  if (totals) std::cout << fmt::format(" {:>10}", "time");
  if (cost) std::cout << fmt::format(" {:>12}", "cost");
  std::cout << "\n";
  for (std::size_t k = 0; k < v.size(); ++k) {
    const auto& e = v[k];
    const auto& r = e.run;
    const Row w = row_of(p, e);
    const std::string sys = with_system ? fmt::format("{:<16}", p.systems[static_cast<std::size_t>(e.system)].name) : "";
    std::cout << fmt::format(
        "{:>3}  {}{:>5} {:>3} {:>3} {:>4} {:>3} {:>3} {:>3} {:>3}  {:<9} {:>3} {:>4}  {:<9}  {:>10} {:>11} {:>7} {:>6} {:>7}",
        first_rank + k, sys, r.par.gpus, r.par.tp, r.par.pp, r.par.dp, r.par.cp, r.par.vp, r.train.micro_batch,
        r.train.global_batch / (r.train.micro_batch * r.par.dp), sim::name_of(r.train.recompute),
        on_off(r.par.sequence_parallel), r.train.zero_stage, sim::name_of(r.train.framework), duration(w.step),
        thousands(w.tps), thousands(w.per_gpu), w.full ? fmt::format("{:.1f}%", 100 * w.mfu) : std::string("-"),
        gib(w.mem));
    if (totals) std::cout << fmt::format(" {:>10}", duration(w.time));
    if (cost) std::cout << fmt::format(" {:>12}", thousands(w.cost));
    std::cout << (w.full ? "" : "  (estimate)") << "\n";
  }
}

void print_pruned(const sim::PruneTally& t, std::uint64_t space, const sim::TrainGenerator* gen, std::size_t max_rows) {
  if (t.total() == 0) return;
  std::cout << "pruned (most common reasons first):\n";
  std::size_t n = 0;
  std::uint64_t duplicates = 0;
  std::vector<std::string> duplicate_kinds;
  for (const auto& [key, r] : t.sorted()) {
    if (sim::is_duplicate_reason(key)) {
      duplicates += r.count;
      duplicate_kinds.push_back(key.substr(0, key.find(" (same as")));
      continue;
    }
    if (n++ == max_rows) {
      std::cout << "  …\n";
      continue;
    }
    if (n > max_rows) continue;
    std::string example = r.example;
    if (gen != nullptr && r.first_index < space) {
      sim::TrainCandidate cand;
      std::string k2, m2;
      gen->decode(r.first_index, cand, k2, m2);
      example = fmt::format("{} GPUs, tp {} pp {} cp {} vp {} mb {}, {}, ZeRO-{}: {}", cand.run.par.gpus, cand.run.par.tp,
                            cand.run.par.pp, cand.run.par.cp, cand.run.par.vp, cand.run.train.micro_batch,
                            sim::name_of(cand.run.train.framework), cand.run.train.zero_stage, r.example);
    }
    std::cout << fmt::format("  {:>12}  {}\n  {:>12}    e.g. {}\n", thousands(static_cast<double>(r.count)), key, "",
                             example);
  }
  if (duplicates > 0)
    std::cout << fmt::format("  {:>12}  duplicates of other configurations ({})\n",
                             thousands(static_cast<double>(duplicates)), join(duplicate_kinds, "; "));
}

void explain(const sim::SearchProblem& p, const sim::SearchEntry& a, const sim::SearchEntry& b) {
  std::cout << "\nwhy #1 beats #2";
  if (!a.full || !b.full || !a.full->valid() || !b.full->valid()) {
    std::cout << ": not re-evaluated with the full simulator (use --verify 2 or more)\n";
    return;
  }
  std::cout << " (full simulation, time by phase on the critical stage):\n";
  // What differs between the two configurations.
  std::vector<std::string> diff;
  auto cmp = [&](const char* name, const std::string& x, const std::string& y) {
    if (x != y) diff.push_back(fmt::format("{} {} vs {}", name, x, y));
  };
  const auto &ra = a.run, &rb = b.run;
  cmp("system", p.systems[static_cast<std::size_t>(a.system)].name, p.systems[static_cast<std::size_t>(b.system)].name);
  cmp("gpus", std::to_string(ra.par.gpus), std::to_string(rb.par.gpus));
  cmp("tp", std::to_string(ra.par.tp), std::to_string(rb.par.tp));
  cmp("pp", std::to_string(ra.par.pp), std::to_string(rb.par.pp));
  cmp("dp", std::to_string(ra.par.dp), std::to_string(rb.par.dp));
  cmp("cp", std::to_string(ra.par.cp), std::to_string(rb.par.cp));
  cmp("ep", std::to_string(ra.par.ep), std::to_string(rb.par.ep));
  cmp("vp", std::to_string(ra.par.vp), std::to_string(rb.par.vp));
  cmp("micro-batch", std::to_string(ra.train.micro_batch), std::to_string(rb.train.micro_batch));
  cmp("global batch", std::to_string(ra.train.global_batch), std::to_string(rb.train.global_batch));
  cmp("recompute", std::string(sim::name_of(ra.train.recompute)), std::string(sim::name_of(rb.train.recompute)));
  cmp("sequence parallel", on_off(ra.par.sequence_parallel), on_off(rb.par.sequence_parallel));
  cmp("ZeRO stage", std::to_string(ra.train.zero_stage), std::to_string(rb.train.zero_stage));
  cmp("offload", std::string(sim::name_of(ra.train.offload)), std::string(sim::name_of(rb.train.offload)));
  cmp("flash-attn", on_off(ra.train.flash_attn), on_off(rb.train.flash_attn));
  cmp("precision", std::string(dtype_name(ra.train.precision)), std::string(dtype_name(rb.train.precision)));
  cmp("framework", std::string(sim::name_of(ra.train.framework)), std::string(sim::name_of(rb.train.framework)));
  cmp("schedule", std::string(sim::name_of(ra.train.schedule)), std::string(sim::name_of(rb.train.schedule)));
  std::cout << "  differs in: " << (diff.empty() ? std::string("nothing") : join(diff, "; ")) << "\n";
  const auto &fa = *a.full, &fb = *b.full;
  std::vector<std::string> phases;
  for (const auto* v : {&fa.by_phase, &fb.by_phase})
    for (const auto& x : *v)
      if (std::find(phases.begin(), phases.end(), x.name) == phases.end()) phases.push_back(x.name);
  auto sec = [](const std::vector<sim::TimeShare>& v, const std::string& n) {
    for (const auto& x : v)
      if (x.name == n) return x.seconds;
    return 0.0;
  };
  std::cout << fmt::format("  {:<24} {:>12} {:>12} {:>12}\n", "phase", "#1", "#2", "#1 - #2");
  for (const auto& n : phases) {
    const double x = sec(fa.by_phase, n), y = sec(fb.by_phase, n);
    std::cout << fmt::format("  {:<24} {:>12} {:>12} {:>+11.3f}s\n", n, duration(x), duration(y), x - y);
  }
  const double sa = fa.step_time_s.value, sb = fb.step_time_s.value;
  std::cout << fmt::format("  {:<24} {:>12} {:>12} {:>+11.3f}s\n", "step", duration(sa), duration(sb), sa - sb);
  std::cout << fmt::format("  {:<24} {:>12} {:>12}   ({:+.1f}%)\n", "tokens/s", thousands(fa.tokens_per_s.value),
                           thousands(fb.tokens_per_s.value), 100 * (fa.tokens_per_s.value / fb.tokens_per_s.value - 1));
  // The biggest phase differences, in words.
  std::vector<std::pair<double, std::string>> d;
  for (const auto& n : phases) d.emplace_back(sec(fa.by_phase, n) - sec(fb.by_phase, n), n);
  std::sort(d.begin(), d.end());
  if (!d.empty() && d.front().first < 0)
    std::cout << fmt::format("  #1 saves most on {} ({} less per step)\n", d.front().second, duration(-d.front().first));
  if (p.objective != sim::Objective::TokensPerS && a.full_score != b.full_score)
    std::cout << fmt::format("  objective ({}): {:.6g} vs {:.6g}\n", sim::name_of(p.objective), a.full_score, b.full_score);
}

nlohmann::json entry_json(const sim::SearchProblem& p, const sim::SearchEntry& e, std::size_t rank) {
  const auto& r = e.run;
  nlohmann::json j;
  if (rank > 0) j["rank"] = rank;
  j["index"] = e.index;
  j["system"] = p.systems[static_cast<std::size_t>(e.system)].name;
  j["run"] = describe_run(r);
  j["config"] = {{"gpus", r.par.gpus}, {"tp", r.par.tp}, {"pp", r.par.pp}, {"dp", r.par.dp}, {"cp", r.par.cp},
                 {"ep", r.par.ep}, {"vp", r.par.vp}, {"micro_batch", r.train.micro_batch},
                 {"global_batch", r.train.global_batch}, {"recompute", sim::name_of(r.train.recompute)},
                 {"sequence_parallel", r.par.sequence_parallel}, {"zero_stage", r.train.zero_stage},
                 {"offload", sim::name_of(r.train.offload)}, {"flash_attn", r.train.flash_attn},
                 {"precision", dtype_name(r.train.precision)}, {"framework", sim::name_of(r.train.framework)},
                 {"pipeline_schedule", sim::name_of(r.train.schedule)}};
  j["fast"] = {{"step_time_s", e.fast.step_time_s}, {"tokens_per_s", e.fast.tokens_per_s},
               {"gpu_bytes", e.gpu_bytes}, {"score", e.score}};
  if (e.full && e.full->valid()) {
    const auto& f = *e.full;
    j["full"] = {{"step_time_s", f.step_time_s.value}, {"step_time_low_s", f.step_time_s.low},
                 {"step_time_high_s", f.step_time_s.high}, {"tokens_per_s", f.tokens_per_s.value},
                 {"tokens_per_s_per_gpu", f.tokens_per_s_per_gpu.value}, {"mfu", f.mfu.value},
                 {"gpu_bytes", f.memory.gpu_bytes}, {"fits", f.memory.fits()}, {"score", e.full_score}};
    if (f.total_steps > 0)
      j["full"]["total"] = {{"steps", f.total_steps}, {"time_s", f.total_time_s.value}, {"cost", f.total_cost},
                            {"energy_J", f.total_energy_J}};
    auto phases = nlohmann::json::array();
    for (const auto& x : f.by_phase) phases.push_back({{"name", x.name}, {"seconds", x.seconds}});
    j["full"]["by_phase"] = phases;
  }
  return j;
}

nlohmann::json pruned_json(const sim::PruneTally& t) {
  auto a = nlohmann::json::array();
  for (const auto& [k, r] : t.sorted()) a.push_back({{"reason", k}, {"count", r.count}, {"example", r.example}});
  return a;
}

const char* csv_header =
    "schema_version,rank,system,gpus,tp,pp,dp,cp,ep,vp,micro_batch,global_batch,recompute,sequence_parallel,zero_stage,"
    "offload,flash_attn,precision,framework,pipeline_schedule,step_time_s,tokens_per_s,tokens_per_s_per_gpu,mfu,"
    "gpu_mem_gib,fast_step_time_s,source,time_s,cost,energy_J\n";

void csv_row(std::ostream& o, const sim::SearchProblem& p, const sim::SearchEntry& e, std::size_t rank) {
  const auto& r = e.run;
  const Row w = row_of(p, e);
  o << fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.6g},{:.6g},{:.6g},{:.4g},{:.3f},{:.6g},{},{:.6g},{:.6g},{:.6g}\n",
                   sim::kResultSchemaVersion, rank, csv_field(p.systems[static_cast<std::size_t>(e.system)].name),
                   r.par.gpus, r.par.tp, r.par.pp, r.par.dp, r.par.cp, r.par.ep, r.par.vp, r.train.micro_batch,
                   r.train.global_batch, sim::name_of(r.train.recompute), on_off(r.par.sequence_parallel),
                   r.train.zero_stage, sim::name_of(r.train.offload), on_off(r.train.flash_attn),
                   dtype_name(r.train.precision), sim::name_of(r.train.framework), sim::name_of(r.train.schedule),
                   w.step, w.tps, w.per_gpu, w.mfu, w.mem / units::GiB, e.fast.step_time_s,
                   w.full ? "full" : "estimate", w.time, w.cost, w.energy);
}

void write_all_csv(const std::string& path, const sim::SearchProblem& p, const std::vector<sim::SearchEntry>& all) {
  std::ofstream f(path);
  if (!f) throw_input(Location{.file = path}, "cannot open the CSV file for writing");
  f << "schema_version,index,system,gpus,tp,pp,dp,cp,ep,vp,micro_batch,global_batch,recompute,sequence_parallel,"
       "zero_stage,offload,flash_attn,precision,framework,pipeline_schedule,est_step_time_s,est_tokens_per_s,"
       "est_tokens_per_s_per_gpu,gpu_mem_gib,score\n";
  for (const auto& e : all) {
    const auto& r = e.run;
    f << fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.6g},{:.6g},{:.6g},{:.3f},{:.8g}\n",
                     sim::kResultSchemaVersion, e.index, csv_field(p.systems[static_cast<std::size_t>(e.system)].name),
                     r.par.gpus, r.par.tp, r.par.pp, r.par.dp, r.par.cp, r.par.ep, r.par.vp, r.train.micro_batch,
                     r.train.global_batch, sim::name_of(r.train.recompute), on_off(r.par.sequence_parallel),
                     r.train.zero_stage, sim::name_of(r.train.offload), on_off(r.train.flash_attn),
                     dtype_name(r.train.precision), sim::name_of(r.train.framework), sim::name_of(r.train.schedule),
                     e.fast.step_time_s, e.fast.tokens_per_s, e.fast.tokens_per_s / static_cast<double>(r.par.gpus),
                     e.gpu_bytes / units::GiB, e.score);
  }
  std::cerr << fmt::format("llmsim: wrote {} configurations to {}\n", all.size(), path);
}

// Progress on stderr: a live line on a terminal, nothing otherwise.
std::function<void(std::uint64_t, std::uint64_t, double)> progress_printer(const char* what) {
  if (!isatty(STDERR_FILENO)) return {};
  return [what](std::uint64_t done, std::uint64_t total, double el) {
    std::cerr << fmt::format("\rllmsim: {}: {:5.1f}% of {} configurations, {} configs/s   ", what,
                             total ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 100.0,
                             thousands(static_cast<double>(total)), thousands(el > 0 ? static_cast<double>(done) / el : 0))
              << std::flush;
  };
}

void clear_progress() {
  if (isatty(STDERR_FILENO)) std::cerr << "\r" << std::string(90, ' ') << "\r";
}

std::string header_line(const sim::SearchProblem& p, const sim::ResolvedTrainSpace& rs) {
  const auto& b = p.space.base;
  std::string gb = rs.one_micro_batch_per_step
                       ? std::string("global batch = micro-batch x dp (the optimizer steps in backward: one "
                                     "micro-batch per step; set --global-batch to fix it)")
                   : rs.global_batch_min == rs.global_batch_max
                       ? fmt::format("global batch {} ({:.3g} M tokens per step{})", rs.global_batch_min,
                                     static_cast<double>(rs.global_batch_min * b.train.seq_len) / 1e6,
                                     p.space.global_batch_min > 0 ? "" : ", the default; set --global-batch")
                       : fmt::format("global batch the largest multiple of micro-batch x dp in {}-{}",
                                     rs.global_batch_min, rs.global_batch_max);
  std::string s = fmt::format("{}, seq {}, {}", sim::name_of(b.workload), b.train.seq_len, gb);
  if (b.train.optimizer != sim::Optimizer::Adam) s += fmt::format(", {}", sim::name_of(b.train.optimizer));
  if (b.train.finetune != sim::FinetuneKind::Full)
    s += fmt::format(", {} rank {}", sim::name_of(b.train.finetune), b.train.lora_rank);
  return s;
}

void print_empty(const sim::SearchOutcome& o, const sim::PruneTally& t, const sim::TrainGenerator* gen) {
  std::cout << "\nresult: EMPTY SEARCH SPACE — no configuration is feasible.\n";
  const auto v = t.sorted();
  for (const auto& [k, r] : v) {
    if (sim::is_duplicate_reason(k)) continue;
    std::cout << fmt::format("most common reason: {} ({} of {} configurations)\n", k,
                             thousands(static_cast<double>(r.count)), thousands(static_cast<double>(o.space_size)));
    break;
  }
  print_pruned(t, o.space_size, gen, 8);
  // Contradictory constraints, spelled out.
  std::uint64_t binding = 0;
  for (const auto& [k, r] : v)
    if (!sim::is_duplicate_reason(k)) binding += r.count;
  for (const auto& [k, r] : v) {
    if (k == "more GPUs than --max-gpus" && r.count == binding)
      std::cout << "--max-gpus is smaller than every GPU count of the space\n";
    if (k.find("global batch") != std::string::npos && r.count * 2 >= binding)
      std::cout << "the global batch does not divide into micro-batch x dp for most configurations: try "
                   "--global-batch as a range (e.g. 512-2048) or other --micro-batch / --gpus values\n";
  }
}

std::string reverified(const sim::SearchOutcome& o, std::size_t verify) {
  const std::size_t n = std::min<std::size_t>(verify, o.feasible);
  std::string s = n > 0 ? fmt::format("the best {}", n) : std::string("none of the best (--verify 0)");
  if (o.pareto.size() > 1) s += n > 0 ? " and the Pareto front" : "; the Pareto front";
  return s;
}

int run_search(const CLI::App& app, SearchCommand& c) {
  Built b = build_problem(app, c);
  sim::SearchProblem& p = b.problem;
  sim::SearchOptions opt;
  opt.threads = c.threads;
  opt.top = c.top;
  opt.verify = std::max(c.verify, c.explain ? std::size_t{2} : std::size_t{0});
  opt.keep_all = !c.all_csv.empty();
  SigintGuard guard;
  opt.cancel = &g_interrupted;
  opt.progress = progress_printer("search");
  const sim::SearchOutcome o = sim::search_training(p, opt);
  clear_progress();
  std::cerr << fmt::format("llmsim: search: {} configurations in {:.2f} s ({} configs/s, {} threads); {} re-evaluated "
                           "with the full simulator in {:.2f} s\n",
                           thousands(static_cast<double>(o.processed)), o.fast_seconds, thousands(o.evals_per_s()),
                           o.threads, o.status == sim::SearchStatus::Ok ? std::min(opt.verify, o.feasible) : 0,
                           o.full_seconds);
  if (!c.all_csv.empty()) write_all_csv(c.all_csv, p, o.all);

  const sim::ResolvedTrainSpace rs = sim::resolve_train_space(p.space, *p.model, p.systems);
  const sim::TrainGenerator gen(p.space, rs, *p.model, p.systems);
  const bool multi_system = p.systems.size() > 1;
  const int rc = o.status == sim::SearchStatus::EmptySpace   ? kExitEmptySpace
                 : o.status == sim::SearchStatus::Interrupted ? kExitInterrupted
                                                              : 0;
  switch (c.common.format()) {
    case Format::Json: {
      nlohmann::json j;
      j["schema_version"] = sim::kResultSchemaVersion;
      j["command"] = "search train";
      j["model"] = p.model->name;
      j["systems"] = names_of(p);
      j["status"] = o.status == sim::SearchStatus::Ok ? "ok" : o.status == sim::SearchStatus::EmptySpace ? "empty" : "interrupted";
      j["objective"] = sim::name_of(p.objective);
      j["space_size"] = o.space_size;
      j["processed"] = o.processed;
      j["evaluated"] = o.evaluated;
      j["feasible"] = o.feasible;
      j["pruned"] = pruned_json(o.pruned);
      j["seconds"] = o.fast_seconds;
      j["configs_per_s"] = o.evals_per_s();
      j["threads"] = o.threads;
      j["max_fast_error"] = o.max_fast_error;
      auto top = nlohmann::json::array();
      for (std::size_t k = 0; k < o.top.size(); ++k) top.push_back(entry_json(p, o.top[k], k + 1));
      j["top"] = top;
      auto front = nlohmann::json::array();
      for (const auto& e : o.pareto) front.push_back(entry_json(p, e, 0));
      j["pareto"] = front;
      std::cout << j.dump(2) << "\n";
      return rc;
    }
    case Format::Csv:
      std::cout << csv_header;
      for (std::size_t k = 0; k < o.top.size(); ++k) csv_row(std::cout, p, o.top[k], k + 1);
      return rc;
    case Format::Table: break;
  }
  std::vector<std::string> names;
  for (const auto& sys : p.systems) names.push_back(sys.name);
  const std::string systems = join(names, ", ");
  std::cout << fmt::format("llmsim search train: {} on {}\n", p.model->name, systems);
  std::cout << fmt::format("fixed: {}\n", header_line(p, rs));
  const std::string searched =
      o.processed < o.space_size
          ? fmt::format(" ({} searched before the interrupt)", thousands(static_cast<double>(o.processed)))
          : std::string();
  std::cout << fmt::format("space: {} configurations{}; {} estimated, {} feasible, {} pruned ({:.2f} s, {} configs/s, {} "
                           "threads)\n",
                           thousands(static_cast<double>(o.space_size)), searched,
                           thousands(static_cast<double>(o.evaluated)), thousands(static_cast<double>(o.feasible)),
                           thousands(static_cast<double>(o.pruned.total())), o.fast_seconds, thousands(o.evals_per_s()),
                           o.threads);
  if (o.status == sim::SearchStatus::EmptySpace) {
    print_empty(o, o.pruned, &gen);
    return rc;
  }
  print_pruned(o.pruned, o.space_size, &gen, 6);
  if (o.status == sim::SearchStatus::Interrupted)
    std::cout << "\nINTERRUPTED: the best configurations found so far (fast estimates, not re-evaluated):\n";
  else
    std::cout << fmt::format("\nobjective: {}; {} re-evaluated with the full simulator (the fast estimate is within "
                             "{:.1f}% of it on them)\n",
                             objective_text(p), reverified(o, opt.verify), 100 * o.max_fast_error);
  std::cout << "\n";
  print_entries(p, o.top, multi_system);
  if (o.pareto.size() > 1) {
    std::cout << "\nPareto front, throughput vs GPUs (by the estimate, each faster than every configuration with fewer GPUs):\n";
    print_entries(p, o.pareto, multi_system);
  }
  if (c.explain && o.top.size() >= 2) explain(p, o.top[0], o.top[1]);
  return rc;
}

int run_plan(const CLI::App& app, SearchCommand& c) {
  Built b = build_problem(app, c);
  sim::SearchProblem& p = b.problem;
  sim::SearchOptions opt;
  opt.threads = c.threads;
  opt.top = c.top;
  opt.verify = std::max<std::size_t>(c.verify, 1);
  SigintGuard guard;
  opt.cancel = &g_interrupted;
  opt.progress = progress_printer("plan");
  const sim::PlanOutcome o = sim::plan_training(p, opt);
  clear_progress();
  std::cerr << fmt::format("llmsim: plan: {} GPU counts, {} configurations in {:.2f} s\n", o.counts_tried,
                           thousands(static_cast<double>(o.space_size)), o.seconds);
  const int rc = o.status == sim::SearchStatus::EmptySpace    ? kExitEmptySpace
                 : o.status == sim::SearchStatus::Interrupted ? kExitInterrupted
                 : o.met                                      ? 0
                                                              : 1;
  const sim::SearchEntry* best = o.met && !o.search.top.empty() ? &o.search.top.front() : o.fastest ? &*o.fastest : nullptr;
  const bool multi_system = p.systems.size() > 1;
  const sim::ResolvedTrainSpace rs = sim::resolve_train_space(p.space, *p.model, p.systems);
  if (c.common.format() == Format::Json) {
    nlohmann::json j;
    j["schema_version"] = sim::kResultSchemaVersion;
    j["command"] = "plan train";
    j["model"] = p.model->name;
    j["systems"] = names_of(p);
    j["tokens"] = p.train_tokens;
    j["deadline_s"] = p.deadline_s;
    j["status"] = o.status == sim::SearchStatus::Ok ? "ok" : o.status == sim::SearchStatus::EmptySpace ? "empty" : "interrupted";
    j["met"] = o.met;
    j["gpus"] = o.gpus;
    j["lower_bound_gpus"] = o.lower_bound_gpus;
    j["counts_tried"] = o.counts_tried;
    j["space_size"] = o.space_size;
    j["evaluated"] = o.evaluated;
    j["pruned"] = pruned_json(o.pruned);
    if (best) j["best"] = entry_json(p, *best, 1);
    auto alt = nlohmann::json::array();
    for (std::size_t k = 1; o.met && k < o.search.top.size(); ++k) alt.push_back(entry_json(p, o.search.top[k], k + 1));
    j["alternatives"] = alt;
    std::cout << j.dump(2) << "\n";
    return rc;
  }
  if (c.common.format() == Format::Csv) {
    std::cout << csv_header;
    if (o.met)
      for (std::size_t k = 0; k < o.search.top.size(); ++k) csv_row(std::cout, p, o.search.top[k], k + 1);
    else if (best)
      csv_row(std::cout, p, *best, 1);
    return rc;
  }
  std::vector<std::string> names;
  for (const auto& sys : p.systems) names.push_back(sys.name);
  std::cout << fmt::format("llmsim plan train: {}, {:.3g} tokens within {} on {}\n", p.model->name, p.train_tokens,
                           duration(p.deadline_s), join(names, ", "));
  std::cout << fmt::format("fixed: {}\n", header_line(p, rs));
  if (o.counts_tried > 0)
    std::cout << fmt::format("searched: {} GPU counts from {} to {} ({} configurations, {} estimated, {:.2f} s)",
                             o.counts_tried, o.first_count, o.last_count, thousands(static_cast<double>(o.space_size)),
                             thousands(static_cast<double>(o.evaluated)), o.seconds);
  else
    std::cout << fmt::format("searched: no GPU count ({} configurations)", thousands(static_cast<double>(o.space_size)));
  if (o.lower_bound_gpus > 0)
    std::cout << fmt::format("; {} GPUs or fewer cannot meet the deadline even at 100% MFU", thousands(static_cast<double>(o.lower_bound_gpus)));
  std::cout << "\n";
  if (o.counts_tried == 0 && o.lower_bound_gpus >= p.space.max_gpus && p.space.max_gpus > 0)
    std::cout << fmt::format("contradictory constraints: --max-gpus {} is below the {} GPUs that 100% MFU would need\n",
                             p.space.max_gpus, thousands(static_cast<double>(o.lower_bound_gpus + 1)));
  if (o.status == sim::SearchStatus::EmptySpace) {
    sim::SearchOutcome dummy;
    dummy.space_size = o.space_size;
    print_empty(dummy, o.pruned, nullptr);
    return rc;
  }
  if (o.status == sim::SearchStatus::Interrupted) std::cout << "\nINTERRUPTED: best so far below (fast estimate)\n";
  if (!best) return rc;
  const Row w = row_of(p, *best);
  const auto& sys = p.systems[static_cast<std::size_t>(best->system)];
  std::cout << "\n";
  if (o.met)
    std::cout << fmt::format("answer: {} GPUs of {} ({} nodes of {})\n", o.gpus, p.systems[static_cast<std::size_t>(best->system)].name,
                             (o.gpus + sys.node.gpus_per_node - 1) / std::max(1, sys.node.gpus_per_node),
                             sys.node.gpus_per_node);
  else
    std::cout << fmt::format("answer: the deadline cannot be met with at most {} GPUs; the fastest configuration found "
                             "needs {}\n",
                             p.space.max_gpus, duration(w.time));
  if (best->full && best->full->valid()) {
    const auto& f = *best->full;
    std::cout << fmt::format("  time           {}  [{} .. {}]  for {} steps\n", duration(f.total_time_s.value),
                             duration(f.total_time_s.low), duration(f.total_time_s.high), thousands(f.total_steps));
    if (o.met && f.total_time_s.high > p.deadline_s)
      std::cout << fmt::format("                 (the interval's slow edge misses the deadline: the profile is {})\n",
                               sys.efficiency.calibrated ? "calibrated" : "uncalibrated; see llmsim calibrate");
  } else {
    std::cout << fmt::format("  time           {} (estimate)\n", duration(w.time));
  }
  if (!p.price_per_gpu_hour.empty())
    std::cout << fmt::format("  cost           {} at {:.2f} per GPU-hour ({} GPU-hours)\n", thousands(w.cost),
                             p.price_per_gpu_hour[static_cast<std::size_t>(best->system)],
                             thousands(static_cast<double>(best->run.par.gpus) * w.time / 3600));
  else
    std::cout << fmt::format("  GPU-hours      {} (give --price-per-gpu-hour for the cost)\n",
                             thousands(static_cast<double>(best->run.par.gpus) * w.time / 3600));
  std::cout << fmt::format("  energy         {:.3g} MWh of GPU energy at TDP ({} GPUs x {:.0f} W x time)\n", w.energy / 3.6e9,
                           best->run.par.gpus, sys.gpu.tdp_W);
  std::cout << fmt::format("  configuration  {}\n", describe_run(best->run));
  std::cout << fmt::format("  step           {}, {} tokens/s ({} per GPU){}, {} of {} GiB per GPU\n", duration(w.step),
                           thousands(w.tps), thousands(w.per_gpu), w.full ? fmt::format(", MFU {:.1f}%", 100 * w.mfu) : "",
                           gib(w.mem), gib(sys.gpu.memory_bytes));
  if (o.met && o.search.top.size() > 1) {
    std::cout << fmt::format("\nconfigurations meeting the deadline at {} GPUs (best first):\n", o.gpus);
    print_entries(p, o.search.top, multi_system);
  }
  if (c.explain && o.met && o.search.top.size() >= 2) explain(p, o.search.top[0], o.search.top[1]);
  std::cout << "\n";
  print_pruned(o.pruned, o.space_size, nullptr, 5);
  return rc;
}

Runner add_command(CLI::App& app, bool plan) {
  const char* name = plan ? "plan" : "search";
  CLI::App* top = app.add_subcommand(
      name, plan ? "capacity planning: the fewest GPUs (then the lowest cost) that train N tokens by a deadline"
                 : "what-if search: the best configurations of a parallelism / memory / precision space");
  top->require_subcommand(1);
  auto cmd = std::make_shared<SearchCommand>();
  cmd->plan = plan;
  CLI::App* sub = top->add_subcommand(
      "train", plan ? "llmsim plan train --model M --tokens 1e12 --deadline 30d [--system S…] [--max-gpus N] "
                      "[--price-per-gpu-hour X]"
                    : "llmsim search train --model M --system S --gpus 64 [--tp 1,2,4,8] [--micro-batch pow2:1-16] …");
  sub->allow_extras();
  add_flags(*sub, *cmd);
  // `plan serve` lives in cmd_plan_serve.cpp.
  Runner serve = plan ? add_plan_serve_subcommand(*top) : Runner{};
  return [cmd, sub, plan, serve]() -> int {
    if (plan && !sub->parsed()) return serve();
    reject_extras(*sub);
    return plan ? run_plan(*sub, *cmd) : run_search(*sub, *cmd);
  };
}

}  // namespace

Runner add_search_command(CLI::App& app) { return add_command(app, false); }
Runner add_plan_command(CLI::App& app) { return add_command(app, true); }

}  // namespace llmsim::cli
