// Calibration plumbing that runs without a GPU: the sample log (resume), the plan, the host
// benchmarks, and samples -> fits -> a profile the simulator loads.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include "llmsim/calibrate/fingerprint.h"
#include "llmsim/calibrate/host_bench.h"
#include "llmsim/calibrate/plan.h"
#include "llmsim/calibrate/process_group.h"
#include "llmsim/calibrate/profile_writer.h"
#include "llmsim/calibrate/sample.h"
#include "llmsim/cost/comm_cost.h"
#include "llmsim/cost/compute_cost.h"
#include "llmsim/hardware/system_toml.h"
#include "test_util.h"

using namespace llmsim;
namespace cal = llmsim::calibrate;

namespace {

std::string temp_dir(const std::string& name) { return llmsim::test::fresh_temp_dir(name); }

cal::Sample sample(const std::string& bench, const std::string& dtype, double bytes, double seconds, int group = 1) {
  cal::Sample s;
  s.item.bench = bench;
  s.item.dtype = dtype;
  s.item.bytes = bytes;
  s.item.group = group;
  s.time_s = seconds;
  s.repeats = 5;
  return s;
}

}  // namespace

TEST_CASE("the sample log appends as it measures and resumes where it stopped") {
  const std::string dir = temp_dir("samplelog");
  const std::string path = dir + "/samples.csv";
  auto a = sample("mem_copy", "", 1 << 20, 1e-5);
  auto b = sample("mem_copy", "", 1 << 24, 1e-4);
  {
    cal::SampleLog log(path);
    CHECK(!log.done(a.item));
    log.append(a);
    CHECK(log.done(a.item));
  }  // "interrupted" here
  cal::SampleLog again(path);
  CHECK(again.samples().size() == 1);
  CHECK(again.done(a.item));
  CHECK(!again.done(b.item));
  again.append(b);
  const auto all = cal::read_samples(path);
  REQUIRE(all.size() == 2);
  CHECK(all[1].time_s == doctest::Approx(1e-4).epsilon(1e-15));
  CHECK(all[1].item.key() == b.item.key());
  // A damaged file is an error naming its line.
  const auto bad = test::write_temp(
      "samples-bad.csv", std::string(cal::sample_csv_header()) + "\nmem_copy,,0,0,0,x,1,0,1e-5,0,5,0,0,0,1\n");
  const auto e = test::error_of([&] { cal::read_samples(bad); });
  CHECK(e.where().line == 2);
  CHECK(std::string(e.what()).find("bytes") != std::string::npos);
}

TEST_CASE("a calibration folder has one writer at a time; repeated samples are fitted once") {
  const std::string dir = temp_dir("folder-lock");
  {
    const cal::FolderLock first(dir);
    // A second writer of the same folder (another calibrate --resume) is refused, naming the folder.
    const auto e = test::error_of([&] { cal::FolderLock second(dir); });
    CHECK(e.kind() == ErrorKind::Input);
    CHECK(e.where().file == dir);
    CHECK(e.message().find("another llmsim calibrate is writing to this folder") != std::string::npos);
  }
  // Released with its holder: the next run takes it.
  CHECK_NOTHROW(cal::FolderLock again(dir));
  // What two unlocked runs once left: every item twice; each is kept once, the first of it.
  auto a = sample("mem_copy", "", 1 << 20, 1e-5);
  auto b = sample("mem_copy", "", 1 << 24, 1e-4);
  auto a2 = a;
  a2.time_s = 2e-5;
  std::size_t dropped = 0;
  const auto unique = cal::unique_samples({a, b, a2, b}, dropped);
  CHECK(dropped == 2);
  REQUIRE(unique.size() == 2);
  CHECK(unique[0].time_s == 1e-5);
  CHECK(unique[1].item.key() == b.item.key());
  // A non-finite time is a damaged file, not a measurement.
  const auto inf = test::write_temp(
      "samples-inf.csv", std::string(cal::sample_csv_header()) + "\nmem_copy,,0,0,0,1024,1,0,inf,0,5,0,0,0,1\n");
  const auto ei = test::error_of([&] { cal::read_samples(inf); });
  CHECK(ei.where().line == 2);
  CHECK(ei.where().key == "time_s");
}

