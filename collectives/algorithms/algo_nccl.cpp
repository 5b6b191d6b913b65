// nccl: NCCL's own collectives on the cuda device; gather, scatter, alltoall, alltoallv, sendrecv and the
// hypercube's steps as grouped ncclSend/ncclRecv (as nccl-tests does). Needs one GPU per rank.
#include <vector>

#include "collectives/communicator/communicator.h"

#ifdef PARBENCH_HAVE_NCCL
#include "base/error.h"
#include "collectives/table/alltoallv_split.h"
#include "collectives/transport/nccl_util.h"

namespace parbench {
namespace {

// A device-to-device copy on the collective's stream: ordered with the caller's work there, and capturable into a
// CUDA graph (a synchronous copy is not).
void copy_on_stream(void* dst, const void* src, std::size_t bytes, cudaStream_t stream) {
  if (bytes) CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
}

// Every non-empty share of the alltoallv split in one group, sends and receives packed in rank order.
void alltoallv(Communicator& c, const CollArgs& a, ncclComm_t comm, cudaStream_t stream) {
  const int n = c.size();
  const AlltoallvSplit s = alltoallv_split(alltoallv_pattern(), c.rank(), n, a.count, a.dtype);
  const ncclDataType_t dt = nccl_type(a.dtype);
  const void* send = a.send;
  if (send == a.recv && s.send_total > 0) {  // in place: the outgoing shares kept apart
    const std::size_t bytes = s.send_total * dtype_size(a.dtype);
    void* copy = c.scratch(0, bytes);
    copy_on_stream(copy, send, bytes, stream);
    send = copy;
  }
  NCCL_CHECK(ncclGroupStart());
  for (int p = 0; p < n; ++p) {
    const auto q = std::size_t(p);
    if (s.send_counts[q])
      NCCL_CHECK(ncclSend(byte_ptr(send, s.send_displs[q], a.dtype), s.send_counts[q], dt, p, comm, stream));
    if (s.recv_counts[q])
      NCCL_CHECK(ncclRecv(byte_ptr(a.recv, s.recv_displs[q], a.dtype), s.recv_counts[q], dt, p, comm, stream));
  }
  NCCL_CHECK(ncclGroupEnd());
}

// The own block in place, then a group of one send and one receive with rank ^ mask per step.
void hypercube(Communicator& c, const CollArgs& a, ncclComm_t comm, cudaStream_t stream) {
  const int n = c.size(), r = c.rank();
  const ncclDataType_t dt = nccl_type(a.dtype);
  auto block = [&](int b) { return byte_ptr(a.recv, a.count * std::size_t(b), a.dtype); };
  if (a.send != block(r)) copy_on_stream(block(r), a.send, a.count * dtype_size(a.dtype), stream);
  for (int mask = 1; mask < n; mask <<= 1) {
    const int have = r & ~(mask - 1), peer = r ^ mask;
    const std::size_t cnt = a.count * std::size_t(mask);
    NCCL_CHECK(ncclGroupStart());
    NCCL_CHECK(ncclSend(block(have), cnt, dt, peer, comm, stream));
    NCCL_CHECK(ncclRecv(block(have ^ mask), cnt, dt, peer, comm, stream));
    NCCL_CHECK(ncclGroupEnd());
  }
}

// gather, scatter, alltoall and sendrecv as one group of ncclSend/ncclRecv each, as nccl-tests runs them.
void point_to_point(Communicator& c, const CollArgs& a, ncclComm_t comm, cudaStream_t stream) {
  const int n = c.size(), r = c.rank();
  const ncclDataType_t dt = nccl_type(a.dtype);
  const std::size_t bytes = a.count * dtype_size(a.dtype);
  auto at = [&](const void* p, int b) { return byte_ptr(p, a.count * std::size_t(b), a.dtype); };
  auto out_at = [&](int b) { return byte_ptr(a.recv, a.count * std::size_t(b), a.dtype); };
  const void* send = a.send;
  if ((a.coll == Collective::alltoall || a.coll == Collective::sendrecv) && send == a.recv) {
    std::size_t total = a.coll == Collective::alltoall ? bytes * std::size_t(n) : bytes;
    void* copy = c.scratch(0, total);
    copy_on_stream(copy, send, total, stream);
    send = copy;
  }
  NCCL_CHECK(ncclGroupStart());
  if (a.coll == Collective::gather) {
    if (r == a.root)
      for (int p = 0; p < n; ++p) NCCL_CHECK(ncclRecv(out_at(p), a.count, dt, p, comm, stream));
    NCCL_CHECK(ncclSend(send, a.count, dt, a.root, comm, stream));
  } else if (a.coll == Collective::scatter) {
    if (r == a.root)
      for (int p = 0; p < n; ++p) NCCL_CHECK(ncclSend(at(send, p), a.count, dt, p, comm, stream));
    NCCL_CHECK(ncclRecv(a.recv, a.count, dt, a.root, comm, stream));
  } else if (a.coll == Collective::alltoall) {
    for (int p = 0; p < n; ++p) {
      NCCL_CHECK(ncclSend(at(send, p), a.count, dt, p, comm, stream));
      NCCL_CHECK(ncclRecv(out_at(p), a.count, dt, p, comm, stream));
    }
  } else {
    NCCL_CHECK(ncclSend(send, a.count, dt, (r + 1) % n, comm, stream));
    NCCL_CHECK(ncclRecv(a.recv, a.count, dt, (r - 1 + n) % n, comm, stream));
  }
  NCCL_CHECK(ncclGroupEnd());
}

class NcclLibrary final : public Algorithm {
 public:
  std::string_view name() const override { return "nccl"; }
  bool queues_on_callers_stream() const override { return true; }
  std::string capture_refusal(Collective) const override { return {}; }  // NCCL's calls are stream-ordered
  std::string unsupported(Collective c, const Communicator& comm) const override {
    if (comm.device().kind != DeviceKind::cuda)
      return "NCCL runs on GPUs only (--device cuda); device " + device_name(comm.device()) +
             " can run the hand-written implementations and mpi";
    if (!comm.nccl_comm()) return comm.nccl_unavailable();
    return ranks_refusal(c, comm.size());
  }

