// llmsim entry point: parses the command line, runs one subcommand, and alone maps errors to exit codes
// (0 ok/fits, 1 result does not fit or is infeasible, 2 usage, 3 bad input, 4 not found, 5 no device,
// 70 internal). `search` / `plan` also return 6 for an empty search space and 130 when interrupted;
// `validate` returns 7 when some rows (not whole files) break the schema and the others were predicted.
#include <CLI/CLI.hpp>

#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "commands.h"
#include "llmsim/core/error.h"
#include "llmsim/core/suggest.h"

int main(int argc, char** argv) {
  CLI::App app{"llmsim: analytical performance and memory simulator for LLM training, fine-tuning and inference"};
  app.set_version_flag("--version", std::string(LLMSIM_VERSION));
  app.require_subcommand(1);
  std::map<std::string, llmsim::cli::Runner> runners;
  runners["memory"] = llmsim::cli::add_memory_command(app);
  runners["list"] = llmsim::cli::add_list_command(app);
  runners["show"] = llmsim::cli::add_show_command(app);
  runners["train"] = llmsim::cli::add_train_command(app);
  runners["infer"] = llmsim::cli::add_infer_command(app);
  runners["calibrate"] = llmsim::cli::add_calibrate_command(app, argc, argv);
  runners["validate"] = llmsim::cli::add_validate_command(app);
  runners["serve"] = llmsim::cli::add_serve_command(app);
  runners["search"] = llmsim::cli::add_search_command(app);
  runners["plan"] = llmsim::cli::add_plan_command(app);
  // An unknown first word is a mistyped command: say so, with a did-you-mean, instead of CLI11's
  // "A subcommand is required".
  if (argc > 1 && argv[1][0] != '-' && runners.count(argv[1]) == 0) {
    std::vector<std::string> names;
    for (const auto& [n, r] : runners) names.push_back(n);
    std::cerr << "llmsim: error: unknown command '" << argv[1] << "'" << llmsim::did_you_mean(argv[1], names)
              << "; commands: " << llmsim::join(names) << "\n";
    return llmsim::exit_code(llmsim::ErrorKind::Usage);
  }
  try {
    app.parse(argc, argv);
    for (const auto* sub : app.get_subcommands()) return runners.at(sub->get_name())();
    return 2;
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "llmsim: error: " << e.what() << "\n";
    return llmsim::exit_code(llmsim::ErrorKind::Usage);
  } catch (const llmsim::Error& e) {
    std::cerr << "llmsim: error: " << e.what() << "\n";
    return llmsim::exit_code(e.kind());
  } catch (const std::exception& e) {
    std::cerr << "llmsim: internal error: " << e.what() << "\n";
    return llmsim::exit_code(llmsim::ErrorKind::Internal);
  }
}
