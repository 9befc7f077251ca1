// `llmsim validate FILE…`: predicts every row of measured-run CSV files and reports the errors, the
// rows that cannot be predicted yet, and summaries by workload, metric, system and feature. A row that
// breaks a schema rule is reported as an error row and the others are still predicted; a file that cannot
// be read at all is reported and the other files still run. Exit status: 0 every row predicted or
// unsupported, 7 some rows in error, 3/4 some file unreadable / missing (the most severe wins), 1 the
// --max-mape threshold exceeded (or no predicted row to hold to it).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>

#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_context.h"
#include "commands.h"
#include "llmsim/core/error.h"
#include "llmsim/core/suggest.h"
#include "llmsim/hardware/system_toml.h"
#include "llmsim/memory/memory_model.h"
#include "llmsim/report/report.h"
#include "llmsim/report/validate_document.h"
#include "llmsim/validate/honest_loso.h"
#include "llmsim/validate/measured_runs.h"
#include "llmsim/validate/regime_bands.h"
#include "llmsim/validate/source_facts.h"
#include "llmsim/validate/validation.h"

namespace llmsim::cli {

namespace {

// Exit status when rows (not whole files) break the schema's rules: the other rows were predicted.
constexpr int kRowsInErrorExit = 7;

struct ValidateCommand {
  CommonOptions common;  // --json, --csv, --data-dir and --overlay
  std::vector<std::string> files;
  bool loso = false;        // replace each row's band by its leave-one-source-out band
  std::string write_bands;  // --write-bands FILE
  double max_mape = -1;     // < 0: no threshold
  bool no_facts = false;    // --no-source-facts
};

std::string shorten(const std::string& s, std::size_t n) {
  if (s.size() <= n) return s;
  return s.substr(0, n - 3) + "...";
}

// A number for tables: 4 significant digits, no exponent for ordinary magnitudes.
std::string num(double x) {
  if (x == 0) return "0";
  const double a = std::fabs(x);
  if (a >= 1e6 || a < 1e-3) return fmt::format("{:.3e}", x);
  return fmt::format("{:.4g}", x);
}

std::string pct(double x) { return fmt::format("{:+.1f}%", x); }

// ---------------------------------------------------------------------------------------------
// Table

void print_rows(const std::vector<sim::ValidationRow>& rows) {
  std::size_t ok = 0;
  for (const auto& r : rows) ok += r.ok() ? 1 : 0;
  std::cout << fmt::format("predictions ({} rows)\n", ok);
  std::cout << fmt::format("{:<40} {:<20} {:>10} {:>10} {:>23} {:>9}  {}\n", "run_id", "metric", "measured",
                           "predicted", "[low .. high]", "error", "status");
  for (const auto& r : rows) {
    if (!r.ok()) continue;
    const std::string band = fmt::format("[{} .. {}]", num(r.low), num(r.high));
    const std::string err = r.metric == "fits" ? (r.error_pct == 0 ? "agree" : "DISAGREE") : pct(r.error_pct);
    std::cout << fmt::format("{:<40} {:<20} {:>10} {:>10} {:>23} {:>9}  {}{}\n", shorten(r.run_id, 40), r.metric,
                             num(r.measured), num(r.predicted), band, err, r.status,
                             r.note.empty() ? "" : ", " + r.note);
  }
}

// Files that could not be read, and rows that break a rule: each with its location and rule.
void print_errors(const std::vector<report::UnreadFile>& file_errors, const std::vector<sim::ValidationRow>& rows) {
  if (!file_errors.empty()) {
    std::cout << fmt::format("\nunreadable files ({})\n", file_errors.size());
    for (const auto& e : file_errors) std::cout << "  " << e.message << "\n";
  }
  const auto n = std::count_if(rows.begin(), rows.end(), [](const sim::ValidationRow& r) { return r.is_error(); });
  std::cout << fmt::format("\nrows in error ({})\n", n);
  if (n == 0) std::cout << "  none\n";
  for (const auto& r : rows)
    if (r.is_error())
      std::cout << fmt::format("  {}{}\n", r.run_id.empty() ? "" : r.run_id + ": ",
                               r.status.substr(sim::kValidationErrorPrefix.size()));
}

// Unsupported rows grouped by reason; every row named as run_id:metric.
void print_unsupported(const std::vector<sim::ValidationRow>& rows) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::string>> by_reason;
  for (const auto& r : rows) {
    if (r.ok() || r.is_error()) continue;
    const std::string reason = r.status.starts_with("unsupported: ") ? r.status.substr(13) : r.status;
    if (!by_reason.contains(reason)) order.push_back(reason);
    by_reason[reason].push_back(r.run_id + ":" + r.metric);
  }
  std::size_t n = 0;
  for (const auto& [k, v] : by_reason) n += v.size();
  std::cout << fmt::format("\nunsupported ({} rows, by reason)\n", n);
  if (n == 0) std::cout << "  none\n";
  for (const auto& reason : order) {
    const auto& ids = by_reason[reason];
    std::cout << fmt::format("  {} row{}: {}\n", ids.size(), ids.size() == 1 ? "" : "s", reason);
    std::string line = "     ";
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const std::string item = ids[i] + (i + 1 < ids.size() ? "," : "");
      if (line.size() > 5 && line.size() + 1 + item.size() > 110) {
        std::cout << line << "\n";
        line = "     ";
      }
      line += " " + item;
    }
    std::cout << line << "\n";
  }
}

