#include "llmsim/hardware/system_toml.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <optional>
#include <utility>

#include "llmsim/core/error.h"
#include "llmsim/core/suggest.h"
#include "llmsim/core/toml_reader.h"
#include "llmsim/core/units.h"
#include "llmsim/hardware/efficiency_keys.h"

namespace llmsim::hardware {

namespace {

constexpr std::int64_t kSchemaVersion = 1;

// [runtime] defaults, used when a system TOML leaves them out. Engineering defaults, not
// measurements: a PyTorch process holds ~0.3-0.5 GiB of CUDA context per GPU (with lazy module
// loading; more without), and cuBLAS workspaces plus NCCL channel buffers (NCCL_BUFFSIZE 4 MiB per
// channel per peer) add a few hundred MiB more, so 1 GiB is a round upper-middle value. The caching
// allocator typically strands a few percent of device memory in fragments; 5% is our assumption.
constexpr double kDefaultCudaContextGiB = 1.0;
constexpr double kDefaultAllocatorReserveFraction = 0.05;

// The keys each table accepts. They are declared before anything is read so that a misspelt
// required key is reported as "unknown key 'memory_GB' (did you mean 'memory_GiB'?)" rather than
// as a missing key. Each reader below starts with declare_and_check() on its list.
// A profile overlay holds an [efficiency] table alone (apply_efficiency_overlay).
const std::initializer_list<const char*> kOverlayKeys = {"schema_version", "efficiency"};
const std::initializer_list<const char*> kRootKeys = {"schema_version", "name",    "description", "gpu",
                                                      "node",           "network", "runtime",     "efficiency"};
const std::initializer_list<const char*> kGpuKeys = {"name",
                                                     "peak_fp32_TFLOPs",
                                                     "peak_tf32_TFLOPs",
                                                     "peak_fp16_TFLOPs",
                                                     "peak_fp16_acc16_TFLOPs",
                                                     "peak_bf16_TFLOPs",
                                                     "peak_fp8_TFLOPs",
                                                     "peak_int8_TOPs",
                                                     "peak_fp4_TFLOPs",
                                                     "memory_GiB",
                                                     "hbm_bandwidth_GBps",
                                                     "l2_MiB",
                                                     "l2_read_bytes_per_clk",
                                                     "sm_count",
                                                     "boost_clock_MHz",
                                                     "tdp_W",
                                                     "compute_capability"};
const std::initializer_list<const char*> kNodeKeys = {"gpus_per_node",
                                                      "nvlink_domain_gpus",
                                                      "fabric",
                                                      "fabric_bandwidth_GBps",
                                                      "fabric_latency_us",
                                                      "p2p",
                                                      "pcie_gen",
                                                      "pcie_lanes",
                                                      "pcie_bandwidth_GBps",
                                                      "host_memory_GiB",
                                                      "cpu_cores",
                                                      "host_memory_bandwidth_GBps"};
const std::initializer_list<const char*> kNetworkKeys = {"nics_per_node", "nic_bandwidth_Gbps", "latency_us"};
const std::initializer_list<const char*> kRuntimeKeys = {"cuda_context_GiB", "allocator_reserve_fraction"};

// Rejects unknown keys up front (see above), with file:line and a did-you-mean.
void declare_and_check(TomlReader& t, std::initializer_list<const char*> keys) {
  for (const char* k : keys) t.ignore(k);
  t.finish();
}

std::string show(double v) { return fmt::format("{}", v); }

[[noreturn]] void broken_rule(const TomlReader& t, const std::string& key, const std::string& value,
                              const std::string& rule) {
  throw_input(t.where(key), "value " + value + " breaks the rule: " + rule);
}

int integer_in(TomlReader& t, const std::string& key, std::int64_t lo, std::int64_t hi, const std::string& rule) {
  const std::int64_t v = t.integer(key);
  if (v < lo || v > hi) broken_rule(t, key, std::to_string(v), rule);
  return static_cast<int>(v);
}

int at_least(TomlReader& t, const std::string& key, std::int64_t lo) {
  return integer_in(t, key, lo, std::numeric_limits<int>::max(), "must be an integer >= " + std::to_string(lo));
}

// A fraction of a datasheet peak: (0, 1].
std::optional<double> opt_fraction(TomlReader& t, const std::string& key, bool may_be_zero = false) {
  const auto v = t.opt_number(key);
  if (v && may_be_zero && !(*v >= 0 && *v <= 1)) broken_rule(t, key, show(*v), "must be a fraction in [0, 1]");
  if (v && !may_be_zero && !(*v > 0 && *v <= 1)) broken_rule(t, key, show(*v), "must be a fraction in (0, 1]");
  return v;
}

void set_peak(GpuSpec& g, DType d, std::optional<double> tera_per_s) {
  if (tera_per_s) g.peak_flops[d] = *tera_per_s * units::TFLOPs;
}

GpuSpec read_gpu(TomlReader t) {
  declare_and_check(t, kGpuKeys);
  GpuSpec g;
  g.name = t.string("name");
  // fp32 and fp16 exist on every supported GPU; the others are absent where the GPU has no such
  // tensor path (V100: no tf32/bf16; nothing before Hopper/Ada: no fp8).
  set_peak(g, DType::FP32, t.positive("peak_fp32_TFLOPs"));
  const double fp16 = t.positive("peak_fp16_TFLOPs");
  set_peak(g, DType::FP16, fp16);
  if (const auto acc16 = t.opt_positive("peak_fp16_acc16_TFLOPs")) {
    // A GPU does not accumulate in FP16 slower than in FP32: a smaller figure is a mistyped one.
    if (*acc16 < fp16) broken_rule(t, "peak_fp16_acc16_TFLOPs", show(*acc16), "must be at least peak_fp16_TFLOPs");
    g.fp16_accumulate_flops = *acc16 * units::TFLOPs;
  }
  set_peak(g, DType::TF32, t.opt_positive("peak_tf32_TFLOPs"));
  set_peak(g, DType::BF16, t.opt_positive("peak_bf16_TFLOPs"));
  set_peak(g, DType::FP8, t.opt_positive("peak_fp8_TFLOPs"));
  set_peak(g, DType::INT8, t.opt_positive("peak_int8_TOPs"));  // OP/s share the TFLOPs scale
  // Dense FP4 (NVFP4 / MXFP4) tensor peak: absent = no FP4 tensor cores (kept apart: see GpuSpec).
  set_peak(g, DType::FP4, t.opt_positive("peak_fp4_TFLOPs"));  // dense NVFP4 / MXFP4 tensor peak
  g.memory_bytes = t.positive("memory_GiB") * units::GiB;
  g.memory_bandwidth_Bps = t.positive("hbm_bandwidth_GBps") * units::GBps;
  g.l2_bytes = t.positive("l2_MiB") * units::MiB;
  if (const auto l2_read = t.opt_positive("l2_read_bytes_per_clk")) g.l2_read_bytes_per_clock = *l2_read;
  g.sm_count = at_least(t, "sm_count", 1);
  g.boost_clock_Hz = t.positive("boost_clock_MHz") * units::MHz;
  g.tdp_W = t.positive("tdp_W");
  if (auto cc = t.opt_positive("compute_capability")) {
    // Written as CUDA does, major.minor (8.0, 8.9, 9.0); kept as 10 x major + minor.
    const double tenths = *cc * 10;
    if (std::abs(tenths - std::round(tenths)) > 1e-6 || *cc < 3 || *cc >= 20)
      broken_rule(t, "compute_capability", show(*cc), "must be a CUDA compute capability major.minor, e.g. 8.0 or 9.0");
    g.compute_capability = static_cast<int>(std::lround(tenths));
  }
  return g;
}

int read_pcie_lanes(TomlReader& t) {
  const std::int64_t v = t.integer("pcie_lanes");
  if (v != 1 && v != 2 && v != 4 && v != 8 && v != 16)
    broken_rule(t, "pcie_lanes", std::to_string(v), "must be one of 1, 2, 4, 8, 16");
  return static_cast<int>(v);
}

// GPUs in one NVLink domain: the node when absent; else whole nodes joined by NVLink switches, which
// only an NVSwitch fabric can do (bridges, meshes and PCIe end at the node).
int read_domain(TomlReader& t, const NodeSpec& n) {
  if (!t.has("nvlink_domain_gpus")) return n.gpus_per_node;
  const int d = at_least(t, "nvlink_domain_gpus", 1);
  if (d % n.gpus_per_node != 0)
    broken_rule(
        t, "nvlink_domain_gpus", std::to_string(d),
        "must be a whole number of nodes (a multiple of gpus_per_node = " + std::to_string(n.gpus_per_node) + ")");
  if (d > n.gpus_per_node && n.fabric != Fabric::NvSwitch)
    broken_rule(t, "nvlink_domain_gpus", std::to_string(d),
                "may exceed gpus_per_node only when fabric = \"nvswitch\" (NVLink switches join the nodes)");
  return d;
}

NodeSpec read_node(TomlReader t) {
  declare_and_check(t, kNodeKeys);
  NodeSpec n;
  n.gpus_per_node = at_least(t, "gpus_per_node", 1);
  parse_fabric(t.choice("fabric", fabric_names()), n.fabric);
  // Bridges join GPUs two by two; an odd GPU would have no partner.
  if (n.fabric == Fabric::NvLinkPairs && n.gpus_per_node % 2 != 0)
    broken_rule(t, "gpus_per_node", std::to_string(n.gpus_per_node), "must be even when fabric = \"nvlink-pairs\"");
  // A mesh splits each GPU's fabric rate over its links to the others; one GPU has none.
  if (n.fabric == Fabric::XgmiMesh && n.gpus_per_node < 2)
    broken_rule(t, "gpus_per_node", std::to_string(n.gpus_per_node), "must be at least 2 when fabric = \"xgmi-mesh\"");
  n.nvlink_domain_gpus = read_domain(t, n);
  n.fabric_bandwidth_Bps = t.positive("fabric_bandwidth_GBps") * units::GBps;
  n.fabric_latency_s = t.positive("fabric_latency_us") * units::us;
  n.p2p = t.boolean("p2p");
  n.pcie_gen = integer_in(t, "pcie_gen", 3, 6, "must be a PCIe generation from 3 to 6");
  n.pcie_lanes = read_pcie_lanes(t);
  const auto pcie = t.opt_positive("pcie_bandwidth_GBps");
  n.pcie_bandwidth_Bps = pcie ? *pcie * units::GBps : derived_pcie_bandwidth_Bps(n.pcie_gen, n.pcie_lanes);
  n.host_memory_bytes = t.positive("host_memory_GiB") * units::GiB;
  n.cpu_cores = at_least(t, "cpu_cores", 1);
  n.host_memory_bandwidth_Bps = t.positive("host_memory_bandwidth_GBps") * units::GBps;
  return n;
}

// Rate and latency only matter once there is a NIC; say so when they are missing.
double positive_when_nics(TomlReader& t, const std::string& key) {
  if (!t.has(key)) throw_input(t.where(key), "required key is missing (needed because nics_per_node > 0)");
  return t.positive(key);
}

NetworkSpec read_network(TomlReader t) {
  declare_and_check(t, kNetworkKeys);
  NetworkSpec net;
  net.nics_per_node = at_least(t, "nics_per_node", 0);
  // A single-node system has no NICs, and then rate and latency are optional (and unused).
  if (net.nics_per_node > 0) {
    net.nic_bandwidth_Bps = positive_when_nics(t, "nic_bandwidth_Gbps") * units::Gbps;
    net.latency_s = positive_when_nics(t, "latency_us") * units::us;
  } else {
    net.nic_bandwidth_Bps = t.opt_non_negative("nic_bandwidth_Gbps").value_or(0) * units::Gbps;
    net.latency_s = t.opt_non_negative("latency_us").value_or(0) * units::us;
  }
  return net;
}

RuntimeSpec read_runtime(std::optional<TomlReader> t, double gpu_memory_bytes) {
  RuntimeSpec r{.cuda_context_bytes = kDefaultCudaContextGiB * units::GiB,
                .allocator_reserve_fraction = kDefaultAllocatorReserveFraction};
  if (!t) return r;
  declare_and_check(*t, kRuntimeKeys);
  if (const auto v = t->opt_non_negative("cuda_context_GiB")) {
    if (*v * units::GiB >= gpu_memory_bytes)
      broken_rule(*t, "cuda_context_GiB", show(*v), "must be smaller than gpu.memory_GiB");
    r.cuda_context_bytes = *v * units::GiB;
  }
  if (const auto v = t->opt_non_negative("allocator_reserve_fraction")) {
    if (*v >= 1) broken_rule(*t, "allocator_reserve_fraction", show(*v), "must be a fraction in [0, 1)");
    r.allocator_reserve_fraction = *v;
  }
  return r;
}

// An override is a single measured value whose band collapses onto it, unless the calibration gave
// one: `<key>_low <= <key> <= <key>_high`.
void override_fraction(TomlReader& t, const std::string& key, const std::string& source, Fraction& f,
                       bool may_be_zero = false) {
  const auto v = opt_fraction(t, key, may_be_zero);
  const auto lo = opt_fraction(t, key + "_low", may_be_zero);
  const auto hi = opt_fraction(t, key + "_high", may_be_zero);
  if (!v) {
    if (lo || hi)
      broken_rule(t, lo ? key + "_low" : key + "_high", show(lo ? *lo : *hi), "needs " + key + " beside it");
    return;
  }
  f = Fraction{.value = *v, .low = lo.value_or(*v), .high = hi.value_or(*v), .source = source};
  if (f.low > f.value) broken_rule(t, key + "_low", show(f.low), "must be <= " + key + " = " + show(*v));
  if (f.high < f.value) broken_rule(t, key + "_high", show(f.high), "must be >= " + key + " = " + show(*v));
}

// A fitted microsecond quantity with an optional band, `<key>_low` <= `<key>` <= `<key>_high`: a value
// given without its band is exact (the band of the value it replaces no longer applies).
void read_banded_us(TomlReader& t, const std::string& key, const std::string& source, double& value, double& low,
                    double& high, std::string& value_source) {
  if (const auto v = t.opt_non_negative(key)) {
    value = *v * units::us;
    low = high = 0;
    value_source = source;
  }
  if (const auto v = t.opt_non_negative(key + "_low")) {
    if (*v * units::us > value * (1 + 1e-12)) broken_rule(t, key + "_low", show(*v), "must be <= " + key);
    low = *v * units::us;
  }
  if (const auto v = t.opt_non_negative(key + "_high")) {
    if (*v * units::us < value * (1 - 1e-12)) broken_rule(t, key + "_high", show(*v), "must be >= " + key);
    high = *v * units::us;
  }
}

void read_efficiency(std::optional<TomlReader> t, Efficiency& e) {
  if (!t) return;
  // Fractions may carry a calibrated band: `<key>_low` and `<key>_high` beside `<key>`.
  for (const std::string& k : banded_fraction_keys()) {
    t->ignore(k + "_low");
    t->ignore(k + "_high");
  }
  for (const std::string& k : efficiency_toml_keys()) t->ignore(k);
  t->finish();
  const std::string source = t->opt_string("source").value_or("[efficiency] override in " + t->file());
  e.calibrated = t->opt_boolean("calibrated").value_or(e.calibrated);
  for (const DType dtype : gemm_fraction_dtypes())
    override_fraction(*t, gemm_fraction_key(dtype), source, e.gemm[dtype]);
  for (const FractionKey& k : fraction_keys()) {
    if (k.value) {
      override_fraction(*t, k.toml_key, source, e.*k.value, k.may_be_zero);
    } else if (t->has(k.toml_key)) {
      Fraction f{};
      override_fraction(*t, k.toml_key, source, f);
      e.*k.optional = f;
    }
  }
  if (const auto v = t->opt_non_negative(kKernelLaunchKey)) e.kernel_launch_s = *v * units::us;
  if (const auto v = t->opt_non_negative(kDeepSpeedHookKey)) {
    e.deepspeed_hook_s = *v * units::us;
    e.deepspeed_hook_source = source;
  }
  if (const auto v = t->opt_non_negative(kGemmCallKey)) {
    e.gemm_call_s = *v * units::us;
    e.gemm_call_source = source;
  }
  read_banded_us(*t, kHostDispatchKey, source, e.host_dispatch_s, e.host_dispatch_low_s, e.host_dispatch_high_s,
                 e.host_dispatch_source);
  read_banded_us(*t, kCollectiveBaseKey, source, e.collective_base_s, e.collective_base_low_s, e.collective_base_high_s,
                 e.collective_base_source);
  read_banded_us(*t, kCollectiveHostKey, source, e.collective_host_s, e.collective_host_low_s, e.collective_host_high_s,
                 e.collective_host_source);
  if (const auto v = t->opt_positive(kGemmHalfKKey)) {
    e.gemm_half_k = *v;
    e.gemm_half_k_source = source;
  }
  if (const auto v = t->opt_positive(kCpuAdamKey)) {
    e.cpu_adam_params_per_s = *v * 1e6;
    e.cpu_adam_source = source;
  }
  const auto h2d = t->opt_positive(kPageableH2dKey), d2h = t->opt_positive(kPageableD2hKey);
  if (h2d) e.pageable_h2d_Bps = *h2d * units::GBps;
  if (d2h) e.pageable_d2h_Bps = *d2h * units::GBps;
  if (h2d || d2h) e.pageable_source = source;
}

void check_schema_version(TomlReader& r) {
  const std::int64_t v = r.integer("schema_version");
  if (v != kSchemaVersion)
    broken_rule(r, "schema_version", std::to_string(v),
                "must be " + std::to_string(kSchemaVersion) + " (the only system schema this build reads)");
}

std::filesystem::path preset_dir(const std::string& data_dir) { return std::filesystem::path(data_dir) / "hardware"; }

}  // namespace

SystemSpec load_system_toml(const std::string& path) {
  const toml::table root = parse_toml_file(path);
  TomlReader r(root, path);
  declare_and_check(r, kRootKeys);
  check_schema_version(r);
  SystemSpec s;
  s.name = r.string("name");
  s.description = r.opt_string("description").value_or("");
  s.source_file = path;
  s.gpu = read_gpu(r.table("gpu"));
  s.node = read_node(r.table("node"));
  s.network = read_network(r.table("network"));
  s.runtime = read_runtime(r.opt_table("runtime"), s.gpu.memory_bytes);
  s.efficiency = default_efficiency(s.gpu.compute_capability);
  read_efficiency(r.opt_table("efficiency"), s.efficiency);
  return s;
}

void apply_efficiency_overlay(SystemSpec& s, const std::string& path) {
  const toml::table root = parse_toml_file(path);
  TomlReader r(root, path);
  declare_and_check(r, kOverlayKeys);
  check_schema_version(r);
  read_efficiency(r.table("efficiency"), s.efficiency);
  s.overlay_file = path;
}

void check_efficiency_overlay(const std::string& path) {
  SystemSpec probe;
  probe.efficiency = default_efficiency();
  apply_efficiency_overlay(probe, path);
}

std::vector<std::string> list_system_presets(const std::string& data_dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> names;
  std::error_code ec;
  const fs::path dir = preset_dir(data_dir);
  if (!fs::is_directory(dir, ec)) return names;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.is_regular_file(ec) && entry.path().extension() == ".toml") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

SystemSpec resolve_system(const std::string& name_or_path, const std::string& data_dir) {
  std::error_code ec;
  // An existing file wins, so a local "a800-nvlink" file shadows the preset of that name.
  if (std::filesystem::is_regular_file(name_or_path, ec)) return load_system_toml(name_or_path);
  const std::vector<std::string> presets = list_system_presets(data_dir);
  if (std::find(presets.begin(), presets.end(), name_or_path) != presets.end()) {
    SystemSpec s = load_system_toml((preset_dir(data_dir) / (name_or_path + ".toml")).string());
    s.name = name_or_path;
    return s;
  }
  throw_not_found(Location{}, "unknown system '" + name_or_path + "': not a file, and not a preset in " +
                                  preset_dir(data_dir).string() + did_you_mean(name_or_path, presets) +
                                  "; presets: " + (presets.empty() ? std::string("(none)") : join(presets)));
}

}  // namespace llmsim::hardware
