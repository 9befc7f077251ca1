// Fits of calibration samples: synthetic measurements from known parameters plus 3 % multiplicative
// noise must give the parameters back, with a band that covers them.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numbers>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "llmsim/calibrate/fingerprint.h"
#include "llmsim/calibrate/fit.h"
#include "llmsim/calibrate/profile_writer.h"
#include "llmsim/cost/comm_cost.h"
#include "llmsim/cost/compute_cost.h"
#include "llmsim/hardware/system_toml.h"
#include "test_util.h"

namespace cal = llmsim::calibrate;
namespace lt = llmsim::test;
using llmsim::ErrorKind;

namespace {

// Gaussian noise from std::mt19937 by Box-Muller: std::normal_distribution differs between standard
// libraries, the raw mt19937 sequence does not, so the samples are the same everywhere.
class Noise {
 public:
  explicit Noise(std::uint32_t seed) : gen_(seed) {}
  double normal() {
    const double u1 = uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }
  double factor(double rel) { return 1.0 + rel * normal(); }  // multiplicative noise of `rel` (1 sigma)

 private:
  double uniform() { return (static_cast<double>(gen_()) + 0.5) / 4294967296.0; }  // (0, 1)
  std::mt19937 gen_;
};

bool within(double actual, double expected, double tolerance) {
  return std::abs(actual - expected) <= tolerance * std::abs(expected);
}

constexpr double kNoise = 0.03;

}  // namespace

TEST_CASE("alpha-beta: noise-free samples give alpha and bandwidth back exactly") {
  const double alpha = 7e-6, bw = 25e9;
  std::vector<double> bytes, secs;
  for (double b = 1024; b <= 1 << 28; b *= 4) {
    bytes.push_back(b);
    secs.push_back(alpha + b / bw);
  }
  const auto f = cal::fit_alpha_beta(bytes, secs);
  CHECK(f.alpha_s == doctest::Approx(alpha).epsilon(1e-9));
  CHECK(f.bandwidth_Bps == doctest::Approx(bw).epsilon(1e-9));
  CHECK(f.rel_rms < 1e-9);
  CHECK(f.n == static_cast<int>(bytes.size()));
}

TEST_CASE("alpha-beta: 3% noise recovers alpha and bandwidth within 2%, band covers the truth") {
  const double alpha = 12e-6, bw = 80e9;
  Noise noise(20240611);
  std::vector<double> bytes, secs;
  // 1 KiB .. 4 GiB in steps of sqrt(2), 3 repeats each: both the latency and the bandwidth regime.
  for (int e2 = 20; e2 <= 64; ++e2) {
    const double b = std::pow(2.0, e2 / 2.0);
    for (int r = 0; r < 3; ++r) {
      bytes.push_back(b);
      secs.push_back((alpha + b / bw) * noise.factor(kNoise));
    }
  }
  const auto f = cal::fit_alpha_beta(bytes, secs);
  CAPTURE(f.alpha_s);
  CAPTURE(f.bandwidth_Bps);
  CHECK(within(f.alpha_s, alpha, 0.02));
  CHECK(within(f.bandwidth_Bps, bw, 0.02));
  CHECK(f.alpha_low_s <= alpha);
  CHECK(f.alpha_high_s >= alpha);
  CHECK(f.bandwidth_low_Bps <= bw);
  CHECK(f.bandwidth_high_Bps >= bw);
  CHECK(f.bandwidth_low_Bps < f.bandwidth_Bps);
  CHECK(f.bandwidth_high_Bps > f.bandwidth_Bps);
  // The band is a confidence interval of the fit, far narrower than the 3 % scatter of single samples.
  CHECK(f.bandwidth_high_Bps / f.bandwidth_low_Bps < 1.03);
  CHECK(f.rel_rms == doctest::Approx(kNoise).epsilon(0.25));
  CHECK(f.n == 135);
}

TEST_CASE("alpha-beta: a negative intercept is refitted with alpha = 0") {
  // Slightly super-linear times: the unconstrained line crosses zero above 0 bytes.
  const std::vector<double> bytes{1e6, 2e6, 4e6, 8e6};
  const std::vector<double> secs{1.0e-5, 2.1e-5, 4.3e-5, 8.8e-5};
  const auto f = cal::fit_alpha_beta(bytes, secs);
  CHECK(f.alpha_s == 0.0);
  CHECK(f.alpha_low_s == 0.0);
  CHECK(f.alpha_high_s >= 0.0);
  CHECK(f.bandwidth_Bps > 9e10);
  CHECK(f.bandwidth_Bps < 1.0e11);
  CHECK(f.bandwidth_low_Bps <= f.bandwidth_Bps);
  CHECK(f.bandwidth_high_Bps >= f.bandwidth_Bps);
  CHECK(f.rel_rms < 0.05);
}

