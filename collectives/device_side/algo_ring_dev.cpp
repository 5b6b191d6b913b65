// ring-dev: allreduce, reduce-scatter and all-gather as one kernel each over symmetric memory (dev_ring.cu): the
// ring algorithm with each step's hand-over a flag between neighbours instead of a message, every block of the
// kernel a pipeline of its own part of each shard. Bandwidth-optimal like ring; no host step between its steps.
#include "collectives/device_side/device_algorithm.h"

#include "collectives/communicator/communicator.h"

namespace parbench {
namespace {

class RingDevice final : public DeviceAlgorithm {
 public:
  using DeviceAlgorithm::DeviceAlgorithm;

 protected:
  unsigned phases(int ranks) const override { return ring_phases(ranks); }
  // Partial sums and finished shards: two regions of the whole message.
  std::size_t buffer_bytes(const CollArgs& a, int ranks) const override {
    const std::size_t whole = a.coll == Collective::allreduce ? a.count : a.count * std::size_t(ranks);
    return 2 * whole * dtype_size(a.dtype);
  }
  void launch([[maybe_unused]] const SymmPeers& p, [[maybe_unused]] const CollArgs& a) const override {
#ifdef PARBENCH_HAVE_CUDA
    cuda_kernels::symm_ring(p, int(a.coll), a.send, a.recv, a.count, int(a.dtype), int(a.op), a.stream);
#endif
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_ring_dev_algorithm(DeviceRow row) {
  return std::make_unique<RingDevice>(std::move(row));
}

}  // namespace parbench
