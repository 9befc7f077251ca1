// NCCL collectives over `group` ranks, timed like nccl-tests: host clock around the batch and a
// synchronize of every rank's stream, divided by the operation count. No buffer rotation (nccl-tests
// does none either, and the imported nccl-tests data must compare). Communicators are kept per group
// size for the whole run.
//  * One process (default): the first `group` GPUs of this process (ncclCommInitAll, one stream per
//    device); one operation = one collective on every rank inside ncclGroupStart/End.
//  * MPI run (calibrate --mpi, Context::peers.size > 1): ranks 0 .. group-1, one GPU each
//    (ncclCommInitRank with rank 0's unique id broadcast to all). Every rank runs measure() with batch
//    times agreed to the slowest rank's, so all take the same decisions; ranks outside the group run
//    no-op batches.
//
// `bytes` is the nccl-tests "size" (per-rank buffer); dtype bf16 / fp16 / fp32 (default fp32, nccl-tests'
// float); sum reduction; counts rounded down to a multiple of the rank count where the collective splits:
//   nccl_all_reduce      send = recv = size
//   nccl_all_gather      send = size / ranks, recv = size
//   nccl_reduce_scatter  send = size, recv = size / ranks
//   nccl_all_to_all      send = recv = size, size / ranks to and from each peer (grouped ncclSend/ncclRecv)
//   nccl_broadcast       size from rank 0
//   nccl_send_recv       size from each rank to the next (ring), as nccl-tests' sendrecv
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "llmsim/calibrate/cuda/bench.h"
#include "llmsim/core/error.h"
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

#define LLMSIM_NCCL_CHECK(call)                                                       \
  do {                                                                                \
    const ncclResult_t llmsim_nr_ = (call);                                           \
    if (llmsim_nr_ != ncclSuccess) throw_nccl(llmsim_nr_, #call, __FILE__, __LINE__); \
  } while (0)

}  // namespace

struct NcclGroup {
  // One process: every device 0 .. n-1.
  explicit NcclGroup(int n) : comms(static_cast<std::size_t>(n)) {
    for (int i = 0; i < n; ++i) devices.push_back(i);
    LLMSIM_NCCL_CHECK(ncclCommInitAll(comms.data(), n, devices.data()));
    make_streams();
  }
  // One rank of a multi-process group of the first n ranks (a member when peers.rank < n). Collective
  // over every rank: all of them take part in the broadcast of the unique id.
  NcclGroup(int n, const Peers& peers) {
    ncclUniqueId id{};
    if (peers.rank == 0) LLMSIM_NCCL_CHECK(ncclGetUniqueId(&id));
    std::string bytes(reinterpret_cast<const char*>(&id), sizeof(id));
    peers.broadcast(bytes);
    if (bytes.size() != sizeof(id))
      throw Error(ErrorKind::Internal, Location{}, "NCCL unique id lost in the broadcast");
    std::memcpy(&id, bytes.data(), sizeof(id));
    if (peers.rank >= n) return;
    DeviceGuard g(peers.device);
    comms.resize(1);
    devices.push_back(peers.device);
    LLMSIM_NCCL_CHECK(ncclCommInitRank(&comms[0], n, id, peers.rank));
    make_streams();
  }
  ~NcclGroup() {
    for (std::size_t i = 0; i < comms.size(); ++i) {
      (void)cudaSetDevice(devices[i]);
      (void)cudaStreamSynchronize(streams.size() > i ? streams[i]->get() : nullptr);
      (void)ncclCommDestroy(comms[i]);
    }
  }
  void make_streams() {
    for (int d : devices) {
      DeviceGuard g(d);
      streams.push_back(std::make_unique<Stream>());
    }
  }
  std::vector<ncclComm_t> comms;  // this process's ranks of the group (none: not a member)
  std::vector<int> devices;       // the device of each
  std::vector<std::unique_ptr<Stream>> streams;
};

void NcclGroupDeleter::operator()(NcclGroup* g) const { delete g; }

