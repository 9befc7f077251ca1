// llmsim entry point: every command but `calibrate`, which runs as its own executable, llmsim-calibrate,
// beside this one (calibrate_main.cpp): only calibration needs CUDA, cuBLAS, NCCL and MPI, and an executable
// that links them takes ~80 ms and ~220 MiB to start even for --version (issue 18). Errors map to exit
// codes in run_commands (run_commands.h lists them).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <unistd.h>

#include "cli_context.h"
#include "commands.h"
#include "llmsim/core/error.h"
#include "run_commands.h"

namespace {

// `llmsim calibrate ...` becomes `llmsim-calibrate calibrate ...`, the same process (exec), so that an MPI
// launcher's ranks, signals and the exit code are the calibration executable's own.
int run_calibrate(char** argv) {
  const std::filesystem::path tool = llmsim::cli::executable_dir(argv[0]) / "llmsim-calibrate";
  ::execv(tool.c_str(), argv);
  std::cerr << "llmsim: error: calibrate runs " << tool.string()
            << ", which cannot be started: " << std::strerror(errno)
            << " (build or install the llmsim-calibrate target beside llmsim)\n";
  return llmsim::exit_code(llmsim::ErrorKind::NotFound);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "calibrate") return run_calibrate(argv);
  CLI::App app{"llmsim: analytical performance and memory simulator for LLM training, fine-tuning and inference"};
  app.set_version_flag("--version", std::string(LLMSIM_VERSION));
  app.require_subcommand(1);
  std::map<std::string, llmsim::cli::Runner> runners;
  runners["memory"] = llmsim::cli::add_memory_command(app);
  runners["list"] = llmsim::cli::add_list_command(app);
  runners["show"] = llmsim::cli::add_show_command(app);
  runners["train"] = llmsim::cli::add_train_command(app);
  runners["infer"] = llmsim::cli::add_infer_command(app);
  runners["validate"] = llmsim::cli::add_validate_command(app);
  runners["serve"] = llmsim::cli::add_serve_command(app);
  runners["search"] = llmsim::cli::add_search_command(app);
  runners["plan"] = llmsim::cli::add_plan_command(app);
  // Listed in --help; never parsed here (run_calibrate took it above).
  app.add_subcommand("calibrate",
                     "measure this machine or import measurements, fit a hardware profile (runs llmsim-calibrate)");
  std::vector<std::string> commands;
  for (const auto& [n, r] : runners) commands.push_back(n);
  commands.push_back("calibrate");
  std::sort(commands.begin(), commands.end());
  return llmsim::cli::run_commands(app, runners, commands, argc, argv);
}
