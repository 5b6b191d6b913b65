// HostAlgorithm (host_algorithm.h): the communicator handed on as its steps alone.
#include "collectives/algorithms/host_algorithm.h"

#include "collectives/communicator/communicator.h"

namespace parbench {

std::string HostAlgorithm::unsupported(Collective c, const Communicator& comm) const { return refusal(c, comm); }

void HostAlgorithm::run(Communicator& comm, const CollArgs& a) const { run_steps(comm, a); }

}  // namespace parbench
