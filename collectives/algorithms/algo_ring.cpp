// ring: each rank talks only to its neighbours. Allreduce = reduce-scatter + allgather around the ring
// (2(p-1) steps, bandwidth-optimal), plus ring reduce-scatter, ring allgather and a pipelined chain broadcast.
#include <algorithm>

#include "collectives/algorithms/host_algorithm.h"

namespace parbench {
namespace {

constexpr std::size_t kBroadcastChunk = 1 << 20;  // bytes per pipelined broadcast step

class Ring final : public HostAlgorithm {
 public:
  std::string_view name() const override { return "ring"; }
  std::string refusal(Collective c, const CollectiveSteps&) const override {
    switch (c) {
      case Collective::allreduce:
      case Collective::reduce_scatter:
      case Collective::allgather:
      case Collective::broadcast: return {};
      default: return "ring implements allreduce, reducescatter, allgather and broadcast";
    }
  }

  void run_steps(CollectiveSteps& c, const CollArgs& a) const override {
    switch (a.coll) {
      case Collective::allreduce: return allreduce(c, a);
      case Collective::reduce_scatter: return reduce_scatter(c, a);
      case Collective::allgather: return allgather(c, a);
      default: return broadcast(c, a);
    }
  }

 private:
  static int mod(int x, int n) { return ((x % n) + n) % n; }

  static void allreduce(CollectiveSteps& c, const CollArgs& a) {
    const int n = c.size(), r = c.rank(), right = mod(r + 1, n), left = mod(r - 1, n);
    const DType t = a.dtype;
    const std::size_t es = dtype_size(t);
    if (n == 1) return c.copy(a.recv, a.send, a.count * es);
    void* tmp = c.scratch(0, even_block(a.count, n, 0).length * es);
    // Reduce-scatter: after step s, the chunk received is reduced over s + 2 ranks; rank r ends owning
    // chunk r + 1, reduced over all. Each chunk is first sent or combined straight from the send buffer (its
    // partial sums then live in recv): no copy of the input.
    for (int s = 0; s < n - 1; ++s) {
      Block out = even_block(a.count, n, mod(r - s, n)), in = even_block(a.count, n, mod(r - s - 1, n));
      P2POp ops[2] = {send_op(byte_ptr(s == 0 ? a.send : a.recv, out.offset, t), out.length * es, right),
                      recv_op(tmp, in.length * es, left)};
      c.group(ops);
      c.combine(byte_ptr(a.recv, in.offset, t), byte_ptr(a.send, in.offset, t), tmp, in.length, t, a.op);
    }
    if (a.op == ReduceOp::avg) {
      Block own = even_block(a.count, n, mod(r + 1, n));
      c.divide(byte_ptr(a.recv, own.offset, t), own.length, t);
    }
    for (int s = 0; s < n - 1; ++s) {
      Block out = even_block(a.count, n, mod(r + 1 - s, n)), in = even_block(a.count, n, mod(r - s, n));
      P2POp ops[2] = {send_op(byte_ptr(a.recv, out.offset, t), out.length * es, right),
                      recv_op(byte_ptr(a.recv, in.offset, t), in.length * es, left)};
      c.group(ops);
    }
  }

  static void reduce_scatter(CollectiveSteps& c, const CollArgs& a) {
    const int n = c.size(), r = c.rank(), right = mod(r + 1, n), left = mod(r - 1, n);
    const DType t = a.dtype;
    const std::size_t es = dtype_size(t), bytes = a.count * es;
    auto block = [&](int b) { return byte_ptr(a.send, a.count * std::size_t(b), t); };
    // Partial sums travel right; two scratch chunks so the one being sent is never the one being received.
    char* buf[2] = {static_cast<char*>(c.scratch(0, bytes)), static_cast<char*>(c.scratch(1, bytes))};
    const void* outgoing = block(mod(r - 1, n));
    for (int s = 0; s < n - 1; ++s) {
      char* incoming = buf[s % 2];
      P2POp ops[2] = {send_op(outgoing, bytes, right), recv_op(incoming, bytes, left)};
      c.group(ops);
      int b = mod(r - s - 2, n);
      if (s == n - 2) {  // the last partial sum is for our own block: finish it in the output
        c.copy(a.recv, block(b), bytes);
        c.combine(a.recv, incoming, a.count, t, a.op);
      } else {
        c.combine(incoming, block(b), a.count, t, a.op);
        outgoing = incoming;
      }
    }
    if (n == 1) c.copy(a.recv, a.send, bytes);
    if (a.op == ReduceOp::avg) c.divide(a.recv, a.count, t);
  }

  static void allgather(CollectiveSteps& c, const CollArgs& a) {
    const int n = c.size(), r = c.rank(), right = mod(r + 1, n), left = mod(r - 1, n);
    const std::size_t bytes = a.count * dtype_size(a.dtype);
    auto block = [&](int b) { return byte_ptr(a.recv, a.count * std::size_t(b), a.dtype); };
    c.copy(block(r), a.send, bytes);
    for (int s = 0; s < n - 1; ++s) {
      P2POp ops[2] = {send_op(block(mod(r - s, n)), bytes, right), recv_op(block(mod(r - s - 1, n)), bytes, left)};
      c.group(ops);
    }
  }

  // Chain root -> root+1 -> ...: chunk k leaves position p at step k + p, so the chain stays full.
  static void broadcast(CollectiveSteps& c, const CollArgs& a) {
    const int n = c.size(), r = c.rank(), pos = mod(r - a.root, n);
    const std::size_t bytes = a.count * dtype_size(a.dtype);
    if (r == a.root) c.copy(a.recv, a.send, bytes);
    if (n == 1 || bytes == 0) return;
    const std::size_t chunks = (bytes + kBroadcastChunk - 1) / kBroadcastChunk;
    auto chunk = [&](std::size_t k, std::size_t* len) {
      std::size_t off = k * kBroadcastChunk;
      *len = std::min(kBroadcastChunk, bytes - off);
      return static_cast<char*>(a.recv) + off;
    };
    for (std::size_t step = 0; step + 1 < chunks + std::size_t(n); ++step) {
      P2POp ops[2];
      int k = 0;
      std::size_t len;
      long long out = (long long)step - pos, in = (long long)step - (pos - 1);
      if (pos < n - 1 && out >= 0 && out < (long long)chunks) {
        char* p = chunk(std::size_t(out), &len);
        ops[k++] = send_op(p, len, mod(r + 1, n));
      }
      if (pos > 0 && in >= 0 && in < (long long)chunks) {
        char* p = chunk(std::size_t(in), &len);
        ops[k++] = recv_op(p, len, mod(r - 1, n));
      }
      if (k) c.group({ops, std::size_t(k)});
    }
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_ring_algorithm() { return std::make_unique<Ring>(); }

}  // namespace parbench
