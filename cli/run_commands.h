#pragma once
// The one mapping from errors to exit codes, for both executables (llmsim, and llmsim-calibrate that
// `llmsim calibrate` runs): parses the command line, runs the chosen subcommand, and turns what it throws
// into a message on stderr and the exit code of its kind (0 ok/fits, 1 does not fit or is infeasible,
// 2 usage, 3 bad input, 4 not found, 5 no device, 70 internal; `search` / `plan` also 6 for an empty
// space and 130 when interrupted; `validate` 7 when some rows break the schema).
#include <CLI/CLI.hpp>

#include <map>
#include <string>
#include <vector>

#include "commands.h"

namespace llmsim::cli {

// `commands`: every command name the user may type (those of `runners` and any run by another
// executable), for the did-you-mean of a mistyped one.
int run_commands(CLI::App& app, const std::map<std::string, Runner>& runners, const std::vector<std::string>& commands,
                 int argc, char** argv);

}  // namespace llmsim::cli
