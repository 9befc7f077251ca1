// Import of nccl-tests outputs (tests/data/calibration/, formats as printed by NVIDIA/nccl-tests).
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "llmsim/calibrate/fit.h"
#include "llmsim/calibrate/nccl_tests_import.h"
#include "llmsim/calibrate/profile_writer.h"
#include "llmsim/hardware/system_toml.h"
#include "test_util.h"

namespace cal = llmsim::calibrate;
namespace lt = llmsim::test;
using llmsim::ErrorKind;

namespace {

std::string data(const std::string& name) { return std::string(LLMSIM_TEST_DATA_DIR) + "/calibration/" + name; }

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Replaces the first occurrence of `from` in `text`; fails the test when there is none.
std::string replace(std::string text, const std::string& from, const std::string& to) {
  const auto pos = text.find(from);
  REQUIRE(pos != std::string::npos);
  return text.replace(pos, from.size(), to);
}

// 1-based line of the first occurrence of `what`.
int line_of(const std::string& text, const std::string& what) {
  const auto pos = text.find(what);
  REQUIRE(pos != std::string::npos);
  int line = 1;
  for (std::size_t i = 0; i < pos; ++i) line += text[i] == '\n';
  return line;
}

}  // namespace

TEST_CASE("nccl-tests: all_reduce_perf on 8 GPUs (classic layout, collective from the file name)") {
  const auto log = cal::import_nccl_tests(data("all_reduce_perf_8xA100.txt"));
  CHECK(log.collective == "nccl_all_reduce");
  CHECK(log.ranks == 8);
  CHECK(log.nodes == 1);              // every rank on dgx-a100-01
  REQUIRE(log.samples.size() == 25);  // 8 B .. 128 MiB, factor 2
  const auto& first = log.samples.front();
  CHECK(first.item.bench == "nccl_all_reduce");
  CHECK(first.item.dtype == "fp32");
  CHECK(first.item.bytes == 8);
  CHECK(first.item.group == 8);
  CHECK(first.item.nodes == 1);
  CHECK(first.time_s == doctest::Approx(28.00e-6));
  CHECK(first.repeats == 20);
  CHECK(first.flops == 0);
  // Out-of-place time (922.8 us), not the in-place one (932.1 us).
  const auto& last = log.samples.back();
  CHECK(last.item.bytes == 134217728);
  CHECK(last.time_s == doctest::Approx(922.8e-6));
  CHECK(log.samples[15].item.bytes == 262144);
  CHECK(log.samples[15].time_s == doctest::Approx(29.75e-6));

  // The samples fit: ~28 us latency, ~150 GB/s algorithm bandwidth.
  std::vector<double> bytes, secs;
  for (const auto& s : log.samples) {
    bytes.push_back(s.item.bytes);
    secs.push_back(s.time_s);
  }
  const auto fit = cal::fit_alpha_beta(bytes, secs);
  CHECK(fit.alpha_s == doctest::Approx(28e-6).epsilon(0.02));
  CHECK(fit.bandwidth_Bps == doctest::Approx(150e9).epsilon(0.03));
}

TEST_CASE("nccl-tests: alltoall_perf over MPI, 2 x 8 GPUs (newer layout, collective from the log)") {
  const auto log = cal::import_nccl_tests(data("alltoall_2x8xH100.txt"));
  CHECK(log.collective == "nccl_all_to_all");
  CHECK(log.ranks == 16);  // 16 "#  Rank" lines, although nGpus is 8 per process
  REQUIRE(log.samples.size() == 11);
  CHECK(log.samples.front().item.dtype == "bf16");
  CHECK(log.samples.front().item.bytes == 1024);
  CHECK(log.samples.front().time_s == doctest::Approx(45.03e-6));
  CHECK(log.samples.back().item.bytes == 1073741824.0);
  CHECK(log.samples.back().time_s == doctest::Approx(28301.4e-6));
  CHECK(log.samples.back().item.group == 16);
  CHECK(log.nodes == 2);  // h100-node-a and h100-node-b
  CHECK(log.samples.back().item.nodes == 2);
  CHECK(log.samples.back().repeats == 50);
}

