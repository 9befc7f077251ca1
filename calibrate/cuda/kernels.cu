// The benchmark kernels: random fill, streaming read/write, the elementwise shapes and the empty kernel.
// Host launchers are declared in kernels.h; everything else here is file-local.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "llmsim/calibrate/cuda/kernels.h"

namespace llmsim::calibrate::cuda {
namespace {

constexpr int kThreads = 256;

__host__ __device__ inline std::uint32_t hash32(std::uint64_t i, std::uint32_t seed) {
  std::uint32_t h =
      static_cast<std::uint32_t>(i) ^ (static_cast<std::uint32_t>(i >> 32) * 0x85ebca6bu) ^ (seed * 0x9e3779b9u);
  h ^= h >> 16;
  h *= 0x7feb352du;
  h ^= h >> 15;
  h *= 0x846ca68bu;
  h ^= h >> 16;
  return h;
}

// A value in [-1, 1] whose magnitude is at least 1/64: never zero, never denormal, safe in fp8.
__device__ inline float random_value(std::uint64_t i, std::uint32_t seed) {
  const std::uint32_t h = hash32(i, seed);
  float v = static_cast<float>(h >> 8) * (2.0f / 16777216.0f) - 1.0f;
  if (fabsf(v) < 1.0f / 64) v = (h & 1u) ? 0.5f : -0.5f;
  return v;
}

template <class T>
__device__ inline T from_float(float x);
template <>
__device__ inline float from_float<float>(float x) {
  return x;
}
template <>
__device__ inline __half from_float<__half>(float x) {
  return __float2half(x);
}
template <>
__device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16(x);
}
template <>
__device__ inline __nv_fp8_e4m3 from_float<__nv_fp8_e4m3>(float x) {
  return __nv_fp8_e4m3(x);
}

template <class T>
__device__ inline float to_float(T x);
template <>
__device__ inline float to_float<float>(float x) {
  return x;
}
template <>
__device__ inline float to_float<__half>(__half x) {
  return __half2float(x);
}
template <>
__device__ inline float to_float<__nv_bfloat16>(__nv_bfloat16 x) {
  return __bfloat162float(x);
}

template <class T>
__global__ void fill_kernel(T* p, std::size_t n, std::uint32_t seed) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    p[i] = from_float<T>(random_value(i, seed));
}

__global__ void fill_bytes_kernel(std::uint8_t* p, std::size_t n, std::uint32_t seed) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    p[i] = static_cast<std::uint8_t>(hash32(i, seed) | 1u);
}

// Streaming read: 16-byte loads, four independent ones in flight per thread; the XOR of everything
// read is compared against a constant so the loads cannot be removed.
__global__ void mem_read_kernel(const uint4* __restrict__ p, std::size_t n, float* sink) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  std::uint32_t acc = 0;
  for (; i + 3 * stride < n; i += 4 * stride) {
    const uint4 a = p[i], b = p[i + stride], c = p[i + 2 * stride], d = p[i + 3 * stride];
    acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^ d.z ^ d.w;
  }
  for (; i < n; i += stride) {
    const uint4 a = p[i];
    acc ^= a.x ^ a.y ^ a.z ^ a.w;
  }
  if (acc == 0x9e3779b9u) sink[0] = static_cast<float>(acc);
}

// Streaming write: 16-byte stores of index-dependent non-zero data.
__global__ void mem_write_kernel(uint4* __restrict__ p, std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const auto v = static_cast<std::uint32_t>(i) | 1u;
    p[i] = make_uint4(v, v ^ 0x5bd1e995u, v + 0x27d4eb2du, ~v);
  }
}

__global__ void empty_kernel() {}

// P consecutive elements moved as one vector access (16 bytes when P = 16 / sizeof(T)).
template <class T, int P>
struct alignas(sizeof(T) * P) Pack {
  T v[P];
};

