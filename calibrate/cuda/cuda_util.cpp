#include "llmsim/calibrate/cuda/cuda_util.h"

#include <cstdio>
#include <cstring>
#include <string>

#include "llmsim/core/error.h"

namespace llmsim::calibrate::cuda {

std::string cuda_error_text(cudaError_t err) {
  return std::string(cudaGetErrorName(err)) + " (" + cudaGetErrorString(err) + ")";
}

bool is_no_device_error(cudaError_t err) {
  switch (err) {
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInitializationError:
    case cudaErrorDevicesUnavailable:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
    case cudaErrorSystemNotReady:
    case cudaErrorNotPermitted:
    case cudaErrorNoKernelImageForDevice: return true;
    default: return false;
  }
}

void throw_cuda(cudaError_t err, const char* call, const char* file, int line) {
  std::string where = file;
  if (const auto slash = where.rfind('/'); slash != std::string::npos) where = where.substr(slash + 1);
  throw Error(is_no_device_error(err) ? ErrorKind::NoDevice : ErrorKind::Internal, Location{},
              std::string("CUDA call failed: ") + call + " returned " + cuda_error_text(err) + " [" + where + ":" +
                  std::to_string(line) + "]");
}

namespace {
std::string gib(std::size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return buf;
}
}  // namespace

DeviceBuffer::DeviceBuffer(std::size_t bytes) : size_(bytes) {
  LLMSIM_CUDA_CHECK(cudaGetDevice(&device_));
  if (bytes == 0) return;
  const cudaError_t err = cudaMalloc(&ptr_, bytes);
  if (err == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();  // clear it: out of memory is not sticky
    ptr_ = nullptr;
    throw Skip{"needs " + gib(bytes) + " of device memory in one allocation, which cudaMalloc refused"};
  }
  LLMSIM_CUDA_CHECK(err);
}

DeviceBuffer::~DeviceBuffer() {
  if (!ptr_) return;
  int current = 0;
  if (cudaGetDevice(&current) == cudaSuccess && current != device_) {
    (void)cudaSetDevice(device_);
    (void)cudaFree(ptr_);
    (void)cudaSetDevice(current);
  } else {
    (void)cudaFree(ptr_);
  }
}

PinnedBuffer::PinnedBuffer(std::size_t bytes) : size_(bytes) {
  void* p = nullptr;
  const cudaError_t err = cudaMallocHost(&p, bytes);
  if (err == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    throw Skip{"needs " + gib(bytes) + " of pinned host memory, which cudaMallocHost refused"};
  }
  LLMSIM_CUDA_CHECK(err);
  ptr_ = static_cast<unsigned char*>(p);
}

PinnedBuffer::~PinnedBuffer() {
  if (ptr_) (void)cudaFreeHost(ptr_);
}

Stream::Stream() {
  LLMSIM_CUDA_CHECK(cudaGetDevice(&device_));
  LLMSIM_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking));
}

Stream::~Stream() {
  if (!s_) return;
  DeviceGuard g(device_);
  (void)cudaStreamDestroy(s_);
}

DeviceGuard::DeviceGuard(int device) {
  LLMSIM_CUDA_CHECK(cudaGetDevice(&previous_));
  if (device != previous_) LLMSIM_CUDA_CHECK(cudaSetDevice(device));
}

DeviceGuard::~DeviceGuard() { (void)cudaSetDevice(previous_); }

int rotation_sets(std::size_t set_bytes, std::size_t l2_bytes) {
  if (set_bytes == 0) return 1;
  const std::size_t need = 2 * l2_bytes;
  if (set_bytes > need) return 1;
  const std::size_t sets = need / set_bytes + 1;  // sets * set_bytes > 2 * L2
  return static_cast<int>(sets < (1u << 20) ? sets : (1u << 20));
}

void require_free_memory(std::size_t bytes, const char* what) {
  std::size_t free_b = 0, total_b = 0;
  LLMSIM_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  const std::size_t margin = 256u << 20;
  if (bytes + margin > free_b)
    throw Skip{std::string(what) + " needs " + gib(bytes) + " of device memory, " + gib(free_b) + " is free"};
}

std::size_t elem_size(Elem e) {
  switch (e) {
    case Elem::F32: return 4;
    case Elem::F16:
    case Elem::BF16: return 2;
    case Elem::FP8E4M3:
    case Elem::U8: return 1;
  }
  return 1;
}

void fill_host_random(unsigned char* p, std::size_t bytes, std::uint32_t seed) {
  // splitmix64 per 8-byte word, every byte forced odd (non-zero)
  std::uint64_t x = 0x9e3779b97f4a7c15ull * (seed + 1ull);
  for (std::size_t i = 0; i < bytes; i += 8) {
    x += 0x9e3779b97f4a7c15ull;
    std::uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z = (z ^ (z >> 31)) | 0x0101010101010101ull;
    std::memcpy(p + i, &z, bytes - i < 8 ? bytes - i : 8);
  }
}

}  // namespace llmsim::calibrate::cuda
