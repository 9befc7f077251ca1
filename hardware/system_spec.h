#pragma once
// The immutable description of one node type and its scale-out network, parsed from a system TOML
// (system_toml.h). All fields SI; the unit of each is in its comment. Knows nothing about models.
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "llmsim/core/dtype.h"
#include "llmsim/hardware/efficiency.h"

namespace llmsim::hardware {

struct GpuSpec {
  std::string name;                    // marketing name, e.g. "NVIDIA A800-SXM4-80GB"
  std::map<DType, double> peak_flops;  // dense peak, FLOP/s (int8: OP/s), per precision; absent = unsupported
  double memory_bytes = 0;             // bytes of device memory
  double memory_bandwidth_Bps = 0;     // bytes/s, datasheet peak
  double l2_bytes = 0;                 // bytes
  // Bytes per clock the L2 cache delivers to the SMs, as the architecture whitepaper states it (A100: 5120,
  // V100: 2048, Ampere whitepaper p. 35); 0 = not stated. Prices kernels whose SMs re-read data from L2.
  double l2_read_bytes_per_clock = 0;
  int sm_count = 0;            // streaming multiprocessors
  double boost_clock_Hz = 0;   // Hz
  double tdp_W = 0;            // watts
  int compute_capability = 0;  // 10 x major + minor (90 = Hopper); 0 = not stated
  // FP16 tensor peak when the products are accumulated in FP16 (cublasHgemm, CUBLAS_COMPUTE_16F), FLOP/s: twice
  // the FP32-accumulate rate on GeForce parts, which halve the latter; 0 = not stated (the same as peak(FP16)).
  double fp16_accumulate_flops = 0;

  // Peak for a precision; 0 when the GPU has no such tensor path (e.g. fp8 before Hopper/Ada).
  double peak(DType precision) const;
  // The FP16 peak with FP16 accumulation (fp16_accumulate_flops, else peak(FP16)).
  double peak_fp16_accumulate() const;
  // Peak L2 read bandwidth, bytes/s: l2_read_bytes_per_clock at the boost clock; 0 when not stated.
  double l2_read_bandwidth_Bps() const { return l2_read_bytes_per_clock * boost_clock_Hz; }
};

// NvSwitch: every GPU reaches every other at its full fabric rate. NvLinkPairs: bridges join GPUs two
// by two. Pcie: GPU peer-to-peer over PCIe. XgmiMesh: a full mesh of point-to-point links (AMD
// Infinity Fabric / xGMI on 8-GPU MI300-series boards), a GPU's fabric rate split evenly over its
// links to the gpus_per_node - 1 others.
enum class Fabric { NvSwitch, NvLinkPairs, Pcie, XgmiMesh };
std::string_view fabric_name(Fabric f);  // "nvswitch", "nvlink-pairs", "pcie", "xgmi-mesh"
// Parses a fabric name as written in a system TOML; false when unknown (out untouched).
bool parse_fabric(std::string_view name, Fabric& out);
std::vector<std::string> fabric_names();  // every valid name, in enum order

// bytes/s per direction of a PCIe link of `lanes` lanes at generation `gen` (3..6) after line
// encoding; 0 for an unknown generation. Used when a system TOML gives no pcie_bandwidth_GBps.
double derived_pcie_bandwidth_Bps(int gen, int lanes);

struct NodeSpec {
  int gpus_per_node = 0;  // GPUs in one node (one compute tray of a rack-scale system): host, CPU and NICs are per node
  // GPUs joined by one fabric domain: gpus_per_node for a node-sized NVSwitch / mesh / PCIe fabric, more
  // when NVLink switches outside the node join several nodes (GB200 NVL72: 72 GPUs over 18 trays of 4).
  // 0 = gpus_per_node (hand-built specs); read through fast_domain_gpus().
  int nvlink_domain_gpus = 0;
  Fabric fabric = Fabric::Pcie;
  double fabric_bandwidth_Bps = 0;       // bytes/s per GPU per direction over the intra-node fabric
  double fabric_latency_s = 0;           // seconds, one-way small-message latency
  bool p2p = true;                       // GPU peer-to-peer enabled (false: traffic staged through host memory)
  int pcie_gen = 0;                      // PCIe generation to each GPU
  int pcie_lanes = 0;                    // lanes to each GPU
  double pcie_bandwidth_Bps = 0;         // bytes/s per direction host<->GPU (datasheet or derived from gen x lanes)
  double host_memory_bytes = 0;          // bytes of host DRAM per node
  int cpu_cores = 0;                     // physical cores per node
  double host_memory_bandwidth_Bps = 0;  // bytes/s host DRAM bandwidth per node
};

struct NetworkSpec {
  int nics_per_node = 0;         // 0 = single node only
  double nic_bandwidth_Bps = 0;  // bytes/s per NIC per direction
  double latency_s = 0;          // seconds, one-way
};

// Runtime memory the framework cannot use for tensors (counted by the memory model).
struct RuntimeSpec {
  double cuda_context_bytes = 0;          // bytes: CUDA context + cuBLAS/NCCL workspaces per GPU
  double allocator_reserve_fraction = 0;  // fraction of device memory lost to allocator fragmentation
};

struct SystemSpec {
  std::string name;  // preset name or file path
  std::string description;
  std::string source_file;   // TOML it was read from
  std::string overlay_file;  // profile overlay applied on top (apply_efficiency_overlay), if any
  GpuSpec gpu;
  NodeSpec node;
  NetworkSpec network;
  RuntimeSpec runtime;
  Efficiency efficiency;  // calibrated curves or documented defaults
};

// GPUs that reach each other over the fast fabric rather than the NICs: the NVLink domain when one is
// given, else the node (at least 1). The one boundary every communication group, the pipeline's
// cross-node test, the search's TP range and the feasibility checks use; host memory, CPU cores and NIC
// shares stay per node.
int fast_domain_gpus(const SystemSpec& sys);

// bytes/s: one GPU's share of its node's scale-out NICs at line rate (nics_per_node x nic_bandwidth /
// gpus_per_node), because every GPU of a node communicates across nodes at once; 0 without a network.
double nic_share_per_gpu_Bps(const SystemSpec& sys);

}  // namespace llmsim::hardware