TEST_CASE("alpha-beta: bad input is an Input error") {
  CHECK(lt::error_of([] { cal::fit_alpha_beta({1e6, 1e6, 1e6}, {1e-5, 1.1e-5, 0.9e-5}); }).kind() == ErrorKind::Input);
  CHECK(lt::error_of([] { cal::fit_alpha_beta({1e6}, {1e-5}); }).kind() == ErrorKind::Input);
  CHECK(lt::error_of([] { cal::fit_alpha_beta({}, {}); }).kind() == ErrorKind::Input);
  CHECK(lt::error_of([] { cal::fit_alpha_beta({1e6, 2e6}, {1e-5, 0.0}); }).kind() == ErrorKind::Input);
  CHECK(lt::error_of([] { cal::fit_alpha_beta({1e6, 2e6}, {1e-5, -1e-5}); }).kind() == ErrorKind::Input);
  CHECK(lt::error_of([] { cal::fit_alpha_beta({1e6, 2e6}, {1e-5}); }).kind() == ErrorKind::Input);
  // Times that fall with size have no bandwidth.
  CHECK(lt::error_of([] { cal::fit_alpha_beta({1e6, 2e6, 4e6}, {3e-5, 2e-5, 1e-5}); }).kind() == ErrorKind::Input);
  const auto e = lt::error_of([] { cal::fit_alpha_beta({1e6, 1e6}, {1e-5, 1e-5}); });
  CHECK(e.message().find("2 distinct sizes") != std::string::npos);
}

namespace {

// H100 SXM bf16: dense peak, SMs and HBM bandwidth.
constexpr double kPeak = 989e12;
constexpr int kSms = 132;
constexpr double kHbm = 3.35e12;

cal::Sample gemm_sample(std::int64_t m, std::int64_t n, std::int64_t k, double fraction, double half_k, Noise& noise,
                        const char* bench = "gemm", int batch = 1) {
  cal::Sample s;
  s.item.bench = bench;
  s.item.dtype = "bf16";
  s.item.m = m;
  s.item.n = n;
  s.item.k = k;
  s.item.group = batch;
  s.flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) * batch;
  s.item.bytes = 2.0 * static_cast<double>(m * k + k * n + m * n) * batch;
  const double shape = llmsim::sim::gemm_shape_factor(m, n, k, batch, kSms, half_k);
  const double compute = s.flops / (kPeak * fraction * shape);
  const double memory = s.item.bytes / kHbm;
  s.time_s = std::max(compute, memory) * noise.factor(kNoise);
  s.repeats = 20;
  return s;
}

bool memory_bound_at_peak(const cal::Sample& s) { return s.item.bytes / kHbm > s.flops / kPeak; }

}  // namespace

TEST_CASE("GEMM fit: fraction within 2% and half_k within 15% of the truth, memory-bound samples left out") {
  const double fraction = 0.78, half_k = 96;
  Noise noise(7);
  std::vector<cal::Sample> samples;
  for (std::int64_t m : {128, 512, 1000, 2048, 4096, 8192})
    for (std::int64_t n : {384, 1024, 2304, 4096, 14336})
      for (std::int64_t k : {32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384})
        samples.push_back(gemm_sample(m, n, k, fraction, half_k, noise));
  // GEMV-like shapes (decode): memory bound by far.
  for (std::int64_t n : {4096, 8192, 14336}) samples.push_back(gemm_sample(8, n, 4096, fraction, half_k, noise));
  // A sample without FLOPs is ignored.
  cal::Sample no_flops = samples.front();
  no_flops.flops = 0;
  samples.push_back(no_flops);

  int compute_bound = 0;
  for (const auto& s : samples)
    if (s.flops > 0 && !memory_bound_at_peak(s)) ++compute_bound;
  REQUIRE(compute_bound > 100);
  REQUIRE(compute_bound < static_cast<int>(samples.size()) - 10);  // the exclusion is exercised

  const auto f = cal::fit_gemm(samples, kPeak, kSms, kHbm);
  CAPTURE(f.fraction);
  CAPTURE(f.half_k);
  CHECK(f.n == compute_bound);
  CHECK(within(f.fraction, fraction, 0.02));
  CHECK(within(f.half_k, half_k, 0.15));
  CHECK(f.fraction_low <= fraction);
  CHECK(f.fraction_high >= fraction);
  CHECK(f.fraction_low > 0.6);  // ~ f exp(-2 x 3 %)
  CHECK(f.fraction_high < 0.95);
  CHECK(f.rel_rms == doctest::Approx(kNoise).epsilon(0.25));
}