TEST_CASE("nccl-tests: all_reduce_perf over MPI on 2 hosts x 8 GPUs imports as 16 ranks on 2 nodes") {
  const auto log = cal::import_nccl_tests(data("all_reduce_perf_2x8xA100.txt"));
  CHECK(log.collective == "nccl_all_reduce");
  CHECK(log.ranks == 16);
  CHECK(log.nodes == 2);
  REQUIRE(log.samples.size() == 28);  // 8 B .. 1 GiB, factor 2
  for (const auto& s : log.samples) {
    CHECK(s.item.group == 16);
    CHECK(s.item.nodes == 2);
  }
  CHECK(log.samples.back().item.bytes == 1073741824.0);
  CHECK(log.samples.back().time_s == doctest::Approx(15513e-6));
  // The key keeps it apart from a 16-GPU run on one node (resume, SampleLog::done).
  CHECK(log.samples.back().item.key().ends_with("|16|n2"));

  // The rank lines decide the node count: the same log with every rank on one host is one node.
  const std::string text = slurp(data("all_reduce_perf_2x8xA100.txt"));
  std::string one_host = text;
  for (auto pos = one_host.find("dgx-a100-02"); pos != std::string::npos; pos = one_host.find("dgx-a100-02"))
    one_host.replace(pos, 11, "dgx-a100-01");
  const auto single = cal::import_nccl_tests(lt::write_temp("all_reduce_perf_1x16.txt", one_host));
  CHECK(single.ranks == 16);
  CHECK(single.nodes == 1);
  CHECK(single.samples.front().item.nodes == 1);

  // Fitted against a DGX A100 profile: a multi-node curve, not an NVSwitch one, and it sets the network
  // fraction. Expected value: the hierarchical all-reduce of sim/cost/comm_cost.cpp solved by hand here, with
  // the intra-node parts at the default fabric fraction (no in-node fit in these samples).
  const auto base = llmsim::hardware::resolve_system("dgx-a100-80gb", LLMSIM_DATA_DIR);
  const auto fits = cal::fit_samples(log.samples, base);
  CHECK(fits.all_reduce.empty());
  REQUIRE(fits.all_reduce_across_nodes.count({16, 2}) == 1);
  REQUIRE(fits.network.has_value());
  const double busbw = fits.all_reduce_across_nodes.at({16, 2}).bandwidth_Bps;
  CHECK(busbw == doctest::Approx(130e9).epsilon(0.02));  // the fixture's large-message bus bandwidth
  const double fabric = base.node.fabric_bandwidth_Bps * base.efficiency.fabric_bandwidth.value;
  const double share = base.network.nics_per_node * base.network.nic_bandwidth_Bps / base.node.gpus_per_node;
  const double intra = 2 * (7.0 / 8) / fabric;                    // reduce-scatter + all-gather over 8, s per byte
  const double measured = 2 * (15.0 / 16) / busbw;                // s per byte of the all-reduced tensor
  const double network = 2 * (1.0 / 2) / 8 / (measured - intra);  // inter all-reduce of B/8 over 2 nodes
  CHECK(fits.network->value == doctest::Approx(network / share).epsilon(1e-6));
  CHECK(fits.network->value > 0.5);
  CHECK(fits.network->value < 1.0);
}

TEST_CASE("nccl-tests: sendrecv_perf JSON output (-J)") {
  const auto log = cal::import_nccl_tests(data("sendrecv_perf_2xRTX4090.json"));
  CHECK(log.collective == "nccl_send_recv");
  CHECK(log.ranks == 2);
  REQUIRE(log.samples.size() == 13);  // 8 B .. 128 MiB (max 256 MiB), factor 4
  CHECK(log.samples.front().item.bytes == 8);
  CHECK(log.samples.front().item.dtype == "fp32");
  CHECK(log.samples.front().time_s == doctest::Approx(9.500364e-6));
  CHECK(log.samples.back().item.bytes == 134217728.0);
  CHECK(log.samples.back().time_s == doctest::Approx((9.5 + 134217728 / 22e3) * 1e-6));
  CHECK(log.samples.back().item.group == 2);
  CHECK(log.samples.back().repeats == 20);
  CHECK(log.nodes == 1);  // one device entry, on gpu-box
  CHECK(log.samples.back().item.nodes == 1);

  // Two processes of one GPU each on two hosts: the device entries' host names give the nodes.
  const std::string text = slurp(data("sendrecv_perf_2xRTX4090.json"));
  const std::string device0 = R"({"rank":0,"group":0,"pid":5120,"hostname":"gpu-box","device":0,)"
                              R"("device_hex":"0000:01:00","device_info":"NVIDIA GeForce RTX 4090"})";
  const std::string device1 = R"({"rank":1,"group":0,"pid":7345,"hostname":"gpu-box-2","device":0,)"
                              R"("device_hex":"0000:01:00","device_info":"NVIDIA GeForce RTX 4090"})";
  const std::string two_hosts = replace(replace(text, device0, device0 + "," + device1), "\"ngpus\":2", "\"ngpus\":1");
  const auto across = cal::import_nccl_tests(lt::write_temp("sendrecv_perf_2hosts.json", two_hosts));
  CHECK(across.ranks == 2);
  CHECK(across.nodes == 2);
  CHECK(across.samples.front().item.nodes == 2);
  // Without host names (older JSON writers) the run counts as one node.
  const std::string no_host = replace(text, R"("hostname":"gpu-box",)", "");
  CHECK(cal::import_nccl_tests(lt::write_temp("sendrecv_perf_nohost.json", no_host)).nodes == 1);
}

