// rhd-dev: recursive halving-doubling (Rabenseifner) allreduce and reduce-scatter as one kernel each over symmetric
// memory (dev_rhd.cu), and allgather as rd-dev's doubling (as rhd uses rd's): 2 lg p flag exchanges with one
// partner each, bandwidth-optimal like ring-dev; any rank count (the ranks beyond a power of two fold in first).
#include "collectives/device_side/device_algorithm.h"

namespace parbench {
namespace {

class HalvingDoublingDevice final : public DeviceAlgorithm {
 public:
  using DeviceAlgorithm::DeviceAlgorithm;

 protected:
  unsigned phases(int ranks) const override { return rhd_phases(ranks); }  // more than rd's allgather uses
  // The whole message: allreduce's input, reduce-scatter's and allgather's n blocks.
  std::size_t buffer_bytes(const CollArgs& a, int ranks) const override {
    const std::size_t blocks = a.coll == Collective::allreduce ? 1 : std::size_t(ranks);
    return blocks * a.count * dtype_size(a.dtype);
  }
  void launch([[maybe_unused]] const SymmPeers& p, [[maybe_unused]] const CollArgs& a) const override {
#ifdef PARBENCH_HAVE_CUDA
    if (a.coll == Collective::allgather)
      cuda_kernels::symm_rd(p, int(a.coll), a.send, a.recv, a.count, int(a.dtype), int(a.op), a.stream);
    else
      cuda_kernels::symm_rhd(p, int(a.coll), a.send, a.recv, a.count, int(a.dtype), int(a.op), a.stream);
#endif
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_rhd_dev_algorithm(DeviceRow row) {
  return std::make_unique<HalvingDoublingDevice>(std::move(row));
}

}  // namespace parbench
