#pragma once
// Import of NVIDIA nccl-tests output (all_reduce_perf, all_gather_perf, reduce_scatter_perf,
// alltoall_perf, broadcast_perf, sendrecv_perf) as collective samples, so communication can be
// calibrated from logs users already have. Reads the text output (header lines starting with '#', then
// one row per size: size count type redop root time algbw busbw #wrong time algbw busbw #wrong) and the
// JSON output of newer nccl-tests.
#include <string>
#include <vector>

#include "llmsim/calibrate/sample.h"

namespace llmsim::calibrate {

struct NcclTestsLog {
  std::string collective;            // sample family, e.g. "nccl_all_reduce"
  int ranks = 0;                     // GPUs in the run
  int nodes = 1;                     // distinct hosts the ranks ran on (1 when the log names no host)
  std::vector<Sample> samples;       // one per size: bytes = size, time_s = out-of-place time, group = ranks,
                                     // nodes = nodes
  std::vector<std::string> derived;  // what was not printed but derived or given ("16 ranks from size / count")
  std::vector<std::string> gpus;     // device names the log prints (Rank lines, JSON devices), distinct
};

// What the user states about a run the paste leaves out (0 = not stated): `--ranks`, `--nodes`.
struct NcclTestsOverrides {
  int ranks = 0;
  int nodes = 0;
  std::string collective;  // `--collective`: the nccl-tests binary ("all_reduce" or "all_reduce_perf"), "" = read it
};

// Parses one log file. Unknown formats, a log without rows, or malformed rows are Input errors naming
// file:line; a missing file is NotFound. Partial pastes are read as far as they tell: a table whose
// '#' prefixes were lost (dstack prints the header without them), and a log without '#  Rank' lines or
// the 'nThread … nGpus' line, whose rank count an all_gather or reduce_scatter table still gives (nccl-tests
// prints size = the gathered / scattered buffer and count = one rank's elements: ranks = size / (count x
// type size)). The collective is the one the log names (its command line or "Collective test starting"),
// else the one its rows show (a reduction op with size = count x type size is all_reduce, with size = n x
// count x type size reduce_scatter), else the file name's; the rows overrule a file name that disagrees.
// `overrides` replace what the log says or lacks, each noted in `derived`.
NcclTestsLog import_nccl_tests(const std::string& path, const NcclTestsOverrides& overrides = {});

}  // namespace llmsim::calibrate
