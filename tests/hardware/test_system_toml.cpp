// System TOML parsing, presets and defaults (hardware/system_toml.h, system_spec.h, efficiency.h).
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "llmsim/core/error.h"
#include "llmsim/core/units.h"
#include "llmsim/hardware/efficiency_keys.h"
#include "llmsim/hardware/system_toml.h"
#include "test_util.h"

namespace hw = llmsim::hardware;
namespace units = llmsim::units;
using llmsim::DType;
using llmsim::Error;
using llmsim::ErrorKind;

namespace {

const std::string kDataDir = LLMSIM_DATA_DIR;
const std::string kBadDir = std::string(LLMSIM_TEST_DATA_DIR) + "/hardware/";

const std::vector<std::string> kExpectedPresets = {
    "a10g",       "a800-nvlink",    "dgx-a100-40gb",     "dgx-a100-80gb",  "dgx-h100",     "dgx2-v100",
    "g4dn-metal", "gb200-nvl72",    "gb300-nvl72",       "hgx-b200",       "hgx-b300",     "hgx-h20",
    "hgx-h200",   "hgx-h800",       "l4-pcie",           "l40s-pcie",      "mi300x",       "mi325x",
    "mi355x",     "rtx-a6000-pcie", "rtx-pro-6000-pcie", "rtx3090-nvlink", "rtx4090-pcie", "rtx5090-pcie"};

std::string preset_path(const std::string& name) { return kDataDir + "/hardware/" + name + ".toml"; }

hw::SystemSpec preset(const std::string& name) { return hw::resolve_system(name, kDataDir); }

// 1-based number of the first non-comment line containing `needle`, so expectations follow the
// test file (its header comment describes the defect and may name the same key).
int line_of(const std::string& path, const std::string& needle) {
  std::ifstream in(path);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n)
    if (!line.starts_with("#") && line.find(needle) != std::string::npos) return n;
  FAIL("'" << needle << "' not found in " << path);
  return 0;
}

// Loads a test input that must be rejected and hands back the error.
Error rejection(const std::string& file) {
  try {
    hw::load_system_toml(kBadDir + file);
  } catch (const Error& e) {
    return e;
  }
  FAIL("expected " << file << " to be rejected");
  return Error(ErrorKind::Internal, {}, "unreachable");
}

