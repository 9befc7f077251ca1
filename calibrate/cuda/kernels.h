#pragma once
// Host launchers of the benchmark kernels (kernels.cu). Pointers are device pointers; every launcher
// enqueues on `s` and checks the launch.
#include <cuda_runtime_api.h>

#include <cstddef>

#include "llmsim/calibrate/cuda/cuda_util.h"

namespace llmsim::calibrate::cuda {

// Streaming kernels over `bytes` (a multiple of 16) with 16-byte vector accesses, `blocks` x 256 threads.
void launch_mem_read(const void* src, std::size_t bytes, float* sink, int blocks, cudaStream_t s);
void launch_mem_write(void* dst, std::size_t bytes, int blocks, cudaStream_t s);

// Empty kernel, one thread.
void launch_empty(cudaStream_t s);

// Elementwise shapes (element type `e`: F32, F16 or BF16; fp32 arithmetic):
// RMSNorm: y[r, :] = x[r, :] * rsqrt(mean(x[r, :]^2) + eps) * w[:]      (one block per row)
void launch_rmsnorm(const void* x, const void* w, void* y, long rows, long cols, Elem e, cudaStream_t s);
// SiLU-mul (SwiGLU): y[i] = silu(g[i]) * u[i]
void launch_silu_mul(const void* g, const void* u, void* y, std::size_t n, Elem e, int blocks, cudaStream_t s);
// Softmax over rows: y[r, :] = exp(x[r, :] - max) / sum                   (one block per row)
void launch_softmax(const void* x, void* y, long rows, long cols, Elem e, cudaStream_t s);
// RoPE (rotate-half) on x[tokens, heads, head_dim] in place, cos/sin tables [tokens, head_dim / 2]
void launch_rope(void* x, const void* cos_t, const void* sin_t, long tokens, int heads, int head_dim, Elem e,
                 cudaStream_t s);
// Fills the RoPE cos/sin tables [tokens, head_dim / 2] with the real angles.
void fill_rope_tables(void* cos_t, void* sin_t, long tokens, int head_dim, Elem e, cudaStream_t s);

}  // namespace llmsim::calibrate::cuda
