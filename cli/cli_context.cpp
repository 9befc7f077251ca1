#include "cli_context.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include <fmt/format.h>

#include "llmsim/core/error.h"
#include "llmsim/core/strings.h"
#include "llmsim/core/suggest.h"
#include "llmsim/core/units.h"
#include "llmsim/hardware/system_toml.h"
#include "llmsim/memory/memory_model.h"
#include "llmsim/model/presets.h"
#include "llmsim/report/html_report.h"
#include "llmsim/report/report.h"
#include "llmsim/run/run_spec.h"
#include "llmsim/serve/request_stream.h"

namespace llmsim::cli {

std::filesystem::path executable_dir(const char* argv0) {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) return exe.parent_path();
  return argv0 ? std::filesystem::path(argv0).parent_path() : std::filesystem::path();
}

namespace {

// The presets beside an installed executable: <prefix>/bin/llmsim finds <prefix>/share/llmsim
// (cmake/LlmsimInstall.cmake), so an installed tree works wherever it is copied; empty when the executable
// does not sit in such a tree (a build folder).
std::string installed_data_dir() {
  const std::filesystem::path bin = executable_dir();
  if (bin.empty()) return {};
  const std::filesystem::path share = bin.parent_path() / "share" / "llmsim";
  std::error_code ec;
  return std::filesystem::is_directory(share / "hardware", ec) ? share.string() : std::string();
}

}  // namespace

std::string CommonOptions::resolved_data_dir() const {
  if (!data_dir.empty()) return data_dir;  // --data-dir, or LLMSIM_DATA_DIR (add_data_dir_option)
  static const std::string installed = installed_data_dir();
  if (!installed.empty()) return installed;
  return LLMSIM_DATA_DIR;  // the source tree's data/, for the executable in a build folder
}

hardware::SystemSpec CommonOptions::load_system(const std::string& name_or_path) const {
  hardware::SystemSpec s = hardware::resolve_system(name_or_path, resolved_data_dir());
  if (!overlay.empty()) hardware::apply_efficiency_overlay(s, overlay);
  return s;
}

namespace {
CLI::Validator finite_number(bool allow_zero) {
  return CLI::Validator(
      [allow_zero](std::string& text) -> std::string {
        // core's parse_finite, the one number rule of every reader; strtod only tells a number that is not
        // finite ("inf", "nan", "1e400") from text that is none.
        const std::optional<double> v = parse_finite(text);
        if (!v) {
          char* end = nullptr;
          errno = 0;
          const double x = std::strtod(text.c_str(), &end);
          if (!text.empty() && end == text.c_str() + text.size() && (!std::isfinite(x) || errno == ERANGE))
            return "'" + text + "' must be a finite number";
          return "'" + text + "' is not a number";
        }
        if (allow_zero ? *v < 0 : *v <= 0) return "'" + text + (allow_zero ? "' must be >= 0" : "' must be > 0");
        return {};
      },
      allow_zero ? "NONNEGATIVE" : "POSITIVE");
}
}  // namespace

CLI::Validator finite_positive() { return finite_number(false); }
CLI::Validator rate_or_inf() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        // The sign rule (> 0) is the command's, said with its own message.
        if (text == "inf" || text == "+inf" || parse_finite(text)) return {};
        std::string copy = text;
        return finite_number(true)(copy) + " (or inf for the offline mode)";
      },
      "RATE");
}
CLI::Validator finite_non_negative() { return finite_number(true); }

void add_shared_prefix_options(CLI::App& app, std::int64_t& tokens, std::int64_t& groups) {
  app.add_option("--shared-prefix", tokens,
                 "tokens of shared prompt prefix (a system prompt) before every prompt; engines with prefix caching "
                 "reuse its KV (default 0)")
      ->check(CLI::Range(std::int64_t{0}, sim::kMaxRequestTokens));
  app.add_option("--prefix-groups", groups,
                 "different shared prefixes, request i taking prefix i mod G (default 1; needs --shared-prefix)")
      ->check(CLI::Range(std::int64_t{1}, sim::kMaxRequestTokens));
}