namespace {

// One operation of family `b` by rank `r` of `ranks` on communicator `c`: `send`/`recv` are this
// rank's buffers of `send_count`/`recv_count` elements of `es` bytes, `part` = count / ranks.
void issue(const std::string& b, ncclComm_t c, cudaStream_t s, unsigned char* send, unsigned char* recv,
           std::size_t count, std::size_t part, std::size_t es, ncclDataType_t dt, int r, int ranks) {
  if (b == "nccl_all_reduce") {
    LLMSIM_NCCL_CHECK(ncclAllReduce(send, recv, count, dt, ncclSum, c, s));
  } else if (b == "nccl_all_gather") {
    LLMSIM_NCCL_CHECK(ncclAllGather(send, recv, part, dt, c, s));
  } else if (b == "nccl_reduce_scatter") {
    LLMSIM_NCCL_CHECK(ncclReduceScatter(send, recv, part, dt, ncclSum, c, s));
  } else if (b == "nccl_broadcast") {
    LLMSIM_NCCL_CHECK(ncclBroadcast(send, recv, count, dt, 0, c, s));
  } else if (b == "nccl_send_recv") {
    LLMSIM_NCCL_CHECK(ncclSend(send, count, dt, (r + 1) % ranks, c, s));
    LLMSIM_NCCL_CHECK(ncclRecv(recv, count, dt, (r + ranks - 1) % ranks, c, s));
  } else {  // all_to_all
    for (int p = 0; p < ranks; ++p) {
      const std::size_t off = part * static_cast<std::size_t>(p) * es;
      LLMSIM_NCCL_CHECK(ncclSend(send + off, part, dt, p, c, s));
      LLMSIM_NCCL_CHECK(ncclRecv(recv + off, part, dt, p, c, s));
    }
  }
}

}  // namespace

Sample bench_nccl(Context& ctx, const BenchItem& item) {
  const int ranks = item.group;
  const bool multi = ctx.peers.size > 1;
  if (ranks < 1) throw Skip{"group must be at least 1"};
  // Every Skip before the communicator exists holds on every rank alike (same item, same build), so no
  // rank is left waiting in a collective.
  if (multi && ranks > ctx.peers.size)
    throw Skip{"needs " + std::to_string(ranks) + " ranks, mpirun started " + std::to_string(ctx.peers.size)};
  if (!multi && ranks > ctx.info.device_count)
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
  if (b == "nccl_all_gather")
    send_count = part;
  else if (b == "nccl_reduce_scatter")
    recv_count = part;
  else if (b != "nccl_all_reduce" && b != "nccl_all_to_all" && b != "nccl_broadcast" && b != "nccl_send_recv")
    throw Skip{"unknown NCCL family", true};

  auto& slot = ctx.nccl[ranks];
  if (!slot) slot.reset(multi ? new NcclGroup(ranks, ctx.peers) : new NcclGroup(ranks));
  NcclGroup& g = *slot;

  // This process's ranks of the group: all of them (one process), one or none (MPI run).
  const std::size_t mine = g.comms.size();
  const int first_rank = multi ? ctx.peers.rank : 0;
  std::vector<DeviceBuffer> send, recv;
  for (std::size_t i = 0; i < mine; ++i) {
    DeviceGuard dg(g.devices[i]);
    require_free_memory((send_count + recv_count) * es, b.c_str());
    send.emplace_back(send_count * es);
    recv.emplace_back(recv_count * es);
    const auto seed = static_cast<std::uint32_t>(first_rank) + static_cast<std::uint32_t>(i);
    fill_random(send.back().get(), send.back().size(), elem, 51u + seed, nullptr);
    fill_random(recv.back().get(), recv.back().size(), elem, 71u + seed, nullptr);
    LLMSIM_CUDA_CHECK(cudaDeviceSynchronize());
  }

  TimedOp op;
  op.clock = Clock::Host;
  op.stream = mine > 0 ? g.streams[0]->get() : nullptr;
  op.sync = [&] {
    for (std::size_t i = 0; i < mine; ++i) {
      DeviceGuard dg(g.devices[i]);
      LLMSIM_CUDA_CHECK(cudaStreamSynchronize(g.streams[i]->get()));
    }
  };
  op.enqueue = [&](long n) {
    for (long k = 0; k < n; ++k) {
      LLMSIM_NCCL_CHECK(ncclGroupStart());
      for (std::size_t i = 0; i < mine; ++i)
        issue(b, g.comms[i], g.streams[i]->get(), send[i].bytes(), recv[i].bytes(), count, part, es, dt,
              first_rank + static_cast<int>(i), ranks);
      LLMSIM_NCCL_CHECK(ncclGroupEnd());
    }
  };
  if (multi) op.agree = ctx.peers.max;
  TimingOptions opts = ctx.timing;
  opts.max_ops_per_batch = 1000;
  Sample s = make_sample(item, 0, measure(op, opts));
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
