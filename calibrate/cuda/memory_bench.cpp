// mem_read, mem_write, elementwise and launch: kernels of kernels.cu timed with CUDA events.
//
// mem_read / mem_write: grid-stride streaming kernels with 16-byte accesses over `bytes` (touched once
// per operation), 8 blocks of 256 threads per SM.
//
// elementwise: the shape class is named by the item's dtype, optionally with a precision suffix
// ("rmsnorm", "silu_mul", "softmax", "rope", "rmsnorm_fp32", …; precision bf16 unless given). A plain
// precision or "" ("bf16", "fp16", "fp32") measures the generic representative, SiLU-mul: two reads and
// one write per element, like residual adds and activations. `bytes` = read + written:
//   rmsnorm   x[rows, cols] -> y, weight[cols]; 2 elements moved per element (weight not counted);
//             cols = n (default 4096 = hidden), rows = m or bytes / (2 * size * cols)
//   silu_mul  y = silu(g) * u; 3 elements per output element; outputs = bytes / (3 * size)
//   softmax   x[rows, cols] -> y row-wise; cols = n (default 4096 = key length), rows as rmsnorm
//   rope      x[tokens, heads, head_dim] in place (rotate-half), cos/sin[tokens, head_dim / 2];
//             head_dim = k (default 128), heads = n (default 32), tokens = m or from bytes, counting
//             the tables too: bytes = tokens * size * head_dim * (2 * heads + 1)
//
// launch: an empty <<<1, 1>>> kernel; time per launch (back-to-back launches between two events).
#include <algorithm>
#include <string>

#include "llmsim/calibrate/cuda/bench.h"
#include "llmsim/calibrate/cuda/kernels.h"