__device__ inline float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ inline float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Block-wide sum or max (blockDim.x a multiple of 32, at most 1024).
template <bool Max>
__device__ float block_reduce(float v) {
  __shared__ float part[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = Max ? warp_max(v) : warp_sum(v);
  if (lane == 0) part[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float w = lane < warps ? part[lane] : (Max ? -INFINITY : 0.0f);
    w = Max ? warp_max(w) : warp_sum(w);
    if (lane == 0) part[0] = w;
  }
  __syncthreads();
  const float r = part[0];
  __syncthreads();
  return r;
}

template <class T, int P>
__global__ void rmsnorm_kernel(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y, long cols) {
  using V = Pack<T, P>;
  const long packs = cols / P;
  const V* xr = reinterpret_cast<const V*>(x + static_cast<std::size_t>(blockIdx.x) * cols);
  V* yr = reinterpret_cast<V*>(y + static_cast<std::size_t>(blockIdx.x) * cols);
  const V* wv = reinterpret_cast<const V*>(w);
  float ss = 0;
  for (long j = threadIdx.x; j < packs; j += blockDim.x) {
    const V a = xr[j];
#pragma unroll
    for (int q = 0; q < P; ++q) {
      const float f = to_float(a.v[q]);
      ss += f * f;
    }
  }
  const float scale = rsqrtf(block_reduce<false>(ss) / static_cast<float>(cols) + 1e-6f);
  for (long j = threadIdx.x; j < packs; j += blockDim.x) {
    const V a = xr[j], g = wv[j];
    V o;
#pragma unroll
    for (int q = 0; q < P; ++q) o.v[q] = from_float<T>(to_float(a.v[q]) * scale * to_float(g.v[q]));
    yr[j] = o;
  }
}

template <class T, int P>
__global__ void silu_mul_kernel(const T* __restrict__ g, const T* __restrict__ u, T* __restrict__ y, std::size_t n) {
  using V = Pack<T, P>;
  const std::size_t packs = n / P;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t tid = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (std::size_t i = tid; i < packs; i += stride) {
    const V a = reinterpret_cast<const V*>(g)[i], b = reinterpret_cast<const V*>(u)[i];
    V o;
#pragma unroll
    for (int q = 0; q < P; ++q) {
      const float f = to_float(a.v[q]);
      o.v[q] = from_float<T>(f / (1.0f + __expf(-f)) * to_float(b.v[q]));
    }
    reinterpret_cast<V*>(y)[i] = o;
  }
  for (std::size_t i = packs * P + tid; i < n; i += stride) {
    const float f = to_float(g[i]);
    y[i] = from_float<T>(f / (1.0f + __expf(-f)) * to_float(u[i]));
  }
}

template <class T, int P>
__global__ void softmax_kernel(const T* __restrict__ x, T* __restrict__ y, long cols) {
  using V = Pack<T, P>;
  const long packs = cols / P;
  const V* xr = reinterpret_cast<const V*>(x + static_cast<std::size_t>(blockIdx.x) * cols);
  V* yr = reinterpret_cast<V*>(y + static_cast<std::size_t>(blockIdx.x) * cols);
  float mx = -INFINITY;
  for (long j = threadIdx.x; j < packs; j += blockDim.x) {
    const V a = xr[j];
#pragma unroll
    for (int q = 0; q < P; ++q) mx = fmaxf(mx, to_float(a.v[q]));
  }
  mx = block_reduce<true>(mx);
  float sum = 0;
  for (long j = threadIdx.x; j < packs; j += blockDim.x) {
    const V a = xr[j];
#pragma unroll
    for (int q = 0; q < P; ++q) sum += __expf(to_float(a.v[q]) - mx);
  }
  const float inv = 1.0f / block_reduce<false>(sum);
  for (long j = threadIdx.x; j < packs; j += blockDim.x) {
    const V a = xr[j];
    V o;
#pragma unroll
    for (int q = 0; q < P; ++q) o.v[q] = from_float<T>(__expf(to_float(a.v[q]) - mx) * inv);
    yr[j] = o;
  }
}

// One thread per P-wide slice of the first half of a (token, head) row and its partner in the second half.
template <class T, int P>
__global__ void rope_kernel(T* __restrict__ x, const T* __restrict__ cos_t, const T* __restrict__ sin_t, long tokens,
                            int heads, int head_dim) {
  using V = Pack<T, P>;
  const int half = head_dim / 2, slices = half / P;
  const std::size_t total = static_cast<std::size_t>(tokens) * heads * slices;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
    const int slice = static_cast<int>(i % slices);
    const std::size_t row = i / slices;  // token * heads + head
    const std::size_t token = row / heads;
    T* base = x + row * head_dim + static_cast<std::size_t>(slice) * P;
    const V a = *reinterpret_cast<const V*>(base), b = *reinterpret_cast<const V*>(base + half);
    const V c = *reinterpret_cast<const V*>(cos_t + token * half + static_cast<std::size_t>(slice) * P);
    const V s = *reinterpret_cast<const V*>(sin_t + token * half + static_cast<std::size_t>(slice) * P);
    V oa, ob;
#pragma unroll
    for (int q = 0; q < P; ++q) {
      const float x1 = to_float(a.v[q]), x2 = to_float(b.v[q]), cq = to_float(c.v[q]), sq = to_float(s.v[q]);
      oa.v[q] = from_float<T>(x1 * cq - x2 * sq);
      ob.v[q] = from_float<T>(x2 * cq + x1 * sq);
    }
    *reinterpret_cast<V*>(base) = oa;
    *reinterpret_cast<V*>(base + half) = ob;
  }
}