TEST_CASE("nccl-tests: the collective comes from the log, else the file name, else an error saying how") {
  const std::string text = slurp(data("all_reduce_perf_8xA100.txt"));
  // No binary name anywhere and rows that do not tell (no reduction op): error naming the convention.
  std::string a2a_unnamed = slurp(data("alltoall_2x8xH100.txt"));
  for (const char* line :
       {"# Collective test starting: alltoall_perf\n", "# Collective test concluded: alltoall_perf\n"})
    if (const auto at = a2a_unnamed.find(line); at != std::string::npos)
      a2a_unnamed.erase(at, std::string(line).size());
  const auto e = lt::error_of([&] { cal::import_nccl_tests(lt::write_temp("nccl-run.log", a2a_unnamed)); });
  CHECK(e.kind() == ErrorKind::Input);
  CHECK(e.message().find("all_reduce_perf.txt") != std::string::npos);
  // The launch command in the log names it.
  const auto cmd = cal::import_nccl_tests(
      lt::write_temp("nccl-run-cmd.log", "+ mpirun -np 1 ./build/all_reduce_perf -b 8 -e 128M -f 2 -g 8\n" + text));
  CHECK(cmd.collective == "nccl_all_reduce");
  CHECK(cmd.samples.size() == 25);
  // File names with other spellings.
  CHECK(cal::import_nccl_tests(lt::write_temp("allreduce-8gpu.txt", text)).collective == "nccl_all_reduce");
  // A file name that disagrees with the rows (an all_reduce table named reduce_scatter) loses to them.
  CHECK(cal::import_nccl_tests(lt::write_temp("nccl_reduce_scatter.txt", text)).collective == "nccl_all_reduce");
  // "# Collective test starting:" wins over the file name.
  const std::string a2a = slurp(data("alltoall_2x8xH100.txt"));
  CHECK(cal::import_nccl_tests(lt::write_temp("all_gather_perf.txt", a2a)).collective == "nccl_all_to_all");
  // A binary not supported for calibration.
  const auto r = lt::error_of([&] {
    const std::string reduce = replace(replace(a2a, "starting: alltoall_perf", "starting: reduce_perf"),
                                       "concluded: alltoall_perf", "concluded: reduce_perf");
    cal::import_nccl_tests(lt::write_temp("r.txt", reduce));
  });
  CHECK(r.kind() == ErrorKind::Input);
  CHECK(r.message().find("not supported") != std::string::npos);
}

TEST_CASE("nccl-tests: rows without a reduction op cannot be an all_reduce log") {
  std::string a2a = slurp(data("alltoall_2x8xH100.txt"));
  a2a = replace(a2a, "# Collective test starting: alltoall_perf\n", "");
  a2a = replace(a2a, "# Collective test concluded: alltoall_perf\n", "");
  const std::string path = lt::write_temp("all_reduce_perf.txt", a2a);
  const auto e = lt::error_of([&] { cal::import_nccl_tests(path); });
  CHECK(e.kind() == ErrorKind::Input);
  CHECK(e.where().file == path);
  CHECK(e.where().line == line_of(a2a, "        1024            32"));
}

