// DeviceAlgorithm (device_algorithm.h): the symmetric memory around each device-side collective's launch.
#include "collectives/device_side/device_algorithm.h"

#include <algorithm>

#include "collectives/communicator/communicator.h"
#include "collectives/communicator/symmetric_memory.h"

namespace parbench {

std::string DeviceAlgorithm::unsupported(Collective c, const Communicator& comm) const {
  const auto& mine = collectives();
  if (std::find(mine.begin(), mine.end(), c) == mine.end()) {
    std::string list;
    for (std::size_t i = 0; i < mine.size(); ++i)
      list += (i == 0 ? "" : i + 1 == mine.size() ? " and " : ", ") + std::string(collective_name(mine[i]));
    return std::string(name()) + " implements " + list + (mine.size() == 1 ? " only" : "");
  }
  return symmetric_memory_refusal(comm);
}

std::size_t DeviceAlgorithm::buffer_bytes(const CollArgs& a, int) const { return a.count * dtype_size(a.dtype); }

void DeviceAlgorithm::run(Communicator& c, const CollArgs& a) const {
  if (a.count == 0) return;
  SymmetricMemory& m = c.symmetric_memory();
  m.reserve(c, buffer_bytes(a, c.size()), a.stream);
  launch(m.begin_op(c, a, name(), phases(c.size()), a.stream), a);
  if (!c.batching() && !c.ordered_on()) m.wait(c);
}

}  // namespace parbench
