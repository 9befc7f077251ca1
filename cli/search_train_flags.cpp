#include "search_train_flags.h"

#include "search_train_output.h"

#include <unistd.h>

#include <cmath>
#include <iostream>
#include <optional>

#include <fmt/format.h>

#include "llmsim/core/error.h"
#include "llmsim/core/strings.h"
#include "llmsim/core/suggest.h"
#include "llmsim/core/units.h"
#include "llmsim/hardware/system_toml.h"
#include "llmsim/model/presets.h"

namespace llmsim::cli::search_train {

// ---- SIGINT: a flag the workers check; the first Ctrl-C stops the search, a second one kills. ----
std::atomic<bool> g_interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free);
extern "C" void on_sigint(int) { g_interrupted.store(true); }

SigintGuard::SigintGuard() {
  g_interrupted = false;
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND;
  sigaction(SIGINT, &sa, &old);
}
SigintGuard::~SigintGuard() { sigaction(SIGINT, &old, nullptr); }

// ---- flags ------------------------------------------------------------------------------------------

// Settings that make no sense for a training search (inference-only).
// Settings of inference runs only (the settings table's scope): a training search does not offer them.
bool inference_only(const sim::SettingInfo& s) { return s.scope == sim::SettingScope::Inference; }

bool is_axis(const std::string& name) {
  const auto& a = sim::train_axis_names();
  return std::find(a.begin(), a.end(), name) != a.end() || name == "dp" || name == "global-batch";
}