// The real RoPE tables: theta = token * 10000^(-2j / head_dim), so applying RoPE keeps magnitudes.
template <class T>
__global__ void rope_table_kernel(T* cos_t, T* sin_t, long tokens, int half) {
  const std::size_t n = static_cast<std::size_t>(tokens) * half;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float j = static_cast<float>(i % half), token = static_cast<float>(i / half);
    const float theta = token * powf(10000.0f, -j / static_cast<float>(half));
    cos_t[i] = from_float<T>(cosf(theta));
    sin_t[i] = from_float<T>(sinf(theta));
  }
}

int blocks_for(std::size_t work_items, int cap) {
  const std::size_t b = (work_items + kThreads - 1) / kThreads;
  return static_cast<int>(std::max<std::size_t>(1, std::min<std::size_t>(b, static_cast<std::size_t>(cap))));
}

constexpr int kGridCap = 65535;  // grid-stride loops cover the rest

template <class T>
struct Tag {
  using type = T;
};

// Calls f(Tag<T>{}) with T the CUDA type of `e` (C++17: this file is compiled by nvcc as C++17).
template <class F>
void dispatch_float(Elem e, F&& f) {
  switch (e) {
    case Elem::F32: f(Tag<float>{}); break;
    case Elem::F16: f(Tag<__half>{}); break;
    case Elem::BF16: f(Tag<__nv_bfloat16>{}); break;
    default: throw Skip{"elementwise kernels support fp32, fp16 and bf16 only"};
  }
}

}  // namespace

void fill_random(void* p, std::size_t bytes, Elem e, std::uint32_t seed, cudaStream_t s) {
  const std::size_t n = bytes / elem_size(e);
  if (n == 0) return;
  const int blocks = blocks_for(n, 4096);
  switch (e) {
    case Elem::F32: fill_kernel<<<blocks, kThreads, 0, s>>>(static_cast<float*>(p), n, seed); break;
    case Elem::F16: fill_kernel<<<blocks, kThreads, 0, s>>>(static_cast<__half*>(p), n, seed); break;
    case Elem::BF16: fill_kernel<<<blocks, kThreads, 0, s>>>(static_cast<__nv_bfloat16*>(p), n, seed); break;
    case Elem::FP8E4M3: fill_kernel<<<blocks, kThreads, 0, s>>>(static_cast<__nv_fp8_e4m3*>(p), n, seed); break;
    case Elem::U8: fill_bytes_kernel<<<blocks, kThreads, 0, s>>>(static_cast<std::uint8_t*>(p), n, seed); break;
  }
  LLMSIM_CUDA_CHECK(cudaGetLastError());
}

void launch_mem_read(const void* src, std::size_t bytes, float* sink, int blocks, cudaStream_t s) {
  const std::size_t n = bytes / sizeof(uint4);
  mem_read_kernel<<<blocks_for(n, blocks), kThreads, 0, s>>>(static_cast<const uint4*>(src), n, sink);
  LLMSIM_CUDA_CHECK(cudaGetLastError());
}