TEST_CASE("samples keep the nodes a collective spans; the 14-column format is read as one node") {
  const std::string dir = temp_dir("samplelog-nodes");
  const std::string path = dir + "/samples.csv";
  {
    std::ofstream old(path);
    old << "bench,dtype,m,n,k,bytes,group,flops,time_s,spread,repeats,noisy,sm_clock_MHz,throttled\n"
        << "nccl_all_reduce,fp32,0,0,0,1048576,8,0,1e-4,0.01,5,0,1980,0\n";
  }
  auto across = sample("nccl_all_reduce", "fp32", 1 << 20, 3e-4);
  across.item.group = 16;
  across.item.nodes = 2;
  CHECK(across.item.key() == "nccl_all_reduce|fp32|0|0|0|1048576|16|n2");
  {
    cal::SampleLog log(path);
    REQUIRE(log.samples().size() == 1);
    CHECK(log.samples()[0].item.nodes == 1);
    CHECK(log.samples()[0].item.key() == "nccl_all_reduce|fp32|0|0|0|1048576|8");  // unchanged: resume still works
    CHECK(!log.done(across.item));
    log.append(across);
    CHECK(log.done(across.item));
  }
  const auto all = cal::read_samples(path);
  REQUIRE(all.size() == 2);
  CHECK(all[1].item.nodes == 2);
  CHECK(all[1].item.group == 16);
  const auto bad = test::write_temp(
      "samples-nodes0.csv", std::string(cal::sample_csv_header()) + "\nmem_copy,,0,0,0,1024,1,0,1e-5,0,5,0,0,0,0\n");
  const auto e = test::error_of([&] { cal::read_samples(bad); });
  CHECK(e.where().key == "nodes");
}

TEST_CASE("samples keep the SM clock and throttling; a file of the older format is read and upgraded") {
  const std::string dir = temp_dir("samplelog-clock");
  const std::string path = dir + "/samples.csv";
  {
    // Written by llmsim before clocks were recorded: 12 columns.
    std::ofstream old(path);
    old << "bench,dtype,m,n,k,bytes,group,flops,time_s,spread,repeats,noisy\n"
        << "mem_copy,,0,0,0,1048576,1,0,1.0000000000000001e-05,0.01,5,0\n";
  }
  auto hot = sample("mem_copy", "", 1 << 24, 1e-4);
  hot.sm_clock_MHz = 1395;
  hot.throttled = true;
  auto cool = sample("mem_copy", "", 1 << 26, 4e-4);
  cool.sm_clock_MHz = 1980;
  {
    cal::SampleLog log(path);
    REQUIRE(log.samples().size() == 1);
    CHECK(log.samples()[0].sm_clock_MHz == 0);  // unknown in the old format
    log.append(hot);
    log.append(cool);
  }
  std::ifstream in(path);
  std::string header;
  std::getline(in, header);
  CHECK(header == cal::sample_csv_header());  // upgraded: every row has the same columns
  const auto all = cal::read_samples(path);
  REQUIRE(all.size() == 3);
  CHECK(all[0].time_s == doctest::Approx(1e-5));
  CHECK(all[1].sm_clock_MHz == 1395);
  CHECK(all[1].throttled);
  CHECK(!all[2].throttled);

  cal::Fingerprint fp;
  cal::add_sample_quality(fp, all);
  CHECK(fp.clocked_samples == 2);
  CHECK(fp.throttled_samples == 1);
  CHECK(fp.sm_clock_MHz_min == 1395);
  CHECK(fp.sm_clock_MHz_median == doctest::Approx(0.5 * (1395 + 1980)));
  REQUIRE(fp.notes.size() == 1);
  CHECK(fp.notes[0].find("1 of 2 GPU samples") != std::string::npos);
  CHECK(cal::fingerprint_json(fp).find("\"throttled_samples\": 1") != std::string::npos);

  // fingerprint.json reads back into the same fingerprint (llmsim calibrate refit keeps it).
  fp.tool_version = "0.1.0";
  fp.git_sha = "abc1234";
  fp.date_utc = "2026-11-29T22:47:57Z";
  fp.argv = {"llmsim", "calibrate"};
  fp.environment = {{"NCCL_DEBUG", "INFO"}};
  cal::GpuInfo g;
  g.name = "NVIDIA H200";
  g.device_count = 1;
  g.cc_major = 9;
  g.sm_count = 132;
  g.nccl_version = "2.28.3";
  fp.gpu = g;
  const std::string fp_path = dir + "/fingerprint.json";
  std::ofstream(fp_path) << cal::fingerprint_json(fp);
  const auto back = cal::read_fingerprint(fp_path);
  CHECK(cal::fingerprint_json(back) == cal::fingerprint_json(fp));
  REQUIRE(back.gpu.has_value());
  CHECK(back.gpu->cc_major == 9);
  std::ofstream(fp_path) << "{\"tool\": {\"version\": \"0.1.0\"}}";
  const auto e = test::error_of([&] { cal::read_fingerprint(fp_path); });
  CHECK(e.where().file == fp_path);
  CHECK(e.where().key == "tool");
}