std::string fits_cell(const sim::GroupStats& g) {
  return g.fits_total == 0 ? "-" : fmt::format("{}/{}", g.fits_agree, g.fits_total);
}

void print_stats_line(const sim::GroupStats& g) {
  const bool any = g.count > 0;
  std::cout << fmt::format("  {:<34} {:>5} {:>5} {:>9} {:>9} {:>9} {:>7} {:>8} {:>6} {:>6}\n", shorten(g.key, 34),
                           g.rows, g.count, any ? fmt::format("{:.1f}%", g.median_abs_pct) : "-",
                           any ? fmt::format("{:.1f}%", g.mape) : "-", any ? pct(g.mean_pct) : "-",
                           any ? fmt::format("{:.0f}%", 100 * g.in_band_fraction()) : "-", fits_cell(g), g.unsupported,
                           g.errors);
}

// What honest LOSO refitted: each constant on every source and the range of its refits without one.
void print_refits(const std::vector<sim::ConstantRefit>& refits) {
  std::cout << "\nhonest leave-one-source-out: no source facts; each source predicted with the fitted constants "
               "refitted without it\n";
  for (const auto& r : refits) {
    if (r.rows == 0) {
      std::cout << fmt::format("  {:<22} no rows to fit: the profile's value\n", r.key);
      continue;
    }
    std::cout << fmt::format(
        "  {:<22} {:>7g} on every source, {:g} to {:g} without one ({} sources moved it, {} keep the profile's "
        "value)\n",
        r.key, r.all_sources, r.low, r.high, r.sources_moved, r.sources_kept);
  }
}

void print_summary(const sim::ValidationSummary& s) {
  std::cout << "\nsummary (n: predicted rows other than fits; errors over them; in band: of those, the share whose "
               "measurement lies in the printed [low .. high]; fits as agree/total; unsup: valid rows not predicted; "
               "err: rows that break a rule)\n";
  const auto header = [](const std::string& by) {
    std::cout << fmt::format("  {:<34} {:>5} {:>5} {:>9} {:>9} {:>9} {:>7} {:>8} {:>6} {:>6}\n", by, "rows", "n",
                             "median|e|", "MAPE", "mean e", "in band", "fits", "unsup", "err");
  };
  header("overall");
  print_stats_line(s.overall);
  for (const auto& g : s.groupings) {
    std::cout << "\n";
    header("by " + g.by);
    for (const auto& x : g.groups) print_stats_line(x);
  }
  std::cout << "\nworst rows\n";
  if (s.overall.worst.empty()) std::cout << "  none\n";
  for (const auto& w : s.overall.worst)
    std::cout << fmt::format("  {:<40} {:<20} {:>9}\n", shorten(w.run_id, 40), w.metric, pct(w.error_pct));
}

}  // namespace

