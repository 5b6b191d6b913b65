// A host-driven implementation: the host orders its steps (copies, combines, messages) and sees its group only
// through CollectiveSteps, never the whole Communicator.
#pragma once
#include <string>

#include "collectives/communicator/algorithm.h"
#include "collectives/communicator/collective_steps.h"

namespace parbench {

class HostAlgorithm : public Algorithm {
 public:
  std::string unsupported(Collective c, const Communicator& comm) const final;
  void run(Communicator& comm, const CollArgs& a) const final;

 protected:
  // Empty when it can run `c` on `group`; otherwise why not, in words.
  virtual std::string refusal(Collective c, const CollectiveSteps& group) const = 0;
  virtual void run_steps(CollectiveSteps& group, const CollArgs& a) const = 0;
};

}  // namespace parbench