// "path:line" as it appears at the front of the error text.
std::string at(const std::string& file, const std::string& needle) {
  return kBadDir + file + ":" + std::to_string(line_of(kBadDir + file, needle));
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("the shipped presets are exactly the documented ones, sorted") {
  CHECK(hw::list_system_presets(kDataDir) == kExpectedPresets);
  CHECK(hw::list_system_presets("/nonexistent-llmsim-dir").empty());
}

TEST_CASE("every preset loads and has physically sane values") {
  for (const auto& name : kExpectedPresets) {
    CAPTURE(name);
    const hw::SystemSpec s = preset(name);
    // The TOML's own name matches its file, so a preset and a direct load agree.
    CHECK(hw::load_system_toml(preset_path(name)).name == name);
    CHECK(s.source_file == preset_path(name));
    CHECK_FALSE(s.description.empty());
    CHECK_FALSE(s.gpu.name.empty());
    // Every CUDA preset states its compute capability (it selects the attention kernels' figures); the
    // AMD Instinct presets (the xGMI-mesh ones) have none.
    const bool cuda = s.node.fabric != hw::Fabric::XgmiMesh;
    CHECK(cuda == (s.gpu.compute_capability > 0));
    if (cuda) {
      CHECK(s.gpu.compute_capability >= 70);
      CHECK(s.gpu.compute_capability <= 120);  // Volta .. Blackwell (B200: 10.0, B300: 10.3, RTX 50 / RTX PRO: 12.0)
    }

    // Magnitudes that catch unit slips (GB vs GiB, TB/s vs GB/s, TFLOPs vs FLOPs).
    CHECK(s.gpu.memory_bytes >= 15 * units::GiB);   // T4: 16 GB, 15360 MiB reported
    CHECK(s.gpu.memory_bytes <= 288 * units::GiB);  // MI355X: 288 GiB
    CHECK(s.gpu.memory_bandwidth_Bps >= 250e9);     // L4's GDDR6: 300 GB/s
    CHECK(s.gpu.memory_bandwidth_Bps <= 10e12);
    CHECK(s.gpu.peak(DType::FP32) >= 8e12);    // T4: 8.1
    CHECK(s.gpu.peak(DType::FP32) <= 200e12);  // MI300X packed FP32: 163.4
    // An FP4 peak, where stated, is dense and above the FP8 one (B200: 9,000 over 4,500).
    if (s.gpu.peak(DType::FP4) > 0) CHECK(s.gpu.peak(DType::FP4) > s.gpu.peak(DType::FP8));
    CHECK(s.gpu.peak(DType::FP16) > s.gpu.peak(DType::FP32));
    const double ridge = s.gpu.peak(DType::FP16) / s.gpu.memory_bandwidth_Bps;  // FLOP per byte
    CHECK(ridge > 30);                                                          // H20: 148 TFLOP/s over 4 TB/s = 37
    CHECK(ridge < 700);
    CHECK(s.gpu.l2_bytes >= 4 * units::MiB);
    CHECK(s.gpu.sm_count >= 40);  // T4: 40, L4: 58
    CHECK(s.gpu.boost_clock_Hz >= 1e9);
    CHECK(s.gpu.tdp_W >= 60);  // L4: 72 W

    CHECK(s.node.gpus_per_node >= 4);  // a GB200 / GB300 NVL72 compute tray: 4
    CHECK(hw::fast_domain_gpus(s) >= 8);
    CHECK(hw::fast_domain_gpus(s) % s.node.gpus_per_node == 0);
    CHECK(s.node.fabric_bandwidth_Bps >= 15e9);   // PCIe 3.0 x16 (T4): 15.75 GB/s
    CHECK(s.node.fabric_bandwidth_Bps <= 900e9);  // NVLink 5 (B200): 900 GB/s per direction
    CHECK(s.node.fabric_latency_s > 0);
    CHECK(s.node.fabric_latency_s < 100e-6);
    // The PCIe rate is derived from gen x lanes, except on the Grace-Blackwell racks, whose GPUs reach the
    // host over NVLink-C2C (those presets state its rate).
    const double derived_pcie = hw::derived_pcie_bandwidth_Bps(s.node.pcie_gen, s.node.pcie_lanes);
    if (hw::fast_domain_gpus(s) == s.node.gpus_per_node)
      CHECK(s.node.pcie_bandwidth_Bps == doctest::Approx(derived_pcie));
    else
      CHECK(s.node.pcie_bandwidth_Bps > derived_pcie);
    CHECK(s.node.host_memory_bytes >= 128 * units::GiB);
    CHECK(s.node.cpu_cores >= 32);
    CHECK(s.node.host_memory_bandwidth_Bps >= 200e9);
    if (s.network.nics_per_node > 0) {
      CHECK(s.network.nic_bandwidth_Bps >= 100 * units::Gbps);
      CHECK(s.network.latency_s > 0);
    }
    CHECK(s.runtime.cuda_context_bytes > 0);
    CHECK(s.runtime.cuda_context_bytes < s.gpu.memory_bytes);
    CHECK(s.efficiency.calibrated == false);
    CHECK(s.efficiency.gemm.count(DType::BF16) == 1);
  }
}

TEST_CASE("a800-nvlink matches the reference study's A800 server") {
  const hw::SystemSpec s = preset("a800-nvlink");
  CHECK(s.gpu.peak(DType::BF16) == 312e12);
  CHECK(s.gpu.peak(DType::FP16) == 312e12);
  CHECK(s.gpu.peak(DType::TF32) == 156e12);
  CHECK(s.gpu.peak(DType::FP8) == 0);  // Ampere has no fp8 tensor path
  CHECK(s.gpu.memory_bytes == 80.0 * 1024 * 1024 * 1024);
  CHECK(s.gpu.memory_bandwidth_Bps == 2039e9);
  CHECK(s.node.fabric == hw::Fabric::NvSwitch);
  CHECK(s.node.fabric_bandwidth_Bps == 200e9);  // NVLink cut to 400 GB/s bidirectional
  CHECK(s.node.p2p);
  CHECK(s.node.cpu_cores == 48);
  CHECK(s.node.host_memory_bytes == 512 * units::GiB);
  CHECK(s.network.nics_per_node == 0);
}

TEST_CASE("rtx4090-pcie: fp32-accumulate tensor rates, PCIe only, P2P disabled") {
  const hw::SystemSpec s = preset("rtx4090-pcie");
  CHECK(s.gpu.peak(DType::BF16) == doctest::Approx(165.2e12));
  CHECK(s.gpu.peak(DType::FP16) == doctest::Approx(165.2e12));
  CHECK(s.gpu.peak(DType::FP8) == doctest::Approx(330.3e12));
  CHECK(s.gpu.peak(DType::FP32) == doctest::Approx(82.6e12));
  CHECK(s.gpu.memory_bytes == 24 * units::GiB);
  CHECK_FALSE(s.node.p2p);
  CHECK(s.node.fabric == hw::Fabric::Pcie);
  CHECK(s.node.pcie_gen == 4);
  CHECK(s.node.pcie_bandwidth_Bps == doctest::Approx(16 * 1.969e9));
  // FP16 accumulation (cublasHgemm) at the whitepaper's full rate; BF16 has no such path.
  CHECK(s.gpu.peak_fp16_accumulate() == doctest::Approx(330.3e12));
}

TEST_CASE("peak_fp16_acc16_TFLOPs: optional, never below the FP32-accumulate peak") {
  CHECK(preset("dgx-h100").gpu.peak_fp16_accumulate() == preset("dgx-h100").gpu.peak(DType::FP16));
  CHECK(preset("rtx3090-nvlink").gpu.peak_fp16_accumulate() == doctest::Approx(142e12));
  const Error e = rejection("acc16_below_fp16.toml");
  CHECK(e.kind() == ErrorKind::Input);
  CHECK(e.where().key == "gpu.peak_fp16_acc16_TFLOPs");
  CHECK(contains(e.message(), "value 50 breaks the rule: must be at least peak_fp16_TFLOPs"));
}

TEST_CASE("l2_read_bytes_per_clk: optional, the whitepaper's bytes per clock at the boost clock") {
  // Ampere whitepaper p. 35: A100 5120 and V100 2048 bytes per clock; 1410 and 1530 MHz boost.
  CHECK(preset("dgx-a100-80gb").gpu.l2_read_bandwidth_Bps() == doctest::Approx(5120 * 1410e6));
  CHECK(preset("a800-nvlink").gpu.l2_read_bandwidth_Bps() == doctest::Approx(7.2192e12));
  CHECK(preset("dgx2-v100").gpu.l2_read_bandwidth_Bps() == doctest::Approx(2048 * 1530e6));
  CHECK(preset("hgx-h200").gpu.l2_read_bandwidth_Bps() == 0);  // not stated by the Hopper whitepaper
  const Error e = rejection("l2_read_zero.toml");
  CHECK(e.kind() == ErrorKind::Input);
  CHECK(e.where().key == "gpu.l2_read_bytes_per_clk");
  CHECK(contains(e.message(), "must be > 0"));
}

TEST_CASE("rtx3090-nvlink: bridges join pairs, the rest goes over PCIe") {
  const hw::SystemSpec s = preset("rtx3090-nvlink");
  CHECK(s.node.fabric == hw::Fabric::NvLinkPairs);
  CHECK(hw::fabric_name(s.node.fabric) == "nvlink-pairs");
  CHECK(s.node.fabric_bandwidth_Bps == doctest::Approx(56.25e9));
  CHECK(s.node.gpus_per_node % 2 == 0);
  CHECK(s.node.p2p);
  CHECK(s.gpu.peak(DType::BF16) == doctest::Approx(71e12));
  CHECK(s.gpu.peak(DType::FP8) == 0);
}

TEST_CASE("Hopper presets: H200 has H100 compute with more and faster memory") {
  const hw::SystemSpec h100 = preset("dgx-h100");
  const hw::SystemSpec h200 = preset("hgx-h200");
  CHECK(h100.gpu.peak(DType::BF16) == doctest::Approx(989.4e12));
  CHECK(h100.gpu.peak(DType::FP8) == doctest::Approx(1978.9e12));
  for (DType d : {DType::FP32, DType::TF32, DType::FP16, DType::BF16, DType::FP8, DType::INT8})
    CHECK(h200.gpu.peak(d) == h100.gpu.peak(d));
  CHECK(h200.gpu.memory_bytes == doctest::Approx(143771 * units::MiB));
  CHECK(h200.gpu.memory_bandwidth_Bps == doctest::Approx(4.8e12));
  CHECK(h100.gpu.memory_bandwidth_Bps == doctest::Approx(3.35e12));
  CHECK(h100.node.fabric_bandwidth_Bps == doctest::Approx(450e9));
  CHECK(h100.node.pcie_gen == 5);
  CHECK(h100.network.nics_per_node == 8);
  CHECK(h100.network.nic_bandwidth_Bps == doctest::Approx(50e9));  // 400 Gb/s
}

TEST_CASE("dgx2-v100: 16 GPUs, no bf16/tf32 tensor path, EDR InfiniBand") {
  const hw::SystemSpec s = preset("dgx2-v100");
  CHECK(s.node.gpus_per_node == 16);
  CHECK(s.gpu.peak(DType::FP16) == doctest::Approx(125e12));
  CHECK(s.gpu.peak(DType::BF16) == 0);
  CHECK(s.gpu.peak(DType::TF32) == 0);
  CHECK(s.node.pcie_gen == 3);
  CHECK(s.network.nic_bandwidth_Bps == doctest::Approx(12.5e9));  // 100 Gb/s
}

TEST_CASE("DGX A100 presets differ only in memory size, bandwidth and host memory") {
  const hw::SystemSpec a40 = preset("dgx-a100-40gb");
  const hw::SystemSpec a80 = preset("dgx-a100-80gb");
  CHECK(a40.gpu.memory_bytes == 40 * units::GiB);
  CHECK(a80.gpu.memory_bytes == 80 * units::GiB);
  CHECK(a40.gpu.memory_bandwidth_Bps == doctest::Approx(1555e9));
  CHECK(a80.gpu.memory_bandwidth_Bps == doctest::Approx(2039e9));
  CHECK(a40.node.host_memory_bytes == 1024 * units::GiB);
  CHECK(a80.node.host_memory_bytes == 2048 * units::GiB);
  CHECK(a40.gpu.peak(DType::BF16) == a80.gpu.peak(DType::BF16));
  CHECK(a40.node.fabric_bandwidth_Bps == doctest::Approx(300e9));
  CHECK(a40.node.cpu_cores == 128);
  CHECK(a40.network.nic_bandwidth_Bps == doctest::Approx(25e9));  // 200 Gb/s
}

TEST_CASE("NVL72 racks: a 72-GPU NVLink domain over trays of 4; HGX and AMD boards end at the node") {
  for (const char* name : {"gb200-nvl72", "gb300-nvl72"}) {
    CAPTURE(name);
    const hw::SystemSpec s = preset(name);
    CHECK(s.node.gpus_per_node == 4);
    CHECK(s.node.nvlink_domain_gpus == 72);
    CHECK(hw::fast_domain_gpus(s) == 72);
    CHECK(s.node.fabric == hw::Fabric::NvSwitch);
    CHECK(s.node.fabric_bandwidth_Bps == doctest::Approx(900e9));
    CHECK(s.node.cpu_cores == 144);  // per tray: 2 Grace x 72
    CHECK(s.network.nics_per_node == 4);
  }
  CHECK(preset("gb300-nvl72").network.nic_bandwidth_Bps == doctest::Approx(100e9));  // 800 Gb/s ConnectX-8
  for (const char* name : {"hgx-b200", "hgx-b300", "mi300x", "rtx5090-pcie"}) {
    CAPTURE(name);
    const hw::SystemSpec s = preset(name);
    CHECK(hw::fast_domain_gpus(s) == s.node.gpus_per_node);
  }
  // A hand-built spec that never set the domain falls back to the node.
  hw::SystemSpec bare;
  bare.node.gpus_per_node = 8;
  CHECK(hw::fast_domain_gpus(bare) == 8);
}

TEST_CASE("FP4 peaks: parsed where stated, 0 = no FP4 tensor cores") {
  CHECK(preset("hgx-b200").gpu.peak(DType::FP4) == doctest::Approx(9000e12));
  CHECK(preset("gb300-nvl72").gpu.peak(DType::FP4) == doctest::Approx(15000e12));
  CHECK(preset("mi355x").gpu.peak(DType::FP4) > 0);
  CHECK(preset("rtx5090-pcie").gpu.peak(DType::FP4) > 0);
  CHECK(preset("dgx-h100").gpu.peak(DType::FP4) == 0);  // Hopper: no FP4 tensor cores
  CHECK(preset("mi300x").gpu.peak(DType::FP4) == 0);    // CDNA 3: none either
}

TEST_CASE("AMD Instinct presets: xGMI full mesh of 8, no CUDA compute capability") {
  for (const char* name : {"mi300x", "mi325x", "mi355x"}) {
    CAPTURE(name);
    const hw::SystemSpec s = preset(name);
    CHECK(s.node.fabric == hw::Fabric::XgmiMesh);
    CHECK(s.node.gpus_per_node == 8);
    CHECK(s.gpu.compute_capability == 0);
  }
  CHECK(preset("mi300x").node.fabric_bandwidth_Bps == doctest::Approx(448e9));  // 7 links x 64 GB/s
  CHECK(preset("mi355x").gpu.peak(DType::TF32) == 0);
}

TEST_CASE("nvlink_domain_gpus: parsed, defaulted, and its rules") {
  const hw::SystemSpec s = hw::load_system_toml(kBadDir + "nvl_domain.toml");
  CHECK(s.node.nvlink_domain_gpus == 16);
  CHECK(hw::fast_domain_gpus(s) == 16);
  CHECK(s.gpu.peak(DType::FP4) == doctest::Approx(400e12));
  const hw::SystemSpec m = hw::load_system_toml(kBadDir + "minimal.toml");
  CHECK(m.node.nvlink_domain_gpus == m.node.gpus_per_node);
  CHECK(m.gpu.peak(DType::FP4) == 0);
  SUBCASE("not a whole number of nodes") {
    const Error e = rejection("domain_not_whole_nodes.toml");
    CHECK(e.kind() == ErrorKind::Input);
    CHECK(e.where().key == "node.nvlink_domain_gpus");
    CHECK(contains(e.what(), at("domain_not_whole_nodes.toml", "nvlink_domain_gpus")));
    CHECK(contains(e.message(), "value 10 breaks the rule: must be a whole number of nodes"));
  }
  SUBCASE("only NVLink switches join nodes") {
    const Error e = rejection("domain_without_switch.toml");
    CHECK(e.where().key == "node.nvlink_domain_gpus");
    CHECK(contains(e.message(), "only when fabric = \"nvswitch\""));
  }
  SUBCASE("positive") {
    const Error e = rejection("domain_zero.toml");
    CHECK(e.where().key == "node.nvlink_domain_gpus");
    CHECK(contains(e.message(), "value 0 breaks the rule: must be an integer >= 1"));
  }
  SUBCASE("a mesh needs two GPUs") {
    const Error e = rejection("mesh_of_one.toml");
    CHECK(e.where().key == "node.gpus_per_node");
    CHECK(contains(e.message(), "must be at least 2 when fabric = \"xgmi-mesh\""));
  }
}

TEST_CASE("optional parts take documented defaults") {
  const hw::SystemSpec s = hw::load_system_toml(kBadDir + "minimal.toml");
  CHECK(s.name == "minimal");
  CHECK(s.description.empty());
  CHECK(s.gpu.peak(DType::TF32) == 0);
  CHECK(s.gpu.peak(DType::BF16) == 0);
  CHECK(s.gpu.peak(DType::INT8) == 0);
  CHECK(s.gpu.peak(DType::FP16) == doctest::Approx(100e12));
  CHECK(s.gpu.l2_bytes == 4 * units::MiB);
  CHECK(s.gpu.boost_clock_Hz == doctest::Approx(1.5e9));
  CHECK(s.node.fabric_latency_s == doctest::Approx(3e-6));
  CHECK(s.node.pcie_bandwidth_Bps == doctest::Approx(16 * 0.985e9));  // derived: gen3 x16
  CHECK(s.network.nics_per_node == 0);
  CHECK(s.network.nic_bandwidth_Bps == 0);
  CHECK(s.runtime.cuda_context_bytes == doctest::Approx(1.0 * units::GiB));
  CHECK(s.runtime.allocator_reserve_fraction == doctest::Approx(0.05));
  const hw::Efficiency d = hw::default_efficiency();
  CHECK(s.efficiency.gemm.at(DType::BF16).value == d.gemm.at(DType::BF16).value);
  CHECK(s.efficiency.memory_bandwidth.value == d.memory_bandwidth.value);
  CHECK(s.efficiency.cpu_adam_params_per_s == d.cpu_adam_params_per_s);
}

TEST_CASE("explicit PCIe rate, runtime and efficiency overrides are honoured") {
  const hw::SystemSpec s = hw::load_system_toml(kBadDir + "overrides.toml");
  CHECK(s.description == "calibrated test system");
  CHECK(s.node.fabric == hw::Fabric::NvLinkPairs);
  CHECK(s.node.pcie_bandwidth_Bps == doctest::Approx(25e9));  // not the derived gen5 x8 rate
  CHECK(s.network.nics_per_node == 2);
  CHECK(s.network.nic_bandwidth_Bps == doctest::Approx(25e9));
  CHECK(s.network.latency_s == doctest::Approx(1.5e-6));
  CHECK(s.runtime.cuda_context_bytes == doctest::Approx(0.5 * units::GiB));
  CHECK(s.runtime.allocator_reserve_fraction == doctest::Approx(0.1));
  CHECK(s.efficiency.calibrated);
  const hw::Fraction& bf16 = s.efficiency.gemm.at(DType::BF16);
  CHECK(bf16.value == doctest::Approx(0.8));
  CHECK(bf16.low == doctest::Approx(0.8));
  CHECK(bf16.high == doctest::Approx(0.8));
  CHECK(bf16.source == "calibration run 2026-01-01");
  // Keys left out keep their defaults.
  CHECK(s.efficiency.gemm.at(DType::FP16).value == hw::default_efficiency().gemm.at(DType::FP16).value);
  CHECK(s.efficiency.memory_bandwidth.value == doctest::Approx(0.9));
  CHECK(s.efficiency.fabric_bandwidth.value == hw::default_efficiency().fabric_bandwidth.value);
  CHECK(s.efficiency.kernel_launch_s == doctest::Approx(4e-6));
  CHECK(s.efficiency.cpu_adam_params_per_s == doctest::Approx(1.5e9));
  CHECK(s.efficiency.cpu_adam_source == "calibration run 2026-01-01");
  // A pageable rate given for one direction; the other keeps the default.
  CHECK(s.efficiency.pageable_h2d_Bps == doctest::Approx(6.5e9));
  CHECK(s.efficiency.pageable_d2h_Bps == hw::default_efficiency().pageable_d2h_Bps);
  CHECK(s.efficiency.pageable_source == "calibration run 2026-01-01");
}

TEST_CASE("unknown keys name file, line and the closest known key") {
  SUBCASE("misspelt required key") {
    const Error e = rejection("unknown_key.toml");
    CHECK(e.kind() == ErrorKind::Input);
    CHECK(contains(e.what(), at("unknown_key.toml", "memory_GB")));
    CHECK(e.where().line == line_of(kBadDir + "unknown_key.toml", "memory_GB"));
    CHECK(e.where().key == "gpu.memory_GB");
    CHECK(contains(e.what(), "unknown key 'memory_GB'"));
    CHECK(contains(e.what(), "did you mean 'memory_GiB'?"));
  }
  SUBCASE("misspelt table name") {
    const Error e = rejection("unknown_table.toml");
    CHECK(e.kind() == ErrorKind::Input);
    CHECK(contains(e.what(), at("unknown_table.toml", "[gpus]")));
    CHECK(contains(e.what(), "unknown key 'gpus'"));
    CHECK(contains(e.what(), "did you mean 'gpu'?"));
  }
}

TEST_CASE("type, range and required-key violations are Input errors at the offending line") {
  SUBCASE("wrong type") {
    const Error e = rejection("wrong_type.toml");
    CHECK(e.kind() == ErrorKind::Input);
    CHECK(contains(e.what(), at("wrong_type.toml", "sm_count")));
    CHECK(e.where().key == "gpu.sm_count");
    CHECK(contains(e.message(), "expected an integer"));
  }
  SUBCASE("negative bandwidth") {
    const Error e = rejection("negative_bandwidth.toml");
    CHECK(e.kind() == ErrorKind::Input);
    CHECK(contains(e.what(), at("negative_bandwidth.toml", "hbm_bandwidth_GBps")));
    CHECK(e.where().key == "gpu.hbm_bandwidth_GBps");
    CHECK(contains(e.message(), "-500"));
    CHECK(contains(e.message(), "must be > 0"));
  }
  SUBCASE("missing required key points at its table") {
    const Error e = rejection("missing_required.toml");
    CHECK(e.kind() == ErrorKind::Input);
    CHECK(e.where().key == "gpu.tdp_W");
    CHECK(e.where().line == line_of(kBadDir + "missing_required.toml", "[gpu]"));
    CHECK(contains(e.message(), "required key is missing"));
  }
  SUBCASE("unknown fabric lists the choices") {
    const Error e = rejection("bad_fabric.toml");
    CHECK(e.kind() == ErrorKind::Input);
    CHECK(contains(e.what(), at("bad_fabric.toml", "nvswich")));
    CHECK(e.where().key == "node.fabric");
    CHECK(contains(e.message(), "'nvswich' is not one of: nvswitch, nvlink-pairs, pcie"));
    CHECK(contains(e.message(), "did you mean 'nvswitch'?"));
  }
  SUBCASE("schema version") {
    const Error e = rejection("bad_schema_version.toml");
    CHECK(e.where().key == "schema_version");
    CHECK(contains(e.what(), at("bad_schema_version.toml", "schema_version")));
    CHECK(contains(e.message(), "value 2 breaks the rule: must be 1"));
  }
  SUBCASE("PCIe generation out of range") {
    const Error e = rejection("bad_pcie_gen.toml");
    CHECK(e.where().key == "node.pcie_gen");
    CHECK(contains(e.what(), at("bad_pcie_gen.toml", "pcie_gen")));
    CHECK(contains(e.message(), "value 2 breaks the rule: must be a PCIe generation from 3 to 6"));
  }
  SUBCASE("nvlink-pairs needs an even GPU count") {
    const Error e = rejection("odd_pairs.toml");
    CHECK(e.where().key == "node.gpus_per_node");
    CHECK(contains(e.what(), at("odd_pairs.toml", "gpus_per_node")));
    CHECK(contains(e.message(), "value 3 breaks the rule: must be even"));
  }
  SUBCASE("NICs need a rate") {
    const Error e = rejection("nic_without_rate.toml");
    CHECK(e.where().key == "network.nic_bandwidth_Gbps");
    CHECK(contains(e.message(), "required key is missing"));
  }
  SUBCASE("efficiency fraction above 1") {
    const Error e = rejection("bad_fraction.toml");
    CHECK(e.where().key == "efficiency.gemm_fraction_bf16");
    CHECK(contains(e.what(), at("bad_fraction.toml", "gemm_fraction_bf16")));
    CHECK(contains(e.message(), "value 1.5 breaks the rule: must be a fraction in (0, 1]"));
  }
  SUBCASE("compute capability that is not major.minor") {
    const Error e = rejection("bad_compute_capability.toml");
    CHECK(e.where().key == "gpu.compute_capability");
    CHECK(contains(e.what(), at("bad_compute_capability.toml", "compute_capability")));
    CHECK(contains(e.message(), "8.95"));
    CHECK(contains(e.message(), "major.minor"));
  }
  SUBCASE("runtime reserve larger than the GPU") {
    const Error e = rejection("runtime_too_big.toml");
    CHECK(e.where().key == "runtime.cuda_context_GiB");
    CHECK(contains(e.message(), "must be smaller than gpu.memory_GiB"));
  }
}

TEST_CASE("malformed TOML reports the line of the syntax error") {
  const Error e = rejection("malformed.toml");
  CHECK(e.kind() == ErrorKind::Input);
  CHECK(e.where().line == line_of(kBadDir + "malformed.toml", "= = 100"));
  CHECK(contains(e.what(), at("malformed.toml", "= = 100")));
  CHECK(contains(e.message(), "malformed TOML"));
}

TEST_CASE("missing files and unknown presets are NotFound") {
  SUBCASE("missing file") {
    try {
      hw::load_system_toml(kBadDir + "does-not-exist.toml");
      FAIL("expected NotFound");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::NotFound);
    }
  }
  SUBCASE("near-miss preset name suggests the preset and lists all") {
    try {
      hw::resolve_system("a800-nvlnk", kDataDir);
      FAIL("expected NotFound");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::NotFound);
      CHECK(contains(e.message(), "unknown system 'a800-nvlnk'"));
      CHECK(contains(e.message(), "did you mean 'a800-nvlink'?"));
      for (const auto& p : kExpectedPresets) CHECK(contains(e.message(), p));
    }
  }
  SUBCASE("unrelated name lists the presets without a guess") {
    try {
      hw::resolve_system("tpu-v5p", kDataDir);
      FAIL("expected NotFound");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::NotFound);
      CHECK_FALSE(contains(e.message(), "did you mean"));
      CHECK(contains(e.message(), "presets: a10g, a800-nvlink, dgx-a100-40gb"));
    }
  }
}

