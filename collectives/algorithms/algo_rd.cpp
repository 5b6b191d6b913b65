// rd: recursive doubling (butterfly). Allreduce exchanges the whole vector lg p times (latency-optimal, for
// small messages); allgather doubles the block range held. Non-powers of two fold the extra ranks in first.
#include "collectives/algorithms/recursive.h"

namespace parbench {
namespace {

class RecursiveDoubling final : public HostAlgorithm {
 public:
  std::string_view name() const override { return "rd"; }
  std::string refusal(Collective c, const CollectiveSteps&) const override {
    if (c == Collective::allreduce || c == Collective::allgather) return {};
    return "rd implements allreduce and allgather";
  }

  void run_steps(CollectiveSteps& c, const CollArgs& a) const override {
    if (a.coll == Collective::allgather) return recursive::allgather(c, a);
    const int n = c.size(), r = c.rank();
    const std::size_t es = dtype_size(a.dtype), bytes = a.count * es;
    const recursive::Fold f(n, r);
    const void* mine = a.send;  // this rank's partial result: the input until the first combine writes recv
    if (r < 2 * f.extra) {
      c.copy(a.recv, a.send, bytes);
      recursive::fold_in(c, f, a.recv, a.count, a.dtype, a.op);
      mine = a.recv;
    }
    if (f.folded) return c.recv(a.recv, bytes, r - 1);
    void* tmp = c.scratch(1, bytes);
    for (int mask = 1; mask < f.p2; mask <<= 1) {
      int peer = f.real_of(f.v ^ mask);
      P2POp ops[2] = {send_op(mine, bytes, peer), recv_op(tmp, bytes, peer)};
      c.group(ops);
      c.combine(a.recv, mine, tmp, a.count, a.dtype, a.op);
      mine = a.recv;
    }
    c.copy(a.recv, mine, bytes);  // one rank: nothing combined
    if (a.op == ReduceOp::avg) c.divide(a.recv, a.count, a.dtype);
    if (r < 2 * f.extra) c.send(a.recv, bytes, r + 1);
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_rd_algorithm() { return std::make_unique<RecursiveDoubling>(); }

}  // namespace parbench