TEST_CASE("the plan follows --only, --quick and the GPU count") {
  cal::PlanOptions o;
  o.gpus = 8;
  const auto full = cal::make_plan(o);
  o.quick = true;
  const auto quick = cal::make_plan(o);
  CHECK(quick.size() < full.size() / 3);
  o.only = {"cpu"};
  for (const auto& i : cal::make_plan(o)) CHECK(cal::is_host_family(i.bench));
  o.only = {"nccl"};
  o.gpus = 1;
  CHECK(cal::make_plan(o).empty());  // no collectives on one GPU
  o.gpus = 8;
  bool has8 = false;
  for (const auto& i : cal::make_plan(o)) has8 = has8 || i.group == 8;
  CHECK(has8);
  // Every planned item belongs to a listed family; keys are unique.
  std::set<std::string> families, keys;
  for (const auto& f : cal::families()) families.insert(f.name);
  for (const auto& i : full) {
    CHECK(families.count(i.bench) == 1);
    CHECK(keys.insert(i.key()).second);
  }
}

TEST_CASE("under MPI the plan runs collectives over the ranks and records the nodes each group spans") {
  cal::PlanOptions o;
  o.only = {"nccl"};
  o.quick = true;
  o.gpus = 8;  // rank 0's own GPUs: irrelevant for the NCCL families once ranks are given
  // 2 hosts x 8 ranks, then a 3rd host with 4: groups 2, 4, 8 (one node), 16 (two), 20 (three).
  for (int r = 0; r < 8; ++r) o.rank_hosts.push_back("a");
  for (int r = 0; r < 8; ++r) o.rank_hosts.push_back("b");
  for (int r = 0; r < 4; ++r) o.rank_hosts.push_back("c");
  std::map<int, std::set<int>> nodes_by_group;
  for (const auto& i : cal::make_plan(o)) nodes_by_group[i.group].insert(i.nodes);
  CHECK(nodes_by_group == std::map<int, std::set<int>>{{2, {1}}, {4, {1}}, {8, {1}}, {16, {2}}, {20, {3}}});
  // Without ranks (one process) every item is one node.
  o.rank_hosts.clear();
  for (const auto& i : cal::make_plan(o)) CHECK(i.nodes == 1);

  CHECK(cal::nodes_spanned({"a", "a", "b", "a"}, 2) == 1);
  CHECK(cal::nodes_spanned({"a", "a", "b", "a"}, 3) == 2);
  CHECK(cal::nodes_spanned({"a", "a", "b", "a"}, 9) == 2);  // clamped to the ranks there are
}

TEST_CASE("the work list rank 0 sends survives the trip exactly") {
  std::vector<cal::BenchItem> items;
  items.push_back(cal::BenchItem{"gemm", "bf16", 4096, 11008, 4096, 1.5e8, 1, 1});
  items.push_back(cal::BenchItem{"nccl_all_reduce", "bf16", 0, 0, 0, 1073741824, 16, 2});
  items.push_back(cal::BenchItem{"launch", "", 0, 0, 0, 0, 1, 1});  // empty dtype
  const auto back = cal::unpack_items(cal::pack_items(items));
  REQUIRE(back.size() == items.size());
  for (std::size_t i = 0; i < items.size(); ++i) CHECK(back[i].key() == items[i].key());
  CHECK(back[1].nodes == 2);
  CHECK(cal::unpack_items("").empty());
  const auto e = test::error_of([] { cal::unpack_items("gemm\tbf16\t1\n"); });
  CHECK(e.kind() == ErrorKind::Internal);
}

