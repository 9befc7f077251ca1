#pragma once
// The processes a calibration runs in: this process alone, or the ranks an MPI launcher started
// (`mpirun -np N llmsim calibrate --mpi …`, one process per GPU), so that a cluster is calibrated with
// the launcher its users already have and collectives are measured across nodes. No MPI type appears
// here: the MPI implementation lives in calibrate/mpi/ (its own target, LLMSIM_WITH_MPI), and a build
// without it says how to get one.
//
// Rank 0 owns the output (samples, profile, fingerprint) and decides the work; every rank takes part
// in the collectives; the other ranks write nothing.
#include <memory>
#include <string>
#include <vector>

#include "llmsim/calibrate/sample.h"

namespace llmsim::calibrate {

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Host name of every rank, in rank order (gathered once at start).
  virtual const std::vector<std::string>& hosts() const = 0;
  // Collectives over all ranks; every rank must call them in the same order.
  virtual void broadcast(std::string& bytes) = 0;  // rank 0's bytes to every rank
  virtual double max(double v) = 0;                // the largest v of all ranks, on every rank
  virtual bool all(bool v) = 0;                    // true on every rank when v is true on every rank
  // Ends every rank at once (a collective that failed on one rank would leave the others waiting).
  [[noreturn]] virtual void abort(int exit_code) = 0;

  // This rank's index among the ranks on its host: the GPU it uses.
  int local_rank() const;
  bool multi_process() const { return size() > 1; }
};

// This process alone (rank 0 of 1).
std::unique_ptr<ProcessGroup> single_process();

// True when this build can run under an MPI launcher.
bool mpi_built();

// The ranks of the MPI launcher that started this process (MPI_Init on first call). Throws a Usage
// error naming --mpi when the build has no MPI.
std::unique_ptr<ProcessGroup> mpi_process_group();

// Distinct hosts among ranks 0 .. group-1: the nodes a collective over the first `group` ranks spans.
int nodes_spanned(const std::vector<std::string>& hosts, int group);

// Items as text and back, so that rank 0 can send the work list to every rank (exact: the bytes are
// written as integers, the other fields verbatim). Throws Internal on a malformed text.
std::string pack_items(const std::vector<BenchItem>& items);
std::vector<BenchItem> unpack_items(const std::string& text);

}  // namespace llmsim::calibrate
