// nccl: NCCL's own collectives on the cuda device; gather, scatter, alltoall and sendrecv as grouped
// ncclSend/ncclRecv (as nccl-tests does). Needs one GPU per rank.
#include <vector>

#include "collectives/communicator.h"

#ifdef PARBENCH_HAVE_NCCL
#include "base/error.h"
#include "collectives/nccl_util.h"

namespace parbench {
namespace {

class NcclLibrary final : public Algorithm {
 public:
  std::string_view name() const override { return "nccl"; }
  bool queues_on_callers_stream() const override { return true; }
  std::string capture_refusal(Collective) const override { return {}; }  // NCCL's calls are stream-ordered
  std::string unsupported(Collective, const Communicator& comm) const override {
    if (comm.device().kind != DeviceKind::cuda)
      return "NCCL runs on GPUs only (--device cuda); device " + device_name(comm.device()) +
             " can run the hand-written implementations and mpi";
    if (!comm.nccl_comm()) return comm.nccl_unavailable();
    return {};
  }

  void run(Communicator& c, const CollArgs& a) const override {
    auto comm = static_cast<ncclComm_t>(c.nccl_comm());
    auto stream = static_cast<cudaStream_t>(c.stream());
    const int n = c.size(), r = c.rank();
    const ncclDataType_t dt = nccl_type(a.dtype);
    const std::size_t bytes = a.count * dtype_size(a.dtype);
    auto at = [&](const void* p, int b) { return byte_ptr(p, a.count * std::size_t(b), a.dtype); };
    auto out_at = [&](int b) { return byte_ptr(a.recv, a.count * std::size_t(b), a.dtype); };
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
      case Collective::gather:
      case Collective::scatter:
      case Collective::alltoall:
      case Collective::sendrecv: {
        if ((a.coll == Collective::alltoall || a.coll == Collective::sendrecv) && send == a.recv) {
          std::size_t total = a.coll == Collective::alltoall ? bytes * std::size_t(n) : bytes;
          void* copy = c.scratch(0, total);
          // On the stream, before the sends: ordered with the caller's work there, and capturable.
          if (total) CUDA_CHECK(cudaMemcpyAsync(copy, send, total, cudaMemcpyDeviceToDevice, stream));
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
        break;
      }
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
