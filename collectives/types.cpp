// Names, parsing and shapes of collectives and reduction ops.
#include "collectives/types.h"

#include "base/error.h"

namespace parbench {

std::string_view collective_name(Collective c) {
  switch (c) {
    case Collective::broadcast: return "broadcast";
    case Collective::reduce: return "reduce";
    case Collective::allreduce: return "allreduce";
    case Collective::gather: return "gather";
    case Collective::allgather: return "allgather";
    case Collective::scatter: return "scatter";
    case Collective::reduce_scatter: return "reducescatter";
    case Collective::alltoall: return "alltoall";
    case Collective::sendrecv: return "sendrecv";
  }
  return "?";
}

std::string_view reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::prod: return "prod";
    case ReduceOp::max: return "max";
    case ReduceOp::min: return "min";
    case ReduceOp::avg: return "avg";
  }
  return "?";
}

const std::vector<Collective>& all_collectives() {
  static const std::vector<Collective> all = {Collective::broadcast, Collective::reduce,    Collective::allreduce,
                                              Collective::gather,    Collective::allgather, Collective::scatter,
                                              Collective::reduce_scatter, Collective::alltoall,
                                              Collective::sendrecv};
  return all;
}

const std::vector<ReduceOp>& all_reduce_ops() {
  static const std::vector<ReduceOp> all = {ReduceOp::sum, ReduceOp::prod, ReduceOp::max, ReduceOp::min,
                                            ReduceOp::avg};
  return all;
}

ReduceOp parse_reduce_op(std::string_view s) {
  for (ReduceOp op : all_reduce_ops())
    if (s == reduce_op_name(op)) return op;
  throw UsageError("unknown reduction op '" + std::string(s) + "'; accepted: sum, prod, max, min, avg, all");
}

bool is_rooted(Collective c) {
  return c == Collective::broadcast || c == Collective::reduce || c == Collective::gather ||
         c == Collective::scatter;
}

bool is_reduction(Collective c) {
  return c == Collective::reduce || c == Collective::allreduce || c == Collective::reduce_scatter;
}

double busbw_factor(Collective c, int n) {
  switch (c) {
    case Collective::allreduce: return 2.0 * (n - 1) / n;
    case Collective::allgather:
    case Collective::reduce_scatter:
    case Collective::alltoall:
    case Collective::gather:
    case Collective::scatter: return double(n - 1) / n;
    default: return 1.0;
  }
}

BufferCounts buffer_counts(Collective c, std::size_t count, int n, int rank, int root) {
  const std::size_t all = count * std::size_t(n);
  switch (c) {
    case Collective::broadcast:
    case Collective::allreduce:
    case Collective::sendrecv: return {count, count};
    case Collective::reduce: return {count, rank == root ? count : 0};
    case Collective::gather: return {count, rank == root ? all : 0};
    case Collective::allgather: return {count, all};
    case Collective::scatter: return {rank == root ? all : 0, count};
    case Collective::reduce_scatter: return {all, count};
    case Collective::alltoall: return {all, all};
  }
  return {};
}

std::size_t count_for_bytes(Collective c, std::size_t bytes, DType t, int n) {
  std::size_t elems = bytes / dtype_size(t);
  switch (c) {
    case Collective::gather:
    case Collective::allgather:
    case Collective::scatter:
    case Collective::reduce_scatter:
    case Collective::alltoall: return elems / std::size_t(n);
    default: return elems;
  }
}

std::size_t inplace_offset(Collective c, std::size_t count, int rank) {
  switch (c) {
    case Collective::gather:
    case Collective::allgather:
    case Collective::scatter:
    case Collective::reduce_scatter: return count * std::size_t(rank);
    default: return 0;
  }
}

}  // namespace parbench
