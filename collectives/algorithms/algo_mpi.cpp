// mpi and mpi-nb: the MPI library's own collectives, in the blocking forms applications call (mpi) and the
// non-blocking ones and one wait (mpi-nb); the timeout is a watchdog's, not a polling loop. Needs mpirun.
// 16-bit floats reduce through user-defined MPI ops that run the cpu reduction reference (fp32 math).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "collectives/table/alltoallv_split.h"
#include "collectives/launch/launcher.h"
#include "collectives/communicator/communicator.h"

#ifdef PARBENCH_HAVE_MPI
#include "collectives/communicator/liveness.h"
#include "collectives/communicator/reduce.h"
#include "collectives/transport/transport_mpi.h"
#include "collectives/communicator/watchdog.h"
#include "core/memory.h"

namespace parbench {
namespace {

template <DType T, ReduceOp O>
void user_reduce(void* in, void* inout, int* len, MPI_Datatype*) {
  cpu_ref::reduce_combine(inout, inout, in, std::size_t(*len), T, O == ReduceOp::avg ? ReduceOp::sum : O);
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

// The watchdog's action: the report on stderr, then the whole job ends (the peers may be stuck in the same call).
void abort_job(const std::string& report) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::fprintf(stderr, "error: rank %d of %d: %s; %s\n", rank, size, report.c_str(), liveness_report(1.0).c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

// `blocking`: the calls applications make (MPI_Allreduce, ...); otherwise the non-blocking forms (MPI_Iallreduce,
// ...) and one wait. Either way the deadline is the watchdog's: no polling in the measured call.
class MpiLibrary final : public Algorithm {
 public:
  explicit MpiLibrary(bool blocking) : blocking_(blocking) {}
  std::string_view name() const override { return blocking_ ? "mpi" : "mpi-nb"; }
  std::string unsupported(Collective c, const Communicator& comm) const override {
    if (mpi_comm_of(comm.transport()) == MPI_COMM_NULL) {
      if (const Launch& l = current_launch(); l.bootstrap == BootstrapKind::tcp)
        return "needs MPI: launched with the tcp bootstrap (" + l.launcher + "); run under mpirun for MPI's "
               "collectives, or use the hand-written implementations";
      return "the MPI library's collectives need one process per rank (run under mpirun with -t 1 -g 1); "
             "with --ranks N or -t/-g (threads) use the hand-written implementations";
    }
    return ranks_refusal(c, comm.size());
  }

  void run(Communicator& c, const CollArgs& a) const override {
    const int ranks = c.size(), rank = c.rank();  // virtual calls: once per call
    if (a.count > std::size_t(INT32_MAX) / std::size_t(ranks))
      throw Error(std::string(name()) + ": " + std::to_string(a.count) + " elements per rank exceed MPI's int counts");
    const BufferCounts bc = buffer_counts(a.coll, a.count, ranks, rank, a.root, a.dtype);
    const std::size_t es = dtype_size(a.dtype), sb = bc.send * es, rb = bc.recv * es;
    const WatchedCall watched{rank, ranks, a.coll, name(), a.count, std::max(sb, rb), a.dtype, c.timeout_s()};
    if (c.device().on_host()) return run_host(c, a, a.send, a.recv, watched);
    // cuda: stage through the communicator's pinned host buffer, keeping the in-place aliasing between send and
    // receive buffers.
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
    run_host(c, a, host_send, host_recv, watched);
    if (rb) device_memcpy(c.device(), a.recv, Device{}, host_recv, rb);
  }

 private:
  // MPI is not CUDA-aware here: `send` and `recv` are host memory (the cpu device's, or staged from a GPU), so
  // every copy, scratch buffer and division in here is a host one, never the communicator's device's.
  void run_host(Communicator& c, const CollArgs& a, const void* send, void* recv, const WatchedCall& watched) const {
    const std::size_t bytes = a.count * dtype_size(a.dtype);
    void* finish_from = nullptr;  // reduce-scatter in place lands in scratch first
    std::vector<char>& scratch = scratch_for_thread();
    if (a.coll == Collective::reduce_scatter && recv == byte_ptr(send, a.count * std::size_t(watched.rank), a.dtype)) {
      scratch.resize(bytes);
      finish_from = scratch.data();
    }
    const bool exchanges =
        a.coll == Collective::alltoall || a.coll == Collective::alltoallv || a.coll == Collective::sendrecv;
    if (exchanges && send == recv) {  // what goes out kept apart from what comes in
      const std::size_t total =
          buffer_counts(a.coll, a.count, watched.ranks, watched.rank, a.root, a.dtype).send * dtype_size(a.dtype);
      scratch.assign(static_cast<const char*>(send), static_cast<const char*>(send) + total);
      send = scratch.data();
    }
    if (a.coll == Collective::hypercube) {  // the own block first, unless in place
      void* own = byte_ptr(recv, a.count * std::size_t(watched.rank), a.dtype);
      if (own != send) std::memmove(own, send, bytes);
    }
    if (a.coll == Collective::broadcast && watched.rank == a.root && recv != send) std::memmove(recv, send, bytes);
    {
      WatchGuard watch(watched, abort_job);
      call(mpi_comm_of(c.transport()), watched.ranks, watched.rank, a, send, finish_from ? finish_from : recv);
    }
    if (finish_from) std::memcpy(recv, finish_from, bytes);
    const bool divides = a.coll == Collective::allreduce || a.coll == Collective::reduce_scatter ||
                         (a.coll == Collective::reduce && watched.rank == a.root);
    if (divides && a.op == ReduceOp::avg) reduce_divide(Device{}, recv, a.count, a.dtype, watched.ranks, nullptr);
  }

  static std::vector<char>& scratch_for_thread() {
    thread_local std::vector<char> scratch;  // kept: no allocation per call
    return scratch;
  }

  // The MPI call itself, blocking, or non-blocking and its wait.
  void call(MPI_Comm mc, int n, int r, const CollArgs& a, const void* send, void* recv) const {
    MPI_Request reqs[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    if (a.coll == Collective::hypercube) return call_hypercube(mc, n, r, a, recv);
    if (a.coll == Collective::sendrecv) {
      call_sendrecv(mc, n, r, a, send, recv, reqs);
      if (!blocking_) MPI_CHECK(MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE));
      return;
    }
    if (is_reduction(a.coll))
      call_reduction(mc, r, a, send, recv, reqs);
    else if (a.coll == Collective::alltoallv)
      call_alltoallv(mc, n, r, a, send, recv, reqs);
    else
      call_movement(mc, r, a, send, recv, reqs);
    if (!blocking_) MPI_CHECK(MPI_Wait(&reqs[0], MPI_STATUS_IGNORE));
  }

  // allreduce, reduce, reduce-scatter: MPI's in place is MPI_IN_PLACE for the send buffer.
  void call_reduction(MPI_Comm mc, int r, const CollArgs& a, const void* send, void* recv, MPI_Request* req) const {
    const int cnt = int(a.count);
    const MPI_Datatype dt = mpi_type(a.dtype);
    const MPI_Op op = mpi_op(a.dtype, a.op);
    const bool b = blocking_;
    switch (a.coll) {
      case Collective::allreduce: {
        const void* s = send == recv ? MPI_IN_PLACE : send;
        MPI_CHECK(b ? MPI_Allreduce(s, recv, cnt, dt, op, mc) : MPI_Iallreduce(s, recv, cnt, dt, op, mc, req));
        break;
      }
      case Collective::reduce: {
        const void* s = r == a.root && send == recv ? MPI_IN_PLACE : send;
        MPI_CHECK(b ? MPI_Reduce(s, recv, cnt, dt, op, a.root, mc)
                    : MPI_Ireduce(s, recv, cnt, dt, op, a.root, mc, req));
        break;
      }
      case Collective::reduce_scatter:
        MPI_CHECK(b ? MPI_Reduce_scatter_block(send, recv, cnt, dt, op, mc)
                    : MPI_Ireduce_scatter_block(send, recv, cnt, dt, op, mc, req));
        break;
      default: throw Error("mpi: " + std::string(collective_name(a.coll)) + " is not a reduction");
    }
  }

  // broadcast, gather, allgather, scatter, alltoall: in place where the rank's own block aliases the other buffer.
  void call_movement(MPI_Comm mc, int r, const CollArgs& a, const void* send, void* recv, MPI_Request* req) const {
    const int cnt = int(a.count);
    const MPI_Datatype dt = mpi_type(a.dtype);
    const bool root = r == a.root, b = blocking_;
    auto at = [&](const void* p, int block) { return byte_ptr(p, a.count * std::size_t(block), a.dtype); };
    switch (a.coll) {
      case Collective::broadcast:
        MPI_CHECK(b ? MPI_Bcast(recv, cnt, dt, a.root, mc) : MPI_Ibcast(recv, cnt, dt, a.root, mc, req));
        break;
      case Collective::gather: {
        const void* s = root && send == at(recv, a.root) ? MPI_IN_PLACE : send;
        MPI_CHECK(b ? MPI_Gather(s, cnt, dt, recv, cnt, dt, a.root, mc)
                    : MPI_Igather(s, cnt, dt, recv, cnt, dt, a.root, mc, req));
        break;
      }
      case Collective::allgather: {
        const void* s = send == at(recv, r) ? MPI_IN_PLACE : send;
        MPI_CHECK(b ? MPI_Allgather(s, cnt, dt, recv, cnt, dt, mc)
                    : MPI_Iallgather(s, cnt, dt, recv, cnt, dt, mc, req));
        break;
      }
      case Collective::scatter: {
        void* out = root && recv == at(send, a.root) ? MPI_IN_PLACE : recv;
        MPI_CHECK(b ? MPI_Scatter(send, cnt, dt, out, cnt, dt, a.root, mc)
                    : MPI_Iscatter(send, cnt, dt, out, cnt, dt, a.root, mc, req));
        break;
      }
      case Collective::alltoall:
        MPI_CHECK(b ? MPI_Alltoall(send, cnt, dt, recv, cnt, dt, mc)
                    : MPI_Ialltoall(send, cnt, dt, recv, cnt, dt, mc, req));
        break;
      default: throw Error("mpi: no call for " + std::string(collective_name(a.coll)));
    }
  }

  // To the right neighbour, from the left one: MPI_Sendrecv, or a receive and a send posted together.
  void call_sendrecv(MPI_Comm mc, int n, int r, const CollArgs& a, const void* send, void* recv,
                     MPI_Request* reqs) const {
    const int cnt = int(a.count);
    const MPI_Datatype dt = mpi_type(a.dtype);
    if (blocking_) {
      MPI_CHECK(MPI_Sendrecv(send, cnt, dt, (r + 1) % n, 1, recv, cnt, dt, (r - 1 + n) % n, 1, mc,
                             MPI_STATUS_IGNORE));
      return;
    }
    MPI_CHECK(MPI_Irecv(recv, cnt, dt, (r - 1 + n) % n, 1, mc, &reqs[0]));
    MPI_CHECK(MPI_Isend(send, cnt, dt, (r + 1) % n, 1, mc, &reqs[1]));
  }

  // MPI_Alltoallv with the split's counts and displacements (kept until a non-blocking call's wait).
  void call_alltoallv(MPI_Comm mc, int n, int r, const CollArgs& a, const void* send, void* recv,
                      MPI_Request* req) const {
    const AlltoallvSplit s = alltoallv_split(alltoallv_pattern(), r, n, a.count, a.dtype);
    if (std::max(s.send_total, s.recv_total) > std::size_t(INT32_MAX))
      throw Error(std::string(name()) + ": alltoallv's totals exceed MPI's int counts and displacements");
    thread_local std::vector<int> counts[4];
    const std::vector<std::size_t>* from[4] = {&s.send_counts, &s.send_displs, &s.recv_counts, &s.recv_displs};
    for (int k = 0; k < 4; ++k) counts[k].assign(from[k]->begin(), from[k]->end());
    const MPI_Datatype dt = mpi_type(a.dtype);
    MPI_CHECK(blocking_ ? MPI_Alltoallv(send, counts[0].data(), counts[1].data(), dt, recv, counts[2].data(),
                                        counts[3].data(), dt, mc)
                        : MPI_Ialltoallv(send, counts[0].data(), counts[1].data(), dt, recv, counts[2].data(),
                                         counts[3].data(), dt, mc, req));
  }

  // The hypercube's steps (the own block is in place already): MPI_Sendrecv with rank ^ mask, or a receive and a
  // send posted together and waited for, each step needing the one before.
  void call_hypercube(MPI_Comm mc, int n, int r, const CollArgs& a, void* recv) const {
    if (a.count * std::size_t(n) > std::size_t(INT32_MAX))
      throw Error(std::string(name()) + ": the hypercube's steps exceed MPI's int counts");
    const MPI_Datatype dt = mpi_type(a.dtype);
    auto block = [&](int b) { return byte_ptr(recv, a.count * std::size_t(b), a.dtype); };
    for (int mask = 1; mask < n; mask <<= 1) {
      const int have = r & ~(mask - 1), peer = r ^ mask, cnt = int(a.count) * mask;
      if (blocking_) {
        MPI_CHECK(MPI_Sendrecv(block(have), cnt, dt, peer, 1, block(have ^ mask), cnt, dt, peer, 1, mc,
                               MPI_STATUS_IGNORE));
        continue;
      }
      MPI_Request reqs[2];
      MPI_CHECK(MPI_Irecv(block(have ^ mask), cnt, dt, peer, 1, mc, &reqs[0]));
      MPI_CHECK(MPI_Isend(block(have), cnt, dt, peer, 1, mc, &reqs[1]));
      MPI_CHECK(MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE));
    }
  }

  bool blocking_;
};

}  // namespace

std::unique_ptr<Algorithm> make_mpi_algorithm() { return std::make_unique<MpiLibrary>(true); }
std::unique_ptr<Algorithm> make_mpi_nb_algorithm() { return std::make_unique<MpiLibrary>(false); }

}  // namespace parbench

#else  // no MPI in this build

namespace parbench {
namespace {
class NoMpi final : public Algorithm {
 public:
  explicit NoMpi(std::string_view name) : name_(name) {}
  std::string_view name() const override { return name_; }
  std::string unsupported(Collective, const Communicator&) const override {
    if (const Launch& l = current_launch(); l.bootstrap == BootstrapKind::tcp)
      return "needs MPI: launched with the tcp bootstrap (" + l.launcher + "), and this build has no MPI "
             "(configure with PARBENCH_MPI=ON and OpenMPI installed)";
    return "this build has no MPI (configure with PARBENCH_MPI=ON and OpenMPI installed)";
  }
  void run(Communicator&, const CollArgs&) const override { throw Error("this build has no MPI"); }

 private:
  std::string_view name_;
};
}  // namespace
std::unique_ptr<Algorithm> make_mpi_algorithm() { return std::make_unique<NoMpi>("mpi"); }
std::unique_ptr<Algorithm> make_mpi_nb_algorithm() { return std::make_unique<NoMpi>("mpi-nb"); }
}  // namespace parbench
#endif