  void run(Communicator& c, const CollArgs& a) const override {
    auto comm = static_cast<ncclComm_t>(c.nccl_comm());
    auto stream = static_cast<cudaStream_t>(c.stream());
    const int r = c.rank();
    const ncclDataType_t dt = nccl_type(a.dtype);
    const void* send = a.send;
    switch (a.coll) {
      case Collective::allreduce:
        NCCL_CHECK(ncclAllReduce(send, a.recv, a.count, dt, nccl_op(a.op), comm, stream));
        break;
      case Collective::reduce:
        NCCL_CHECK(ncclReduce(send, a.recv, a.count, dt, nccl_op(a.op), a.root, comm, stream));
        break;
      case Collective::broadcast:
        NCCL_CHECK(ncclBroadcast(send, a.recv, a.count, dt, a.root, comm, stream));
        break;
      case Collective::allgather: NCCL_CHECK(ncclAllGather(send, a.recv, a.count, dt, comm, stream)); break;
      case Collective::reduce_scatter:
        NCCL_CHECK(ncclReduceScatter(send, a.recv, a.count, dt, nccl_op(a.op), comm, stream));
        break;
      case Collective::alltoallv: alltoallv(c, a, comm, stream); break;
      case Collective::hypercube: hypercube(c, a, comm, stream); break;
      case Collective::gather:
      case Collective::scatter:
      case Collective::alltoall:
      case Collective::sendrecv: point_to_point(c, a, comm, stream); break;
    }
    if (!c.batching() && !c.ordered_on())  // in a batch, end_batch waits once for all; in stream order, the stream
      nccl_wait(comm, stream, c.deadline(),
                "rank " + std::to_string(r) + " waited for NCCL's " + std::string(collective_name(a.coll)));
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_nccl_algorithm() { return std::make_unique<NcclLibrary>(); }

}  // namespace parbench

#else  // no NCCL in this build

namespace parbench {
namespace {
class NoNccl final : public Algorithm {
 public:
  std::string_view name() const override { return "nccl"; }
  std::string unsupported(Collective, const Communicator& comm) const override {
    if (comm.device().kind != DeviceKind::cuda)
      return "NCCL runs on GPUs only (--device cuda), and this build has no NCCL; device " +
             device_name(comm.device()) + " can run the hand-written implementations and mpi";
    return "this build has no NCCL (configure with PARBENCH_NCCL=ON)";
  }
  void run(Communicator&, const CollArgs&) const override { throw Error("this build has no NCCL"); }
};
}  // namespace
std::unique_ptr<Algorithm> make_nccl_algorithm() { return std::make_unique<NoNccl>(); }
}  // namespace parbench
#endif