void add_flags(CLI::App& app, SearchCommand& c) {
  add_common_options(app, c.common);
  app.add_option("--config", c.config,
                 "run-config TOML (flag names as keys) for the fixed settings; flags override it");
  for (const auto& s : sim::run_settings()) {
    if (inference_only(s)) continue;
    const std::string flag = "--" + s.name;
    if (s.kind == sim::SettingKind::Flag && is_axis(s.name)) {  // an on/off axis
      app.add_option(flag, c.values[s.name], "axis: on, off, on,off or any (alone: on)")->expected(0, 1);
      app.add_flag_callback(
          "--no-" + s.name, [&c, n = s.name] { c.negated[n] = true; }, "axis fixed at off");
      continue;
    }
    if (is_axis(s.name)) {
      std::string help;
      if (s.name == "system")
        help = "axis: system presets or TOML paths, comma-separated, or any (every preset)";
      else if (s.name == "global-batch")
        help = "sequences per step: a number, or a range a-b (the largest multiple of micro-batch x dp in it)";
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
      app.add_flag_callback(
          flag, [&c, n = s.name] { c.flags[n] = true; }, help);
    else
      app.add_option(flag, c.values[s.name], help);
  }
  app.add_option("--objective", c.objective,
                 "what to optimise {" + join(sim::objective_names(), ",") +
                     "} (default tokens-per-s; time/cost need --tokens, per-dollar/cost --price-per-gpu-hour)");
  app.add_option("--tokens", c.tokens, "tokens to train, e.g. 1e12 or 1T: time, cost and energy of the run");
  app.add_option("--deadline", c.deadline, "time the training must fit in, e.g. 30d, 720h");
  app.add_option("--price-per-gpu-hour", c.price, "price of a GPU-hour: X, or per system sys=X,sys2=Y");
  app.add_option("--max-gpus", c.max_gpus, "at most this many GPUs (bounds a free --gpus axis)")
      ->check(finite_positive());
  app.add_option("--min-gpus", c.min_gpus, "at least this many GPUs")->check(finite_positive());
  app.add_option("--min-headroom-gib", c.min_headroom_gib, "free GPU memory a configuration must leave (GiB)")
      ->check(finite_non_negative());
  app.add_option("--max-configs", c.max_configs,
                 "refuse a search space of more configurations than this (default 1e10; docs/search.md)")
      ->check(finite_positive());
  app.add_option("--top", c.top, "configurations to report (default 10)")->check(finite_positive());
  app.add_option("--verify", c.verify, "best configurations re-evaluated with the full simulator (default 20)")
      ->check(finite_non_negative());
  app.add_option("--all-csv", c.all_csv, "write every evaluated configuration (fast estimates) as CSV to FILE");
  app.add_flag("--explain", c.explain, "why the best configuration beats the runner-up (time by phase)");
  app.add_option("--threads", c.threads, "worker threads (default: hardware concurrency; at most 1024)")
      ->check(CLI::Range(1, 1024));
}

double parse_duration(const std::string& text) {
  std::string t = text;
  const std::map<std::string, double> units = {{"s", 1},    {"m", 60},    {"min", 60},
                                               {"h", 3600}, {"d", 86400}, {"w", 7 * 86400}};
  std::size_t k = t.size();
  while (k > 0 && std::isalpha(static_cast<unsigned char>(t[k - 1]))) --k;
  const std::string unit = t.substr(k);
  t = t.substr(0, k);
  std::vector<std::string> names;
  for (const auto& [u, f] : units) names.push_back(u);
  const auto it = units.find(unit);
  // A finite number > 0 (core's parse_finite: "inf", "nan" and "1e400" are none) whose seconds are finite too.
  const std::optional<double> v = parse_finite(t);
  if (it == units.end() || !v || !(*v > 0) || !std::isfinite(*v * it->second))
    throw_usage("--deadline",
                fmt::format("--deadline '{}': must be a duration with a unit, e.g. 30d, 720h, 90m (a finite number > "
                            "0){}",
                            text, unit.empty() || it != units.end() ? "" : did_you_mean(unit, names)));
  return *v * it->second;
}

// ---- building the problem ---------------------------------------------------------------------------

namespace {

// A generous rate of the fast phase on a many-core host (configurations per second), for the refusal's
// time estimate only.
constexpr double kConfigsPerSecond = 3e7;

std::string rough_duration(double s) {
  if (s < 120) return fmt::format("{:.0f} s", s);
  if (s < 7200) return fmt::format("{:.0f} minutes", s / 60);
  if (s < 2 * 86400) return fmt::format("{:.0f} hours", s / 3600);
  return fmt::format("{:.0f} days", s / 86400);
}

}  // namespace

Built build_problem(const CLI::App& app, SearchCommand& c) {
  sim::RunRequest req;
  if (!c.config.empty()) sim::apply_run_toml(req, c.config);
  for (const auto& s : sim::run_settings()) {
    if (inference_only(s) || is_axis(s.name)) continue;
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
  const std::pair<const char*, A> from_toml[] = {{"gpus", A::Gpus},
                                                 {"tp", A::Tp},
                                                 {"pp", A::Pp},
                                                 {"vp", A::Vp},
                                                 {"zero-stage", A::ZeroStage},
                                                 {"recompute", A::Recompute},
                                                 {"sequence-parallel", A::SequenceParallel},
                                                 {"micro-batch", A::MicroBatch}};
  for (const auto& [name, a] : from_toml) {
    if (!req.was_given(name)) continue;
    sim::Axis fixed;
    const auto& r = req.run;
    fixed.values = {a == A::Gpus               ? r.par.gpus
                    : a == A::Tp               ? r.par.tp
                    : a == A::Pp               ? r.par.pp
                    : a == A::Vp               ? r.par.vp
                    : a == A::ZeroStage        ? r.train.zero_stage
                    : a == A::Recompute        ? static_cast<std::int64_t>(r.train.recompute)
                    : a == A::SequenceParallel ? (r.par.sequence_parallel ? 1 : 0)
                                               : r.train.micro_batch};
    space.axis(a) = fixed;
  }
  if (req.was_given("precision")) space.precision_given = true;
  if (req.was_given("dp")) space.dp = sim::parse_int_axis("--dp", std::to_string(req.run.par.dp));
  if (req.was_given("global-batch")) space.global_batch_min = space.global_batch_max = req.run.train.global_batch;
  if (!req.system.empty()) sim::set_train_axis(space, "system", req.system);

  const std::string data = c.common.resolved_data_dir();
  // Axes from the command line, in the settings table's order.
  for (const auto& setting : sim::run_settings()) {
    if (!is_axis(setting.name)) continue;
    const std::string& name = setting.name;
    const std::string flag = "--" + name;
    if (c.negated.count(name)) {
      if (app.count(flag) > 0) throw_usage(flag, fmt::format("give {} or --no-{}, not both", flag, name));
      sim::set_train_axis(space, name, "off");
      continue;
    }
    if (app.count(flag) == 0) continue;
    std::string text = c.values.at(name);
    if (setting.kind == sim::SettingKind::Flag && text.empty()) text = "on";
    if (name == "system") text = expand_any_system(text, data);
    sim::set_train_axis(space, name, text);
  }
  if (space.systems.empty())
    throw_usage("--system", "--system is required (one or more presets or TOML paths, or any)");

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
    throw_usage("--objective",
                fmt::format("--objective '{}': {}", c.objective, one_of(c.objective, sim::objective_names())));
  if (c.plan) {
    if (p.train_tokens <= 0) throw_usage("--tokens", "llmsim plan train needs --tokens (e.g. 1e12)");
    if (p.deadline_s <= 0) throw_usage("--deadline", "llmsim plan train needs --deadline (e.g. 30d)");
    if (!c.objective.empty()) throw_usage("--objective", "plan minimises GPUs, then cost (or time without prices)");
    p.objective = p.price_per_gpu_hour.empty() ? sim::Objective::Time : sim::Objective::Cost;
    if (p.space.global_batch_min <= 0 && !p.space.base.train.optimizer_in_backward) {
      // Default: 2-4 Mi tokens per step, so that GPU counts that are not powers of two find a batch
      // (with the optimizer in backward each configuration takes micro-batch x dp instead).
      const std::int64_t g =
          std::max<std::int64_t>(1, (4LL << 20) / std::max<std::int64_t>(1, p.space.base.train.seq_len));
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
  // A space far larger than can be scored in a sitting is refused before it starts, with its size (a
  // free --gpus axis up to --max-gpus times every other axis can reach trillions).
  const sim::ResolvedTrainSpace rs = sim::resolve_train_space(p.space, *p.model, p.systems);
  if (static_cast<double>(rs.size) > c.max_configs)
    throw_usage("--max-configs",
                fmt::format("the search space holds {} configurations, more than --max-configs {:g}: even at 30 "
                            "million configurations per second (a many-core host) that takes {}; fix "
                            "or narrow some axes (--gpus, --tp 1,2,4,8, --micro-batch 1,2, ...), or raise "
                            "--max-configs",
                            thousands(static_cast<double>(rs.size)), c.max_configs,
                            rough_duration(static_cast<double>(rs.size) / kConfigsPerSecond)));
  return b;
}

}  // namespace llmsim::cli::search_train