TEST_CASE("GEMM fit: noise-free samples give the parameters back; a different half_k is found too") {
  for (double half_k : {0.0, 40.0, 300.0}) {
    CAPTURE(half_k);
    Noise quiet(1);
    std::vector<cal::Sample> samples;
    for (std::int64_t mn : {1024, 3072, 8192})
      for (std::int64_t k : {16, 64, 256, 1024, 4096, 16384}) {
        auto s = gemm_sample(mn, mn, k, 0.6, half_k, quiet);
        s.time_s = s.flops / (kPeak * 0.6 * llmsim::sim::gemm_shape_factor(mn, mn, k, 1, kSms, half_k));
        if (!memory_bound_at_peak(s)) samples.push_back(s);
      }
    const auto f = cal::fit_gemm(samples, kPeak, kSms, kHbm);
    CHECK(f.fraction == doctest::Approx(0.6).epsilon(1e-3));
    if (half_k == 0.0)
      CHECK(f.half_k < 0.5);
    else
      CHECK(within(f.half_k, half_k, 0.01));
    CHECK(f.rel_rms < 1e-3);
  }
}

TEST_CASE("GEMM fit: gemm_batched takes item.group as the batch") {
  // Noise-free batched GEMMs: the batch changes the wave quantisation, so the parameters come back only
  // when the fit uses it.
  Noise quiet(11);
  std::vector<cal::Sample> samples;
  for (std::int64_t mn : {1536, 4096, 8192})
    for (std::int64_t k : {128, 512, 1024, 2048, 4096})
      for (int batch : {3, 16}) {
        auto s = gemm_sample(mn, mn, k, 0.7, 64, quiet, "gemm_batched", batch);
        s.time_s = s.flops / (kPeak * 0.7 * llmsim::sim::gemm_shape_factor(mn, mn, k, batch, kSms, 64));
        if (!memory_bound_at_peak(s)) samples.push_back(s);
      }
  REQUIRE(samples.size() >= 20);
  const auto f = cal::fit_gemm(samples, kPeak, kSms, kHbm);
  CHECK(f.fraction == doctest::Approx(0.7).epsilon(1e-3));
  CHECK(within(f.half_k, 64, 0.01));
  CHECK(f.rel_rms < 1e-3);
  // The same samples read as single GEMMs (batch 1) do not fit the model.
  for (auto& s : samples) s.item.bench = "gemm";
  CHECK(cal::fit_gemm(samples, kPeak, kSms, kHbm).rel_rms > 0.01);
}

TEST_CASE("GEMM fit: bad input is an Input error") {
  Noise noise(3);
  const auto gemv = gemm_sample(4, 4096, 4096, 0.8, 96, noise);
  const auto big = gemm_sample(4096, 4096, 4096, 0.8, 96, noise);
  // Nothing compute bound.
  auto e = lt::error_of([&] { cal::fit_gemm({gemv}, kPeak, kSms, kHbm); });
  CHECK(e.kind() == ErrorKind::Input);
  CHECK(e.message().find("compute-bound") != std::string::npos);
  CHECK(lt::error_of([&] { cal::fit_gemm({}, kPeak, kSms, kHbm); }).kind() == ErrorKind::Input);
  // Mixed dtypes, a non-GEMM sample, no peak, no SMs.
  auto fp16 = big;
  fp16.item.dtype = "fp16";
  CHECK(lt::error_of([&] { cal::fit_gemm({big, fp16}, kPeak, kSms, kHbm); }).kind() == ErrorKind::Input);
  auto copy = big;
  copy.item.bench = "mem_copy";
  CHECK(lt::error_of([&] { cal::fit_gemm({big, copy}, kPeak, kSms, kHbm); }).kind() == ErrorKind::Input);
  CHECK(lt::error_of([&] { cal::fit_gemm({big}, 0, kSms, kHbm); }).kind() == ErrorKind::Input);
  CHECK(lt::error_of([&] { cal::fit_gemm({big}, kPeak, 0, kHbm); }).kind() == ErrorKind::Input);
  // One compute-bound sample is enough for a fraction (with a zero-width band).
  const auto one = cal::fit_gemm({big, gemv}, kPeak, kSms, kHbm);
  CHECK(one.n == 1);
  CHECK(one.fraction_low == doctest::Approx(one.fraction));
}

