// Test helper: runs every collective an implementation supports over dtypes x ops x in/out-of-place x counts on
// one communicator, and returns this rank's failures (empty when every element matched).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "collectives/communicator/communicator.h"
#include "collectives/datacheck.h"

namespace parbench::testing {

struct SweepConfig {
  std::vector<std::size_t> counts = {1, 5, 13};  // not divisible by most rank counts
  std::vector<DType> dtypes = all_dtypes();
  std::vector<ReduceOp> ops = all_reduce_ops();
  int root = -1;  // -1: the last rank (a non-zero root)
  std::uint64_t seed = 1;
};

inline std::vector<std::string> sweep(Communicator& comm, const Algorithm& algo, const SweepConfig& cfg,
                                      int* calls = nullptr) {
  std::vector<std::string> failures;
  const int root = cfg.root < 0 ? comm.size() - 1 : cfg.root;
  for (Collective c : all_collectives()) {
    if (!algo.unsupported(c, comm).empty()) continue;
    std::vector<ReduceOp> ops = is_reduction(c) ? cfg.ops : std::vector<ReduceOp>{ReduceOp::sum};
    for (DType t : cfg.dtypes)
      for (ReduceOp op : ops)
        for (bool in_place : {false, true})
          for (std::size_t count : cfg.counts) {
            CollectiveBuffers b(comm, c, count, t, op, root, in_place);
            std::uint64_t seed = cfg.seed + count * 7919 + std::uint64_t(t) * 131 + std::uint64_t(op) * 17;
            b.fill(seed);
            comm.run(b.args(), algo);
            std::size_t wrong = b.wrong(seed);
            if (calls) ++*calls;
            if (wrong)
              failures.push_back(std::string(algo.name()) + " " + std::string(collective_name(c)) + " " +
                                 std::string(dtype_name(t)) + " " + std::string(reduce_op_name(op)) +
                                 (in_place ? " in-place" : " out-of-place") + " count " + std::to_string(count) +
                                 " ranks " + std::to_string(comm.size()) + " root " + std::to_string(root) +
                                 ": rank " + std::to_string(comm.rank()) + " has " + std::to_string(wrong) +
                                 " wrong elements (seed " + std::to_string(seed) + ")");
          }
  }
  return failures;
}

}  // namespace parbench::testing
