// probe_gpus() of the CUDA build: device count and device 0's properties, driver/runtime/cuBLAS/NCCL
// versions, and whether every pair of devices has peer access. Any CUDA error is a reason, not a throw.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#if LLMSIM_HAS_NCCL
#include <nccl.h>
#endif

#include <optional>
#include <string>

#include "llmsim/calibrate/cuda/cuda_util.h"
#include "llmsim/calibrate/cuda/runner.h"

namespace llmsim::calibrate::cuda {
namespace {

// CUDA's 1000 * major + 10 * minor as "major.minor".
std::string cuda_version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

}  // namespace

std::optional<GpuInfo> probe(std::string& why) {
  why.clear();
  GpuInfo g;
  const auto failed = [&](cudaError_t err, const char* call) {
    why = std::string(is_no_device_error(err) ? "no CUDA device: " : "CUDA device unusable: ") + call + " returned " +
          cuda_error_text(err);
    (void)cudaGetLastError();
    return std::nullopt;
  };
#define LLMSIM_PROBE(call)                                           \
  do {                                                               \
    const cudaError_t probe_err_ = (call);                           \
    if (probe_err_ != cudaSuccess) return failed(probe_err_, #call); \
  } while (0)

  const cudaError_t count_err = cudaGetDeviceCount(&g.device_count);
  if (count_err != cudaSuccess) {
    failed(count_err, "cudaGetDeviceCount");
    int driver = 0;  // 0 when no driver is installed at all ("insufficient" would then mislead)
    if (count_err == cudaErrorInsufficientDriver && cudaDriverGetVersion(&driver) == cudaSuccess && driver == 0)
      why += "; no NVIDIA driver is installed (libcuda not found)";
    else if (count_err == cudaErrorInsufficientDriver)
      why += "; the driver supports CUDA " + cuda_version_text(driver) + ", this build needs CUDA " +
             cuda_version_text(CUDART_VERSION);
    return std::nullopt;
  }
  if (g.device_count <= 0) {
    why = "no CUDA device: cudaGetDeviceCount found 0 devices";
    return std::nullopt;
  }
  LLMSIM_PROBE(cudaSetDevice(0));
  LLMSIM_PROBE(cudaFree(nullptr));  // creates the context: the first call that needs a working driver

  cudaDeviceProp prop{};
  LLMSIM_PROBE(cudaGetDeviceProperties(&prop, 0));
  g.name = prop.name;
  g.cc_major = prop.major;
  g.cc_minor = prop.minor;
  g.sm_count = prop.multiProcessorCount;
  g.memory_bytes = static_cast<double>(prop.totalGlobalMem);
  if (10 * g.cc_major + g.cc_minor < 80) {
    why = "GPU " + g.name + " has compute capability " + std::to_string(g.cc_major) + "." + std::to_string(g.cc_minor) +
          "; this build's kernels need 8.0 or newer (CUDA_ARCHITECTURES 80;89;90)";
    return std::nullopt;
  }
  int khz = 0;
  LLMSIM_PROBE(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
  g.sm_clock_Hz = 1e3 * khz;
  LLMSIM_PROBE(cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, 0));
  g.memory_clock_Hz = 1e3 * khz;

  int v = 0;
  LLMSIM_PROBE(cudaDriverGetVersion(&v));
  g.driver_version = cuda_version_text(v);
  LLMSIM_PROBE(cudaRuntimeGetVersion(&v));
  g.runtime_version = cuda_version_text(v);

  int major = 0, minor = 0, patch = 0;
  if (cublasGetProperty(MAJOR_VERSION, &major) != CUBLAS_STATUS_SUCCESS ||
      cublasGetProperty(MINOR_VERSION, &minor) != CUBLAS_STATUS_SUCCESS ||
      cublasGetProperty(PATCH_LEVEL, &patch) != CUBLAS_STATUS_SUCCESS) {
    why = "cuBLAS unusable: cublasGetProperty failed";
    return std::nullopt;
  }
  g.cublas_version = std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);

#if LLMSIM_HAS_NCCL
  int nv = 0;
  if (const ncclResult_t r = ncclGetVersion(&nv); r != ncclSuccess) {
    why = std::string("NCCL unusable: ncclGetVersion returned ") + ncclGetErrorString(r);
    return std::nullopt;
  }
  // NCCL >= 2.9 encodes 10000 * major + 100 * minor + patch, older ones 1000 * major + 100 * minor + patch.
  const int div = nv >= 10000 ? 10000 : 1000;
  g.nccl_version = std::to_string(nv / div) + "." + std::to_string((nv % div) / 100) + "." + std::to_string(nv % 100);
#endif

  // Peer access between every ordered pair; a single GPU has no peers, so p2p_all stays false.
  g.p2p_all = g.device_count >= 2;
  for (int a = 0; a < g.device_count && g.p2p_all; ++a)
    for (int b = 0; b < g.device_count; ++b) {
      if (a == b) continue;
      int can = 0;
      LLMSIM_PROBE(cudaDeviceCanAccessPeer(&can, a, b));
      if (!can) {
        g.p2p_all = false;
        break;
      }
    }
#undef LLMSIM_PROBE
  return g;
}

}  // namespace llmsim::calibrate::cuda
