// DeviceAlgorithm (device_algorithm.h): the symmetric memory around each device-side collective's launch.
#include "collectives/device_algorithm.h"

#include "collectives/communicator.h"
#include "collectives/symmetric_memory.h"

namespace parbench {

std::string DeviceAlgorithm::unsupported(Collective c, const Communicator& comm) const {
  if (c != Collective::allreduce) return std::string(name()) + " implements allreduce only";
  return symmetric_memory_refusal(comm);
}

void DeviceAlgorithm::run(Communicator& c, const CollArgs& a) const {
  if (a.count == 0) return;
  SymmetricMemory& m = c.symmetric_memory();
  m.reserve(c, a.count * dtype_size(a.dtype), a.stream);
  launch(m.begin_op(c, a, name(), phases(), a.stream), a);
  if (!c.batching() && !c.ordered_on()) m.wait(c);
}

}  // namespace parbench
