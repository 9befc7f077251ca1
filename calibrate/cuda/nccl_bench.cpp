// NCCL collectives, single process, over the first `group` GPUs (ncclCommInitAll, one stream per
// device; communicators are kept per group size for the whole run). One operation = one collective on
// every rank inside ncclGroupStart/End. Timed like nccl-tests: host clock around the batch and a
// synchronize of every rank's stream, divided by the operation count. No buffer rotation (nccl-tests
// does none either, and the imported nccl-tests data must compare).
//
// `bytes` is the nccl-tests "size" (per-rank buffer); dtype bf16 / fp16 / fp32 (default fp32, nccl-tests'
// float); sum reduction; counts rounded down to a multiple of the rank count where the collective splits:
//   nccl_all_reduce      send = recv = size
//   nccl_all_gather      send = size / ranks, recv = size
//   nccl_reduce_scatter  send = size, recv = size / ranks
//   nccl_all_to_all      send = recv = size, size / ranks to and from each peer (grouped ncclSend/ncclRecv)
//   nccl_broadcast       size from rank 0
//   nccl_send_recv       size from each rank to the next (ring), as nccl-tests' sendrecv
#include <string>
#include <vector>

#include "calibrate/cuda/bench.h"
#include "sim/base/error.h"
#if LLMSIM_HAS_NCCL
#include <nccl.h>
#endif

