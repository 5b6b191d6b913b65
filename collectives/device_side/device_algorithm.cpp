// DeviceAlgorithm (device_algorithm.h): the symmetric memory around each device-side collective's launch.
#include "collectives/device_side/device_algorithm.h"

#include "collectives/communicator/communicator.h"
#include "collectives/communicator/symmetric_memory.h"

namespace parbench {

std::string DeviceAlgorithm::unsupported(Collective c, const Communicator& comm) const {
  if (!implements(c)) return std::string(name()) + " implements " + implemented();
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
