// naive: everything through one root (all-to-root, then root-to-all); alltoall, alltoallv and sendrecv as direct
// exchanges, the hypercube as its pairwise steps. The baseline every other algorithm should beat, and the simplest
// one to trust.
#include <vector>

#include "collectives/table/alltoallv_split.h"
#include "collectives/algorithms/host_algorithm.h"

namespace parbench {
namespace {

// Root receives every rank's `count` elements of `send` and combines them in rank order into `out`.
void reduce_to_root(CollectiveSteps& c, const void* send, void* out, std::size_t count, DType t, ReduceOp op, int root) {
  const int n = c.size(), r = c.rank();
  const std::size_t bytes = count * dtype_size(t);
  if (r != root) {
    c.send(send, bytes, root);
    return;
  }
  char* tmp = static_cast<char*>(c.scratch(0, bytes * std::size_t(n > 1 ? n - 1 : 1)));
  std::vector<P2POp> ops;
  for (int p = 0, slot = 0; p < n; ++p)
    if (p != root) ops.push_back(recv_op(tmp + bytes * std::size_t(slot++), bytes, p));
  c.group(ops);
  c.copy(out, send, bytes);
  for (int s = 0; s < n - 1; ++s) c.combine(out, tmp + bytes * std::size_t(s), count, t, op);
  if (op == ReduceOp::avg) c.divide(out, count, t);
}

// Root sends `bytes` of `buf` to every other rank, which receives into `buf`.
void broadcast_from_root(CollectiveSteps& c, void* buf, std::size_t bytes, int root) {
  const int n = c.size();
  if (c.rank() != root) {
    c.recv(buf, bytes, root);
    return;
  }
  std::vector<P2POp> ops;
  for (int p = 0; p < n; ++p)
    if (p != root) ops.push_back(send_op(buf, bytes, p));
  c.group(ops);
}

// Each peer's block straight to it, this rank's own block copied.
void exchange_blocks(CollectiveSteps& c, const CollArgs& a) {
  const int n = c.size(), r = c.rank();
  const std::size_t bytes = a.count * dtype_size(a.dtype);
  const void* src = a.send;
  if (a.send == a.recv) {  // in place: keep the outgoing blocks intact while the incoming ones land
    src = c.scratch(1, bytes * std::size_t(n));
    c.copy(const_cast<void*>(src), a.send, bytes * std::size_t(n));
  }
  std::vector<P2POp> ops;
  for (int p = 0; p < n; ++p) {
    if (p == r) continue;
    ops.push_back(send_op(byte_ptr(src, a.count * std::size_t(p), a.dtype), bytes, p));
    ops.push_back(recv_op(byte_ptr(a.recv, a.count * std::size_t(p), a.dtype), bytes, p));
  }
  c.group(ops);
  c.copy(byte_ptr(a.recv, a.count * std::size_t(r), a.dtype), byte_ptr(src, a.count * std::size_t(r), a.dtype),
         bytes);
}

// Each peer's share of the alltoallv split straight to it, this rank's own share copied.
void exchange_split(CollectiveSteps& c, const CollArgs& a) {
  const int n = c.size(), r = c.rank();
  const AlltoallvSplit s = alltoallv_split(alltoallv_pattern(), r, n, a.count, a.dtype);
  const std::size_t es = dtype_size(a.dtype);
  const void* src = a.send;
  if (a.send == a.recv && s.send_total > 0) {  // in place: keep the outgoing shares intact
    src = c.scratch(1, s.send_total * es);
    c.copy(const_cast<void*>(src), a.send, s.send_total * es);
  }
  std::vector<P2POp> ops;
  for (int p = 0; p < n; ++p) {
    const auto q = std::size_t(p);
    if (p == r) continue;
    if (s.send_counts[q]) ops.push_back(send_op(byte_ptr(src, s.send_displs[q], a.dtype), s.send_counts[q] * es, p));
    if (s.recv_counts[q]) ops.push_back(recv_op(byte_ptr(a.recv, s.recv_displs[q], a.dtype), s.recv_counts[q] * es, p));
  }
  c.group(ops);
  const auto me = std::size_t(r);
  c.copy(byte_ptr(a.recv, s.recv_displs[me], a.dtype), byte_ptr(src, s.send_displs[me], a.dtype),
         s.send_counts[me] * es);
}

// All-gather in log2 n steps: with rank ^ mask, this rank's aligned group of mask blocks for the peer's.
void hypercube(CollectiveSteps& c, const CollArgs& a) {
  const int n = c.size(), r = c.rank();
  const std::size_t bytes = a.count * dtype_size(a.dtype);
  c.copy(byte_ptr(a.recv, a.count * std::size_t(r), a.dtype), a.send, bytes);
  if (bytes == 0) return;
  auto block = [&](int b) { return byte_ptr(a.recv, a.count * std::size_t(b), a.dtype); };
  for (int mask = 1; mask < n; mask <<= 1) {
    const int have = r & ~(mask - 1), peer = r ^ mask;
    const std::size_t step_bytes = bytes * std::size_t(mask);
    P2POp ops[2] = {send_op(block(have), step_bytes, peer), recv_op(block(have ^ mask), step_bytes, peer)};
    c.group(ops);
  }
}

class Naive final : public HostAlgorithm {
 public:
  std::string_view name() const override { return "naive"; }
  std::string refusal(Collective coll, const CollectiveSteps& c) const override {
    return ranks_refusal(coll, c.size());
  }

