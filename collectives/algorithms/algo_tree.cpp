// tree: binomial trees rooted at the root (lg p rounds). Broadcast and reduce, allreduce as reduce + broadcast,
// and gather / scatter where each subtree's blocks travel together. Ranks are relative to the root: v = r - root.
#include <algorithm>

#include "collectives/algorithms/host_algorithm.h"

namespace parbench {
namespace {

class Tree final : public HostAlgorithm {
 public:
  std::string_view name() const override { return "tree"; }
  std::string refusal(Collective c, const CollectiveSteps&) const override {
    switch (c) {
      case Collective::broadcast:
      case Collective::reduce:
      case Collective::allreduce:
      case Collective::gather:
      case Collective::scatter: return {};
      default: return "tree implements broadcast, reduce, allreduce, gather and scatter";
    }
  }

  void run_steps(CollectiveSteps& c, const CollArgs& a) const override {
    const std::size_t bytes = a.count * dtype_size(a.dtype);
    switch (a.coll) {
      case Collective::broadcast:
        if (c.rank() == a.root) c.copy(a.recv, a.send, bytes);
        return broadcast(c, a.recv, bytes, a.root);
      case Collective::reduce: return reduce(c, a, a.root);
      case Collective::allreduce:
        reduce(c, a, 0);
        return broadcast(c, a.recv, bytes, 0);
      case Collective::gather: return gather(c, a);
      default: return scatter(c, a);
    }
  }

 private:
  static int real(int v, int root, int n) { return (v + root) % n; }

  static void broadcast(CollectiveSteps& c, void* buf, std::size_t bytes, int root) {
    const int n = c.size(), v = (c.rank() - root + n) % n;
    int mask = 1;
    while (mask < n) {
      if (v & mask) {
        c.recv(buf, bytes, real(v - mask, root, n));
        break;
      }
      mask <<= 1;
    }
    for (mask >>= 1; mask > 0; mask >>= 1)
      if (v + mask < n) c.send(buf, bytes, real(v + mask, root, n));
  }

  // Children fold into the parent's accumulator; the root's accumulator is the output.
  static void reduce(CollectiveSteps& c, const CollArgs& a, int root) {
    const int n = c.size(), v = (c.rank() - root + n) % n;
    const std::size_t bytes = a.count * dtype_size(a.dtype);
    void* acc = v == 0 ? a.recv : c.scratch(0, bytes);
    c.copy(acc, a.send, bytes);
    void* tmp = c.scratch(1, bytes);
    for (int mask = 1; mask < n; mask <<= 1) {
      if (v & mask) {
        c.send(acc, bytes, real(v - mask, root, n));
        return;
      }
      if (v + mask < n) {
        c.recv(tmp, bytes, real(v + mask, root, n));
        c.combine(acc, tmp, a.count, a.dtype, a.op);
      }
    }
    if (a.op == ReduceOp::avg) c.divide(acc, a.count, a.dtype);
  }

  // Relative rank v collects the blocks of v .. v + subtree - 1 in order, then passes them up in one message.
  static void gather(CollectiveSteps& c, const CollArgs& a) {
    const int n = c.size(), r = c.rank(), v = (r - a.root + n) % n;
    const std::size_t bytes = a.count * dtype_size(a.dtype);
    int have = 1;
    char* buf = nullptr;
    for (int mask = 1; mask < n; mask <<= 1) {
      if (v & mask) {
        c.send(buf ? buf : a.send, bytes * std::size_t(have), real(v - mask, a.root, n));
        return;
      }
      if (v + mask < n) {
        if (!buf) {
          buf = static_cast<char*>(c.scratch(0, bytes * std::size_t(n)));
          c.copy(buf, a.send, bytes);
        }
        int theirs = std::min(mask, n - v - mask);
        c.recv(buf + bytes * std::size_t(mask), bytes * std::size_t(theirs), real(v + mask, a.root, n));
        have += theirs;
      }
    }
    // Root: relative block j belongs to rank (j + root) % n.
    if (!buf) return c.copy(byte_ptr(a.recv, a.count * std::size_t(r), a.dtype), a.send, bytes);
    const std::size_t head = std::size_t(n - a.root);
    c.copy(byte_ptr(a.recv, a.count * std::size_t(a.root), a.dtype), buf, bytes * head);
    c.copy(a.recv, buf + bytes * head, bytes * std::size_t(a.root));
  }

  static void scatter(CollectiveSteps& c, const CollArgs& a) {
    const int n = c.size(), r = c.rank(), v = (r - a.root + n) % n;
    const std::size_t bytes = a.count * dtype_size(a.dtype);
    char* buf = static_cast<char*>(c.scratch(0, bytes * std::size_t(n)));
    int mask = 1;
    if (v == 0) {  // relative order: blocks root .. n-1, then 0 .. root-1
      const std::size_t head = std::size_t(n - a.root);
      c.copy(buf, byte_ptr(a.send, a.count * std::size_t(a.root), a.dtype), bytes * head);
      c.copy(buf + bytes * head, a.send, bytes * std::size_t(a.root));
      while (mask < n) mask <<= 1;
    } else {
      while (!(v & mask)) mask <<= 1;
      c.recv(buf, bytes * std::size_t(std::min(mask, n - v)), real(v - mask, a.root, n));
    }
    for (mask >>= 1; mask > 0; mask >>= 1)
      if (v + mask < n)
        c.send(buf + bytes * std::size_t(mask), bytes * std::size_t(std::min(mask, n - v - mask)),
               real(v + mask, a.root, n));
    c.copy(a.recv, buf, bytes);
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_tree_algorithm() { return std::make_unique<Tree>(); }

}  // namespace parbench
