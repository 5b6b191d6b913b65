// mpi: the MPI library's own collectives (non-blocking forms, polled against the deadline). Needs mpirun.
// 16-bit floats reduce through user-defined MPI ops that run the cpu reduction reference (fp32 math).
#include <cstring>
#include <vector>

#include "collectives/communicator.h"

#ifdef PARBENCH_HAVE_MPI
#include "collectives/reduce.h"
#include "collectives/transport_mpi.h"
#include "core/memory.h"

namespace parbench {
namespace {

template <DType T, ReduceOp O>
void user_reduce(void* in, void* inout, int* len, MPI_Datatype*) {
  cpu_ref::reduce_combine(inout, in, std::size_t(*len), T, O == ReduceOp::avg ? ReduceOp::sum : O);
}

template <DType T>
MPI_Op half_op(ReduceOp op) {
  static MPI_Op ops[5] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};  // made once
  MPI_Op& o = ops[int(op)];
  if (o == MPI_OP_NULL) {
    MPI_User_function* fns[5] = {user_reduce<T, ReduceOp::sum>, user_reduce<T, ReduceOp::prod>,
                                 user_reduce<T, ReduceOp::max>, user_reduce<T, ReduceOp::min>,
                                 user_reduce<T, ReduceOp::sum>};
    MPI_CHECK(MPI_Op_create(fns[int(op)], 1, &o));
  }
  return o;
}

MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::f64: return MPI_DOUBLE;
    case DType::f32: return MPI_FLOAT;
    case DType::f16:
    case DType::bf16: return MPI_UINT16_T;
    case DType::i32: return MPI_INT32_T;
    case DType::i8: return MPI_INT8_T;
    case DType::u8: return MPI_UINT8_T;
  }
  return MPI_BYTE;
}

MPI_Op mpi_op(DType t, ReduceOp op) {
  if (t == DType::f16) return half_op<DType::f16>(op);
  if (t == DType::bf16) return half_op<DType::bf16>(op);
  switch (op) {
    case ReduceOp::prod: return MPI_PROD;
    case ReduceOp::max: return MPI_MAX;
    case ReduceOp::min: return MPI_MIN;
    default: return MPI_SUM;  // avg: sum, then divide
  }
}

class MpiLibrary final : public Algorithm {
 public:
  std::string_view name() const override { return "mpi"; }
  std::string unsupported(Collective, const Communicator& comm) const override {
    if (mpi_comm_of(comm.transport()) == MPI_COMM_NULL)
      return "the MPI library's collectives need one process per rank (run under mpirun); with --ranks N "
             "(threads) use the hand-written implementations";
    return {};
  }

  void run(Communicator& c, const CollArgs& a) const override {
    if (a.count > std::size_t(INT32_MAX) / std::size_t(c.size()))
      throw Error("mpi: " + std::to_string(a.count) + " elements per rank exceed MPI's int counts");
    if (c.device().on_host()) return run_host(c, a, a.send, a.recv);
    // cuda: stage through the communicator's pinned host buffer, keeping the in-place aliasing between send and
    // receive buffers.
    const BufferCounts bc = buffer_counts(a.coll, a.count, c.size(), c.rank(), a.root);
    const std::size_t es = dtype_size(a.dtype), sb = bc.send * es, rb = bc.recv * es;
    const char *s = static_cast<const char*>(a.send), *r = static_cast<const char*>(a.recv);
    void* host_recv;
    const void* host_send;
    if (s >= r && s + sb <= r + rb && rb) {  // send inside recv
      host_recv = c.host_staging(rb);
      host_send = static_cast<char*>(host_recv) + (s - r);
    } else if (r >= s && r + rb <= s + sb && sb) {  // recv inside send
      char* staging = c.host_staging(sb);
      host_send = staging;
      host_recv = staging + (r - s);
    } else {  // apart: send first, recv after it (256-byte aligned)
      const std::size_t recv_at = (sb + 255) / 256 * 256;
      char* staging = c.host_staging(recv_at + rb);
      host_send = staging;
      host_recv = staging + recv_at;
    }
    if (sb) device_memcpy(Device{}, const_cast<void*>(host_send), c.device(), a.send, sb);
    run_host(c, a, host_send, host_recv);
    if (rb) device_memcpy(c.device(), a.recv, Device{}, host_recv, rb);
  }

