// rd-dev: recursive doubling (a butterfly) allreduce and allgather as one kernel each over symmetric memory
// (dev_rd.cu): lg p steps, each a flag exchange with one partner and a read of its buffer; any rank count (the
// ranks beyond a power of two fold in first, as rd's). Latency-optimal for small messages.
#include "collectives/device_side/device_algorithm.h"

namespace parbench {
namespace {

class RecursiveDoublingDevice final : public DeviceAlgorithm {
 public:
  using DeviceAlgorithm::DeviceAlgorithm;

 protected:
  unsigned phases(int ranks) const override { return rd_phases(ranks); }
  // Allreduce: a partial result per step (and the input); allgather: the whole gathered message.
  std::size_t buffer_bytes(const CollArgs& a, int ranks) const override {
    const std::size_t copies = a.coll == Collective::allgather ? std::size_t(ranks)
                                                                : std::size_t(symm_butterfly_steps(ranks)) + 1;
    return copies * a.count * dtype_size(a.dtype);
  }
  void launch([[maybe_unused]] const SymmPeers& p, [[maybe_unused]] const CollArgs& a) const override {
#ifdef PARBENCH_HAVE_CUDA
    cuda_kernels::symm_rd(p, int(a.coll), a.send, a.recv, a.count, int(a.dtype), int(a.op), a.stream);
#endif
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_rd_dev_algorithm(DeviceRow row) {
  return std::make_unique<RecursiveDoublingDevice>(std::move(row));
}

}  // namespace parbench
