#include "run_commands.h"

#include <iostream>

#include "llmsim/core/error.h"
#include "llmsim/core/suggest.h"

namespace llmsim::cli {

int run_commands(CLI::App& app, const std::map<std::string, Runner>& runners, const std::vector<std::string>& commands,
                 int argc, char** argv) {
  // An unknown first word is a mistyped command: say so, with a did-you-mean, instead of CLI11's
  // "A subcommand is required".
  if (argc > 1 && argv[1][0] != '-' && runners.count(argv[1]) == 0) {
    std::cerr << "llmsim: error: unknown command '" << argv[1] << "'" << did_you_mean(argv[1], commands)
              << "; commands: " << join(commands) << "\n";
    return exit_code(ErrorKind::Usage);
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
    return exit_code(ErrorKind::Usage);
  } catch (const Error& e) {
    std::cerr << "llmsim: error: " << e.what() << "\n";
    return exit_code(e.kind());
  } catch (const std::exception& e) {
    std::cerr << "llmsim: internal error: " << e.what() << "\n";
    return exit_code(ErrorKind::Internal);
  }
}

}  // namespace llmsim::cli