void add_adapter_options(CLI::App& app, AdapterFlags& f) {
  CLI::Option* adapters =
      app.add_option("--adapters", f.adapters,
                     "multi-LoRA serving: every request runs with one of N LoRA adapters (vllm, sglang; "
                     "docs/serving.md)")
          ->check(CLI::Range(std::int64_t{1}, std::int64_t{1'000'000}));
  app.add_option("--adapter-popularity", f.popularity,
                 "how requests pick their adapter: uniform, or zipf:S (adapter i with weight 1/(i+1)^S, S > 0)")
      ->needs(adapters);
  app.add_option("--adapter-rank", f.rank, "the adapters' LoRA rank (default 16, vLLM's max_lora_rank)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{65536}))
      ->needs(adapters);
  app.add_option(
         "--adapter-targets", f.targets,
         "projections the adapters adapt, comma-separated (default all): " + join(sim::lora_target_names(), ","))
      ->delimiter(',')
      ->check(CLI::IsMember(sim::lora_target_names()))
      ->needs(adapters);
  app.add_option("--max-loras", f.max_loras,
                 "engine: distinct adapters per iteration, each with a GPU slot (vLLM --max-loras, default 1; SGLang "
                 "--max-loras-per-batch, default 8)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{100'000}))
      ->needs(adapters);
}

double AdapterFlags::zipf() const {
  if (popularity == "uniform") return 0;
  double s = 0;
  if (popularity.starts_with("zipf:")) {
    const std::string v = popularity.substr(5);
    const char* end = v.data() + v.size();
    if (std::from_chars(v.data(), end, s).ptr == end && std::isfinite(s) && s > 0) return s;
  }
  throw_usage("--adapter-popularity",
              fmt::format("--adapter-popularity {}: expected uniform or zipf:S with S a number > 0", popularity));
}

std::string AdapterFlags::describe() const {
  return fmt::format(", {} LoRA adapter{} ({}) of rank {}", adapters, adapters == 1 ? "" : "s", popularity, rank);
}

void refuse_overwrite(const std::string& flag, const std::string& output, const std::vector<std::string>& inputs) {
  if (output.empty() || output == "-") return;
  std::error_code ec;
  if (!std::filesystem::exists(output, ec)) return;
  for (const auto& in : inputs)
    if (!in.empty() && std::filesystem::exists(in, ec) && std::filesystem::equivalent(in, output, ec))
      throw_usage(flag, fmt::format("{} {} is one of this command's input files ({}); writing there would replace "
                                    "what was read: give another path",
                                    flag, output, in));
}

void add_overlay_option(CLI::App& app, CommonOptions& opts) {
  app.add_option("--overlay", opts.overlay,
                 "profile overlay TOML: an [efficiency] table whose keys replace every system's (e.g. fitted "
                 "mechanism parameters, docs/validation.md)");
}

void add_output_options(CLI::App& app, CommonOptions& opts) {
  app.add_option("--json", opts.json.path,
                 "write the result as JSON (docs/output-schema.md) to FILE, or to stdout with '-' or no value")
      ->type_name("[FILE|-]")
      ->expected(0, 1);
  app.add_option("--csv", opts.csv.path,
                 "write the result as CSV, one layout for every command (docs/output-schema.md), to FILE, or to "
                 "stdout with '-' or no value")
      ->type_name("[FILE|-]")
      ->expected(0, 1);
  app.add_option("--html", opts.html.path,
                 "write the result as one self-contained HTML page with charts (docs/output-schema.md) to FILE, or "
                 "to stdout with '-'")
      ->type_name("FILE|-");
}

void add_common_options(CLI::App& app, CommonOptions& opts) {
  add_output_options(app, opts);
  add_data_dir_option(app, opts.data_dir);
}

void add_data_dir_option(CLI::App& app, std::string& dir) {
  app.add_option("--data-dir", dir, "folder with models/ and hardware/ presets (default: the installed or built data)")
      ->envname("LLMSIM_DATA_DIR")
      ->type_name("DIR");
}

void check_outputs(const CLI::App& app, CommonOptions& opts, const std::vector<std::string>& inputs) {
  opts.json.wanted = app.count("--json") > 0;
  opts.csv.wanted = app.count("--csv") > 0;
  opts.html.wanted = app.count("--html") > 0;
  const std::pair<OutputTarget*, const char*> outputs[] = {
      {&opts.json, "--json"}, {&opts.csv, "--csv"}, {&opts.html, "--html"}};
  if (opts.html.wanted && !report::html_available())
    throw_usage("--html",
                "this llmsim was built without Chart.js (Debian package libjs-chart.js), which HTML reports "
                "inline: run tools/setup (or apt-get install libjs-chart.js), then configure and build again");
  // A file that cannot be written is said before the work, not after it.
  for (const auto& [t, flag] : outputs) {
    if (!t->wanted || t->to_stdout()) continue;
    const std::filesystem::path dir = std::filesystem::path(t->path).parent_path();
    if (!dir.empty() && !std::filesystem::is_directory(dir))
      throw_input(Location{.file = t->path, .key = flag},
                  fmt::format("cannot write the {} output there: no folder {}", flag, dir.string()));
    refuse_overwrite(flag, t->path, inputs);
  }
  for (std::size_t i = 0; i < std::size(outputs); ++i)
    for (std::size_t j = i + 1; j < std::size(outputs); ++j) {
      const auto& [a, a_flag] = outputs[i];
      const auto& [b, b_flag] = outputs[j];
      if (!a->wanted || !b->wanted) continue;
      if (a->to_stdout() && b->to_stdout())
        throw_usage(b_flag, fmt::format("{} and {} both want stdout; send one of them to a file ({}=FILE)", a_flag,
                                        b_flag, b_flag));
      if (!a->to_stdout() && !b->to_stdout() && a->path == b->path)
        throw_usage(b_flag, fmt::format("{} and {} both write {}; give them different files", a_flag, b_flag, b->path));
    }
}

namespace {
void write_to(const OutputTarget& t, const char* flag, const char* what,
              const std::function<void(std::ostream&)>& write) {
  if (!t.wanted) return;
  if (t.to_stdout()) {
    write(std::cout);
    return;
  }
  std::ofstream f(t.path);
  if (!f) throw_input(Location{.file = t.path}, fmt::format("cannot open the {} output for writing", flag));
  write(f);
  std::cerr << fmt::format("llmsim: wrote the {} to {}\n", what, t.path);
}
}  // namespace

void emit(const CommonOptions& opts, const nlohmann::json& doc, const std::function<void()>& table) {
  write_to(opts.json, "--json", "JSON", [&](std::ostream& o) { report::write_json(o, doc); });
  write_to(opts.csv, "--csv", "CSV", [&](std::ostream& o) { report::write_csv(o, doc); });
  write_to(opts.html, "--html", "HTML report", [&](std::ostream& o) { report::write_html(o, doc); });
  if (!opts.json.to_stdout() && !opts.csv.to_stdout() && !opts.html.to_stdout()) table();
}

namespace {
// Whether a command running `kinds` offers the setting (sim::applies_to of a workload of that kind).
bool offered(const sim::SettingInfo& s, RunKinds kinds) {
  return kinds == RunKinds::Any ||
         sim::applies_to(s, kinds == RunKinds::Training ? sim::Workload::Pretrain : sim::Workload::Inference);
}
}  // namespace

// What --help shows for a setting's value: its kind with its range, as apply_setting checks it.
std::string setting_type_name(const sim::SettingInfo& s) {
  switch (s.kind) {
    case sim::SettingKind::PositiveInt: return s.max > 0 ? fmt::format("INT:1..{}", s.max) : "INT:>=1";
    case sim::SettingKind::NonNegativeInt: return s.max > 0 ? fmt::format("INT:0..{}", s.max) : "INT:>=0";
    case sim::SettingKind::PositiveNumber: return s.max > 0 ? fmt::format("NUMBER:>0..{}", s.max) : "NUMBER:>0";
    case sim::SettingKind::Fraction: return "NUMBER:0..1";
    case sim::SettingKind::Ratio: return "NUMBER:1..1e6";
    case sim::SettingKind::Release: return "VERSION";
    case sim::SettingKind::Choice: return "CHOICE";
    case sim::SettingKind::List: return "LIST";
    case sim::SettingKind::Text:
    case sim::SettingKind::Flag: break;
  }
  return "TEXT";
}

void add_run_flags(CLI::App& app, RunFlags& flags, RunKinds kinds) {
  app.add_option("--config", flags.config, "run-config TOML whose keys are these flag names; flags override it");
  for (const auto& s : sim::run_settings()) {
    if (!offered(s, kinds)) continue;
    const std::string flag = "--" + s.name;
    std::string help = s.help;
    if (!s.choices.empty()) help += " {" + join(s.choices, ",") + "}";
    if (s.kind == sim::SettingKind::Flag) {
      // Boolean settings: --x turns on, --no-x turns off.
      app.add_flag_callback(
          flag, [&flags, n = s.name] { flags.flags[n] = true; }, help);
      app.add_flag_callback(
          "--no-" + s.name, [&flags, n = s.name] { flags.flags[n] = false; }, "turn off --" + s.name);
    } else {
      // A value that is itself a flag means the value was left out ("--gpus --tp 2"): say so, instead of
      // CLI11's "unexpected argument '2'" about the value the next flag then lacks.
      app.add_option(flag, flags.values[s.name], help)
          ->type_name(setting_type_name(s))
          ->check(CLI::Validator(
              [](std::string& v) {
                const bool is_flag =
                    v.size() > 1 && v[0] == '-' && (v[1] == '-' || std::isalpha(static_cast<unsigned char>(v[1])));
                return is_flag ? fmt::format("needs a value; '{}' is the next flag", v) : std::string();
              },
              ""));
    }
  }
}

sim::RunRequest build_request(const CLI::App& app, const RunFlags& flags) {
  sim::RunRequest req;
  if (!flags.config.empty()) sim::apply_run_toml(req, flags.config);
  // Apply in the table's order so that implications (e.g. --qlora then --lora-rank) are stable.
  for (const auto& s : sim::run_settings()) {
    const std::string flag = "--" + s.name;
    if (s.kind == sim::SettingKind::Flag) {
      if (auto it = flags.flags.find(s.name); it != flags.flags.end())
        sim::apply_setting(req, s.name, it->second ? "true" : "false", Location{.key = flag}, ErrorKind::Usage);
      continue;
    }
    if (app.get_option_no_throw(flag) == nullptr || app.count(flag) == 0) continue;  // not offered, or not given
    // A command may have read the value itself (serve's --input-len in a distribution form).
    if (flags.taken.count(s.name) > 0) continue;
    sim::apply_setting(req, s.name, flags.values.at(s.name), Location{.key = flag}, ErrorKind::Usage);
  }
  return req;
}

bool is_token_count(const std::string& value) {
  return !value.empty() && std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; });
}

