// llmsim-calibrate: the `calibrate` command alone, the one executable that links CUDA, cuBLAS, NCCL and MPI
// (when built with them). `llmsim calibrate ...` runs it as `llmsim-calibrate calibrate ...`; run directly,
// it takes the same arguments.
#include <CLI/CLI.hpp>

#include <map>
#include <string>
#include <vector>

#include "commands.h"
#include "run_commands.h"

int main(int argc, char** argv) {
  CLI::App app{"llmsim calibrate: measure this machine or import measurements, fit a hardware profile"};
  app.set_version_flag("--version", std::string(LLMSIM_VERSION));
  app.require_subcommand(1);
  std::map<std::string, llmsim::cli::Runner> runners;
  runners["calibrate"] = llmsim::cli::add_calibrate_command(app, argc, argv);
  return llmsim::cli::run_commands(app, runners, {"calibrate"}, argc, argv);
}