Runner add_validate_command(CLI::App& app) {
  auto cmd = std::make_shared<ValidateCommand>();
  CLI::App* sub = app.add_subcommand(
      "validate", "predict every row of measured-run CSV files (data/validation/SCHEMA.md) and report the errors");
  sub->allow_extras();
  sub->add_option("FILE", cmd->files, "measured-run CSV files (data/validation/SCHEMA.md)")->required();
  add_output_options(*sub, cmd->common);
  sub->add_flag("--loso", cmd->loso,
                "honest leave-one-source-out: predict every source as a user's own file (no source facts, the fitted "
                "constants refitted without it, a few minutes) and give each row the band of the other sources' "
                "residuals in its regime (10th-90th percentile, each source weighing alike); 'in band' becomes the "
                "coverage a new source can expect");
  sub->add_option("--max-mape", cmd->max_mape,
                  "exit 1 when the mean absolute % error of the predicted rows (fits excluded) exceeds this")
      ->type_name("PERCENT")
      ->check(finite_non_negative());
  add_data_dir_option(*sub, cmd->common.data_dir);
  add_overlay_option(*sub, cmd->common);
  sub->add_option("--write-bands", cmd->write_bands,
                  "write the measured / predicted bands of every regime of these rows (10th-90th percentile, at "
                  "least 8 rows of 3 sources) as a bands TOML that train, infer and serve print with --bands; with "
                  "--loso, from the honest residuals, each source weighing alike (how data/validation/bands.toml is "
                  "drawn)")
      ->type_name("FILE");
  sub->add_flag("--no-source-facts", cmd->no_facts,
                "ignore the <stem>.facts.toml beside each CSV (facts its sources state that rows cannot)");
  return [cmd, sub]() -> int {
    reject_extras(*sub);
    check_outputs(*sub, cmd->common, cmd->files);
    refuse_overwrite("--write-bands", cmd->write_bands, cmd->files);
    const std::string data = cmd->common.resolved_data_dir();
    if (!cmd->common.overlay.empty()) hardware::check_efficiency_overlay(cmd->common.overlay);
    if (cmd->loso && !cmd->common.overlay.empty())
      throw_usage("--overlay", "--loso refits the fitted constants itself (without each source); drop --overlay");
    // Honest LOSO predicts every row without facts: a row's own facts leave with its source.
    const bool use_facts = !cmd->no_facts && !cmd->loso;
    std::vector<sim::MeasuredRun> runs;
    std::vector<report::UnreadFile> file_errors;  // files that could not be read at all (the others still ran)
    for (const auto& f : cmd->files) {
      std::vector<sim::MeasuredRun> v;
      try {
        v = sim::load_measured_runs(f, data, use_facts);
      } catch (const Error& e) {
        // The file cannot be read; the other files still run.
        std::cerr << "llmsim: validate: " << e.what() << "\n";
        file_errors.push_back({f, exit_code(e.kind()), e.what()});
        continue;
      }
      const auto bad = std::count_if(v.begin(), v.end(), [](const sim::MeasuredRun& r) { return !r.error.empty(); });
      std::cerr << fmt::format("llmsim: validate: {} rows from {}{}\n", v.size(), f,
                               bad > 0 ? fmt::format(" ({} in error)", bad) : "");
      if (const std::string facts = use_facts ? sim::find_source_facts(f, data) : ""; !facts.empty()) {
        const auto n = std::count_if(v.begin(), v.end(), [](const sim::MeasuredRun& r) { return r.source_facts > 0; });
        std::cerr << fmt::format("llmsim: validate: source facts from {} apply to {} of its rows\n", facts, n);
      }
      for (auto& r : v) runs.push_back(std::move(r));
    }
    std::vector<sim::ValidationRow> rows;
    std::vector<sim::ConstantRefit> refits;
    if (cmd->loso) {
      sim::HonestLosoOptions lo;
      lo.scratch_dir =
          (std::filesystem::temp_directory_path() / fmt::format("llmsim-loso-{}", static_cast<long>(::getpid())))
              .string();
      lo.bands.weigh_sources = true;
      lo.progress = [](const std::string& line) { std::cerr << "llmsim: validate --loso: " << line << "\n"; };
      // The overlays go with the command, whether it ends or throws.
      struct RemoveScratch {
        std::string dir;
        ~RemoveScratch() {
          std::error_code ec;
          std::filesystem::remove_all(dir, ec);
        }
      } scratch{lo.scratch_dir};
      sim::HonestLosoResult h = sim::honest_loso(runs, data, lo);
      rows = std::move(h.rows);
      refits = std::move(h.refits);
    } else {
      rows = sim::predict_rows(runs, data, cmd->common.overlay);
    }
    if (!cmd->write_bands.empty()) {
      std::vector<std::string> names;
      for (const auto& f : cmd->files) names.push_back(std::filesystem::path(f).filename().string());
      // Under --loso the bands are drawn as the loso bands are: each source weighing alike, widened for few sources.
      sim::LosoOptions band_options;
      band_options.weigh_sources = cmd->loso;
      sim::RegimeBands b = sim::draw_regime_bands(rows, band_options,
                                                  fmt::format("llmsim validate{} --write-bands on {} ({} rows)",
                                                              cmd->loso ? " --loso" : "", join(names), rows.size()));
      b.residuals = cmd->loso ? sim::BandResiduals::HonestLoso : sim::BandResiduals::InSample;
      sim::write_regime_bands(cmd->write_bands, b);
      std::cerr << fmt::format("llmsim: validate: wrote {} regime bands to {}\n", b.bands.size(), cmd->write_bands);
    }
    const sim::ValidationSummary s = sim::summarize(rows);

    emit(cmd->common, report::validate_document(cmd->files, file_errors, rows, s, cmd->loso ? &refits : nullptr), [&] {
      std::cout << fmt::format("llmsim validate: {} rows from {} file{}\n\n", rows.size(),
                               cmd->files.size() - file_errors.size(),
                               cmd->files.size() - file_errors.size() == 1 ? "" : "s");
      print_rows(rows);
      print_errors(file_errors, rows);
      print_unsupported(rows);
      print_summary(s);
      if (cmd->loso) print_refits(refits);
    });
    // The most severe outcome decides: an unreadable file, then rows in error, then the MAPE threshold.
    if (!file_errors.empty()) {
      int code = 0;
      for (const auto& e : file_errors) code = std::max(code, e.exit_code);
      std::cerr << fmt::format("llmsim: validate: {} of {} files could not be read\n", file_errors.size(),
                               cmd->files.size());
      return code;
    }
    if (s.overall.errors > 0) {
      std::cerr << fmt::format(
          "llmsim: validate: {} rows break a rule of the schema (listed under 'rows in error'); the "
          "other {} were processed\n",
          s.overall.errors, rows.size() - s.overall.errors);
      return kRowsInErrorExit;
    }
    if (cmd->max_mape >= 0 && s.overall.count == 0) {
      // A gate that nothing was measured against is not passed (a header-only file, only fits rows, only
      // unsupported rows).
      std::cerr << fmt::format("llmsim: validate: no predicted rows to hold to --max-mape {}: the gate is not passed\n",
                               cmd->max_mape);
      return 1;
    }
    if (cmd->max_mape >= 0 && s.overall.mape > cmd->max_mape) {
      std::cerr << fmt::format("llmsim: validate: MAPE {:.2f}% exceeds --max-mape {}\n", s.overall.mape, cmd->max_mape);
      return 1;
    }
    return 0;
  };
}

}  // namespace llmsim::cli