TEST_CASE("an existing path wins over preset lookup") {
  const std::string path = kBadDir + "minimal.toml";
  const hw::SystemSpec s = hw::resolve_system(path, kDataDir);
  CHECK(s.name == "minimal");
  CHECK(s.source_file == path);
}

TEST_CASE("default efficiency: every fraction is a cited band around its value") {
  const hw::Efficiency e = hw::default_efficiency();
  CHECK_FALSE(e.calibrated);
  std::vector<hw::Fraction> all = {e.memory_bandwidth, e.elementwise_bandwidth, e.fabric_bandwidth, e.pcie_bandwidth,
                                   e.network_bandwidth};
  for (DType d : {DType::FP32, DType::TF32, DType::FP16, DType::BF16, DType::FP8, DType::INT8}) {
    CAPTURE(llmsim::dtype_name(d));
    REQUIRE(e.gemm.count(d) == 1);
    all.push_back(e.gemm.at(d));
  }
  for (const auto& f : all) {
    CAPTURE(f.source);
    CHECK(f.value > 0);
    CHECK(f.value <= 1);
    CHECK(f.low <= f.value);
    CHECK(f.value <= f.high);
    CHECK(f.high <= 1);
    CHECK(f.source.size() > 40);
  }
  CHECK(e.kernel_launch_s > 0);
  CHECK(e.kernel_launch_s < 20e-6);
  CHECK(e.cpu_adam_params_per_s > 1e8);
  CHECK(contains(e.cpu_adam_source, "ZeRO-Offload"));
}

