// Names, parsing and shapes of collectives and reduction ops: the collective functions read the collective table.
#include "collectives/types.h"

#include "collectives/collective_table.h"
#include "base/error.h"

namespace parbench {

namespace {

bool holds_blocks(BufferSize b) { return b == BufferSize::all || b == BufferSize::all_at_root; }

std::size_t elements(BufferSize b, std::size_t count, int n, bool at_root) {
  switch (b) {
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

double busbw_factor(Collective c, int n) { return wire_fraction(c, n); }

BufferCounts buffer_counts(Collective c, std::size_t count, int n, int rank, int root) {
  const CollectiveInfo& row = collective_info(c);
  return {elements(row.send, count, n, rank == root), elements(row.recv, count, n, rank == root)};
}

std::size_t count_for_bytes(Collective c, std::size_t bytes, DType t, int n) {
  const CollectiveInfo& row = collective_info(c);
  const std::size_t elems = bytes / dtype_size(t);
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
