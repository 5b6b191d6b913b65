// twoshot-dev: allreduce as one kernel over symmetric memory (dev_twoshot.cu): a reduce-scatter through the peers'
// buffers, then an all-gather of the reduced shards. For larger messages than oneshot-dev: each rank reads
// 2(n-1)/n of the message instead of n-1 times it, for one more flag exchange.
#include "collectives/device_side/device_algorithm.h"

namespace parbench {
namespace {

class TwoShotDevice final : public DeviceAlgorithm {
 public:
  using DeviceAlgorithm::DeviceAlgorithm;

 protected:
  unsigned phases(int) const override { return kTwoshotPhases; }
  void launch([[maybe_unused]] const SymmPeers& p, [[maybe_unused]] const CollArgs& a) const override {
#ifdef PARBENCH_HAVE_CUDA
    cuda_kernels::symm_twoshot_allreduce(p, a.send, a.recv, a.count, int(a.dtype), int(a.op), a.stream);
#endif
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_twoshot_dev_algorithm(DeviceRow row) {
  return std::make_unique<TwoShotDevice>(std::move(row));
}

}  // namespace parbench
