// tree-dev: binomial-tree broadcast, reduce and allreduce (reduce to rank 0, then broadcast) as one kernel each over
// symmetric memory (dev_tree.cu): each rank waits only for its parent's or its children's flags and reads their
// buffers, lg p levels deep, with no host step between the levels.
#include "collectives/device_side/device_algorithm.h"

namespace parbench {
namespace {

class TreeDevice final : public DeviceAlgorithm {
 public:
  using DeviceAlgorithm::DeviceAlgorithm;

 protected:
  unsigned phases(int) const override { return kTreePhases; }
  void launch([[maybe_unused]] const SymmPeers& p, [[maybe_unused]] const CollArgs& a) const override {
#ifdef PARBENCH_HAVE_CUDA
    cuda_kernels::symm_tree(p, int(a.coll), a.root, a.send, a.recv, a.count, int(a.dtype), int(a.op), a.stream);
#endif
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_tree_dev_algorithm(DeviceRow row) {
  return std::make_unique<TreeDevice>(std::move(row));
}

}  // namespace parbench
