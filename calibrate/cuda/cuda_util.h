#pragma once
// Shared helpers of the CUDA benchmarks: checked calls (every CUDA/cuBLAS/NCCL call goes through one
// of the LLMSIM_*_CHECK macros, which throw llmsim::Error naming the call), RAII owners of device and
// pinned memory, streams and events, the "cannot run here" signal, and the L2-defeating buffer arena.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace llmsim::calibrate::cuda {

// Throws llmsim::Error: NoDevice for driver/device-availability errors, Internal for everything else.
[[noreturn]] void throw_cuda(cudaError_t err, const char* call, const char* file, int line);
// "cudaErrorNoDevice (no CUDA-capable device is detected)"
std::string cuda_error_text(cudaError_t err);
// True for errors that mean "no usable GPU" rather than a bug.
bool is_no_device_error(cudaError_t err);

#define LLMSIM_CUDA_CHECK(call)                                                                                    \
  do {                                                                                                             \
    const cudaError_t llmsim_err_ = (call);                                                                        \
    if (llmsim_err_ != cudaSuccess) ::llmsim::calibrate::cuda::throw_cuda(llmsim_err_, #call, __FILE__, __LINE__); \
  } while (0)

// Thrown when an item cannot be measured on this machine or build (unsupported dtype, too few GPUs,
// not enough memory, no NCCL, …); run_gpu_items turns it into a note in `skipped`. `family_wide`: every
// item of the family would be skipped for the same reason (noted once, with a count).
struct Skip {
  std::string why;
  bool family_wide = false;
};

// Device memory on the current device (cudaMalloc). Out of memory is a Skip, not an error.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept { swap(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    swap(o);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return ptr_; }
  unsigned char* bytes() const { return static_cast<unsigned char*>(ptr_); }
  std::size_t size() const { return size_; }

 private:
  void swap(DeviceBuffer& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(size_, o.size_);
    std::swap(device_, o.device_);
  }
  void* ptr_ = nullptr;
  std::size_t size_ = 0;
  int device_ = 0;
};

// Page-locked host memory (cudaMallocHost).
class PinnedBuffer {
 public:
  explicit PinnedBuffer(std::size_t bytes);
  ~PinnedBuffer();
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  unsigned char* get() const { return ptr_; }
  std::size_t size() const { return size_; }

 private:
  unsigned char* ptr_ = nullptr;
  std::size_t size_ = 0;
};

class Stream {
 public:
  Stream();  // non-blocking stream on the current device
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
  int device_ = 0;
};

// Restores the current device on scope exit.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

// Rotation count so that `sets` copies of a working set of `set_bytes` together exceed twice the L2:
// consecutive operations then touch different memory and are not served from L2.
int rotation_sets(std::size_t set_bytes, std::size_t l2_bytes);

// Free device memory on the current device; throws Skip when `bytes` would not fit with a margin.
void require_free_memory(std::size_t bytes, const char* what);

constexpr std::size_t align_up(std::size_t x, std::size_t a) { return (x + a - 1) / a * a; }

// Fills device memory with pseudo-random non-zero values of the given element type (kernels.cu).
enum class Elem { F32, F16, BF16, FP8E4M3, U8 };
std::size_t elem_size(Elem e);
void fill_random(void* p, std::size_t bytes, Elem e, std::uint32_t seed, cudaStream_t s);

// Fills host memory with pseudo-random non-zero bytes.
void fill_host_random(unsigned char* p, std::size_t bytes, std::uint32_t seed);

}  // namespace llmsim::calibrate::cuda
