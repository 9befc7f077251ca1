#pragma once
// The keys of a system TOML's [efficiency] table: the one list that the reader (system_toml.cpp), the
// calibrated-profile writer (calibrate/profile_writer.cpp) and `llmsim show system` use, so that a
// fraction added to Efficiency is read, written and shown under one name.
#include <optional>
#include <string>
#include <vector>

#include "llmsim/core/dtype.h"
#include "llmsim/hardware/efficiency.h"

namespace llmsim::hardware {

enum class FractionField {
  Attention,
  AttentionFa1,
  AttentionFa3,
  AttentionCudnn,
  MemoryBandwidth,
  ElementwiseBandwidth,
  FabricBandwidth,
  FabricAllGather,
  FabricReduceScatter,
  FabricAllToAll,
  FabricSendRecv,
  PcieBandwidth,
  HostMemoryBandwidth,
  NetworkBandwidth,
  CommInterference,
};

// When `show system` prints a fraction (an optional one: when present).
enum class ShownWhen { Always, Hopper, CudnnCapable };

// One achievable fraction besides the per-precision GEMM fractions, in reading order. Per-collective
// fabric fractions are optional (absent: fabric_bandwidth applies); the others always hold a value.
struct FractionKey {
  FractionField field;
  const char* toml_key;  // "attention_fraction_fa1"; `<key>_low` / `<key>_high` carry its band
  const char* json_key;  // "attention_fa1" (per-collective: "all_gather" under fabric_bandwidth_by_collective)
  const char* label;     // "attention kernel (fa1)", as `show system` prints it
  Fraction Efficiency::*value = nullptr;                    // always-present fractions
  std::optional<Fraction> Efficiency::*optional = nullptr;  // per-collective fractions
  ShownWhen shown = ShownWhen::Always;
  bool may_be_zero = false;  // 0 is a meaningful value (no effect), not only (0, 1]
};
const std::vector<FractionKey>& fraction_keys();
const FractionKey& fraction_key(FractionField f);

// The GEMM fractions: one per compute precision a profile may calibrate, "gemm_fraction_<dtype>".
const std::vector<DType>& gemm_fraction_dtypes();
std::string gemm_fraction_key(DType t);

// The scalar keys that are not fractions.
inline constexpr const char* kKernelLaunchKey = "kernel_launch_us";
inline constexpr const char* kGemmCallKey = "gemm_call_us";
inline constexpr const char* kDeepSpeedHookKey = "deepspeed_hook_us";
inline constexpr const char* kHostDispatchKey = "host_dispatch_us";
inline constexpr const char* kCollectiveBaseKey = "collective_base_us";
inline constexpr const char* kCollectiveHostKey = "collective_host_us";
inline constexpr const char* kGemmHalfKKey = "gemm_half_k";
inline constexpr const char* kCpuAdamKey = "cpu_adam_Mparams_per_s";
inline constexpr const char* kPageableH2dKey = "pageable_h2d_GBps";
inline constexpr const char* kPageableD2hKey = "pageable_d2h_GBps";

// The microsecond keys that may carry a `_low` / `_high` band (a fitted value's leave-one-source-out range).
const std::vector<std::string>& banded_us_keys();

// Every key the table may hold (the reader rejects others with a did-you-mean), and the fractions
// that may carry a `_low` / `_high` band.
std::vector<std::string> efficiency_toml_keys();
std::vector<std::string> banded_fraction_keys();

}  // namespace llmsim::hardware
