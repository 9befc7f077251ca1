#include "llmsim/hardware/system_spec.h"

#include <algorithm>
#include <array>

#include "llmsim/core/units.h"

namespace llmsim::hardware {

double GpuSpec::peak(DType precision) const {
  const auto it = peak_flops.find(precision);
  return it == peak_flops.end() ? 0.0 : it->second;
}

double GpuSpec::peak_fp16_accumulate() const {
  return fp16_accumulate_flops > 0 ? fp16_accumulate_flops : peak(DType::FP16);
}

namespace {
struct FabricEntry {
  Fabric fabric;
  std::string_view name;
};
// One table drives name <-> enum both ways, so the two can never disagree.
constexpr std::array<FabricEntry, 4> kFabrics{{
    {Fabric::NvSwitch, "nvswitch"},
    {Fabric::NvLinkPairs, "nvlink-pairs"},
    {Fabric::Pcie, "pcie"},
    {Fabric::XgmiMesh, "xgmi-mesh"},
}};
}  // namespace

std::string_view fabric_name(Fabric f) {
  for (const auto& e : kFabrics)
    if (e.fabric == f) return e.name;
  return "unknown";
}

bool parse_fabric(std::string_view name, Fabric& out) {
  for (const auto& e : kFabrics) {
    if (e.name == name) {
      out = e.fabric;
      return true;
    }
  }
  return false;
}

std::vector<std::string> fabric_names() {
  std::vector<std::string> names;
  for (const auto& e : kFabrics) names.emplace_back(e.name);
  return names;
}

double derived_pcie_bandwidth_Bps(int gen, int lanes) {
  // GB/s per lane per direction after line encoding (PCI-SIG base specs): gen3 8 GT/s and gen4
  // 16 GT/s and gen5 32 GT/s use 128b/130b; gen6 64 GT/s PAM4 uses 256-byte FLITs carrying 242
  // payload bytes, so 64 * 242/256 / 8 = 7.5625 GB/s.
  double per_lane_GBps = 0;
  switch (gen) {
    case 3: per_lane_GBps = 0.985; break;
    case 4: per_lane_GBps = 1.969; break;
    case 5: per_lane_GBps = 3.938; break;
    case 6: per_lane_GBps = 7.5625; break;
    default: return 0;
  }
  return per_lane_GBps * units::GBps * lanes;
}

int fast_domain_gpus(const SystemSpec& sys) {
  const int node = std::max(1, sys.node.gpus_per_node);
  return sys.node.nvlink_domain_gpus > 0 ? std::max(node, sys.node.nvlink_domain_gpus) : node;
}

double nic_share_per_gpu_Bps(const SystemSpec& sys) {
  const auto& net = sys.network;
  if (net.nics_per_node <= 0 || net.nic_bandwidth_Bps <= 0) return 0;
  return net.nics_per_node * net.nic_bandwidth_Bps / std::max(1, sys.node.gpus_per_node);
}

}  // namespace llmsim::hardware
