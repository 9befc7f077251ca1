// process_group.h for a build without MPI (LLMSIM_WITH_MPI=OFF): --mpi says how to get a build with it.
#include "llmsim/calibrate/process_group.h"
#include "llmsim/core/error.h"

namespace llmsim::calibrate {

bool mpi_built() { return false; }

std::unique_ptr<ProcessGroup> mpi_process_group() {
  throw_usage("--mpi",
              "this build has no MPI support (configure with MPI found, e.g. Debian's libopenmpi-dev, or "
              "-DLLMSIM_WITH_MPI=ON); without --mpi, collectives are measured over this node's GPUs");
}

}  // namespace llmsim::calibrate
