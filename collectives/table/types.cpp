// Names, parsing and shapes of collectives and reduction ops: the collective functions read the collective table.
#include "collectives/table/types.h"

#include "collectives/table/alltoallv_split.h"
#include "collectives/table/collective_table.h"
#include "base/error.h"

namespace parbench {

namespace {

bool holds_blocks(BufferSize b) { return b == BufferSize::all || b == BufferSize::all_at_root; }

std::size_t elements(BufferSize b, std::size_t count, int n, bool at_root, std::size_t split_total) {
  switch (b) {
    case BufferSize::split_total: return split_total;
    case BufferSize::count: return count;
    case BufferSize::count_at_root: return at_root ? count : 0;
    case BufferSize::all: return count * std::size_t(n);
    case BufferSize::all_at_root: return at_root ? count * std::size_t(n) : 0;
  }
  return 0;
}

}  // namespace

std::string_view collective_name(Collective c) { return collective_info(c).name; }

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
  static const std::vector<Collective> all = [] {
    std::vector<Collective> ids;
    for (const CollectiveInfo& row : collective_table()) ids.push_back(row.id);
    return ids;
  }();
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

bool is_rooted(Collective c) { return collective_info(c).rooted; }

bool is_reduction(Collective c) { return collective_info(c).reduces; }

bool is_hypercube(Collective c) { return collective_info(c).wire == Wire::hypercube; }
bool is_split(Collective c) { return collective_info(c).send == BufferSize::split_total; }
bool counts_per_peer(Collective c) { return c == Collective::alltoall || is_split(c) || is_hypercube(c); }

double algbw_factor(Collective c, int n) { return is_hypercube(c) ? wire_fraction(c, n) : 1.0; }

double busbw_factor(Collective c, int n) { return is_hypercube(c) ? 1.0 : wire_fraction(c, n); }

std::string ranks_refusal(Collective c, int n) {
  if (!is_hypercube(c) || (n > 0 && (n & (n - 1)) == 0)) return {};
  return std::string(collective_name(c)) + " exchanges with rank ^ 1, ^ 2, ^ 4, ... and needs a power-of-two "
         "number of ranks (1, 2, 4, 8, ...), not " + std::to_string(n);
}

BufferCounts buffer_counts(Collective c, std::size_t count, int n, int rank, int root, DType t) {
  const CollectiveInfo& row = collective_info(c);
  std::size_t send_total = 0, recv_total = 0;
  if (is_split(c)) {
    const AlltoallvSplit s = alltoallv_split(alltoallv_pattern(), rank, n, count, t);
    send_total = s.send_total, recv_total = s.recv_total;
  }
  return {elements(row.send, count, n, rank == root, send_total),
          elements(row.recv, count, n, rank == root, recv_total)};
}

BufferCounts largest_buffer_counts(Collective c, std::size_t count, int n, int root, DType t) {
  if (!is_split(c)) return buffer_counts(c, count, n, root, root, t);
  const AlltoallvTotals most = alltoallv_largest_totals(alltoallv_pattern(), n, count, t);
  return {most.send, most.recv};
}

std::size_t count_for_bytes(Collective c, std::size_t bytes, DType t, int n) {
  const CollectiveInfo& row = collective_info(c);
  const std::size_t elems = bytes / dtype_size(t);
  if (is_split(c)) return alltoallv_count(alltoallv_pattern(), elems, t, n);
  if (is_hypercube(c)) return elems / (4 * std::size_t(n)) * 4;  // nccl-tests' hypercube: 4-element multiples
  return holds_blocks(row.send) || holds_blocks(row.recv) ? elems / std::size_t(n) : elems;
}

InPlace inplace_layout(Collective c) {
  const CollectiveInfo& row = collective_info(c);
  if (holds_blocks(row.recv) && !holds_blocks(row.send)) return InPlace::send_inside_recv;
  if (holds_blocks(row.send) && !holds_blocks(row.recv)) return InPlace::recv_inside_send;
  return InPlace::aliased;
}

std::size_t inplace_offset(Collective c, std::size_t count, int rank) {
  return inplace_layout(c) == InPlace::aliased ? 0 : count * std::size_t(rank);
}

}  // namespace parbench
