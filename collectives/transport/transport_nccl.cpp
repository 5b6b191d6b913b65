// NCCL transport: a group of ncclSend/ncclRecv between ncclGroupStart/End on the communicator's stream, then
// a deadline-bounded wait; posted sends and messages matched by tag (the pipeline's) go through an MPI transport
// beside it. Also the NCCL helpers (nccl_util.h).
#include "collectives/transport/transport.h"

#ifdef PARBENCH_HAVE_NCCL
#include <sched.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "collectives/transport/nccl_util.h"
#include "core/memory.h"
#include "core/host_counts.h"
#include "core/stream.h"

namespace parbench {

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::f64: return ncclFloat64;
    case DType::f32: return ncclFloat32;
    case DType::f16: return ncclFloat16;
    case DType::bf16: return ncclBfloat16;
    case DType::i32: return ncclInt32;
    case DType::i8: return ncclInt8;
    case DType::u8: return ncclUint8;
  }
  return ncclUint8;
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return ncclSum;
    case ReduceOp::prod: return ncclProd;
    case ReduceOp::max: return ncclMax;
    case ReduceOp::min: return ncclMin;
    case ReduceOp::avg: return ncclAvg;
  }
  return ncclSum;
}

void nccl_wait(ncclComm_t comm, cudaStream_t stream, Deadline deadline, const std::string& what) {
  count_host_wait();
  for (;;) {
    cudaError_t e = cudaStreamQuery(stream);
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady) CUDA_CHECK(e);
    ncclResult_t async = ncclSuccess;
    // This communicator aborted, or (an error polled from it) a peer's, by another wait's timeout.
    const bool aborted = nccl_aborted_else_poll(comm, async);
    if (aborted || (async != ncclSuccess && nccl_aborted_after_timeout()))
      throw AbortedError(what + ": another wait timed out and aborted the NCCL communicators");
    NCCL_CHECK(async);
    if (Clock::now() > deadline) {
      nccl_abort_all();
      throw TimeoutError(what);
    }
    sched_yield();
  }
}

namespace {

class NcclTransport final : public Transport {
 public:
  NcclTransport(ncclComm_t comm, cudaStream_t stream, int rank, int size, Device device,
                std::unique_ptr<Transport> matched, bool owns_comm)
      : comm_(comm),
        stream_(stream),
        rank_(rank),
        size_(size),
        device_(device),
        matched_(std::move(matched)),
        owns_comm_(owns_comm) {}
  ~NcclTransport() override {
    device_free(device_, staging_);
    if (owns_comm_) nccl_release(comm_);  // split ones; the world communicator belongs to the bootstrap
  }
  NcclTransport(const NcclTransport&) = delete;
  NcclTransport& operator=(const NcclTransport&) = delete;
  std::string_view name() const override { return "nccl"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const Transport* companion() const override { return matched_.get(); }

  std::unique_ptr<Transport> split(int color, int key, const std::vector<int>& members, int new_rank) override {
    ncclComm_t sub;
    NCCL_CHECK(ncclCommSplit(comm_, color, key, &sub, nullptr));
    nccl_track(sub, comm_);
    // Every rank splits both, in the same order (the Communicator's split is collective over all ranks).
    std::unique_ptr<Transport> matched = matched_ ? matched_->split(color, key, members, new_rank) : nullptr;
    return std::make_unique<NcclTransport>(sub, stream_, new_rank, int(members.size()), device_, std::move(matched),
                                           true);
  }

  // NCCL point-to-point is stream-ordered and matched in issue order: posted sends, and the receives that match
  // them by tag, go through the matched transport.
  void post_sends(std::span<const P2POp> ops) override { matched("posted sends").post_sends(ops); }
  void finish_sends(Deadline deadline) override {
    if (matched_) matched_->finish_sends(deadline);
  }
  void abandon_sends() override {
    if (matched_) matched_->abandon_sends();
  }

  void group(std::span<const P2POp> ops, Deadline deadline) override {
    const auto by_tag = [](const P2POp& op) { return op.tag >= kFirstMatchedTag; };
    const std::size_t tagged = std::size_t(std::count_if(ops.begin(), ops.end(), by_tag));
    if (tagged == ops.size() && tagged > 0) return matched("messages matched by tag").group(ops, deadline);
    // Half of a group over each transport could wait on one while the peer waits on the other.
    if (tagged > 0) throw Error("a point-to-point group mixes tags below and above " +
                                std::to_string(kFirstMatchedTag) + " on the nccl transport");
    nccl_group(ops, deadline);
  }

 private:
  Transport& matched(const char* what) {
    if (!matched_)
      throw Error(std::string("the nccl transport has no ") + what +
                  " (NCCL matches messages in issue order only) and no MPI transport beside it");
    return *matched_;
  }

  void nccl_group(std::span<const P2POp> ops, Deadline deadline) {
    // NCCL moves GPU memory only: host buffers (barrier, split) go through a GPU buffer kept between calls
    // (a cudaMalloc/cudaFree per barrier round would synchronise the device each time).
    std::vector<void*> bufs(ops.size(), nullptr);
    std::vector<std::size_t> offset(ops.size(), 0);
    std::size_t total = 0;
    for (std::size_t i = 0; i < ops.size(); ++i)
      if (ops[i].host) offset[i] = total, total += (ops[i].bytes + 255) / 256 * 256;
    if (total > staging_bytes_) {
      device_free(device_, std::exchange(staging_, nullptr));
      staging_ = device_malloc(device_, total);
      staging_bytes_ = total;
    }
    for (std::size_t i = 0; i < ops.size(); ++i)
      if (ops[i].host) {
        bufs[i] = static_cast<char*>(staging_) + offset[i];
        if (ops[i].kind == P2POp::send) device_memcpy(device_, bufs[i], Device{}, ops[i].buf, ops[i].bytes);
      }
    // Without a stream of its own, on the calling thread's (synchronous_stream), not the legacy default stream.
    const auto stream = stream_ ? stream_ : static_cast<cudaStream_t>(synchronous_stream(device_));
    NCCL_CHECK(ncclGroupStart());
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const P2POp& op = ops[i];
      void* buf = bufs[i] ? bufs[i] : op.buf;
      if (op.kind == P2POp::send)
        NCCL_CHECK(ncclSend(buf, op.bytes, ncclUint8, op.peer, comm_, stream));
      else
        NCCL_CHECK(ncclRecv(buf, op.bytes, ncclUint8, op.peer, comm_, stream));
    }
    NCCL_CHECK(ncclGroupEnd());
    nccl_wait(comm_, stream, deadline, "rank " + std::to_string(rank_) + " waited for NCCL send/recv");
    for (std::size_t i = 0; i < ops.size(); ++i)
      if (ops[i].host && ops[i].kind == P2POp::recv)
        device_memcpy(Device{}, ops[i].buf, device_, bufs[i], ops[i].bytes);
  }

