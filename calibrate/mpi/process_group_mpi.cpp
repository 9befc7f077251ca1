// process_group.h under an MPI launcher: the only file of llmsim that includes mpi.h. MPI_Init on the
// first call, MPI_Finalize when the group is destroyed (unless something else initialised MPI).
#include <mpi.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "llmsim/calibrate/process_group.h"
#include "llmsim/core/error.h"

namespace llmsim::calibrate {

namespace {

void check(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw Error(ErrorKind::Internal, Location{}, std::string("MPI call failed: ") + call + ": " + text);
}

class MpiGroup final : public ProcessGroup {
 public:
  MpiGroup() {
    int ready = 0;
    check(MPI_Initialized(&ready), "MPI_Initialized");
    if (!ready) {
      check(MPI_Init(nullptr, nullptr), "MPI_Init");
      owns_ = true;
    }
    check(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
    check(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
    // Every rank's host name, fixed width so that one MPI_Allgather moves them.
    char name[MPI_MAX_PROCESSOR_NAME] = {};
    int len = 0;
    check(MPI_Get_processor_name(name, &len), "MPI_Get_processor_name");
    std::vector<char> all(static_cast<std::size_t>(size_) * MPI_MAX_PROCESSOR_NAME, '\0');
    check(MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
                        MPI_COMM_WORLD),
          "MPI_Allgather");
    for (int r = 0; r < size_; ++r)
      hosts_.emplace_back(all.data() + static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME);
  }
  ~MpiGroup() override {
    if (owns_) MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const std::vector<std::string>& hosts() const override { return hosts_; }

  void broadcast(std::string& bytes) override {
    std::uint64_t n = bytes.size();
    check(MPI_Bcast(&n, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD), "MPI_Bcast");
    bytes.resize(n);
    if (n > 0) check(MPI_Bcast(bytes.data(), static_cast<int>(n), MPI_CHAR, 0, MPI_COMM_WORLD), "MPI_Bcast");
  }
  double max(double v) override {
    double out = v;
    check(MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
    return out;
  }
  bool all(bool v) override {
    int in = v ? 1 : 0, out = 0;
    check(MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD), "MPI_Allreduce");
    return out == 1;
  }
  [[noreturn]] void abort(int exit_code) override {
    MPI_Abort(MPI_COMM_WORLD, exit_code);
    std::_Exit(exit_code);
  }

 private:
  int rank_ = 0, size_ = 1;
  bool owns_ = false;
  std::vector<std::string> hosts_;
};

}  // namespace

bool mpi_built() { return true; }

std::unique_ptr<ProcessGroup> mpi_process_group() { return std::make_unique<MpiGroup>(); }

}  // namespace llmsim::calibrate
