// rhd: recursive halving-doubling (Rabenseifner). Allreduce = reduce-scatter by recursive halving + allgather
// by recursive doubling: lg p steps each, bandwidth-optimal like ring. Also reduce-scatter and allgather alone.
#include "collectives/algorithms/recursive.h"

namespace parbench {
namespace {

class HalvingDoubling final : public HostAlgorithm {
 public:
  std::string_view name() const override { return "rhd"; }
  std::string refusal(Collective c, const CollectiveSteps&) const override {
    if (c == Collective::allreduce || c == Collective::reduce_scatter || c == Collective::allgather) return {};
    return "rhd implements allreduce, reducescatter and allgather";
  }

  void run_steps(CollectiveSteps& c, const CollArgs& a) const override {
    if (a.coll == Collective::allgather) return recursive::allgather(c, a);
    if (a.coll == Collective::reduce_scatter) return reduce_scatter(c, a);
    const int n = c.size(), r = c.rank();
    const DType t = a.dtype;
    const std::size_t bytes = a.count * dtype_size(t);
    const recursive::Fold f(n, r);
    const void* mine = a.send;  // the halving's input: a copy only where the fold step adds into it
    if (r < 2 * f.extra) {
      c.copy(a.recv, a.send, bytes);
      recursive::fold_in(c, f, a.recv, a.count, t, a.op);
      mine = a.recv;
    }
    if (f.folded) return c.recv(a.recv, bytes, r - 1);
    if (n == 1) return c.copy(a.recv, a.send, bytes);
    const auto off = recursive::even_blocks(a.count, n);
    recursive::halving_reduce_scatter(c, f, mine, a.recv, off, t, a.op);
    if (a.op == ReduceOp::avg) {
      std::size_t b0 = off[std::size_t(f.lo(f.v))], b1 = off[std::size_t(f.lo(f.v + 1))];
      c.divide(byte_ptr(a.recv, b0, t), b1 - b0, t);
    }
    recursive::doubling_allgather(c, f, a.recv, off, t);
    if (r < 2 * f.extra) c.send(a.recv, bytes, r + 1);
  }

 private:
  static void reduce_scatter(CollectiveSteps& c, const CollArgs& a) {
    const int n = c.size(), r = c.rank();
    const DType t = a.dtype;
    const std::size_t bytes = a.count * dtype_size(t), total = a.count * std::size_t(n);
    const recursive::Fold f(n, r);
    void* acc = c.scratch(0, bytes * std::size_t(n));  // the input is const: partial results go here
    const void* mine = a.send;
    if (r < 2 * f.extra) {
      c.copy(acc, a.send, bytes * std::size_t(n));
      recursive::fold_in(c, f, acc, total, t, a.op);
      mine = acc;
    }
    if (f.folded) return c.recv(a.recv, bytes, r - 1);
    if (n == 1) return c.copy(a.recv, a.send, bytes);
    recursive::halving_reduce_scatter(c, f, mine, acc, recursive::fixed_blocks(a.count, n), t, a.op);
    const int first = f.lo(f.v), last = f.lo(f.v + 1);  // real blocks this rank now holds reduced
    if (a.op == ReduceOp::avg) c.divide(byte_ptr(acc, a.count * std::size_t(first), t), a.count * std::size_t(last - first), t);
    if (last - first == 2) c.send(byte_ptr(acc, a.count * std::size_t(r + 1), t), bytes, r + 1);
    c.copy(a.recv, byte_ptr(acc, a.count * std::size_t(r), t), bytes);
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_rhd_algorithm() { return std::make_unique<HalvingDoubling>(); }

}  // namespace parbench
