#include "llmsim_app.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "commands.h"
#include "run_commands.h"

namespace llmsim::cli {

int run_llmsim(int argc, char** argv) {
  CLI::App app{"llmsim: analytical performance and memory simulator for LLM training, fine-tuning and inference"};
  app.set_version_flag("--version", std::string(LLMSIM_VERSION));
  app.require_subcommand(1);
  std::map<std::string, Runner> runners;
  runners["memory"] = add_memory_command(app);
  runners["list"] = add_list_command(app);
  runners["show"] = add_show_command(app);
  runners["train"] = add_train_command(app);
  runners["infer"] = add_infer_command(app);
  runners["validate"] = add_validate_command(app);
  runners["serve"] = add_serve_command(app);
  runners["search"] = add_search_command(app);
  runners["plan"] = add_plan_command(app);
  // Listed in --help; never parsed here (the executable's main runs llmsim-calibrate for it).
  app.add_subcommand("calibrate",
                     "measure this machine or import measurements, fit a hardware profile (runs llmsim-calibrate)");
  std::vector<std::string> commands;
  for (const auto& [n, r] : runners) commands.push_back(n);
  commands.push_back("calibrate");
  std::sort(commands.begin(), commands.end());
  return run_commands(app, runners, commands, argc, argv);
}

}  // namespace llmsim::cli