TEST_CASE("nccl-tests: launcher prefixes and old layouts") {
  // Open MPI --tag-output prefixes every line.
  const std::string text = slurp(data("all_reduce_perf_8xA100.txt"));
  std::string tagged;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) tagged += "[1,0]<stdout>:" + line + "\n";
  const auto log = cal::import_nccl_tests(lt::write_temp("all_reduce_perf_tagged.txt", tagged));
  CHECK(log.ranks == 8);
  CHECK(log.samples.size() == 25);
  CHECK(log.samples.back().time_s == doctest::Approx(922.8e-6));

  // nccl-tests 2.0-era alltoall_perf: no root column, an empty redop (no token), "error" columns.
  const std::string old =
      "# nThread 1 nGpus 4 minBytes 1048576 maxBytes 4194304 step: 2(factor) warmup iters: 5 iters: 20 validation: 1 \n"
      "#\n"
      "# Using devices\n"
      "#   Rank  0 Pid  31337 on      node1 device  0 [0x1a] Tesla V100-SXM2-32GB\n"
      "#   Rank  1 Pid  31337 on      node1 device  1 [0x1b] Tesla V100-SXM2-32GB\n"
      "#   Rank  2 Pid  31337 on      node1 device  2 [0x3d] Tesla V100-SXM2-32GB\n"
      "#   Rank  3 Pid  31337 on      node1 device  3 [0x3e] Tesla V100-SXM2-32GB\n"
      "#\n"
      "#                                                     out-of-place                       in-place          \n"
      "#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n"
      "#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       \n"
      "     1048576         65536   float            45.12   23.24   17.43  0e+00    44.98   23.31   17.48  0e+00\n"
      "     2097152        131072   float            81.40   25.76   19.32  0e+00    81.22   25.82   19.37  0e+00\n"
      "     4194304        262144   float            154.8   27.10   20.32  0e+00    154.5   27.15   20.36  0e+00\n"
      "# Out of bounds values : 0 OK\n"
      "# Avg bus bandwidth    : 19.0467 \n";
  const auto o = cal::import_nccl_tests(lt::write_temp("alltoall_perf_v100.txt", old));
  CHECK(o.collective == "nccl_all_to_all");
  CHECK(o.ranks == 4);
  REQUIRE(o.samples.size() == 3);
  CHECK(o.samples[0].time_s == doctest::Approx(45.12e-6));
  CHECK(o.samples[2].time_s == doctest::Approx(154.8e-6));
  CHECK(o.samples[2].item.bytes == 4194304);
}

TEST_CASE("nccl-tests: malformed output is an Input error at file:line, a missing file NotFound") {
  const std::string text = slurp(data("all_reduce_perf_8xA100.txt"));
  const std::string row = "       16384          4096     float     sum      -1    28.11";
  {
    const std::string bad = replace(text, row, "       16384          4096     float     sum      -1    28.1x");
    const std::string path = lt::write_temp("all_reduce_perf_bad.txt", bad);
    const auto e = lt::error_of([&] { cal::import_nccl_tests(path); });
    CHECK(e.kind() == ErrorKind::Input);
    CHECK(e.where().file == path);
    CHECK(e.where().line == line_of(text, row));
    CHECK(std::string(e.what()).find(path + ":" + std::to_string(line_of(text, row))) == 0);
  }
  {  // a truncated row
    const std::string bad = replace(text, row, "       16384          4096     float     sum      -1\n#");
    const auto e = lt::error_of([&] { cal::import_nccl_tests(lt::write_temp("all_reduce_perf_cut.txt", bad)); });
    CHECK(e.kind() == ErrorKind::Input);
    CHECK(e.where().line == line_of(text, row));
  }
  {  // validation failed in the run
    const std::string bad = replace(text, "   28.22    1.16    2.03      0", "   28.22    1.16    2.03     17");
    const auto e = lt::error_of([&] { cal::import_nccl_tests(lt::write_temp("all_reduce_perf_wrong.txt", bad)); });
    CHECK(e.kind() == ErrorKind::Input);
    CHECK(e.message().find("wrong") != std::string::npos);
  }
  {  // header only
    const std::string head = text.substr(0, text.find("           8             2"));
    const auto e = lt::error_of([&] { cal::import_nccl_tests(lt::write_temp("all_reduce_perf_empty.txt", head)); });
    CHECK(e.kind() == ErrorKind::Input);
    CHECK(e.message().find("no result rows") != std::string::npos);
  }
  {  // not nccl-tests at all
    const auto e =
        lt::error_of([&] { cal::import_nccl_tests(lt::write_temp("all_reduce_perf_x.txt", "hello\n1 2 3\n")); });
    CHECK(e.kind() == ErrorKind::Input);
  }
  {  // two runs in one file
    const auto e =
        lt::error_of([&] { cal::import_nccl_tests(lt::write_temp("all_reduce_perf_twice.txt", text + text)); });
    CHECK(e.kind() == ErrorKind::Input);
    CHECK(e.where().line == line_of(text, "# Avg bus") + 3);  // the second "# nThread" line
  }
  {  // JSON that is not an nccl-tests output, and broken JSON
    CHECK(lt::error_of([&] {
            cal::import_nccl_tests(lt::write_temp("sendrecv_perf_a.json", "{\"version\": 2}"));
          }).kind() == ErrorKind::Input);
    const auto e =
        lt::error_of([&] { cal::import_nccl_tests(lt::write_temp("sendrecv_perf_b.json", "{\"results\": [\n{]}")); });
    CHECK(e.kind() == ErrorKind::Input);
    CHECK(e.where().line == 2);
  }
  const auto missing = lt::error_of([] { cal::import_nccl_tests(data("no_such_perf.txt")); });
  CHECK(missing.kind() == ErrorKind::NotFound);
}

