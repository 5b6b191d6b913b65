// naive-dev: every collective as one kernel of direct reads over symmetric memory (dev_naive.cu), the device-side
// form of naive: each rank (or the root) reads what it needs straight from the peers' buffers after one flag
// exchange. The simplest form to trust; the only device-side alltoall, gather, scatter and sendrecv.
#include "collectives/device_side/device_algorithm.h"

namespace parbench {
namespace {

class NaiveDevice final : public DeviceAlgorithm {
 public:
  using DeviceAlgorithm::DeviceAlgorithm;

 protected:
  unsigned phases(int) const override { return kNaivePhases; }
  // The input, or the whole send buffer where it holds a block per rank (scatter, reduce-scatter, alltoall).
  std::size_t buffer_bytes(const CollArgs& a, int ranks) const override {
    const bool per_rank = a.coll == Collective::scatter || a.coll == Collective::reduce_scatter ||
                          a.coll == Collective::alltoall;
    return a.count * (per_rank ? std::size_t(ranks) : 1) * dtype_size(a.dtype);
  }
  void launch([[maybe_unused]] const SymmPeers& p, [[maybe_unused]] const CollArgs& a) const override {
#ifdef PARBENCH_HAVE_CUDA
    cuda_kernels::symm_naive(p, int(a.coll), a.root, a.send, a.recv, a.count, int(a.dtype), int(a.op), a.stream);
#endif
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_naive_dev_algorithm(DeviceRow row) {
  return std::make_unique<NaiveDevice>(std::move(row));
}

}  // namespace parbench
