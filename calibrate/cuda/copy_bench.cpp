// mem_copy, host<->device copies and p2p: cudaMemcpyAsync / cudaMemcpyPeerAsync.
//   mem_copy      device-to-device on device 0; bytes = read + written, so each copy moves bytes / 2;
//                 source/destination pairs rotate so that the copies do not hit L2
//   h2d_pinned, d2h_pinned       cudaMallocHost buffer <-> device, CUDA events on the stream
//   h2d_pageable, d2h_pageable   malloc'd (touched) buffer <-> device; timed with the host clock around
//                 the copies and a stream synchronize, since pageable copies stage through the driver
//   p2p           device 0 -> device 1 with peer access enabled where the pair supports it (without it
//                 the driver stages through the host, which is what such a pair delivers)
// Host copies do not rotate: their bandwidth is far below L2's, so reuse of the device buffer is moot.
#include <memory>
#include <new>
#include <string>

#include "llmsim/calibrate/cuda/bench.h"

namespace llmsim::calibrate::cuda {
namespace {

Sample mem_copy(Context& ctx, const BenchItem& item) {
  const std::size_t copy = item_bytes(item, 2, 2) / 2;
  const std::size_t stride = align_up(copy, 256);
  const int sets = rotation_sets(2 * stride, ctx.l2_bytes);
  require_free_memory(sets * 2 * stride, "mem_copy");
  DeviceBuffer src(sets * stride), dst(sets * stride);
  cudaStream_t s = ctx.stream->get();
  fill_random(src.get(), src.size(), Elem::U8, 21, s);
  fill_random(dst.get(), dst.size(), Elem::U8, 22, s);
  long next = 0;
  TimedOp op;
  op.stream = s;
  op.enqueue = [&](long n) {
    for (long i = 0; i < n; ++i, ++next) {
      const std::size_t off = static_cast<std::size_t>(next % sets) * stride;
      LLMSIM_CUDA_CHECK(cudaMemcpyAsync(dst.bytes() + off, src.bytes() + off, copy, cudaMemcpyDeviceToDevice, s));
    }
  };
  return make_sample(item, 0, measure(op, ctx.timing));
}

Sample host_copy(Context& ctx, const BenchItem& item) {
  const bool h2d = item.bench.starts_with("h2d_");
  const bool pinned = item.bench.ends_with("_pinned");
  const std::size_t bytes = item_bytes(item, 1, 1);
  require_free_memory(bytes, item.bench.c_str());
  DeviceBuffer dev(bytes);
  cudaStream_t s = ctx.stream->get();
  fill_random(dev.get(), bytes, Elem::U8, 31, s);

  std::unique_ptr<PinnedBuffer> pinned_buf;
  std::unique_ptr<unsigned char[]> pageable_buf;
  unsigned char* host = nullptr;
  if (pinned) {
    pinned_buf = std::make_unique<PinnedBuffer>(bytes);
    host = pinned_buf->get();
  } else {
    pageable_buf.reset(new (std::nothrow) unsigned char[bytes]);
    if (!pageable_buf) throw Skip{"cannot allocate " + std::to_string(bytes) + " bytes of host memory"};
    host = pageable_buf.get();
  }
  fill_host_random(host, bytes, 32);  // also faults every page in
  LLMSIM_CUDA_CHECK(cudaStreamSynchronize(s));

  TimedOp op;
  op.stream = s;
  op.clock = pinned ? Clock::Events : Clock::Host;
  op.sync = [s] { LLMSIM_CUDA_CHECK(cudaStreamSynchronize(s)); };
  op.enqueue = [&](long n) {
    for (long i = 0; i < n; ++i) {
      if (h2d)
        LLMSIM_CUDA_CHECK(cudaMemcpyAsync(dev.get(), host, bytes, cudaMemcpyHostToDevice, s));
      else
        LLMSIM_CUDA_CHECK(cudaMemcpyAsync(host, dev.get(), bytes, cudaMemcpyDeviceToHost, s));
    }
  };
  return make_sample(item, 0, measure(op, ctx.timing));
}

void enable_peer(int from, int to) {
  int can = 0;
  LLMSIM_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, from, to));
  if (!can) return;
  DeviceGuard g(from);
  const cudaError_t err = cudaDeviceEnablePeerAccess(to, 0);
  if (err == cudaErrorPeerAccessAlreadyEnabled) {
    (void)cudaGetLastError();
    return;
  }
  LLMSIM_CUDA_CHECK(err);
}

Sample p2p(Context& ctx, const BenchItem& item) {
  if (ctx.info.device_count < 2)
    throw Skip{"p2p needs two GPUs, this machine has " + std::to_string(ctx.info.device_count), true};
  const int src_dev = ctx.device, dst_dev = 1;
  enable_peer(src_dev, dst_dev);
  enable_peer(dst_dev, src_dev);
  const std::size_t bytes = item_bytes(item, 1, 1);
  const std::size_t stride = align_up(bytes, 256);
  const int sets = rotation_sets(stride, ctx.l2_bytes);
  require_free_memory(sets * stride, "p2p");
  DeviceBuffer src(sets * stride);
  std::unique_ptr<DeviceBuffer> dst;
  {
    DeviceGuard g(dst_dev);
    require_free_memory(sets * stride, "p2p");
    dst = std::make_unique<DeviceBuffer>(sets * stride);
    fill_random(dst->get(), dst->size(), Elem::U8, 41, nullptr);
    LLMSIM_CUDA_CHECK(cudaDeviceSynchronize());
  }
  cudaStream_t s = ctx.stream->get();
  fill_random(src.get(), src.size(), Elem::U8, 42, s);
  long next = 0;
  TimedOp op;
  op.stream = s;
  op.enqueue = [&](long n) {
    for (long i = 0; i < n; ++i, ++next) {
      const std::size_t off = static_cast<std::size_t>(next % sets) * stride;
      LLMSIM_CUDA_CHECK(cudaMemcpyPeerAsync(dst->bytes() + off, dst_dev, src.bytes() + off, src_dev, bytes, s));
    }
  };
  return make_sample(item, 0, measure(op, ctx.timing));
}

}  // namespace

Sample bench_copy(Context& ctx, const BenchItem& item) {
  if (item.bench == "mem_copy") return mem_copy(ctx, item);
  if (item.bench == "p2p") return p2p(ctx, item);
  return host_copy(ctx, item);
}

}  // namespace llmsim::calibrate::cuda
