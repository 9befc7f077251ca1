#include "llmsim/hardware/efficiency_keys.h"

namespace llmsim::hardware {

const std::vector<FractionKey>& fraction_keys() {
  using F = FractionField;
  using E = Efficiency;
  static const std::vector<FractionKey> keys = {
      {F::Attention, "attention_fraction", "attention", "attention kernel (fa2)", &E::attention},
      {F::AttentionFa1, "attention_fraction_fa1", "attention_fa1", "attention kernel (fa1)", &E::attention_fa1},
      {F::AttentionFa3, "attention_fraction_fa3", "attention_fa3", "attention kernel (fa3)", &E::attention_fa3, nullptr,
       ShownWhen::Hopper},
      {F::AttentionCudnn, "attention_fraction_cudnn", "attention_cudnn", "attention kernel (cudnn)",
       &E::attention_cudnn, nullptr, ShownWhen::CudnnCapable},
      {F::MemoryBandwidth, "memory_bandwidth_fraction", "memory_bandwidth", "memory bandwidth", &E::memory_bandwidth},
      {F::ElementwiseBandwidth, "elementwise_bandwidth_fraction", "elementwise_bandwidth", "elementwise bandwidth",
       &E::elementwise_bandwidth},
      {F::FabricBandwidth, "fabric_bandwidth_fraction", "fabric_bandwidth", "fabric bandwidth", &E::fabric_bandwidth},
      {F::FabricAllGather, "fabric_bandwidth_fraction_all_gather", "all_gather", "fabric bandwidth, all_gather",
       nullptr, &E::fabric_all_gather},
      {F::FabricReduceScatter, "fabric_bandwidth_fraction_reduce_scatter", "reduce_scatter",
       "fabric bandwidth, reduce_scatter", nullptr, &E::fabric_reduce_scatter},
      {F::FabricAllToAll, "fabric_bandwidth_fraction_all_to_all", "all_to_all", "fabric bandwidth, all_to_all", nullptr,
       &E::fabric_all_to_all},
      {F::FabricSendRecv, "fabric_bandwidth_fraction_send_recv", "send_recv", "fabric bandwidth, send_recv", nullptr,
       &E::fabric_send_recv},
      {F::PcieBandwidth, "pcie_bandwidth_fraction", "pcie_bandwidth", "pcie bandwidth", &E::pcie_bandwidth},
      {F::HostMemoryBandwidth, "host_memory_bandwidth_fraction", "host_memory_bandwidth", "host memory bandwidth",
       &E::host_memory_bandwidth},
      {F::NetworkBandwidth, "network_bandwidth_fraction", "network_bandwidth", "network bandwidth",
       &E::network_bandwidth},
      {F::CommInterference, "comm_interference_fraction", "comm_interference",
       "compute lost per second of overlapped communication", &E::comm_interference, nullptr, ShownWhen::Always, true},
  };
  return keys;
}

const FractionKey& fraction_key(FractionField f) {
  for (const FractionKey& k : fraction_keys())
    if (k.field == f) return k;
  return fraction_keys().front();  // every field is in the table (tests/hardware checks it)
}

const std::vector<DType>& gemm_fraction_dtypes() {
  static const std::vector<DType> d = {DType::BF16, DType::FP16, DType::FP32, DType::TF32, DType::FP8, DType::FP4};
  return d;
}

std::string gemm_fraction_key(DType t) { return "gemm_fraction_" + std::string(dtype_name(t)); }

std::vector<std::string> efficiency_toml_keys() {
  std::vector<std::string> keys = {"calibrated"};
  for (const DType t : gemm_fraction_dtypes()) keys.push_back(gemm_fraction_key(t));
  for (const FractionKey& k : fraction_keys()) keys.emplace_back(k.toml_key);
  for (const char* k : {kKernelLaunchKey, kGemmCallKey, kHostDispatchKey, kCollectiveBaseKey, kCollectiveHostKey,
                        kDeepSpeedHookKey, kGemmHalfKKey, kCpuAdamKey, kPageableH2dKey, kPageableD2hKey, "source"})
    keys.emplace_back(k);
  for (const std::string& k : banded_us_keys()) {
    keys.push_back(k + "_low");
    keys.push_back(k + "_high");
  }
  return keys;
}

const std::vector<std::string>& banded_us_keys() {
  static const std::vector<std::string> keys = {kHostDispatchKey, kCollectiveBaseKey, kCollectiveHostKey};
  return keys;
}

std::vector<std::string> banded_fraction_keys() {
  std::vector<std::string> keys;
  for (const DType t : gemm_fraction_dtypes()) keys.push_back(gemm_fraction_key(t));
  for (const FractionKey& k : fraction_keys()) keys.emplace_back(k.toml_key);
  return keys;
}

}  // namespace llmsim::hardware