void refuse_length_distributions(const RunFlags& flags, const std::string& command) {
  for (const char* name : {"input-len", "output-len"}) {
    const auto it = flags.values.find(name);  // empty: not given (every offered flag has an entry)
    if (it == flags.values.end() || it->second.empty() || is_token_count(it->second)) continue;
    throw_usage(std::string("--") + name,
                fmt::format("{} simulates a batch of equal sequences: give a token count N, not '{}' (serve and plan "
                            "serve take length distributions)",
                            command, it->second));
  }
}

ResolvedRun resolve_run(const CLI::App& app, const RunFlags& flags, const CommonOptions& common,
                        const std::function<void(sim::RunRequest&)>& adjust) {
  sim::RunRequest req = build_request(app, flags);
  if (req.model.empty()) throw_usage("--model", "--model is required (a preset name or a config.json path)");
  if (req.system.empty()) throw_usage("--system", "--system is required (a preset name or a system TOML path)");
  if (adjust) adjust(req);
  model::ModelSpec m = model::resolve_model(req.model, common.resolved_data_dir());
  if (req.run.workload == sim::Workload::Inference) sim::apply_checkpoint_format(req, m);
  auto& spec = req.run.infer.speculative;
  if (spec.method == sim::SpecMethod::Draft && !spec.draft_model.empty())
    spec.draft =
        std::make_shared<const model::ModelSpec>(model::resolve_model(spec.draft_model, common.resolved_data_dir()));
  hardware::SystemSpec sys = common.load_system(req.system);
  auto& p = req.run.par;
  if (!req.was_given("gpus")) p.gpus = p.tp * p.pp * p.cp * std::max<std::int64_t>(1, p.dp);
  req.run = sim::with_defaults(req.run);
  ResolvedRun out{.req = req, .model = std::move(m), .system = std::move(sys), .run = req.run};
  return out;
}