TEST_CASE("FlashAttention-1-class kernels on Hopper keep their distance to FlashAttention-2") {
  // Both run Ampere's mma.sync path on Hopper; FA2 reaches 0.35 of the H100 peak there (FlashAttention-3
  // paper), and FA1 keeps its A100 ratio to FA2 (0.33 / 0.55), 0.21, instead of the A100 fraction 0.33.
  const hw::Efficiency ampere = hw::default_efficiency(80), hopper = hw::default_efficiency(90);
  CHECK(ampere.attention_fa1.value == doctest::Approx(0.33));
  CHECK(hopper.attention_fa1.value == doctest::Approx(0.35 * 0.33 / 0.55));
  CHECK(hopper.attention_fa1.value / hopper.attention.value ==
        doctest::Approx(ampere.attention_fa1.value / ampere.attention.value));
  CHECK(hopper.attention_fa1.low <= hopper.attention_fa1.value);
  CHECK(hopper.attention_fa1.value <= hopper.attention_fa1.high);
  CHECK(hopper.attention_fa1.source.find("Hopper (derived)") != std::string::npos);
}

TEST_CASE("fabric names and PCIe rates") {
  for (const auto& name : hw::fabric_names()) {
    hw::Fabric f = hw::Fabric::Pcie;
    REQUIRE(hw::parse_fabric(name, f));
    CHECK(hw::fabric_name(f) == name);
  }
  hw::Fabric f = hw::Fabric::NvSwitch;
  CHECK_FALSE(hw::parse_fabric("infinity-fabric", f));
  CHECK(f == hw::Fabric::NvSwitch);  // untouched on failure
  CHECK(hw::derived_pcie_bandwidth_Bps(3, 16) == doctest::Approx(15.76e9));
  CHECK(hw::derived_pcie_bandwidth_Bps(4, 16) == doctest::Approx(31.504e9));
  CHECK(hw::derived_pcie_bandwidth_Bps(5, 16) == doctest::Approx(63.008e9));
  CHECK(hw::derived_pcie_bandwidth_Bps(6, 16) == doctest::Approx(121.0e9));
  CHECK(hw::derived_pcie_bandwidth_Bps(4, 8) == doctest::Approx(15.752e9));
  CHECK(hw::derived_pcie_bandwidth_Bps(2, 16) == 0);
}