TEST_CASE("one process is rank 0 of 1 on this host; --mpi needs a build with MPI") {
  const auto g = cal::single_process();
  CHECK(g->rank() == 0);
  CHECK(g->size() == 1);
  CHECK(!g->multi_process());
  CHECK(g->local_rank() == 0);
  REQUIRE(g->hosts().size() == 1);
  CHECK(!g->hosts()[0].empty());
  std::string bytes = "unchanged";
  g->broadcast(bytes);
  CHECK(bytes == "unchanged");
  CHECK(g->max(3.5) == 3.5);
  CHECK(g->all(true));
  CHECK(!g->all(false));
  CHECK(cal::mpi_built() == (LLMSIM_HAS_MPI == 1));
#if !LLMSIM_HAS_MPI
  const auto e = test::error_of([] { cal::mpi_process_group(); });
  CHECK(e.kind() == ErrorKind::Usage);
  CHECK(std::string(e.what()).find("--mpi") != std::string::npos);
#endif
}

TEST_CASE("host benchmarks measure CPU Adam and host bandwidth on any machine") {
  cal::BenchItem adam;
  adam.bench = "cpu_adam";
  adam.dtype = "fp32";
  adam.bytes = 4.0 * (1 << 20);
  adam.group = 2;
  const auto s = cal::run_host_item(adam);
  CHECK(s.time_s > 0);
  CHECK(s.flops == doctest::Approx(1 << 20));
  const double rate = s.flops / s.time_s;
  CHECK(rate > 1e6);   // even a slow core updates more than a million parameters a second
  CHECK(rate < 1e12);  // and no host does a trillion
  cal::BenchItem triad;
  triad.bench = "host_triad";
  triad.bytes = 3.0 * 8 * (1 << 20);
  triad.group = 2;
  const auto t = cal::run_host_item(triad);
  CHECK(triad.bytes / t.time_s > 1e8);
  CHECK(triad.bytes / t.time_s < 5e12);
}

