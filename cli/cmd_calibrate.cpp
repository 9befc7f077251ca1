// `llmsim calibrate`: runs the microbenchmarks of calibrate/ (GPU: GEMM, memory, host<->device, p2p,
// NCCL; host: CPU Adam, memory bandwidth), fits them and writes a calibrated hardware profile, or
// imports nccl-tests logs. --list and --dry-run work without a GPU.
#include <algorithm>
#include <chrono>
#include <exception>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include <unistd.h>

#include "cli_context.h"
#include "commands.h"
#include "llmsim/calibrate/fingerprint.h"
#include "llmsim/calibrate/gpu_bench.h"
#include "llmsim/calibrate/host_bench.h"
#include "llmsim/calibrate/nccl_tests_import.h"
#include "llmsim/calibrate/plan.h"
#include "llmsim/calibrate/process_group.h"
#include "llmsim/calibrate/profile_writer.h"
#include "llmsim/core/error.h"
#include "llmsim/core/strings.h"
#include "llmsim/core/suggest.h"
#include "llmsim/hardware/efficiency_keys.h"
#include "llmsim/hardware/system_toml.h"
#include "llmsim/validate/fit_runs.h"
#include "llmsim/validate/measured_runs.h"

namespace llmsim::cli {

namespace {

namespace cal = llmsim::calibrate;

struct CalibrateCommand {
  CommonOptions common;
  std::string system;
  std::string only;
  bool quick = false;
  std::string out;
  std::string resume;
  bool list = false;
  bool dry_run = false;
  int gpus = 0;
  int threads = 0;
  double time_budget_s = 0;  // s; 0 = no limit
  bool mpi = false;          // one process per GPU under an MPI launcher
  std::vector<std::string> argv;
  // import-nccl-tests
  std::vector<std::string> logs;
  int import_ranks = 0;           // --ranks: GPUs of a paste that does not say
  int import_nodes = 0;           // --nodes: hosts of the same
  std::string import_collective;  // --collective: the nccl-tests binary, when the log does not say
  // refit
  std::string refit_dir;
  // fit-runs
  std::vector<std::string> run_files;
  std::string fit_profile;
  std::string fit_key = hardware::kHostDispatchKey;
  std::vector<double> fit_grid;
};

std::vector<std::string> parse_only(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string g;
  const auto groups = cal::only_groups();
  while (std::getline(ss, g, ',')) {
    if (g.empty()) continue;
    if (std::find(groups.begin(), groups.end(), g) == groups.end())
      throw_usage("--only", fmt::format("--only = '{}': must be a comma-separated list of {}{}", text, join(groups),
                                        did_you_mean(g, groups)));
    out.push_back(g);
  }
  return out;
}

void print_families() {
  std::cout << fmt::format("{:<20} {:<8} {:<5} {}\n", "family", "--only", "GPU", "what it measures");
  for (const auto& f : cal::families())
    std::cout << fmt::format("{:<20} {:<8} {:<5} {}\n", f.name, f.group, f.needs_gpu ? "yes" : "no", f.what);
}

bool needs_gpu(const std::vector<cal::BenchItem>& items) {
  for (const auto& i : items)
    if (!cal::is_host_family(i.bench)) return true;
  return false;
}

void print_summary(const cal::CalibrationFits& fits, const hardware::SystemSpec& base) {
  const auto rows = cal::summarize(fits, base);
  // The curve column fits the longest name (multi-node rows: "NCCL all-gather x16 over 2 nodes (bus bandwidth)").
  std::size_t w = 44;
  for (const auto& r : rows) w = std::max(w, r.curve.size());
  std::cout << fmt::format("\n{:<{}} {:>22} {:>16} {:>26} {:>8}\n", "curve", w, "measured", "datasheet",
                           "fraction [band]", "fit err");
  for (const auto& r : rows)
    std::cout << fmt::format("{:<{}} {:>22} {:>16} {:>26} {:>8}\n", r.curve, w, r.measured, r.datasheet, r.fraction,
                             r.fit_error);
  for (const auto& n : fits.notes) std::cout << "note: " << n << "\n";
}

std::string default_out_dir() {
  const auto fp = cal::host_fingerprint({});
  return "calibration-" + fp.date_utc.substr(0, 10);
}

// The system the calibration refines (--system is required by every path that writes a profile).
hardware::SystemSpec base_system(const CalibrateCommand& c) {
  if (c.system.empty()) throw_usage("--system", "--system is required: the preset or TOML the calibration refines");
  return hardware::resolve_system(c.system, c.common.resolved_data_dir());
}

// Fits `samples`, writes the profile and fingerprint into `dir`, prints the summary; returns the profile's path.
std::string fit_and_write(const std::string& dir, const hardware::SystemSpec& base,
                          const std::vector<cal::Sample>& samples, const cal::Fingerprint& fp) {
  const auto fits = cal::fit_samples(samples, base);
  const std::string profile = cal::write_profile(dir, base, fits, fp);
  print_summary(fits, base);
  std::cout << fmt::format("\nprofile: {}\n", profile);
  return profile;
}

// Runs `prepare` on rank 0 and makes every rank agree on whether it worked: rank 0 rethrows its error,
// the other ranks throw one that points at rank 0's message (a rank left behind would wait forever in
// the next collective).
template <typename F>
void on_root_agreed(cal::ProcessGroup& group, F&& prepare) {
  std::exception_ptr failed;
  if (group.rank() == 0) {
    try {
      prepare();
    } catch (...) {
      failed = std::current_exception();
    }
  }
  if (group.all(!failed)) return;
  if (failed) std::rethrow_exception(failed);
  throw Error(ErrorKind::Input, Location{}, "rank 0 stopped before measuring (its message says why)");
}

// "2 ranks on 1 host (vm x2)" / "16 ranks on 2 hosts (a x8, b x8)".
std::string describe_ranks(const cal::ProcessGroup& group) {
  std::vector<std::pair<std::string, int>> per_host;
  for (const auto& h : group.hosts()) {
    auto it = std::find_if(per_host.begin(), per_host.end(), [&](const auto& p) { return p.first == h; });
    if (it == per_host.end())
      per_host.emplace_back(h, 1);
    else
      ++it->second;
  }
  std::vector<std::string> parts;
  for (const auto& [h, n] : per_host) parts.push_back(fmt::format("{} x{}", h, n));
  return fmt::format("{} ranks on {} host{} ({})", group.size(), per_host.size(), per_host.size() == 1 ? "" : "s",
                     join(parts));
}

// --dry-run: the plan by family, the GPU it would use, and under --mpi the groups and nodes they span.
void print_dry_run(const CalibrateCommand& c, const std::vector<cal::BenchItem>& items, bool want_gpu,
                   const std::optional<cal::GpuInfo>& gpu, const std::string& why, int planned_gpus,
                   const cal::ProcessGroup& group) {
  std::map<std::string, int> count;
  for (const auto& i : items) ++count[i.bench];
  std::cout << fmt::format("llmsim calibrate --dry-run: {} measurements{}\n", items.size(), c.quick ? " (quick)" : "");
  std::cout << fmt::format("GPU: {}\n",
                           !want_gpu ? std::string("not needed (host benchmarks only)")
                           : gpu     ? fmt::format("{} x{}", gpu->name, gpu->device_count)
                                     : "none usable: " + why + fmt::format(" (plan assumes {} GPUs)", planned_gpus));
  if (c.mpi) {
    std::map<std::pair<int, int>, int> spans;  // (group, nodes) of the collectives
    for (const auto& i : items)
      if (i.bench.starts_with("nccl_")) ++spans[{i.group, i.nodes}];
    std::vector<std::string> g;
    for (const auto& [k, n] : spans)
      g.push_back(fmt::format("{} ranks on {} node{}", k.first, k.second, k.second == 1 ? "" : "s"));
    std::cout << fmt::format("MPI: {}; NCCL groups: {}\n", describe_ranks(group), g.empty() ? "none" : join(g));
  }
  for (const auto& f : cal::families())
    if (count[f.name] > 0) std::cout << fmt::format("  {:<20} {:>5}  {}\n", f.name, count[f.name], f.what);
  std::cout << fmt::format("would write: {}/samples.csv, the calibrated profile and fingerprint.json\n",
                           c.resume.empty() ? (c.out.empty() ? default_out_dir() : c.out) : c.resume);
}

int run_calibration(CalibrateCommand& c) {
  // Under mpirun (--mpi) every rank runs this; rank 0 alone prints, decides and writes.
  const std::unique_ptr<cal::ProcessGroup> group = c.mpi ? cal::mpi_process_group() : cal::single_process();
  const bool root = group->rank() == 0;

  cal::PlanOptions plan_opts;
  plan_opts.only = parse_only(c.only);
  plan_opts.quick = c.quick;
  plan_opts.host_threads = c.threads;
  if (group->multi_process()) plan_opts.rank_hosts = group->hosts();

  std::string why;
  std::optional<cal::GpuInfo> gpu;
  const bool want_gpu = needs_gpu(cal::make_plan(plan_opts));
  if (want_gpu) gpu = cal::probe_gpus(why);
  plan_opts.gpus = c.gpus > 0 ? c.gpus : gpu ? gpu->device_count : 8;
  if (gpu && gpu->cc_major * 10 + gpu->cc_minor >= 89)  // fp8 after the 16-bit types, before tf32 and fp32
    plan_opts.dtypes.insert(std::find(plan_opts.dtypes.begin(), plan_opts.dtypes.end(), "tf32"), "fp8");
  const auto items = cal::make_plan(plan_opts);

  if (c.dry_run) {
    if (root) print_dry_run(c, items, want_gpu, gpu, why, plan_opts.gpus, *group);
    return 0;
  }
  if (want_gpu && !group->all(gpu.has_value()))
    throw Error(
        ErrorKind::NoDevice, Location{},
        gpu ? std::string("another rank has no usable GPU (see its message)")
            : fmt::format("{}no usable GPU: {}. The host benchmarks run without one: llmsim calibrate --only cpu",
                          group->multi_process() ? fmt::format("rank {} on {}: ", group->rank(),
                                                               group->hosts()[static_cast<std::size_t>(group->rank())])
                                                 : "",
                          why));

  // Rank 0's output folder and log (the other ranks write nothing).
  std::optional<hardware::SystemSpec> base;
  std::string dir;
  std::unique_ptr<cal::FolderLock> lock;  // one writer per folder: a second run (or --resume) is refused
  std::unique_ptr<cal::SampleLog> log;
  on_root_agreed(*group, [&] {
    base = base_system(c);
    dir = !c.resume.empty() ? c.resume : c.out.empty() ? default_out_dir() : c.out;
    if (!c.resume.empty() && !std::filesystem::exists(std::filesystem::path(dir) / "samples.csv"))
      throw_not_found(Location{.file = dir}, "--resume needs a folder holding samples.csv from an earlier run");
    std::filesystem::create_directories(dir);
    lock = std::make_unique<cal::FolderLock>(dir);
    log = std::make_unique<cal::SampleLog>((std::filesystem::path(dir) / "samples.csv").string());
  });
  const std::size_t before = root ? log->samples().size() : 0;
  if (root) {
    std::cerr << fmt::format("llmsim calibrate: {} measurements, {} already in {}\n", items.size(), before,
                             log->path());
    if (group->multi_process()) std::cerr << fmt::format("llmsim calibrate: MPI: {}\n", describe_ranks(*group));
  }
  const cal::Progress progress = [](const cal::BenchItem& item, std::size_t i, std::size_t n) {
    std::cerr << fmt::format("\r[{}/{}] {} {} {}x{}x{} {:.0f} B x{}{}        ", i, n, item.bench, item.dtype, item.m,
                             item.n, item.k, item.bytes, item.group,
                             item.nodes > 1 ? fmt::format(" ({} nodes)", item.nodes) : "")
              << std::flush;
  };
  if (root) cal::run_host_items(items, *log, progress);
  std::vector<std::string> skipped;
  const auto started = std::chrono::steady_clock::now();
  const cal::StopCheck out_of_time = [&] {
    return c.time_budget_s > 0 &&
           std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count() > c.time_budget_s;
  };
  bool finished = true;
  if (want_gpu) finished = cal::run_gpu_items(items, log.get(), progress, skipped, out_of_time, *group);
  if (!root) return 0;
  std::cerr << "\n";
  if (!finished) {
    std::size_t done = 0;
    for (const auto& i : items) done += log->done(i) ? 1 : 0;
    const std::string stop_note =
        fmt::format("stopped by --time-budget-s {:g}: {} of {} planned items measured; continue with --resume {}",
                    c.time_budget_s, done, items.size(), dir);
    std::cerr << "llmsim calibrate: " << stop_note << "\n";
    skipped.insert(skipped.begin(), stop_note);
  }

  cal::Fingerprint fp = cal::host_fingerprint(c.argv);
  fp.gpu = gpu;
  fp.notes = skipped;
  if (group->multi_process())
    fp.notes.insert(fp.notes.begin(), fmt::format("MPI run: {}; NCCL collectives over ranks 0..g-1, one GPU per rank "
                                                  "(host facts above are rank 0's)",
                                                  describe_ranks(*group)));
  cal::add_sample_quality(fp, log->samples());
  std::cout << fmt::format("llmsim calibrate: {} samples ({} new) in {}\n", log->samples().size(),
                           log->samples().size() - before, log->path());
  const std::string profile = fit_and_write(dir, *base, log->samples(), fp);
  std::cout << fmt::format("use it: llmsim train --system {} …\n", profile);
  return 0;
}

int run_import(CalibrateCommand& c) {
  if (c.logs.empty()) throw_usage("LOG", "import-nccl-tests needs at least one nccl-tests output file");
  const hardware::SystemSpec base = base_system(c);
  // Every log is read before anything is written, so that a log that cannot be imported leaves the
  // folder as it was (no header-only samples.csv, no half-merged profile).
  std::vector<std::pair<std::string, cal::NcclTestsLog>> parsed;
  for (const auto& path : c.logs)
    parsed.emplace_back(
        path, cal::import_nccl_tests(
                  path, {.ranks = c.import_ranks, .nodes = c.import_nodes, .collective = c.import_collective}));
  // A log measured on other GPUs than the system's would set fractions of the wrong datasheet.
  const auto same_gpu = [&](const std::string& a) { return to_lower(a) == to_lower(base.gpu.name); };
  for (const auto& [path, lg] : parsed) {
    if (lg.gpus.empty() || std::any_of(lg.gpus.begin(), lg.gpus.end(), same_gpu)) continue;
    throw_input(Location{.file = path},
                fmt::format("the log ran on {}, but --system {} holds {}: its bandwidths would become fractions of "
                            "another GPU's datasheet; give a --system with that GPU (llmsim list systems)",
                            join(lg.gpus), base.name, base.gpu.name));
  }
  // A log that names no host but holds more ranks than one node of the system has spans several nodes
  // (their count rounded up), said so; --nodes states it instead.
  const int per_node = base.node.gpus_per_node;
  for (auto& [path, lg] : parsed) {
    if (c.import_nodes > 0 || lg.nodes > 1 || per_node <= 0 || lg.ranks <= per_node) continue;
    lg.nodes = (lg.ranks + per_node - 1) / per_node;
    for (auto& s : lg.samples) s.item.nodes = lg.nodes;
    lg.derived.push_back(fmt::format("{} nodes: {} ranks do not fit one node of {} ({} GPUs); --nodes states it",
                                     lg.nodes, lg.ranks, base.name, per_node));
  }
  // Logs that yield nothing to fit would only relabel the preset as calibrated: refused before anything
  // is written.
  std::vector<cal::Sample> imported;
  for (const auto& [path, lg] : parsed) imported.insert(imported.end(), lg.samples.begin(), lg.samples.end());
  if (const auto fits = cal::fit_samples(imported, base); fits.empty())
    throw_input(Location{.file = c.logs.front()},
                fmt::format("nothing in {} can be fitted ({}); no profile was written", join(c.logs),
                            fits.notes.empty() ? std::string("no usable sizes") : join(fits.notes, "; ")));
  const std::string dir = c.out.empty() ? default_out_dir() : c.out;
  std::filesystem::create_directories(dir);
  const cal::FolderLock lock(dir);
  // A folder that already holds a calibration keeps its fingerprint (the GPUs it measured, its quality
  // counts): the import adds its samples and a note instead of replacing them with this host's.
  const auto fp_path = std::filesystem::path(dir) / "fingerprint.json";
  const bool merge = std::filesystem::exists(fp_path);
  cal::Fingerprint fp = merge ? cal::read_fingerprint(fp_path.string()) : cal::host_fingerprint(c.argv);
  if (!merge) {
    // The GPUs measured are the logs', not this machine's; the host fields describe the importing machine.
    for (const auto& [path, lg] : parsed) {
      if (lg.gpus.empty() || fp.gpu) continue;
      fp.gpu = cal::GpuInfo{.device_count = lg.ranks, .name = lg.gpus.front()};
    }
    fp.notes.push_back(fp.gpu ? "gpu: named by the imported logs; host_*: the machine that imported them"
                              : "no GPU named by the imported logs; host_*: the machine that imported them");
  }
  cal::SampleLog log((std::filesystem::path(dir) / "samples.csv").string());
  for (const auto& [path, log_in] : parsed) {
    int added = 0;
    for (const auto& s : log_in.samples)
      if (!log.done(s.item)) {
        log.append(s);
        ++added;
      }
    std::cerr << fmt::format("llmsim: {}: {} over {} ranks{}, {} sizes ({} new)\n", path, log_in.collective,
                             log_in.ranks, log_in.nodes > 1 ? fmt::format(" on {} nodes", log_in.nodes) : "",
                             log_in.samples.size(), added);
    for (const auto& d : log_in.derived) std::cerr << fmt::format("llmsim: {}: {}\n", path, d);
  }
  const cal::Fingerprint now = cal::host_fingerprint(c.argv);
  fp.notes.push_back(fmt::format("collectives imported from nccl-tests logs{}: {}",
                                 merge ? fmt::format(" on {} into this calibration", now.date_utc) : "", join(c.logs)));
  if (merge) {
    // Its quality counts stay: imported samples carry no clock or noise flags.
    std::cerr << fmt::format("llmsim: {} holds a calibration: its fingerprint is kept and the import noted in it\n",
                             dir);
  }
  fit_and_write(dir, base, log.samples(), fp);
  return 0;
}

// Re-fits a calibration folder's samples with this build (a newer fit, or curves the measuring build
// did not map yet) without measuring again: the profile is rewritten, the measurement's fingerprint is
// kept and gains a note saying when and by which llmsim the refit was made.
int run_refit(CalibrateCommand& c) {
  const hardware::SystemSpec base = base_system(c);
  const std::filesystem::path dir = c.refit_dir;
  // Locked while it is read and rewritten; a missing folder is reported as its missing samples.csv below.
  std::unique_ptr<cal::FolderLock> lock;
  if (std::filesystem::is_directory(dir)) lock = std::make_unique<cal::FolderLock>(dir.string());
  const std::string samples_path = (dir / "samples.csv").string();
  std::size_t repeated = 0;
  const auto samples = cal::unique_samples(cal::read_samples(samples_path), repeated);
  if (samples.empty())
    throw_input(Location{.file = samples_path},
                "holds no samples: nothing to fit (the profile in the folder is left as it was)");
  cal::Fingerprint fp = cal::read_fingerprint((dir / "fingerprint.json").string());
  const cal::Fingerprint now = cal::host_fingerprint(c.argv);
  fp.notes.push_back(fmt::format("refit on {} by llmsim {} ({}) from these samples as measured", now.date_utc,
                                 now.tool_version, now.git_sha));
  if (repeated > 0) {
    // Two runs that once wrote the folder at the same time (before folders were locked) measured some
    // items twice: each item is fitted once, from its first sample.
    const std::string note = fmt::format(
        "{} repeated sample(s) of items already in {} were left out of the fit (each item is fitted from its first "
        "sample; two runs once wrote this folder at the same time)",
        repeated, samples_path);
    std::cerr << "llmsim calibrate refit: " << note << "\n";
    fp.notes.push_back(note);
  }
  std::cout << fmt::format("llmsim calibrate refit: {} samples from {}\n", samples.size(), samples_path);
  fit_and_write(dir.string(), base, samples, fp);
  return 0;
}

// Fits the host critical path's rate on measured-run files (sim/validate/fit_runs.h) and reports
// it in-sample and leave one source out; --out writes it as a profile overlay.
int run_fit_runs(CalibrateCommand& c) {
  const std::string data = c.common.resolved_data_dir();
  std::vector<sim::MeasuredRun> runs;
  for (const auto& f : c.run_files)
    for (auto& r : sim::load_measured_runs(f, data, true)) runs.push_back(std::move(r));
  sim::FitRunsOptions opt;
  if (!c.fit_grid.empty()) opt.grid = c.fit_grid;
  opt.profile = c.fit_profile;
  opt.key = c.fit_key;
  opt.scratch_dir = (std::filesystem::temp_directory_path() / fmt::format("llmsim-fit-runs-{}", ::getpid())).string();
  std::cerr << fmt::format("llmsim: calibrate fit-runs: {} rows at {} grid values\n", runs.size(), opt.grid.size());
  const sim::FitRunsResult fit = sim::fit_runs_parameter(runs, data, opt);
  std::filesystem::remove_all(opt.scratch_dir);
  const std::string unit = sim::find_fit_key(opt.key)->unit;
  std::cout << fmt::format("{} = {}  (fitted on {} of {} time/throughput rows{})\n\n", opt.key, fit.fitted,
                           fit.fitted_rows, fit.rows, opt.profile.empty() ? "" : ", profile " + opt.profile);
  std::cout << fmt::format("{:<62} {:>5} {:>8} {:>8} {:>8} {:>8}\n", "median |error| by source", "rows", "loso fit",
                           "none", "in", "loso");
  for (const auto& s : fit.sources)
    std::cout << fmt::format("{:<62} {:>5} {:>8} {:>7.1f}% {:>7.1f}% {:>7.1f}%\n", s.source.substr(0, 62), s.rows,
                             fmt::format("{:g}{}", s.loso, unit.empty() ? "" : " " + unit), s.median_none_pct,
                             s.median_in_pct, s.median_loso_pct);
  std::cout << fmt::format("\n{:<62} {:>5} {:>8} {:>8} {:>8} {:>8}\n", "by workload", "rows", "", "none", "in", "loso");
  for (const auto& s : fit.workloads)
    std::cout << fmt::format("{:<62} {:>5} {:>8} {:>7.1f}% {:>7.1f}% {:>7.1f}%\n", s.source, s.rows, "",
                             s.median_none_pct, s.median_in_pct, s.median_loso_pct);
  if (!c.out.empty()) {
    refuse_overwrite("--out", c.out, c.run_files);
    sim::write_fit_overlay(c.out, fit, opt, c.run_files);
    std::cout << fmt::format("\nwrote {} (use it: llmsim validate|train|infer|serve --overlay {})\n", c.out, c.out);
  }
  return 0;
}

}  // namespace

Runner add_calibrate_command(CLI::App& app, int argc, char** argv) {
  auto cmd = std::make_shared<CalibrateCommand>();
  cmd->argv.assign(argv, argv + argc);
  CLI::App* sub =
      app.add_subcommand("calibrate", "measure this machine's GPUs and host and write a calibrated profile");
  sub->allow_extras();
  add_common_options(*sub, cmd->common);
  sub->add_option("--system", cmd->system, "preset or system TOML the calibration refines (its datasheet values stay)");
  sub->add_option("--only", cmd->only, "comma-separated groups: gemm,memory,h2d,p2p,nccl,cpu");
  sub->add_flag("--quick", cmd->quick, "a few points per family (minutes instead of an hour)");
  sub->add_option("--out", cmd->out, "output folder (default calibration-YYYY-MM-DD)");
  sub->add_option("--resume", cmd->resume, "continue an interrupted run in this folder (its samples.csv is kept)");
  sub->add_flag("--list", cmd->list, "list the benchmark families and exit (no GPU needed)");
  sub->add_flag("--dry-run", cmd->dry_run, "print the plan and exit (no GPU needed)");
  sub->add_option("--gpus", cmd->gpus,
                  "GPUs to plan collectives for (default: all visible; 8 in a dry run without GPUs)")
      ->check(finite_positive());
  sub->add_option("--threads", cmd->threads, "threads for host benchmarks (default: all hardware threads)")
      ->check(finite_positive());
  sub->add_option("--time-budget-s", cmd->time_budget_s,
                  "stop starting new GPU measurements after this many seconds, then fit what was measured "
                  "(--resume continues later)")
      ->check(finite_positive());
  sub->add_flag("--mpi", cmd->mpi,
                "run under an MPI launcher (mpirun -np N llmsim calibrate --mpi …): one process per GPU, NCCL "
                "collectives over 2, 4, … and all ranks, across nodes; rank 0 measures the rest and writes the output");
  CLI::App* imp = sub->add_subcommand("import-nccl-tests", "import nccl-tests output as collective measurements");
  imp->add_option("LOG", cmd->logs, "nccl-tests output files (all_reduce_perf …)")->required();
  imp->add_option("--system", cmd->system, "preset or system TOML the calibration refines");
  imp->add_option("--out", cmd->out, "output folder (default calibration-YYYY-MM-DD)");
  imp->add_option("--ranks", cmd->import_ranks,
                  "GPUs of the run, for a paste without its '#  Rank' and 'nThread … nGpus' lines (replaces what the "
                  "log gives)")
      ->check(CLI::Range(1, 1 << 20));
  imp->add_option("--nodes", cmd->import_nodes, "hosts the run spanned, for a paste that names none")
      ->check(CLI::Range(1, 1 << 20));
  imp->add_option("--collective", cmd->import_collective,
                  "the nccl-tests binary that wrote the logs, overriding what they and their names say")
      ->check(CLI::IsMember({"all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "sendrecv"}))
      ->transform([](std::string v) {
        const std::string suffix = "_perf";
        if (v.size() > suffix.size() && v.compare(v.size() - suffix.size(), suffix.size(), suffix) == 0)
          v.resize(v.size() - suffix.size());
        return v;
      });
  add_data_dir_option(*imp, cmd->common.data_dir);
  CLI::App* refit = sub->add_subcommand(
      "refit", "fit a calibration folder's samples again with this build and rewrite its profile (no GPU needed)");
  refit->add_option("DIR", cmd->refit_dir, "folder holding samples.csv and fingerprint.json of a calibration")
      ->required();
  refit->add_option("--system", cmd->system, "preset or system TOML the calibration refined");
  add_data_dir_option(*refit, cmd->common.data_dir);
  CLI::App* fit = sub->add_subcommand(
      "fit-runs",
      "fit a mechanism's parameter (host_dispatch_us, collective_base_us, collective_host_us, deepspeed_hook_us, "
      "comm_interference_fraction) on measured-run CSVs, leave one source out");
  fit->add_option("FILE", cmd->run_files, "measured-run CSV files (data/validation/SCHEMA.md)")->required();
  fit->add_option("--profile", cmd->fit_profile, "fit on the rows of this framework profile only (e.g. hf)");
  std::vector<std::string> fit_key_names;
  for (const auto& k : sim::fit_keys()) fit_key_names.emplace_back(k.name);
  fit->add_option("--key", cmd->fit_key,
                  "the [efficiency] key to fit: host_dispatch_us (default), collective_base_us, collective_host_us, "
                  "deepspeed_hook_us (in us) or comm_interference_fraction (a fraction below 1)")
      ->check(CLI::IsMember(fit_key_names));
  fit->add_option("--grid", cmd->fit_grid,
                  "values of --key to try, in its unit (default 0,10,15,...,50; give one for a fraction key)")
      ->delimiter(',')
      ->check(finite_non_negative());
  fit->add_option("--out", cmd->out, "write the fit as a profile overlay TOML");
  add_data_dir_option(*fit, cmd->common.data_dir);
  return [cmd, sub, imp, refit, fit]() -> int {
    reject_extras(*sub);
    // calibrate's results are the files it writes; its stdout is a report for people.
    for (const char* flag : {"--json", "--csv", "--html"})
      if (sub->count(flag) > 0)
        throw_usage(flag,
                    "calibrate writes its results as files (samples.csv, fingerprint.json, the profile TOML); "
                    "its stdout is a text report");
    if (imp->parsed()) return run_import(*cmd);
    if (fit->parsed()) return run_fit_runs(*cmd);
    if (refit->parsed()) return run_refit(*cmd);
    if (cmd->list) {
      print_families();
      return 0;
    }
    return run_calibration(*cmd);
  };
}

}  // namespace llmsim::cli