TEST_CASE("every [efficiency] key of the one key table is read into its own field, with its band") {
  std::ifstream in(kBadDir + "minimal.toml");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  text += "\n[efficiency]\n";
  const auto& keys = hw::fraction_keys();
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const double v = 0.30 + 0.01 * static_cast<double>(i);
    text += fmt::format("{} = {}\n{}_low = {}\n{}_high = {}\n", keys[i].toml_key, v, keys[i].toml_key, v - 0.05,
                        keys[i].toml_key, v + 0.05);
  }
  for (std::size_t i = 0; i < hw::gemm_fraction_dtypes().size(); ++i)
    text += fmt::format("{} = {}\n", hw::gemm_fraction_key(hw::gemm_fraction_dtypes()[i]), 0.70 + 0.01 * double(i));
  const hw::SystemSpec s = hw::load_system_toml(llmsim::test::write_temp("every_efficiency_key.toml", text));
  std::vector<hw::FractionField> seen;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    CAPTURE(keys[i].toml_key);
    const hw::Fraction& f = keys[i].value ? s.efficiency.*keys[i].value : *(s.efficiency.*keys[i].optional);
    CHECK(f.value == doctest::Approx(0.30 + 0.01 * static_cast<double>(i)));
    CHECK(f.low == doctest::Approx(0.25 + 0.01 * static_cast<double>(i)));
    CHECK(f.high == doctest::Approx(0.35 + 0.01 * static_cast<double>(i)));
    CHECK(&hw::fraction_key(keys[i].field) == &keys[i]);  // one entry per field
    CHECK(std::find(seen.begin(), seen.end(), keys[i].field) == seen.end());
    seen.push_back(keys[i].field);
  }
  for (std::size_t i = 0; i < hw::gemm_fraction_dtypes().size(); ++i)
    CHECK(s.efficiency.gemm.at(hw::gemm_fraction_dtypes()[i]).value == doctest::Approx(0.70 + 0.01 * double(i)));
}

