// The rows of a collective bench's block before they are measured: each dtype, op, root and size in the order they
// run, a row's counts and bytes, and the check that the largest row's buffers fit.
#pragma once
#include <cstdint>
#include <vector>

#include "core/device.h"
#include "nccl_tests_output.h"
#include "options.h"

namespace parbench {

struct SweepPoint {
  DType dtype;
  ReduceOp op;
  int root;
  std::uint64_t size;
};
std::vector<SweepPoint> sweep_points(const BenchPlan& p);

// A row's configuration (count, bytes, type, op, root) on `ranks` ranks.
RowResult plan_row(Collective c, int ranks, const SweepPoint& pt);

// --max-memory or the device's memory: the buffers of the largest row (send and receive, or the in-place one, plus
// -u) must fit before any is allocated; `sharing` ranks share the memory (a node's ranks on host devices).
void check_buffers_fit(Collective c, const std::vector<SweepPoint>& points, int ranks, int sharing, int unalign,
                       const Device& device, std::uint64_t max_memory);

}  // namespace parbench