namespace llmsim::calibrate::cuda {
namespace {

enum class Shape { RmsNorm, SiluMul, Softmax, Rope };

struct Elementwise {
  Shape shape = Shape::SiluMul;
  Elem elem = Elem::BF16;
};

bool precision(const std::string& s, Elem& e) {
  if (s == "bf16")
    e = Elem::BF16;
  else if (s == "fp16")
    e = Elem::F16;
  else if (s == "fp32")
    e = Elem::F32;
  else
    return false;
  return true;
}

Elementwise parse_elementwise(const std::string& dtype) {
  Elementwise w;
  if (dtype.empty() || precision(dtype, w.elem)) return w;  // generic representative
  std::string kind = dtype;
  if (const auto us = dtype.rfind('_'); us != std::string::npos && precision(dtype.substr(us + 1), w.elem))
    kind = dtype.substr(0, us);
  if (kind == "rmsnorm" || kind == "rms_norm")
    w.shape = Shape::RmsNorm;
  else if (kind == "silu_mul" || kind == "silu-mul" || kind == "swiglu")
    w.shape = Shape::SiluMul;
  else if (kind == "softmax")
    w.shape = Shape::Softmax;
  else if (kind == "rope")
    w.shape = Shape::Rope;
  else
    throw Skip{"elementwise kind '" + dtype +
               "' is not rmsnorm, silu_mul, softmax or rope (optionally _bf16/_fp16/_fp32)"};
  return w;
}

int stream_blocks(const Context& ctx) { return std::max(1, ctx.sm_count) * 8; }

}  // namespace

Sample bench_mem(Context& ctx, const BenchItem& item) {
  const bool read = item.bench == "mem_read";
  const std::size_t bytes = item_bytes(item, 16, 16);
  const std::size_t stride = align_up(bytes, 256);
  const int sets = rotation_sets(stride, ctx.l2_bytes);
  require_free_memory(sets * stride, item.bench.c_str());
  DeviceBuffer buf(sets * stride), sink(256);
  cudaStream_t s = ctx.stream->get();
  fill_random(buf.get(), buf.size(), Elem::U8, 11, s);
  LLMSIM_CUDA_CHECK(cudaMemsetAsync(sink.get(), 0, sink.size(), s));
  const int blocks = stream_blocks(ctx);
  long next = 0;
  TimedOp op;
  op.stream = s;
  op.enqueue = [&](long n) {
    for (long i = 0; i < n; ++i, ++next) {
      unsigned char* p = buf.bytes() + (next % sets) * stride;
      if (read)
        launch_mem_read(p, bytes, static_cast<float*>(sink.get()), blocks, s);
      else
        launch_mem_write(p, bytes, blocks, s);
    }
  };
  return make_sample(item, 0, measure(op, ctx.timing));
}

Sample bench_elementwise(Context& ctx, const BenchItem& item) {
  const Elementwise w = parse_elementwise(item.dtype);
  const std::size_t es = elem_size(w.elem);
  const double total = item.bytes, esd = static_cast<double>(es);
  std::size_t in_bytes = 0, out_bytes = 0, extra_bytes = 0;  // per set: inputs, outputs, tables/weights
  long rows = 0, cols = 0, tokens = 0;
  int heads = 0, head_dim = 0;
  std::size_t n = 0;
  switch (w.shape) {
    case Shape::RmsNorm:
    case Shape::Softmax:
      cols = item.n > 0 ? static_cast<long>(item.n) : 4096;
      rows =
          item.m > 0 ? static_cast<long>(item.m) : static_cast<long>(total / (2.0 * esd * static_cast<double>(cols)));
      if (rows < 1) throw Skip{"bytes below one row of " + std::to_string(cols) + " elements"};
      in_bytes = out_bytes = static_cast<std::size_t>(rows) * cols * es;
      if (w.shape == Shape::RmsNorm) extra_bytes = static_cast<std::size_t>(cols) * es;
      break;
    case Shape::SiluMul:
      n = static_cast<std::size_t>(total / (3.0 * esd));
      if (n < 1) throw Skip{"bytes below one element"};
      in_bytes = 2 * align_up(n * es, 256);  // g, then u at the next aligned offset
      out_bytes = n * es;
      break;
    case Shape::Rope:
      head_dim = item.k > 0 ? static_cast<int>(item.k) : 128;
      heads = item.n > 0 ? static_cast<int>(item.n) : 32;
      if (head_dim % 2) throw Skip{"RoPE head_dim (k) must be even"};
      tokens = item.m > 0 ? static_cast<long>(item.m) : static_cast<long>(total / (esd * head_dim * (2.0 * heads + 1)));
      if (tokens < 1) throw Skip{"bytes below one token"};
      in_bytes = static_cast<std::size_t>(tokens) * heads * head_dim * es;  // x, updated in place
      extra_bytes = static_cast<std::size_t>(tokens) * head_dim * es;       // cos + sin
      break;
  }
  // Per set: [input(s) | output | weight or tables], each part 256-byte aligned.
  const std::size_t in_stride = align_up(in_bytes, 256), out_stride = align_up(out_bytes, 256);
  const std::size_t extra_stride = align_up(extra_bytes, 256);
  const std::size_t set_bytes = in_stride + out_stride + extra_stride;
  const int sets = rotation_sets(set_bytes, ctx.l2_bytes);
  require_free_memory(sets * set_bytes, "elementwise");
  DeviceBuffer buf(sets * set_bytes);
  cudaStream_t s = ctx.stream->get();
  fill_random(buf.get(), buf.size(), w.elem, 12, s);
  if (w.shape == Shape::Rope) {
    const std::size_t half_table = static_cast<std::size_t>(tokens) * (head_dim / 2) * es;
    for (int i = 0; i < sets; ++i) {
      unsigned char* tables = buf.bytes() + i * set_bytes + in_stride + out_stride;
      fill_rope_tables(tables, tables + half_table, tokens, head_dim, w.elem, s);
    }
  }
  const int blocks = stream_blocks(ctx);
  long next = 0;
  TimedOp op;
  op.stream = s;
  op.enqueue = [&](long count) {
    for (long i = 0; i < count; ++i, ++next) {
      unsigned char* in = buf.bytes() + (next % sets) * set_bytes;
      unsigned char* out = in + in_stride;
      unsigned char* extra = out + out_stride;
      switch (w.shape) {
        case Shape::RmsNorm: launch_rmsnorm(in, extra, out, rows, cols, w.elem, s); break;
        case Shape::SiluMul: launch_silu_mul(in, in + align_up(n * es, 256), out, n, w.elem, blocks, s); break;
        case Shape::Softmax: launch_softmax(in, out, rows, cols, w.elem, s); break;
        case Shape::Rope: {
          const std::size_t half_table = static_cast<std::size_t>(tokens) * (head_dim / 2) * es;
          launch_rope(in, extra, extra + half_table, tokens, heads, head_dim, w.elem, s);
          break;
        }
      }
    }
  };
  return make_sample(item, 0, measure(op, ctx.timing));
}

Sample bench_launch(Context& ctx, const BenchItem& item) {
  cudaStream_t s = ctx.stream->get();
  TimedOp op;
  op.stream = s;
  op.enqueue = [s](long n) {
    for (long i = 0; i < n; ++i) launch_empty(s);
  };
  return make_sample(item, 0, measure(op, ctx.timing));
}

}  // namespace llmsim::calibrate::cuda
