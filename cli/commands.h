#pragma once
// The subcommands. Each registers its flags on a CLI11 subcommand and returns the function that runs
// it after parsing (returning the process exit code; errors are thrown as llmsim::Error).
#include <CLI/CLI.hpp>

#include <functional>

namespace llmsim::cli {

using Runner = std::function<int()>;

Runner add_memory_command(CLI::App& app);
Runner add_list_command(CLI::App& app);
Runner add_show_command(CLI::App& app);
Runner add_train_command(CLI::App& app);
Runner add_infer_command(CLI::App& app);
// argv is recorded in the calibration fingerprint.
Runner add_calibrate_command(CLI::App& app, int argc, char** argv);
Runner add_validate_command(CLI::App& app);
Runner add_serve_command(CLI::App& app);
// `search train` (what-if search) and `plan train` / `plan serve` (capacity planning).
Runner add_search_command(CLI::App& app);
Runner add_plan_command(CLI::App& app);
// The `serve` subcommand of `llmsim plan` (registered by add_plan_command).
Runner add_plan_serve_subcommand(CLI::App& plan_top);

}  // namespace llmsim::cli
