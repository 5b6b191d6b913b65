// See sweep_points.h.
#include "sweep_points.h"

#include <algorithm>
#include <string>

#include "collectives/table/collective_table.h"
#include "core/memory.h"

namespace parbench {

std::vector<SweepPoint> sweep_points(const BenchPlan& p) {
  std::vector<SweepPoint> points;
  for (DType t : p.dtypes)
    for (ReduceOp op : p.ops)
      for (int root : p.roots)
        for (std::uint64_t size : p.sizes) points.push_back({t, op, root, size});
  return points;
}

RowResult plan_row(Collective c, int ranks, const SweepPoint& pt) {
  RowResult row;
  row.count = count_for_bytes(c, pt.size, pt.dtype, ranks);
  const BufferCounts bc = largest_buffer_counts(c, row.count, ranks, std::max(pt.root, 0), pt.dtype);
  row.bytes = std::max(bc.send, bc.recv) * dtype_size(pt.dtype);
  row.dtype = pt.dtype;
  row.redop = is_reduction(c) ? std::string(reduce_op_name(pt.op)) : "none";
  row.root = pt.root;
  return row;
}

void check_buffers_fit(Collective c, const std::vector<SweepPoint>& points, int ranks, int sharing, int unalign,
                       const Device& device, std::uint64_t max_memory) {
  std::uint64_t most = 0;
  for (const SweepPoint& pt : points) {
    const std::size_t count = count_for_bytes(c, pt.size, pt.dtype, ranks);
    const BufferCounts bc = largest_buffer_counts(c, count, ranks, std::max(pt.root, 0), pt.dtype);
    const std::uint64_t elems = std::max<std::uint64_t>(1, bc.send) + std::max<std::uint64_t>(1, bc.recv) +
                                2 * std::uint64_t(unalign);
    most = std::max(most, elems * dtype_size(pt.dtype));
  }
  check_memory_fits(std::string(collective_name(c)) + "'s buffers for the largest size", most, device, max_memory,
                    sharing, "use a smaller -e/--sizes or fewer ranks per node");
}

}  // namespace parbench