void reject_extras(const CLI::App& app) {
  const auto extras = app.remaining();
  if (extras.empty()) return;
  std::vector<std::string> names;
  for (const auto* o : app.get_options())
    for (const auto& n : o->get_lnames()) names.push_back("--" + n);
  const std::string& bad = extras.front();
  const bool looks_like_flag = bad.rfind("-", 0) == 0;
  // The command as typed: "plan serve", not just its last word.
  std::string command = app.get_name();
  for (const CLI::App* p = app.get_parent(); p && p->get_parent(); p = p->get_parent())
    command = p->get_name() + " " + command;
  // A run setting the command does not offer (add_run_flags): say which runs it belongs to.
  std::string name = bad.rfind("--", 0) == 0 ? bad.substr(2) : "";
  if (const auto eq = name.find('='); eq != std::string::npos) name.resize(eq);
  if (name.rfind("no-", 0) == 0 && sim::find_setting(name) == nullptr) name = name.substr(3);
  if (const sim::SettingInfo* s = sim::find_setting(name); s != nullptr && s->scope != sim::SettingScope::Any) {
    const bool inference = s->scope == sim::SettingScope::Inference;
    // The training framework and the inference engine are two settings: name the one this command takes.
    const std::string counterpart = name == "framework" ? "; an inference engine is --engine"
                                    : name == "engine"  ? "; a training framework is --framework"
                                                        : "";
    throw_usage("--" + name,
                fmt::format("{} setting, and {} simulates {} (use {} for {}){}",
                            inference ? "an inference" : "a training", command, inference ? "training" : "inference",
                            inference ? "`llmsim infer`, `llmsim serve` or `llmsim memory --workload inference`"
                                      : "`llmsim train` or `llmsim memory`",
                            inference ? "inference" : "training", counterpart));
  }
  throw_usage(bad, (looks_like_flag ? "unknown flag '" : "unexpected argument '") + bad + "'" +
                       did_you_mean(bad, names) + " (see " + command + " --help)");
}