TEST_CASE("samples -> fits -> a calibrated profile the simulator loads") {
  const auto base = hardware::resolve_system("a800-nvlink", LLMSIM_DATA_DIR);
  std::vector<cal::Sample> samples;
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(0.0, 0.01);
  // Device copy: 1.8 TB/s + 4 us.
  for (double b = 1 << 20; b <= double(1ull << 32); b *= 4)
    samples.push_back(sample("mem_copy", "", b, (4e-6 + b / 1.8e12) * (1 + noise(rng))));
  // Elementwise kernels of two shapes: 1.5 TB/s + 3 us (pooled into one curve).
  for (const char* kernel : {"rmsnorm", "silu_mul"})
    for (double b = 1 << 20; b <= double(1ull << 30); b *= 4)
      samples.push_back(sample("elementwise", kernel, b, (3e-6 + b / 1.5e12) * (1 + noise(rng))));
  // Pinned H2D: 24 GB/s + 10 us.
  for (double b = 1 << 16; b <= double(1 << 30); b *= 4)
    samples.push_back(sample("h2d_pinned", "", b, (10e-6 + b / 24e9) * (1 + noise(rng))));
  // Pageable D2H: 9 GB/s + 30 us (the host's staging memcpy).
  for (double b = 1 << 16; b <= double(1 << 30); b *= 4)
    samples.push_back(sample("d2h_pageable", "", b, (30e-6 + b / 9e9) * (1 + noise(rng))));
  // bf16 GEMMs generated with the simulator's own model form: fraction 0.8, half_k 64.
  for (std::int64_t s : {1024, 2048, 4096, 8192})
    for (std::int64_t k : {256, 1024, 4096, 8192}) {
      cal::Sample g;
      g.item.bench = "gemm";
      g.item.dtype = "bf16";
      g.item.m = s;
      g.item.n = s;
      g.item.k = k;
      const double sd = static_cast<double>(s), kd = static_cast<double>(k);
      g.item.bytes = 2.0 * (2.0 * sd * kd + sd * sd);
      g.flops = 2.0 * sd * sd * kd;
      g.time_s = g.flops / (312e12 * 0.8 * sim::gemm_shape_factor(s, s, k, 1, 108, 64)) * (1 + noise(rng));
      samples.push_back(g);
    }
  samples.push_back(sample("launch", "", 0, 3e-6));
  auto adam = sample("cpu_adam", "fp32", 4.0 * (1 << 24), 0.01, 48);
  adam.flops = 1 << 24;
  samples.push_back(adam);

  const auto fits = cal::fit_samples(samples, base);
  REQUIRE(fits.gemm.count("bf16") == 1);
  CHECK(fits.gemm.at("bf16").fraction == doctest::Approx(0.8).epsilon(0.02));
  REQUIRE(fits.memory.has_value());
  CHECK(fits.memory->bandwidth_Bps == doctest::Approx(1.8e12).epsilon(0.02));
  REQUIRE(fits.h2d.has_value());
  CHECK(fits.h2d->bandwidth_Bps == doctest::Approx(24e9).epsilon(0.02));
  REQUIRE(fits.elementwise.has_value());
  CHECK(fits.elementwise->bandwidth_Bps == doctest::Approx(1.5e12).epsilon(0.02));
  CHECK(!cal::summarize(fits, base).empty());

  const std::string dir = temp_dir("profile");
  auto fp = cal::host_fingerprint({"llmsim", "calibrate", "--system", "a800-nvlink"});
  const std::string path = cal::write_profile(dir, base, fits, fp);
  const auto sys = hardware::load_system_toml(path);
  CHECK(sys.name == "a800-nvlink-calibrated");
  CHECK(sys.efficiency.calibrated);
  CHECK(sys.gpu.peak(DType::BF16) == doctest::Approx(base.gpu.peak(DType::BF16)));  // datasheet values stay
  CHECK(sys.efficiency.gemm.at(DType::BF16).value == doctest::Approx(fits.gemm.at("bf16").fraction).epsilon(1e-3));
  CHECK(sys.efficiency.gemm.at(DType::BF16).low <= sys.efficiency.gemm.at(DType::BF16).value);
  CHECK(sys.efficiency.memory_bandwidth.value == doctest::Approx(1.8e12 / base.gpu.memory_bandwidth_Bps).epsilon(0.02));
  CHECK(sys.efficiency.elementwise_bandwidth.value ==
        doctest::Approx(1.5e12 / base.gpu.memory_bandwidth_Bps).epsilon(0.02));
  CHECK(sys.efficiency.kernel_launch_s == doctest::Approx(3e-6).epsilon(1e-3));
  CHECK(sys.efficiency.cpu_adam_params_per_s == doctest::Approx((1 << 24) / 0.01).epsilon(1e-3));
  CHECK(sys.efficiency.pageable_d2h_Bps == doctest::Approx(9e9).epsilon(0.05));  // 3 sizes of >= 64 MiB, noisy
  // Keys without samples keep their documented defaults.
  CHECK(sys.efficiency.pageable_h2d_Bps == doctest::Approx(base.efficiency.pageable_h2d_Bps));
  CHECK(sys.efficiency.fabric_bandwidth.value == doctest::Approx(base.efficiency.fabric_bandwidth.value));
  CHECK(std::filesystem::exists(dir + "/fingerprint.json"));
}

TEST_CASE("a calibrated band in a system TOML must bracket its value") {
  const auto base = hardware::resolve_system("a800-nvlink", LLMSIM_DATA_DIR);
  std::ifstream in(base.source_file);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  const auto ok = test::write_temp(
      "band-ok.toml",
      text +
          "\n[efficiency]\ngemm_fraction_bf16 = 0.8\ngemm_fraction_bf16_low = 0.75\ngemm_fraction_bf16_high = 0.83\n");
  const auto sys = hardware::load_system_toml(ok);
  CHECK(sys.efficiency.gemm.at(DType::BF16).low == doctest::Approx(0.75));
  CHECK(sys.efficiency.gemm.at(DType::BF16).high == doctest::Approx(0.83));
  const auto bad = test::write_temp("band-bad.toml",
                                    text + "\n[efficiency]\ngemm_fraction_bf16 = 0.8\ngemm_fraction_bf16_low = 0.85\n");
  const auto e = test::error_of([&] { hardware::load_system_toml(bad); });
  CHECK(std::string(e.what()).find("gemm_fraction_bf16_low") != std::string::npos);
}