 private:
  // MPI is not CUDA-aware here: `send` and `recv` are host memory (the cpu device's, or staged from a GPU), so
  // every copy, scratch buffer and division in here is a host one, never the communicator's device's.
  static void run_host(Communicator& c, const CollArgs& a, const void* send, void* recv) {
    MPI_Comm mc = mpi_comm_of(c.transport());
    const int n = c.size(), r = c.rank(), cnt = int(a.count);
    const MPI_Datatype dt = mpi_type(a.dtype);
    const std::size_t es = dtype_size(a.dtype), bytes = a.count * es;
    auto at = [&](const void* p, int block) { return byte_ptr(p, a.count * std::size_t(block), a.dtype); };
    std::vector<MPI_Request> reqs(2, MPI_REQUEST_NULL);
    void* finish_from = nullptr;  // reduce-scatter in place lands in scratch first
    std::vector<char> scratch;
    bool divide = false;
    switch (a.coll) {
      case Collective::allreduce:
        MPI_CHECK(MPI_Iallreduce(send == recv ? MPI_IN_PLACE : send, recv, cnt, dt, mpi_op(a.dtype, a.op), mc,
                                 &reqs[0]));
        divide = true;
        break;
      case Collective::reduce:
        MPI_CHECK(MPI_Ireduce(r == a.root && send == recv ? MPI_IN_PLACE : send, recv, cnt, dt,
                              mpi_op(a.dtype, a.op), a.root, mc, &reqs[0]));
        divide = r == a.root;
        break;
      case Collective::broadcast:
        if (r == a.root && recv != send) std::memmove(recv, send, bytes);
        MPI_CHECK(MPI_Ibcast(recv, cnt, dt, a.root, mc, &reqs[0]));
        break;
      case Collective::gather:
        MPI_CHECK(MPI_Igather(r == a.root && send == at(recv, a.root) ? MPI_IN_PLACE : send, cnt, dt, recv, cnt, dt,
                              a.root, mc, &reqs[0]));
        break;
      case Collective::allgather:
        MPI_CHECK(MPI_Iallgather(send == at(recv, r) ? MPI_IN_PLACE : send, cnt, dt, recv, cnt, dt, mc, &reqs[0]));
        break;
      case Collective::scatter:
        MPI_CHECK(MPI_Iscatter(send, cnt, dt, r == a.root && recv == at(send, a.root) ? MPI_IN_PLACE : recv, cnt,
                               dt, a.root, mc, &reqs[0]));
        break;
      case Collective::reduce_scatter: {
        void* out = recv;
        if (recv == at(send, r)) scratch.resize(bytes), finish_from = out = scratch.data();
        MPI_CHECK(MPI_Ireduce_scatter_block(send, out, cnt, dt, mpi_op(a.dtype, a.op), mc, &reqs[0]));
        divide = true;
        break;
      }
      case Collective::alltoall:
        if (send == recv) {
          scratch.assign(static_cast<const char*>(send), static_cast<const char*>(send) + bytes * std::size_t(n));
          send = scratch.data();
        }
        MPI_CHECK(MPI_Ialltoall(send, cnt, dt, recv, cnt, dt, mc, &reqs[0]));
        break;
      case Collective::sendrecv:
        if (send == recv) {
          scratch.assign(static_cast<const char*>(send), static_cast<const char*>(send) + bytes);
          send = scratch.data();
        }
        MPI_CHECK(MPI_Irecv(recv, cnt, dt, (r - 1 + n) % n, 1, mc, &reqs[0]));
        MPI_CHECK(MPI_Isend(send, cnt, dt, (r + 1) % n, 1, mc, &reqs[1]));
        break;
    }
    mpi_wait_all(reqs.data(), int(reqs.size()), c.deadline(),
                 "rank " + std::to_string(r) + " waited for MPI's " + std::string(collective_name(a.coll)));
    if (finish_from) std::memcpy(recv, finish_from, bytes);
    if (divide && a.op == ReduceOp::avg) reduce_divide(Device{}, recv, a.count, a.dtype, n, nullptr);
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_mpi_algorithm() { return std::make_unique<MpiLibrary>(); }

}  // namespace parbench

#else  // no MPI in this build

namespace parbench {
namespace {
class NoMpi final : public Algorithm {
 public:
  std::string_view name() const override { return "mpi"; }
  std::string unsupported(Collective, const Communicator&) const override {
    return "this build has no MPI (configure with PARBENCH_MPI=ON and OpenMPI installed)";
  }
  void run(Communicator&, const CollArgs&) const override { throw Error("this build has no MPI"); }
};
}  // namespace
std::unique_ptr<Algorithm> make_mpi_algorithm() { return std::make_unique<NoMpi>(); }
}  // namespace parbench
#endif
