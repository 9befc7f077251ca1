#pragma once
// The llmsim command line as a function: every command but `calibrate` (which runs as llmsim-calibrate), parsed
// and run in this process, errors mapped to exit codes (run_commands.h). The executable's main() calls it; so
// does the Python module (python/module.cpp), which captures what it prints.
namespace llmsim::cli {

// Runs `argv[1..argc)` as `llmsim ...` would; returns the exit code. argv[0] names the program.
int run_llmsim(int argc, char** argv);

}  // namespace llmsim::cli
