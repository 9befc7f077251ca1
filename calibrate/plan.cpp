#include "llmsim/calibrate/plan.h"

#include <algorithm>
#include <thread>

#include "llmsim/calibrate/process_group.h"

namespace llmsim::calibrate {

const std::vector<Family>& families() {
  static const std::vector<Family> f = {
      {"gemm", "gemm", true,
       "cuBLAS GEMMs: LLM projection shapes (hidden 2k-8k, 1-32k tokens, TP splits) + a square grid"},
      {"gemm_batched", "gemm", true, "strided-batched GEMMs shaped like unfused attention (scores / context)"},
      {"mem_copy", "memory", true, "device-to-device copy bandwidth vs size (bytes = read + written)"},
      {"mem_read", "memory", true, "streaming read kernel bandwidth vs size"},
      {"mem_write", "memory", true, "streaming write kernel bandwidth vs size"},
      {"elementwise", "memory", true, "RMSNorm / SiLU-mul / softmax / RoPE-shaped kernels (dtype column = kernel)"},
      {"launch", "memory", true, "empty-kernel launch overhead"},
      {"h2d_pinned", "h2d", true, "host-to-device copies from pinned memory vs size"},
      {"d2h_pinned", "h2d", true, "device-to-host copies to pinned memory vs size"},
      {"h2d_pageable", "h2d", true, "host-to-device copies from pageable memory vs size"},
      {"d2h_pageable", "h2d", true, "device-to-host copies to pageable memory vs size"},
      {"p2p", "p2p", true, "GPU-to-GPU peer copies vs size"},
      {"nccl_all_reduce", "nccl", true, "NCCL all-reduce vs size and group size"},
      {"nccl_all_gather", "nccl", true, "NCCL all-gather vs size and group size"},
      {"nccl_reduce_scatter", "nccl", true, "NCCL reduce-scatter vs size and group size"},
      {"nccl_all_to_all", "nccl", true, "NCCL all-to-all vs size and group size"},
      {"nccl_broadcast", "nccl", true, "NCCL broadcast vs size and group size"},
      {"nccl_send_recv", "nccl", true, "NCCL send/recv between two GPUs vs size"},
      {"cpu_adam", "cpu", false, "fused AdamW on the CPU (ZeRO-Offload), parameters/s over all threads"},
      {"host_copy", "cpu", false, "host memory copy bandwidth (STREAM copy), all threads"},
      {"host_triad", "cpu", false, "host memory triad bandwidth (STREAM triad), all threads"},
  };
  return f;
}

std::vector<std::string> only_groups() { return {"gemm", "memory", "h2d", "p2p", "nccl", "cpu"}; }

namespace {

bool wanted(const PlanOptions& o, const std::string& group) {
  return o.only.empty() || std::find(o.only.begin(), o.only.end(), group) != o.only.end();
}

std::vector<double> sizes(double from, double to, double factor) {
  std::vector<double> v;
  for (double s = from; s <= to; s *= factor) v.push_back(s);
  return v;
}

BenchItem item(std::string bench, std::string dtype, double bytes, int group = 1) {
  BenchItem i;
  i.bench = std::move(bench);
  i.dtype = std::move(dtype);
  i.bytes = bytes;
  i.group = group;
  return i;
}

double elem_bytes(const std::string& dtype) {
  if (dtype == "fp32" || dtype == "tf32") return 4;
  if (dtype == "fp8") return 1;
  return 2;
}

void add_gemm(std::vector<BenchItem>& out, const std::string& dtype, std::int64_t m, std::int64_t n, std::int64_t k) {
  BenchItem i;
  i.bench = "gemm";
  i.dtype = dtype;
  i.m = m;
  i.n = n;
  i.k = k;
  const auto d = [](std::int64_t v) { return static_cast<double>(v); };
  i.bytes = (d(m) * d(k) + d(k) * d(n) + d(m) * d(n)) * elem_bytes(dtype);
  for (const auto& x : out)
    if (x.key() == i.key()) return;
  out.push_back(i);
}

}  // namespace

std::vector<BenchItem> make_plan(const PlanOptions& o) {
  std::vector<BenchItem> out;
  const double KiB = 1024, MiB = 1024 * KiB, GiB = 1024 * MiB;
  if (wanted(o, "gemm")) {
    // Layer shapes: tokens x (output features) x (input features) of QKV, output and MLP projections,
    // whole and split 8 ways by tensor parallelism, plus a square grid.
    const std::vector<std::int64_t> hidden =
        o.quick ? std::vector<std::int64_t>{4096} : std::vector<std::int64_t>{2048, 4096, 5120, 8192};
    const std::vector<std::int64_t> tokens = o.quick ? std::vector<std::int64_t>{16, 2048, 8192}
                                                     : std::vector<std::int64_t>{1, 16, 128, 512, 2048, 8192, 32768};
    const std::vector<std::int64_t> grid = o.quick ? std::vector<std::int64_t>{1024, 8192}
                                                   : std::vector<std::int64_t>{256, 512, 1024, 2048, 4096, 8192, 16384};
    for (const auto& dtype : o.dtypes) {
      for (auto h : hidden)
        for (auto t : tokens) {
          add_gemm(out, dtype, t, 3 * h, h);  // fused QKV
          add_gemm(out, dtype, t, h, h);      // output projection
          add_gemm(out, dtype, t, 4 * h, h);  // MLP up
          add_gemm(out, dtype, t, h, 4 * h);  // MLP down
          if (!o.quick) {
            add_gemm(out, dtype, t, 3 * h / 8, h);  // QKV at TP 8
            add_gemm(out, dtype, t, h, h / 2);      // MLP down at TP 8
          }
        }
      for (auto s : grid) add_gemm(out, dtype, s, s, s);
      // Unfused attention: (batch x heads) GEMMs of seq x seq x head_dim and seq x head_dim x seq.
      for (std::int64_t seq : o.quick ? std::vector<std::int64_t>{2048} : std::vector<std::int64_t>{512, 2048, 8192}) {
        if (dtype == "fp32" || dtype == "fp8") continue;
        BenchItem b;
        b.bench = "gemm_batched";
        b.dtype = dtype;
        b.m = seq;
        b.n = seq;
        b.k = 128;
        b.group = 32;  // batch count
        const double sq = static_cast<double>(seq);
        b.bytes = (2.0 * sq * 128 + sq * sq) * elem_bytes(dtype) * b.group;
        out.push_back(b);
      }
    }
  }
  if (wanted(o, "memory")) {
    const auto mem_sizes = o.quick ? std::vector<double>{MiB, 64 * MiB, GiB} : sizes(64 * KiB, 4 * GiB, 4);
    for (const char* f : {"mem_copy", "mem_read", "mem_write"})
      for (double s : mem_sizes) out.push_back(item(f, "", s));
    for (const char* kernel : {"rmsnorm", "silu_mul", "softmax", "rope"})
      for (double s : o.quick ? std::vector<double>{16 * MiB, 256 * MiB} : sizes(MiB, GiB, 4))
        out.push_back(item("elementwise", kernel, s));
    out.push_back(item("launch", "", 0));
  }
  if (wanted(o, "h2d")) {
    const auto copy_sizes = o.quick ? std::vector<double>{MiB, 256 * MiB} : sizes(4 * KiB, GiB, 4);
    for (const char* f : {"h2d_pinned", "d2h_pinned", "h2d_pageable", "d2h_pageable"})
      for (double s : copy_sizes) out.push_back(item(f, "", s));
  }
  if (wanted(o, "p2p") && o.gpus >= 2)
    for (double s : o.quick ? std::vector<double>{MiB, 256 * MiB} : sizes(64 * KiB, GiB, 4))
      out.push_back(item("p2p", "", s, 2));
  // Collectives over this process's GPUs, or over the ranks of an MPI run (one GPU each).
  const bool ranks = o.rank_hosts.size() >= 2;
  const int members = ranks ? static_cast<int>(o.rank_hosts.size()) : o.gpus;
  if (wanted(o, "nccl") && members >= 2) {
    std::vector<int> groups;
    for (int g = 2; g <= members; g *= 2) groups.push_back(g);
    if (groups.back() != members) groups.push_back(members);
    const auto msg = o.quick ? std::vector<double>{MiB, 64 * MiB, 512 * MiB} : sizes(8 * KiB, GiB, 4);
    const auto nccl = [&](const char* f, double s, int g) {
      BenchItem i = item(f, "bf16", s, g);
      if (ranks) i.nodes = nodes_spanned(o.rank_hosts, g);
      return i;
    };
    for (const char* f :
         {"nccl_all_reduce", "nccl_all_gather", "nccl_reduce_scatter", "nccl_all_to_all", "nccl_broadcast"})
      for (int g : groups)
        for (double s : msg) out.push_back(nccl(f, s, g));
    for (double s : msg) out.push_back(nccl("nccl_send_recv", s, 2));
  }
  if (wanted(o, "cpu")) {
    const int threads =
        o.host_threads > 0 ? o.host_threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    for (double params : o.quick ? std::vector<double>{1 << 24} : std::vector<double>{1 << 24, 1 << 26})
      out.push_back(item("cpu_adam", "fp32", params * 4, threads));
    for (const char* f : {"host_copy", "host_triad"})
      for (double s : o.quick ? std::vector<double>{256 * MiB} : std::vector<double>{256 * MiB, GiB})
        out.push_back(item(f, "", s, threads));
  }
  return out;
}

}  // namespace llmsim::calibrate
