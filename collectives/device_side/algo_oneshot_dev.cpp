// oneshot-dev: allreduce as one kernel over symmetric memory (dev_oneshot.cu): every rank reads every peer's
// copy of the input and reduces in rank order. For small messages: two flag exchanges, no data hops.
#include "collectives/device_side/device_algorithm.h"

namespace parbench {
namespace {

class OneShotDevice final : public DeviceAlgorithm {
 public:
  using DeviceAlgorithm::DeviceAlgorithm;

 protected:
  unsigned phases(int) const override { return kOneshotPhases; }
  void launch([[maybe_unused]] const SymmPeers& p, [[maybe_unused]] const CollArgs& a) const override {
#ifdef PARBENCH_HAVE_CUDA
    cuda_kernels::symm_oneshot_allreduce(p, a.send, a.recv, a.count, int(a.dtype), int(a.op), a.stream);
#endif
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_oneshot_dev_algorithm(DeviceRow row) {
  return std::make_unique<OneShotDevice>(std::move(row));
}

}  // namespace parbench
