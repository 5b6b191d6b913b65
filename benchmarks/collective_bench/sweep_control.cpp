// Stop and resume decisions of the collective sweep, agreed by one small allreduce per row.
#include "sweep_control.h"

#include <algorithm>

#include "collectives/registry.h"
#include "app/interrupt.h"

namespace parbench {

SweepControl::SweepControl(const std::vector<std::vector<std::string>>& existing_rows) {
  for (const auto& fields : existing_rows)
    if (fields.size() >= kCollectiveKeyColumns) keys_.insert(key(fields));
}

std::string SweepControl::key(const std::vector<std::string>& fields) {
  std::string k;
  for (std::size_t i = 0; i < std::min(fields.size(), kCollectiveKeyColumns); ++i) k += fields[i] + '\x1f';
  return k;
}

SweepControl::Decision SweepControl::agree(Communicator& world, bool skip_mine) {
  // The allreduce that every rank reaches before each row; "naive" because the sweep's own implementation may
  // be the one being measured (and a broken one must not decide).
  double mine[2] = {double(stop_signal()), skip_mine ? 1.0 : 0.0}, all[2] = {0, 0};
  world.allreduce(mine, all, 2, DType::f64, ReduceOp::max, &find_algorithm("naive"));
  return {int(all[0]), all[1] > 0};
}

}  // namespace parbench