TEST_CASE("an NCCL all-reduce fit sets the fabric fraction and the ring's per-step latency") {
  const auto base = hardware::resolve_system("dgx-a100-80gb", LLMSIM_DATA_DIR);
  std::vector<cal::Sample> samples;
  // 8 GPUs: time = 28 us + bus bytes / 240 GB/s, bus bytes = 2 (n-1)/n x size.
  for (double b = 1 << 16; b <= double(1 << 30); b *= 4)
    samples.push_back(sample("nccl_all_reduce", "bf16", b, 28e-6 + b * 2.0 * 7 / 8 / 240e9, 8));
  const auto fits = cal::fit_samples(samples, base);
  REQUIRE(fits.all_reduce.count(8) == 1);
  CHECK(fits.all_reduce.at(8).bandwidth_Bps == doctest::Approx(240e9).epsilon(1e-6));
  const auto sys =
      hardware::load_system_toml(cal::write_profile(temp_dir("profile-nccl"), base, fits, cal::host_fingerprint({})));
  CHECK(sys.efficiency.fabric_bandwidth.value == doctest::Approx(240e9 / base.node.fabric_bandwidth_Bps).epsilon(1e-3));
  CHECK(sys.node.fabric_latency_s == doctest::Approx(28e-6 / 14).epsilon(1e-3));  // 2 (n-1) = 14 ring steps
}

TEST_CASE(
    "all-gather, reduce-scatter, all-to-all and send/recv fits set their own fabric fractions; "
    "groups spanning nodes are not mapped") {
  const auto base = hardware::resolve_system("dgx-a100-80gb", LLMSIM_DATA_DIR);  // 8 GPUs per node
  std::vector<cal::Sample> samples;
  const auto add = [&](const char* fam, int n, double bus_fraction, double alpha, double Bps) {
    for (double b = 1 << 16; b <= double(1 << 30); b *= 4)
      samples.push_back(sample(fam, "bf16", b, alpha + b * bus_fraction / Bps, n));
  };
  add("nccl_all_reduce", 8, 2.0 * 7 / 8, 28e-6, 240e9);
  add("nccl_all_reduce", 16, 2.0 * 15 / 16, 60e-6, 40e9);  // two nodes: the network, not NVSwitch
  add("nccl_all_gather", 4, 3.0 / 4, 10e-6, 200e9);
  add("nccl_all_gather", 8, 7.0 / 8, 12e-6, 220e9);
  add("nccl_reduce_scatter", 8, 7.0 / 8, 12e-6, 210e9);
  add("nccl_all_to_all", 8, 7.0 / 8, 15e-6, 150e9);
  add("nccl_send_recv", 2, 1.0, 8e-6, 180e9);
  const auto fits = cal::fit_samples(samples, base);
  const auto sys =
      hardware::load_system_toml(cal::write_profile(temp_dir("profile-colls"), base, fits, cal::host_fingerprint({})));
  const double fabric = base.node.fabric_bandwidth_Bps;
  const auto& e = sys.efficiency;
  CHECK(e.fabric_bandwidth.value == doctest::Approx(240e9 / fabric).epsilon(1e-3));  // the 8-GPU fit, not the 16
  CHECK(sys.node.fabric_latency_s == doctest::Approx(28e-6 / 14).epsilon(1e-3));
  REQUIRE(e.fabric_all_gather.has_value());
  CHECK(e.fabric_all_gather->value == doctest::Approx(220e9 / fabric).epsilon(1e-3));  // the largest in-node group
  REQUIRE(e.fabric_reduce_scatter.has_value());
  CHECK(e.fabric_reduce_scatter->value == doctest::Approx(210e9 / fabric).epsilon(1e-3));
  REQUIRE(e.fabric_all_to_all.has_value());
  CHECK(e.fabric_all_to_all->value == doctest::Approx(150e9 / fabric).epsilon(1e-3));
  REQUIRE(e.fabric_send_recv.has_value());
  CHECK(e.fabric_send_recv->value == doctest::Approx(180e9 / fabric).epsilon(1e-3));

  // The simulator uses each: an 8-GPU all-to-all of 1 GiB moves 7/8 of it at 150 GB/s (plus the call's
  // base latency, which the import leaves at the default).
  const sim::CommCost comm(sys);
  const sim::CommGroup g8{8, 8};
  const double gib = double(1 << 30);
  const double call_base = sys.efficiency.collective_base_s;
  CHECK(comm.collective(model::Collective::AllToAll, gib, g8).value ==
        doctest::Approx(call_base + 7.0 / 8 * gib / 150e9 + 7 * sys.node.fabric_latency_s).epsilon(1e-6));
  CHECK(comm.collective(model::Collective::AllReduce, gib, g8).value ==
        doctest::Approx(call_base + 2.0 * 7 / 8 * gib / 240e9 + 14 * sys.node.fabric_latency_s).epsilon(1e-6));
  CHECK(comm.p2p(gib, false).value == doctest::Approx(gib / 180e9 + sys.node.fabric_latency_s).epsilon(1e-6));
  // An uncalibrated preset has none: every collective uses the one fabric fraction.
  CHECK(!base.efficiency.fabric_all_to_all.has_value());
}