TEST_CASE("partial pastes: a table without '#', without Rank lines, or alone gives its ranks from size / count") {
  const auto pasted = [](const std::string& name) { return data("pasted/" + name); };
  // dstack prints the header without '#' and 'nThread 1 nGpus 1' (one MPI process's share): 16 ranks from
  // size / (count x 4 B), e.g. 8388608 / (131072 x 4).
  const auto dstack = cal::import_nccl_tests(pasted("h100_2node_16rank_all_gather_dstack_nohash.log"));
  CHECK(dstack.collective == "nccl_all_gather");
  CHECK(dstack.ranks == 16);
  CHECK(dstack.samples.size() == 11);
  REQUIRE(dstack.derived.size() == 1);
  CHECK(dstack.derived[0].find("one process's share") != std::string::npos);
  const auto gke = cal::import_nccl_tests(pasted("h100_2node_16rank_all_gather_gke_tcpx.log"));
  CHECK(gke.ranks == 16);
  CHECK(gke.nodes == 1);  // the paste names no host; the CLI derives nodes from the system
  const auto table = cal::import_nccl_tests(pasted("unknownGPU_1node_8rank_reduce_scatter_table.log"));
  CHECK(table.collective == "nccl_reduce_scatter");
  CHECK(table.ranks == 8);
  // --ranks / --nodes replace what the log gives, each noted.
  const auto given =
      cal::import_nccl_tests(pasted("h100_2node_16rank_all_gather_gke_tcpx.log"), {.ranks = 16, .nodes = 2});
  CHECK(given.nodes == 2);
  CHECK(given.samples.front().item.nodes == 2);
  CHECK(given.derived.size() == 3);
}

// Found by the parser fuzz run (tests/fuzz): a count whose count x type size overflows a 64-bit integer made
// the size / count ratio divide by zero (SIGFPE). Such a row tells no ratio: the rank count is asked for.
TEST_CASE("a row whose count x type size overflows tells no rank count (no crash)") {
  const std::string table =
      "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  "
      "#wrong\n"
      "        1024   4611686018427387904     float     sum      -1    16.40    0.06    0.05       0    16.40    0.06  "
      "  0.05       0\n"
      "        2048            64     float     sum      -1    16.66    0.12    0.11       0    16.55    0.12    0.11  "
      "     0\n";
  const auto e =
      lt::error_of([&] { cal::import_nccl_tests(lt::write_temp("reduce_scatter_perf_overflow.log", table)); });
  CHECK(e.kind() == llmsim::ErrorKind::Input);
  // Given the ranks, the rows import (the huge count is only printed, never used).
  const auto given = cal::import_nccl_tests(lt::write_temp("reduce_scatter_perf_overflow2.log", table), {.ranks = 8});
  CHECK(given.ranks == 8);
}

