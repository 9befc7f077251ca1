// llmsim entry point: every command but `calibrate`, which runs as its own executable, llmsim-calibrate,
// beside this one (calibrate_main.cpp): only calibration needs CUDA, cuBLAS, NCCL and MPI, and an executable
// that links them takes ~80 ms and ~220 MiB to start even for --version (issue 18). Errors map to exit
// codes in run_commands (run_commands.h lists them); the commands themselves run in run_llmsim (llmsim_app.h).
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>

#include <unistd.h>

#include "cli_context.h"
#include "llmsim/core/error.h"
#include "llmsim_app.h"

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
  return llmsim::cli::run_llmsim(argc, argv);
}