  void run_steps(CollectiveSteps& c, const CollArgs& a) const override {
    const int n = c.size(), r = c.rank();
    const std::size_t es = dtype_size(a.dtype), bytes = a.count * es;
    switch (a.coll) {
      case Collective::broadcast:
        if (r == a.root) c.copy(a.recv, a.send, bytes);
        return broadcast_from_root(c, a.recv, bytes, a.root);
      case Collective::reduce: return reduce_to_root(c, a.send, a.recv, a.count, a.dtype, a.op, a.root);
      case Collective::allreduce:
        reduce_to_root(c, a.send, a.recv, a.count, a.dtype, a.op, 0);
        return broadcast_from_root(c, a.recv, bytes, 0);
      case Collective::gather:
      case Collective::allgather: {
        const int root = a.coll == Collective::gather ? a.root : 0;
        if (r != root) {
          c.send(a.send, bytes, root);
        } else {
          std::vector<P2POp> ops;
          for (int p = 0; p < n; ++p)
            if (p != root) ops.push_back(recv_op(byte_ptr(a.recv, a.count * std::size_t(p), a.dtype), bytes, p));
          c.group(ops);
          c.copy(byte_ptr(a.recv, a.count * std::size_t(root), a.dtype), a.send, bytes);
        }
        if (a.coll == Collective::allgather) broadcast_from_root(c, a.recv, bytes * std::size_t(n), 0);
        return;
      }
      case Collective::scatter:
      case Collective::reduce_scatter: {
        const void* src = a.send;
        int root = a.root;
        if (a.coll == Collective::reduce_scatter) {
          root = 0;
          void* full = r == 0 ? c.scratch(1, bytes * std::size_t(n)) : nullptr;
          reduce_to_root(c, a.send, full, a.count * std::size_t(n), a.dtype, a.op, 0);
          src = full;
        }
        if (r != root) return c.recv(a.recv, bytes, root);
        std::vector<P2POp> ops;
        for (int p = 0; p < n; ++p)
          if (p != root) ops.push_back(send_op(byte_ptr(src, a.count * std::size_t(p), a.dtype), bytes, p));
        c.group(ops);
        return c.copy(a.recv, byte_ptr(src, a.count * std::size_t(root), a.dtype), bytes);
      }
      case Collective::alltoall: return exchange_blocks(c, a);
      case Collective::sendrecv: {
        const void* src = a.send;
        if (a.send == a.recv) {
          src = c.scratch(1, bytes);
          c.copy(const_cast<void*>(src), a.send, bytes);
        }
        P2POp ops[2] = {send_op(src, bytes, (r + 1) % n), recv_op(a.recv, bytes, (r - 1 + n) % n)};
        return c.group(ops);
      }
      case Collective::alltoallv: return exchange_split(c, a);
      case Collective::hypercube: return hypercube(c, a);
    }
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_naive_algorithm() { return std::make_unique<Naive>(); }

}  // namespace parbench