void launch_mem_write(void* dst, std::size_t bytes, int blocks, cudaStream_t s) {
  const std::size_t n = bytes / sizeof(uint4);
  mem_write_kernel<<<blocks_for(n, blocks), kThreads, 0, s>>>(static_cast<uint4*>(dst), n);
  LLMSIM_CUDA_CHECK(cudaGetLastError());
}

void launch_empty(cudaStream_t s) {
  empty_kernel<<<1, 1, 0, s>>>();
  LLMSIM_CUDA_CHECK(cudaGetLastError());
}

void launch_rmsnorm(const void* x, const void* w, void* y, long rows, long cols, Elem e, cudaStream_t s) {
  dispatch_float(e, [&](auto tag) {
    using T = typename decltype(tag)::type;
    constexpr int P = 16 / sizeof(T);
    const auto grid = static_cast<unsigned>(rows);
    if (cols % P == 0)
      rmsnorm_kernel<T, P>
          <<<grid, kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<const T*>(w), static_cast<T*>(y), cols);
    else
      rmsnorm_kernel<T, 1>
          <<<grid, kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<const T*>(w), static_cast<T*>(y), cols);
  });
  LLMSIM_CUDA_CHECK(cudaGetLastError());
}

void launch_silu_mul(const void* g, const void* u, void* y, std::size_t n, Elem e, int blocks, cudaStream_t s) {
  dispatch_float(e, [&](auto tag) {
    using T = typename decltype(tag)::type;
    constexpr int P = 16 / sizeof(T);
    silu_mul_kernel<T, P><<<blocks_for(n / P + 1, blocks), kThreads, 0, s>>>(
        static_cast<const T*>(g), static_cast<const T*>(u), static_cast<T*>(y), n);
  });
  LLMSIM_CUDA_CHECK(cudaGetLastError());
}

void launch_softmax(const void* x, void* y, long rows, long cols, Elem e, cudaStream_t s) {
  dispatch_float(e, [&](auto tag) {
    using T = typename decltype(tag)::type;
    constexpr int P = 16 / sizeof(T);
    const auto grid = static_cast<unsigned>(rows);
    if (cols % P == 0)
      softmax_kernel<T, P><<<grid, kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<T*>(y), cols);
    else
      softmax_kernel<T, 1><<<grid, kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<T*>(y), cols);
  });
  LLMSIM_CUDA_CHECK(cudaGetLastError());
}

void fill_rope_tables(void* cos_t, void* sin_t, long tokens, int head_dim, Elem e, cudaStream_t s) {
  dispatch_float(e, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int half = head_dim / 2;
    rope_table_kernel<T><<<blocks_for(static_cast<std::size_t>(tokens) * half, 4096), kThreads, 0, s>>>(
        static_cast<T*>(cos_t), static_cast<T*>(sin_t), tokens, half);
  });
  LLMSIM_CUDA_CHECK(cudaGetLastError());
}

void launch_rope(void* x, const void* cos_t, const void* sin_t, long tokens, int heads, int head_dim, Elem e,
                 cudaStream_t s) {
  dispatch_float(e, [&](auto tag) {
    using T = typename decltype(tag)::type;
    constexpr int P = 16 / sizeof(T);
    const std::size_t half = static_cast<std::size_t>(head_dim) / 2;
    const std::size_t rows = static_cast<std::size_t>(tokens) * static_cast<std::size_t>(heads);
    if (half % P == 0)
      rope_kernel<T, P><<<blocks_for(rows * (half / P), kGridCap), kThreads, 0, s>>>(
          static_cast<T*>(x), static_cast<const T*>(cos_t), static_cast<const T*>(sin_t), tokens, heads, head_dim);
    else
      rope_kernel<T, 1><<<blocks_for(rows * half, kGridCap), kThreads, 0, s>>>(
          static_cast<T*>(x), static_cast<const T*>(cos_t), static_cast<const T*>(sin_t), tokens, heads, head_dim);
  });
  LLMSIM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace llmsim::calibrate::cuda