TEST_CASE("an 8 B - 8 GiB all-reduce sweep: latency from the small messages, bandwidth from the large") {
  // Synthetic nccl-tests sweep of 8 ranks with known alpha = 25 us and bus bandwidth 400 GB/s (time =
  // alpha + busbytes / bw, busbytes = 2 (n-1)/n x size), every power of two from 8 B to 8 GiB, plus the
  // zero-byte rows real `-b 8` sweeps print. A fit over every size is dominated by the latency-bound
  // half and the zero rows; the two regions recover both.
  const auto base = hardware::resolve_system("dgx-h100", LLMSIM_DATA_DIR);
  std::vector<cal::Sample> samples;
  for (double b = 8; b <= 8.0 * (1ull << 30); b *= 2)
    samples.push_back(sample("nccl_all_reduce", "float", b, 25e-6 + 2.0 * 7 / 8 * b / 400e9, 8));
  samples.push_back(sample("nccl_all_reduce", "float", 0, 4e-6, 8));
  const auto fits = cal::fit_samples(samples, base);
  REQUIRE(fits.all_reduce.count(8) == 1);
  const auto& a = fits.all_reduce.at(8);
  CHECK(a.bandwidth_Bps == doctest::Approx(400e9).epsilon(0.01));
  CHECK(a.alpha_s == doctest::Approx(25e-6).epsilon(0.02));
  bool noted = false;
  for (const auto& n : fits.notes) noted = noted || n.find("1 zero-byte row(s) left out") != std::string::npos;
  CHECK(noted);
  // 25 us over 2 (8 - 1) ring steps is the fabric latency the written profile carries.
  const std::string dir = temp_dir("sweep-profile");
  const auto sys =
      hardware::load_system_toml(cal::write_profile(dir, base, fits, cal::host_fingerprint({"llmsim", "test"})));
  CHECK(sys.node.fabric_latency_s == doctest::Approx(25e-6 / 14).epsilon(0.03));
}

TEST_CASE("a sweep of large messages only measures no latency: the preset's stays") {
  // Like the pasted H100 log of ../shared/calibration/nccl-tests-logs: 256 MiB - 2 GiB only. Its
  // intercept (~150 us) is noise of the bandwidth-bound region, not a latency.
  const auto base = hardware::resolve_system("dgx-h100", LLMSIM_DATA_DIR);
  std::vector<cal::Sample> samples;
  for (double b = 256.0 * (1 << 20); b <= 2.0 * (1ull << 30); b *= 2)
    samples.push_back(sample("nccl_all_reduce", "float", b, 150e-6 + 2.0 * 7 / 8 * b / 470e9, 8));
  const auto fits = cal::fit_samples(samples, base);
  REQUIRE(fits.all_reduce.count(8) == 1);
  CHECK(fits.all_reduce.at(8).alpha_s == -1);
  const std::string dir = temp_dir("large-only-profile");
  const auto sys =
      hardware::load_system_toml(cal::write_profile(dir, base, fits, cal::host_fingerprint({"llmsim", "test"})));
  CHECK(sys.node.fabric_latency_s == doctest::Approx(base.node.fabric_latency_s));
}
