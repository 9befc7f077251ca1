#include "llmsim/calibrate/cuda/clock_monitor.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdint>

namespace llmsim::calibrate::cuda {
namespace {

// The few NVML entry points used, declared from the NVML API reference (stable C ABI; nvml.h is not
// needed at build time). nvmlReturn_t 0 = NVML_SUCCESS; nvmlDevice_t is an opaque pointer.
using NvmlInit = int (*)();
using NvmlShutdown = int (*)();
using NvmlByPci = int (*)(const char*, void**);

constexpr int kNvmlClockSm = 1;  // nvmlClockType_t NVML_CLOCK_SM
// nvmlClocksEventReason* / nvmlClocksThrottleReason* bits that mean "held down by power or heat":
// SwPowerCap 0x4, HwSlowdown 0x8, SwThermalSlowdown 0x20, HwThermalSlowdown 0x40, HwPowerBrakeSlowdown 0x80.
constexpr unsigned long long kPowerOrThermal = 0x4ull | 0x8ull | 0x20ull | 0x40ull | 0x80ull;

template <class F>
F symbol(void* lib, const char* name) {
  return reinterpret_cast<F>(dlsym(lib, name));
}

}  // namespace

ClockMonitor::ClockMonitor(int cuda_device) {
  lib_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib_) return;
  const auto init = symbol<NvmlInit>(lib_, "nvmlInit_v2");
  const auto by_pci = symbol<NvmlByPci>(lib_, "nvmlDeviceGetHandleByPciBusId_v2");
  if (!init || !by_pci || init() != 0) return;
  initialized_ = true;
  char bus[32] = {};
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, cuda_device) != cudaSuccess) {
    (void)cudaGetLastError();
    return;
  }
  void* dev = nullptr;
  if (by_pci(bus, &dev) != 0 || !dev) return;
  device_ = dev;
  clock_info_ = symbol<ClockInfoFn>(lib_, "nvmlDeviceGetClockInfo");
  // The newer name first (NVML 12.x renamed "throttle" to "event" reasons; both stay exported).
  reasons_ = symbol<ReasonsFn>(lib_, "nvmlDeviceGetCurrentClocksEventReasons");
  if (!reasons_) reasons_ = symbol<ReasonsFn>(lib_, "nvmlDeviceGetCurrentClocksThrottleReasons");
}

ClockMonitor::~ClockMonitor() {
  if (!lib_) return;
  if (initialized_)
    if (const auto shutdown = symbol<NvmlShutdown>(lib_, "nvmlShutdown")) (void)shutdown();
  dlclose(lib_);
}

ClockReading ClockMonitor::read() const {
  ClockReading r;
  if (!device_) return r;
  unsigned mhz = 0;
  if (clock_info_ && clock_info_(device_, kNvmlClockSm, &mhz) == 0) r.sm_MHz = mhz;
  unsigned long long bits = 0;
  if (reasons_ && reasons_(device_, &bits) == 0) r.throttled = (bits & kPowerOrThermal) != 0;
  return r;
}

}  // namespace llmsim::calibrate::cuda