TEST_CASE("a profile overlay replaces the keys it names on any system and keeps the rest") {
  const std::string ok = llmsim::test::write_temp(
      "overlay-ok.toml", "schema_version = 1\n[efficiency]\nhost_dispatch_us = 12.5\nsource = \"fit\"\n");
  hw::SystemSpec s = preset("a800-nvlink");
  const double launch = s.efficiency.kernel_launch_s;
  hw::apply_efficiency_overlay(s, ok);
  CHECK(s.efficiency.host_dispatch_s == doctest::Approx(12.5e-6));
  CHECK(s.efficiency.host_dispatch_source == "fit");
  CHECK(s.efficiency.kernel_launch_s == launch);
  CHECK(s.overlay_file == ok);
  // A typo is an Input error naming the file, the key and a did-you-mean.
  const std::string typo =
      llmsim::test::write_temp("overlay-typo.toml", "schema_version = 1\n[efficiency]\nhost_dispach_us = 12.5\n");
  const Error e = llmsim::test::error_of([&] { hw::check_efficiency_overlay(typo); });
  CHECK(e.kind() == ErrorKind::Input);
  CHECK(contains(e.what(), "overlay-typo.toml"));
  CHECK(contains(e.what(), "host_dispatch_us"));
  // A negative rate breaks the key's rule; an overlay is no system file (no [gpu] table allowed).
  const std::string neg =
      llmsim::test::write_temp("overlay-neg.toml", "schema_version = 1\n[efficiency]\nhost_dispatch_us = -1\n");
  CHECK(llmsim::test::error_of([&] { hw::check_efficiency_overlay(neg); }).kind() == ErrorKind::Input);
  const std::string sys = llmsim::test::write_temp(
      "overlay-sys.toml", "schema_version = 1\n[gpu]\nname = \"x\"\n[efficiency]\nhost_dispatch_us = 1\n");
  CHECK(contains(llmsim::test::error_of([&] { hw::check_efficiency_overlay(sys); }).what(), "gpu"));
}

TEST_CASE("the host dispatch rate's band: read in us, checked against the value") {
  const std::string ok = llmsim::test::write_temp("overlay-band.toml",
                                                  "schema_version = 1\n[efficiency]\nhost_dispatch_us = "
                                                  "30\nhost_dispatch_us_low = 28\nhost_dispatch_us_high = 35\n");
  hw::SystemSpec s = preset("a800-nvlink");
  hw::apply_efficiency_overlay(s, ok);
  CHECK(s.efficiency.host_dispatch_low_s == doctest::Approx(28e-6));
  CHECK(s.efficiency.host_dispatch_high_s == doctest::Approx(35e-6));
  const std::string bad = llmsim::test::write_temp(
      "overlay-band-bad.toml", "schema_version = 1\n[efficiency]\nhost_dispatch_us = 30\nhost_dispatch_us_low = 40\n");
  const Error e = llmsim::test::error_of([&] { hw::check_efficiency_overlay(bad); });
  CHECK(contains(e.what(), "host_dispatch_us_low"));
  CHECK(contains(e.what(), "must be <= host_dispatch_us"));
}