bool print_run_header(const std::string& command, const std::string& model, const std::string& system,
                      const sim::RunSpec& run, const std::vector<std::string>& problems) {
  std::cout << fmt::format("llmsim {}: {} on {}\n", command, model, system);
  std::cout << fmt::format("run: {}\n", describe_run(run));
  if (problems.empty()) return true;
  std::cout << "result: infeasible\n";
  for (const auto& p : problems) std::cout << "  - " << p << "\n";
  return false;
}

// A token count with an optional SI suffix: 1e12, 300B (= G), 2T, 500M, 8K (case-insensitive); one
// grammar for train, search and plan.
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
  const std::optional<double> parsed = parse_finite(t);
  if (!parsed || !(*parsed > 0))
    throw_usage("--tokens", fmt::format("--tokens '{}': must be a positive number such as 1e12, 300B or 2T", text));
  const double v = *parsed;
  // 1e16 tokens is ~700x the largest published pre-training runs (Llama 3: 15.6T); past it the step and
  // day counts stop meaning anything.
  if (v * mult > 1e16)
    throw_usage("--tokens", fmt::format("--tokens '{}' = {:.3g} tokens: at most 1e16 (10,000 T)", text, v * mult));
  return v * mult;
}

std::string expand_any_system(const std::string& text, const std::string& data_dir) {
  return text == "any" || text == "*" ? join(hardware::list_system_presets(data_dir), ",") : text;
}

// One grammar for every command with a price: X for every system, or sys=X,sys2=Y naming each system of
// the command (as its --system gave them).
std::vector<double> parse_prices(const std::string& text, const std::vector<std::string>& systems) {
  if (text.empty()) return {};
  std::vector<double> out(systems.size(), -1);
  auto number = [&](const std::string& s) {
    const std::optional<double> v = parse_finite(s);  // "inf", "nan" and "1e400" are no price
    if (!v || *v < 0)
      throw_usage("--price-per-gpu-hour",
                  fmt::format("--price-per-gpu-hour '{}': '{}' is not a price, a finite number >= 0 (X, or "
                              "sys=X,sys2=Y)",
                              text, s));
    return *v;
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
      throw_usage("--price-per-gpu-hour",
                  fmt::format("--price-per-gpu-hour: '{}' is not a system of this command ({}){}", sys, join(systems),
                              did_you_mean(sys, systems)));
    out[static_cast<std::size_t>(it - systems.begin())] = number(item.substr(eq + 1));
    start = end + 1;
  }
  for (std::size_t i = 0; i < out.size(); ++i)
    if (out[i] < 0)
      throw_usage("--price-per-gpu-hour", fmt::format("--price-per-gpu-hour gives no price for {}", systems[i]));
  return out;
}

}  // namespace llmsim::cli