  ncclComm_t comm_;
  cudaStream_t stream_;
  int rank_, size_;
  Device device_;
  void* staging_ = nullptr;  // GPU copies of host buffers (see group)
  std::size_t staging_bytes_ = 0;
  std::unique_ptr<Transport> matched_;  // MPI over the same ranks, for messages matched by tag (may be null)
  bool owns_comm_;
};

}  // namespace

std::unique_ptr<Transport> make_nccl_transport(void* nccl_comm, void* stream, int rank, int size, Device device,
                                               std::unique_ptr<Transport> matched) {
  return std::make_unique<NcclTransport>(static_cast<ncclComm_t>(nccl_comm), static_cast<cudaStream_t>(stream),
                                         rank, size, device, std::move(matched), false);
}

void* nccl_comm_split(void* comm, int color, int key) {
  ncclComm_t sub = nullptr;
  NCCL_CHECK(ncclCommSplit(static_cast<ncclComm_t>(comm), color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, &sub, nullptr));
  nccl_track(sub, static_cast<ncclComm_t>(comm));
  return sub;
}

void nccl_comm_destroy(void* comm) noexcept {
  nccl_release(static_cast<ncclComm_t>(comm));
}

void nccl_stream_wait(void* comm, void* stream, Deadline deadline, const std::string& what) {
  nccl_wait(static_cast<ncclComm_t>(comm), static_cast<cudaStream_t>(stream), deadline, what);
}

void nccl_queue_p2p(void* comm, std::span<const P2POp> ops, void* stream) {
  auto c = static_cast<ncclComm_t>(comm);
  auto s = static_cast<cudaStream_t>(stream);
  NCCL_CHECK(ncclGroupStart());
  for (const P2POp& op : ops) {
    if (op.host) throw Error("nccl_queue_p2p: NCCL moves device memory only");
    if (op.kind == P2POp::send)
      NCCL_CHECK(ncclSend(op.buf, op.bytes, ncclUint8, op.peer, c, s));
    else
      NCCL_CHECK(ncclRecv(op.buf, op.bytes, ncclUint8, op.peer, c, s));
  }
  NCCL_CHECK(ncclGroupEnd());
}

}  // namespace parbench

#else  // no NCCL in this build

#include "base/error.h"

namespace parbench {
void* nccl_comm_split(void*, int, int) { throw Error("this build has no NCCL"); }
void nccl_comm_destroy(void*) noexcept {}
void nccl_stream_wait(void*, void*, Deadline, const std::string&) { throw Error("this build has no NCCL"); }
void nccl_queue_p2p(void*, std::span<const P2POp>, void*) { throw Error("this build has no NCCL"); }
}  // namespace parbench
#endif