TEST_CASE("rate: median, min and max of amount / time") {
  const auto even = cal::fit_rate({1e9, 1e9, 1e9, 1e9}, {1.0, 0.5, 0.25, 2.0});
  CHECK(even.rate == doctest::Approx(1.5e9));
  CHECK(even.low == doctest::Approx(0.5e9));
  CHECK(even.high == doctest::Approx(4e9));
  CHECK(even.n == 4);
  const auto odd = cal::fit_rate({3e8, 2e8, 1e8}, {1.0, 1.0, 1.0});
  CHECK(odd.rate == doctest::Approx(2e8));
  CHECK(odd.low == doctest::Approx(1e8));
  CHECK(odd.high == doctest::Approx(3e8));
  const auto single = cal::fit_rate({5e9}, {2.0});
  CHECK(single.rate == doctest::Approx(2.5e9));
  CHECK(single.n == 1);
  CHECK(lt::error_of([] { cal::fit_rate({}, {}); }).kind() == ErrorKind::Input);
  CHECK(lt::error_of([] { cal::fit_rate({1e9}, {0.0}); }).kind() == ErrorKind::Input);
  CHECK(lt::error_of([] { cal::fit_rate({1e9, 1e9}, {1.0}); }).kind() == ErrorKind::Input);
  CHECK(lt::error_of([] { cal::fit_rate({-1.0}, {1.0}); }).kind() == ErrorKind::Input);
}

// --- multi-node collectives ------------------------------------------------------------------------------

