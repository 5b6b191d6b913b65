// oneshot: for small messages with all ranks in one process (threads mode; on cuda, peer access between the
// GPUs): each rank reads every rank's input directly and reduces locally. Two synchronisations, no data hops.
#include <vector>

#include "collectives/algorithms/host_algorithm.h"
#include "core/memory.h"
#include "core/stream.h"

namespace parbench {
namespace {

class OneShot final : public HostAlgorithm {
 public:
  std::string_view name() const override { return "oneshot"; }
  std::string refusal(Collective c, const CollectiveSteps& comm) const override {
    if (c != Collective::allreduce) return "oneshot implements allreduce only";
    if (!comm.ranks_share_address_space())
      return "oneshot reads the other ranks' buffers directly, so all ranks must be threads of one process "
             "(--ranks N without mpirun)";
    return {};
  }

  void run_steps(CollectiveSteps& c, const CollArgs& a) const override {
    const int n = c.size();
    const std::size_t bytes = a.count * dtype_size(a.dtype);
    // On a GPU the input may still be being written by queued work (a copy that returned early, the previous
    // call's in-place result): finish it before publishing the address, since peers read it at once.
    Stream(c.device()).synchronize();
    // Publish input addresses; receiving everyone's also means everyone's input is ready.
    const void* mine = a.send;
    std::vector<const void*> inputs(std::size_t(n), nullptr);
    std::vector<P2POp> ops;
    for (int p = 0; p < n; ++p) {
      ops.push_back(send_op(&mine, sizeof(mine), p));
      ops.push_back(recv_op(&inputs[std::size_t(p)], sizeof(mine), p));
    }
    for (P2POp& op : ops) op.host = true;  // the addresses themselves are host variables
    c.group(ops);
    // Every rank reduces in rank order, so all get bit-identical results.
    void* acc = c.scratch(0, bytes);
    c.copy(acc, inputs[0], bytes);
    for (int p = 1; p < n; ++p) c.combine(acc, inputs[std::size_t(p)], a.count, a.dtype, a.op);
    if (a.op == ReduceOp::avg) c.divide(acc, a.count, a.dtype);
    device_synchronize(c.device());  // on a GPU the combines run asynchronously: done before the barrier says so
    c.barrier();  // nobody overwrites an input (in place: the output) while another rank still reads it
    c.copy(a.recv, acc, bytes);
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_oneshot_algorithm() { return std::make_unique<OneShot>(); }

}  // namespace parbench
