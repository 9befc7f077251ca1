// Loads a shipped model preset through the installed library and prints its exact parameter count: the
// package's headers, libraries and dependencies resolve for a project outside llmsim.
#include <cstdio>
#include <string>

#include "llmsim/model/param_count.h"
#include "llmsim/model/presets.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: llmsim_consumer DATA_DIR\n");
    return 2;
  }
  const llmsim::model::ModelSpec m = llmsim::model::resolve_model("llama2-7b", argv[1]);
  std::printf("llama2-7b: %lld parameters\n", static_cast<long long>(llmsim::model::count_params(m).total));
  return 0;
}