namespace llmsim::calibrate::cuda {

#if LLMSIM_HAS_NCCL

namespace {

[[noreturn]] void throw_nccl(ncclResult_t r, const char* call, const char* file, int line) {
  std::string where = file;
  if (const auto slash = where.rfind('/'); slash != std::string::npos) where = where.substr(slash + 1);
  throw Error(ErrorKind::Internal, Location{},
              std::string("NCCL call failed: ") + call + " returned " + ncclGetErrorString(r) + " [" + where + ":" +
                  std::to_string(line) + "]");
}

#define LLMSIM_NCCL_CHECK(call)                                                         \
  do {                                                                                  \
    const ncclResult_t llmsim_nr_ = (call);                                             \
    if (llmsim_nr_ != ncclSuccess) throw_nccl(llmsim_nr_, #call, __FILE__, __LINE__);   \
  } while (0)

}  // namespace

struct NcclGroup {
  explicit NcclGroup(int n) : comms(static_cast<std::size_t>(n)) {
    std::vector<int> devs(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) devs[static_cast<std::size_t>(i)] = i;
    LLMSIM_NCCL_CHECK(ncclCommInitAll(comms.data(), n, devs.data()));
    for (int i = 0; i < n; ++i) {
      DeviceGuard g(i);
      streams.push_back(std::make_unique<Stream>());
    }
  }
  ~NcclGroup() {
    for (std::size_t i = 0; i < comms.size(); ++i) {
      (void)cudaSetDevice(static_cast<int>(i));
      (void)cudaStreamSynchronize(streams.size() > i ? streams[i]->get() : nullptr);
      (void)ncclCommDestroy(comms[i]);
    }
  }
  int size() const { return static_cast<int>(comms.size()); }
  std::vector<ncclComm_t> comms;
  std::vector<std::unique_ptr<Stream>> streams;
};

void NcclGroupDeleter::operator()(NcclGroup* g) const { delete g; }

Sample bench_nccl(Context& ctx, const BenchItem& item) {
  const int ranks = item.group;
  if (ranks < 1) throw Skip{"group must be at least 1"};
  if (ranks > ctx.info.device_count)
    throw Skip{"needs " + std::to_string(ranks) + " GPUs, this machine has " + std::to_string(ctx.info.device_count)};

  ncclDataType_t dt = ncclFloat;
  Elem elem = Elem::F32;
  if (item.dtype == "bf16") {
    dt = ncclBfloat16;
    elem = Elem::BF16;
  } else if (item.dtype == "fp16") {
    dt = ncclHalf;
    elem = Elem::F16;
  } else if (!item.dtype.empty() && item.dtype != "fp32")
    throw Skip{"NCCL dtype '" + item.dtype + "' is not bf16, fp16 or fp32"};
  const std::size_t es = elem_size(elem);

  const std::string& b = item.bench;
  const bool splits = b == "nccl_all_gather" || b == "nccl_reduce_scatter" || b == "nccl_all_to_all";
  std::size_t count = item_bytes(item, es, es) / es;  // elements of the "size" buffer
  if (splits) count = count / static_cast<std::size_t>(ranks) * static_cast<std::size_t>(ranks);
  if (count == 0) throw Skip{"size below one element per rank"};
  const std::size_t part = count / static_cast<std::size_t>(ranks);
  std::size_t send_count = count, recv_count = count;
  if (b == "nccl_all_gather") send_count = part;
  else if (b == "nccl_reduce_scatter") recv_count = part;
  else if (b != "nccl_all_reduce" && b != "nccl_all_to_all" && b != "nccl_broadcast" && b != "nccl_send_recv")
    throw Skip{"unknown NCCL family", true};

  auto& slot = ctx.nccl[ranks];
  if (!slot) slot.reset(new NcclGroup(ranks));
  NcclGroup& g = *slot;

  std::vector<DeviceBuffer> send, recv;
  for (int r = 0; r < ranks; ++r) {
    DeviceGuard dg(r);
    require_free_memory((send_count + recv_count) * es, b.c_str());
    send.emplace_back(send_count * es);
    recv.emplace_back(recv_count * es);
    fill_random(send.back().get(), send.back().size(), elem, 51u + static_cast<std::uint32_t>(r), nullptr);
    fill_random(recv.back().get(), recv.back().size(), elem, 71u + static_cast<std::uint32_t>(r), nullptr);
    LLMSIM_CUDA_CHECK(cudaDeviceSynchronize());
  }
  const auto at = [&](std::vector<DeviceBuffer>& v, int r, std::size_t elems) {
    return static_cast<void*>(v[static_cast<std::size_t>(r)].bytes() + elems * es);
  };

  TimedOp op;
  op.clock = Clock::Host;
  op.stream = g.streams[0]->get();
  op.sync = [&] {
    for (int r = 0; r < ranks; ++r) {
      DeviceGuard dg(r);
      LLMSIM_CUDA_CHECK(cudaStreamSynchronize(g.streams[static_cast<std::size_t>(r)]->get()));
    }
  };
  op.enqueue = [&](long n) {
    for (long i = 0; i < n; ++i) {
      LLMSIM_NCCL_CHECK(ncclGroupStart());
      for (int r = 0; r < ranks; ++r) {
        ncclComm_t c = g.comms[static_cast<std::size_t>(r)];
        cudaStream_t s = g.streams[static_cast<std::size_t>(r)]->get();
        void* sb = at(send, r, 0);
        void* rb = at(recv, r, 0);
        if (b == "nccl_all_reduce") {
          LLMSIM_NCCL_CHECK(ncclAllReduce(sb, rb, count, dt, ncclSum, c, s));
        } else if (b == "nccl_all_gather") {
          LLMSIM_NCCL_CHECK(ncclAllGather(sb, rb, part, dt, c, s));
        } else if (b == "nccl_reduce_scatter") {
          LLMSIM_NCCL_CHECK(ncclReduceScatter(sb, rb, part, dt, ncclSum, c, s));
        } else if (b == "nccl_broadcast") {
          LLMSIM_NCCL_CHECK(ncclBroadcast(sb, rb, count, dt, 0, c, s));
        } else if (b == "nccl_send_recv") {
          LLMSIM_NCCL_CHECK(ncclSend(sb, count, dt, (r + 1) % ranks, c, s));
          LLMSIM_NCCL_CHECK(ncclRecv(rb, count, dt, (r + ranks - 1) % ranks, c, s));
        } else {  // all_to_all
          for (int p = 0; p < ranks; ++p) {
            LLMSIM_NCCL_CHECK(ncclSend(at(send, r, part * static_cast<std::size_t>(p)), part, dt, p, c, s));
            LLMSIM_NCCL_CHECK(ncclRecv(at(recv, r, part * static_cast<std::size_t>(p)), part, dt, p, c, s));
          }
        }
      }
      LLMSIM_NCCL_CHECK(ncclGroupEnd());
    }
  };
  TimingOptions opts = ctx.timing;
  opts.max_ops_per_batch = 1000;
  const Sample s = make_sample(item, 0, measure(op, opts));
  LLMSIM_CUDA_CHECK(cudaSetDevice(ctx.device));
  return s;
}

#else  // no NCCL in this build

struct NcclGroup {};
void NcclGroupDeleter::operator()(NcclGroup* g) const { delete g; }

Sample bench_nccl(Context&, const BenchItem&) {
  throw Skip{"this build has no NCCL (nccl.h / libnccl were not found when it was configured)", true};
}

#endif

}  // namespace llmsim::calibrate::cuda