namespace {

namespace hw = llmsim::hardware;
namespace sim = llmsim::sim;
using llmsim::model::Collective;

std::string temp_dir(const std::string& name) { return llmsim::test::fresh_temp_dir(name); }

hw::Fraction exact(double f) { return hw::Fraction{.value = f, .low = f, .high = f, .source = "test truth"}; }

// A system whose collectives the simulator prices with the given fabric and network fractions.
hw::SystemSpec with_fractions(hw::SystemSpec sys, double fabric, double network) {
  sys.efficiency.fabric_bandwidth = exact(fabric);
  sys.efficiency.network_bandwidth = exact(network);
  return sys;
}

// `bench` samples of `ranks` ranks on `nodes` nodes (ranks / nodes per node), 256 KiB .. 2 GiB in steps
// of sqrt(2), 3 repeats each, timed by the simulator's own model on `truth` with 1 % noise.
void add_samples(std::vector<cal::Sample>& out, const hw::SystemSpec& truth, const char* bench, Collective kind,
                 int ranks, int nodes, Noise& noise) {
  const sim::CommCost comm(truth);
  const sim::CommGroup group{ranks, ranks / nodes};
  for (int e2 = 36; e2 <= 62; ++e2) {
    const double bytes = std::round(std::pow(2.0, e2 / 2.0));
    for (int r = 0; r < 3; ++r) {
      cal::Sample s;
      s.item.bench = bench;
      s.item.dtype = "bf16";
      s.item.bytes = bytes;
      s.item.group = ranks;
      s.item.nodes = nodes;
      s.time_s = comm.collective(kind, bytes, group).value * noise.factor(0.01);
      s.repeats = 20;
      out.push_back(s);
    }
  }
}

bool same_fit(const cal::AlphaBetaFit& a, const cal::AlphaBetaFit& b) {
  return a.alpha_s == b.alpha_s && a.bandwidth_Bps == b.bandwidth_Bps && a.bandwidth_low_Bps == b.bandwidth_low_Bps &&
         a.bandwidth_high_Bps == b.bandwidth_high_Bps && a.rel_rms == b.rel_rms && a.n == b.n;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

}  // namespace

TEST_CASE(
    "multi-node all-reduce: the network fraction comes back through the hierarchical model, "
    "single-node fits stay as they were") {
  const auto base = hw::resolve_system("dgx-a100-80gb", LLMSIM_DATA_DIR);
  REQUIRE(base.node.gpus_per_node == 8);
  REQUIRE(base.network.nics_per_node == 8);
  // Truth: NVSwitch at 0.70 of 300 GB/s, the network at 0.80 of a GPU's 25 GB/s NIC share.
  const double fabric = 0.70, network = 0.80;
  const auto truth = with_fractions(base, fabric, network);
  Noise noise(424242);
  std::vector<cal::Sample> single;
  add_samples(single, truth, "nccl_all_reduce", Collective::AllReduce, 8, 1, noise);
  add_samples(single, truth, "nccl_all_gather", Collective::AllGather, 8, 1, noise);
  add_samples(single, truth, "nccl_reduce_scatter", Collective::ReduceScatter, 8, 1, noise);
  // 16 ranks on ONE node (a hypothetical 16-GPU box, or an older import without host names): a
  // single-node curve of its own, with an NVSwitch-like 200 GB/s.
  for (double b = 1 << 20; b <= double(1 << 30); b *= 4)
    for (int r = 0; r < 2; ++r) {
      cal::Sample s;
      s.item.bench = "nccl_all_reduce";
      s.item.dtype = "bf16";
      s.item.bytes = b;
      s.item.group = 16;
      s.time_s = (20e-6 + 2.0 * 15 / 16 * b / 200e9) * noise.factor(0.01);
      single.push_back(s);
    }
  std::vector<cal::Sample> all = single;
  // The same group size across 2 nodes, at a different network fraction (a decoy: the fraction must come
  // from the fit with the most nodes), and 32 ranks on 4 nodes at the truth.
  add_samples(all, with_fractions(base, fabric, 0.5), "nccl_all_reduce", Collective::AllReduce, 16, 2, noise);
  add_samples(all, truth, "nccl_all_reduce", Collective::AllReduce, 32, 4, noise);
  add_samples(all, truth, "nccl_all_gather", Collective::AllGather, 16, 2, noise);

  const auto alone = cal::fit_samples(single, base);
  const auto fits = cal::fit_samples(all, base);

  // Single-node results: the same curves, bit for bit; no network fraction without multi-node samples.
  REQUIRE(fits.all_reduce.size() == alone.all_reduce.size());
  for (const auto& [g, a] : alone.all_reduce) {
    CAPTURE(g);
    REQUIRE(fits.all_reduce.count(g) == 1);
    CHECK(same_fit(fits.all_reduce.at(g), a));
  }
  CHECK(fits.all_reduce.at(16).bandwidth_Bps == doctest::Approx(200e9).epsilon(0.02));  // not merged with 2 nodes
  REQUIRE(fits.links.size() == alone.links.size());
  for (const auto& [name, a] : alone.links) {
    CAPTURE(name);
    REQUIRE(fits.links.count(name) == 1);
    CHECK(same_fit(fits.links.at(name), a));
  }
  CHECK(!alone.network.has_value());
  CHECK(alone.all_reduce_across_nodes.empty());

  // Multi-node curves, apart.
  CHECK(fits.all_reduce_across_nodes.size() == 2);
  CHECK(fits.all_reduce_across_nodes.count({16, 2}) == 1);
  CHECK(fits.all_reduce_across_nodes.count({32, 4}) == 1);
  CHECK(fits.links_across_nodes.count({"nccl_all_gather", 16, 2}) == 1);
  CHECK(fits.links.count("nccl_all_gather x16") == 0);

  // Every line the single-node samples write into [efficiency] is written the same with the multi-node
  // samples present (the source line aside, which is the same argument here).
  const auto table_alone = lines_of(cal::efficiency_table(alone, base, "test"));
  const auto table_all = lines_of(cal::efficiency_table(fits, base, "test"));
  for (const auto& line : table_alone) {
    CAPTURE(line);
    CHECK(std::find(table_all.begin(), table_all.end(), line) != table_all.end());
  }

  // The network fraction: from the 4-node fit, within 2 % of the truth, its band covering it.
  REQUIRE(fits.network.has_value());
  CHECK(fits.network->nodes == 4);
  CHECK(fits.network->group == 32);
  const std::string profile = cal::write_profile(temp_dir("profile-network"), base, fits, cal::host_fingerprint({}));
  const auto sys = hw::load_system_toml(profile);
  const auto& net = sys.efficiency.network_bandwidth;
  CAPTURE(net.value);
  CAPTURE(net.low);
  CAPTURE(net.high);
  CHECK(within(net.value, network, 0.02));
  CHECK(net.low <= network);
  CHECK(net.high >= network);
  CHECK(net.low < net.value);
  CHECK(net.high > net.value);
  CHECK(net.high - net.low < 0.1);  // a confidence band of the fit, not the default's 0.75-0.92
  CHECK(sys.efficiency.fabric_bandwidth.value == doctest::Approx(fabric).epsilon(0.01));
  // The key's comment names the fit it came from.
  std::ifstream in(profile);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  const auto key = text.find("\nnetwork_bandwidth_fraction = ");
  REQUIRE(key != std::string::npos);
  CHECK(text.substr(key, text.find('\n', key + 1) - key).find("over 4 nodes x 8 GPUs") != std::string::npos);

  // The calibrated profile prices the 4-node and 2-node all-reduce of 1 GiB as the truth did (both use
  // the network fraction; the 2-node one was measured at 0.5, so only the 4-node one matches).
  const sim::CommCost calibrated(sys), actual(truth);
  const double gib = double(1 << 30);
  CHECK(within(calibrated.collective(Collective::AllReduce, gib, {32, 8}).value,
               actual.collective(Collective::AllReduce, gib, {32, 8}).value, 0.01));

  // The summary shows the multi-node rings against the node's NICs (8 x 200 Gb/s = 200 GB/s), and the
  // network fraction against a GPU's share of them (25 GB/s).
  bool row32 = false, row_net = false;
  for (const auto& r : cal::summarize(fits, base)) {
    if (r.curve.rfind("NCCL all-reduce x32 over 4 nodes", 0) == 0) {
      row32 = true;
      CHECK(r.datasheet == "200.0 GB/s");
    }
    if (r.curve.rfind("network", 0) == 0) {
      row_net = true;
      CHECK(r.datasheet == "25.0 GB/s");
      char expected[32];
      std::snprintf(expected, sizeof expected, "%.1f GB/s", fits.network->value * 25.0);
      CHECK(r.measured == expected);
    }
  }
  CHECK(row32);
  CHECK(row_net);
}

TEST_CASE("multi-node all-reduce: no network fraction without a network, an uneven split or an impossible fit") {
  Noise noise(99);
  const auto notes_about = [](const cal::CalibrationFits& f, const std::string& what) {
    for (const auto& n : f.notes)
      if (n.find("network_bandwidth_fraction not mapped") != std::string::npos && n.find(what) != std::string::npos)
        return true;
    return false;
  };
  {  // a800-nvlink: one node, no [network]
    const auto base = hw::resolve_system("a800-nvlink", LLMSIM_DATA_DIR);
    REQUIRE(base.network.nics_per_node == 0);
    const auto dgx = hw::resolve_system("dgx-a100-80gb", LLMSIM_DATA_DIR);
    std::vector<cal::Sample> samples;
    add_samples(samples, with_fractions(dgx, 0.7, 0.8), "nccl_all_reduce", Collective::AllReduce, 16, 2, noise);
    const auto fits = cal::fit_samples(samples, base);
    CHECK(fits.all_reduce_across_nodes.count({16, 2}) == 1);  // fitted and reported all the same
    CHECK(!fits.network.has_value());
    CHECK(notes_about(fits, "no scale-out network"));
    CHECK(cal::efficiency_table(fits, base, "t").find("network_bandwidth_fraction") == std::string::npos);
  }
  const auto base = hw::resolve_system("dgx-a100-80gb", LLMSIM_DATA_DIR);
  {  // 20 ranks over 3 nodes: no whole number per node
    std::vector<cal::Sample> samples;
    add_samples(samples, with_fractions(base, 0.7, 0.8), "nccl_all_reduce", Collective::AllReduce, 24, 3, noise);
    for (auto& s : samples) s.item.group = 20;
    const auto fits = cal::fit_samples(samples, base);
    CHECK(!fits.network.has_value());
    CHECK(notes_about(fits, "do not split evenly"));
  }
  {  // faster than the intra-node steps alone at the profile's fabric fraction: nothing to invert
    std::vector<cal::Sample> samples;
    add_samples(samples, with_fractions(base, 0.7, 0.8), "nccl_all_reduce", Collective::AllReduce, 16, 2, noise);
    for (auto& s : samples) s.time_s *= 0.3;
    const auto fits = cal::fit_samples(samples, base);
    CHECK(!fits.network.has_value());
    CHECK(notes_about(fits, "intra-node"));
  }
}
