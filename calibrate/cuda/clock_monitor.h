#pragma once
// Reads the GPU's SM clock and its clock-reduction reasons through NVML, so that every calibration
// sample says at which clock it ran and whether power or heat was holding the clock down (a GEMM
// sweep on an H200 runs into its 700 W cap and loses a quarter of its clock; a sample taken then is a
// sustained figure, not the datasheet's boost).
//
// NVML is loaded at run time (dlopen of the driver's libnvidia-ml.so.1): the CUDA toolkit of the build
// machine need not ship nvml.h, and a machine without it still calibrates, only with unknown clocks.

namespace llmsim::calibrate::cuda {

struct ClockReading {
  double sm_MHz = 0;       // 0 = unknown
  bool throttled = false;  // power cap, power brake or thermal slowdown active
};

class ClockMonitor {
 public:
  // `cuda_device`: the CUDA ordinal; the NVML device is found by its PCI bus id.
  explicit ClockMonitor(int cuda_device);
  ~ClockMonitor();
  ClockMonitor(const ClockMonitor&) = delete;
  ClockMonitor& operator=(const ClockMonitor&) = delete;

  ClockReading read() const;  // never throws; unknown when NVML is unavailable

 private:
  using ClockInfoFn = int (*)(void*, int, unsigned*);
  using ReasonsFn = int (*)(void*, unsigned long long*);
  void* lib_ = nullptr;               // dlopen handle
  bool initialized_ = false;          // nvmlInit_v2 succeeded (nvmlShutdown owed)
  void* device_ = nullptr;            // nvmlDevice_t
  ClockInfoFn clock_info_ = nullptr;  // resolved once, called per sample
  ReasonsFn reasons_ = nullptr;
};

}  // namespace llmsim::calibrate::cuda