// Found by the sanitized fuzz run: nThread x nGpus of a damaged header overflowed an int (UBSan). Counts a log
// prints about its run are bounded where they are read: an Input error at the line.
TEST_CASE("a header with an impossible thread or GPU count is refused at its line") {
  const std::string text =
      "# nThread -2147483648 nGpus 2 minBytes 8 maxBytes 1024 step: 2(factor) warmup iters: 5 iters: 20\n"
      "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  "
      "#wrong\n"
      "        1024           256     float     sum      -1    16.40    0.06    0.05       0    16.40    0.06    0.05  "
      "     0\n";
  const auto e = lt::error_of([&] { cal::import_nccl_tests(lt::write_temp("all_reduce_perf_threads.log", text)); });
  CHECK(e.kind() == llmsim::ErrorKind::Input);
  CHECK(e.where().line == 1);
  CHECK(e.message().find("nThread = -2147483648: must be from 0 to 1024") != std::string::npos);
  const std::string json =
      R"({"config": {"nthreads": 1, "ngpus": 18446744073709551615, "devices": []}, "results": []})";
  const auto j = lt::error_of([&] { cal::import_nccl_tests(lt::write_temp("all_reduce_perf_gpus.json", json)); });
  CHECK(j.kind() == llmsim::ErrorKind::Input);
  CHECK(j.message().find("ngpus = ") != std::string::npos);
}

TEST_CASE("an all_reduce paste without Rank lines gives its ranks from busbw / algbw, or asks for --ranks") {
  // busbw = algbw x 2(n-1)/n: 8 ranks at 100.00 / 175.00.
  const std::string text =
      "nThread 1 nGpus 1 minBytes 8 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
      "#wrong\n"
      "   268435456      67108864     float     sum      -1   2684.4  100.00  175.00      0   2684.4  100.00  175.00   "
      "   0\n"
      "  1073741824     268435456     float     sum      -1  10737.4  100.00  175.00      0  10737.4  100.00  175.00   "
      "   0\n";
  const auto log = cal::import_nccl_tests(lt::write_temp("all_reduce_perf_paste.txt", text));
  CHECK(log.ranks == 8);
  REQUIRE_FALSE(log.derived.empty());
  CHECK(log.derived[0].find("busbw / algbw") != std::string::npos);
  // Rows whose ratios disagree (8 ranks, then 4: 150.00 / 100.00) leave nothing to go by: an input error.
  const std::string mixed =
      replace(text, "10737.4  100.00  175.00      0  10737.4", "10737.4  100.00  150.00      0  10737.4");
  const auto e = lt::error_of([&] { cal::import_nccl_tests(lt::write_temp("all_reduce_perf_mixed.txt", mixed)); });
  CHECK(e.kind() == ErrorKind::Input);
  CHECK(std::string(e.what()).find("--ranks") != std::string::npos);
}

TEST_CASE("the collective comes from the log and its rows before the file name; --collective overrides") {
  // An all_reduce log (no binary named inside) saved under another name: its rows carry a reduction op
  // and size = count x 4 B, so it is an all-reduce, and the disagreement is noted.
  const std::string text = slurp(data("all_reduce_perf_8xA100.txt"));
  const auto misnamed = cal::import_nccl_tests(lt::write_temp("all_gather_perf.log", text));
  CHECK(misnamed.collective == "nccl_all_reduce");
  REQUIRE_FALSE(misnamed.derived.empty());
  CHECK(misnamed.derived[0].find("not all_gather_perf as the file name says") != std::string::npos);
  // A name that says nothing: the rows alone decide.
  CHECK(cal::import_nccl_tests(lt::write_temp("node1.log", text)).collective == "nccl_all_reduce");
  // reduce_scatter rows: size = 8 x count x 4 B.
  CHECK(cal::import_nccl_tests(data("pasted/unknownGPU_1node_8rank_reduce_scatter_table.log")).collective ==
        "nccl_reduce_scatter");
  const auto forced = cal::import_nccl_tests(lt::write_temp("node1.log", text), {.collective = "reduce_scatter"});
  CHECK(forced.collective == "nccl_reduce_scatter");
  CHECK(forced.derived[0] == "reduce_scatter_perf from --collective");
}

TEST_CASE("the GPUs a log ran on come from its Rank lines") {
  CHECK(cal::import_nccl_tests(data("all_reduce_perf_8xA100.txt")).gpus ==
        std::vector<std::string>{"NVIDIA A100-SXM4-80GB"});
  CHECK(cal::import_nccl_tests(data("alltoall_2x8xH100.txt")).gpus ==
        std::vector<std::string>{"NVIDIA H100 80GB HBM3"});
  CHECK(cal::import_nccl_tests(data("sendrecv_perf_2xRTX4090.json")).gpus ==
        std::vector<std::string>{"NVIDIA GeForce RTX 4090"});
  CHECK(cal::import_nccl_tests(data("pasted/unknownGPU_1node_8rank_reduce_scatter_table.log")).gpus.empty());
}
