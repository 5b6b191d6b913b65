// hier: topology-aware collectives for a group spread over nodes (CollectiveSteps::node_of). A node's ranks are its
// group ranks in ascending order, nodes in the order of their first rank; the ranks with the same index inside
// their nodes form that index's cross-node ring. Every node must hold the same number L of the group's ranks
// (N nodes); a single node or one rank per node leaves one phase empty.
// - allreduce: ring reduce-scatter inside the node (local index i finishes block i of L), ring allreduce of block i
//   across nodes among the ranks of index i, ring all-gather inside the node. Node links carry 2 (N-1)/N of the
//   message per node, as a flat ring over one rank per node would, but split over the node's L ranks. avg sums and
//   divides once, by the whole group's size, where each shard is finished.
// - broadcast: the root sends to the rank of its own local index on every other node, then each node runs a
//   binomial tree from that rank (from the root on its node): each other node receives the message once.
// - allgather: ring all-gather across nodes of each rank's own block among the ranks of its local index, then ring
//   all-gather inside the node, each rank passing on the N blocks of its index: each block crosses node links
//   N - 1 times, the least that reaches every other node (gathering inside the node first would send each block
//   across once per rank of the node).
// Scratch: slot 0 only (the part a reduce-scatter step receives).
#include <algorithm>
#include <string>
#include <vector>

#include "base/error.h"
#include "collectives/algorithms/host_algorithm.h"

namespace parbench {
namespace {
namespace hier_steps {  // named: the algorithm files share unity batches

int mod(int x, int n) { return ((x % n) + n) % n; }

// A ring over some of the group's ranks: the peers in ring order and this rank's place among them.
struct SubRing {
  std::vector<int> peers;
  int pos = 0;
  int size() const { return int(peers.size()); }
  int peer(int place) const { return peers[std::size_t(mod(place, size()))]; }
};

// The group by node: members[k] holds node k's group ranks, ascending; node_index and local_index by group rank.
struct Layout {
  std::vector<int> node_ids;  // node_of of each node's ranks
  std::vector<std::vector<int>> members;
  std::vector<int> node_index, local_index;
  int me = 0;

  explicit Layout(const CollectiveSteps& c) : me(c.rank()) {
    for (int r = 0; r < c.size(); ++r) {
      const int id = c.node_of(r);
      const auto k = std::size_t(std::find(node_ids.begin(), node_ids.end(), id) - node_ids.begin());
      if (k == node_ids.size()) node_ids.push_back(id), members.emplace_back();
      node_index.push_back(int(k)), local_index.push_back(int(members[k].size()));
      members[k].push_back(r);
    }
  }
  // Empty when every node holds as many of the group's ranks; otherwise the first node that differs.
  std::string uneven() const {
    for (std::size_t k = 1; k < members.size(); ++k)
      if (members[k].size() != members[0].size())
        return "hier needs the same number of ranks on every node; node " + std::to_string(node_ids[0]) + " has " +
               std::to_string(members[0].size()) + ", node " + std::to_string(node_ids[k]) + " has " +
               std::to_string(members[k].size());
    return {};
  }
  int local() const { return local_index[std::size_t(me)]; }
  SubRing intra() const { return {members[std::size_t(node_index[std::size_t(me)])], local()}; }
  SubRing cross() const {
    SubRing s{{}, node_index[std::size_t(me)]};
    for (const auto& m : members) s.peers.push_back(m[std::size_t(local())]);
    return s;
  }
};

// Part k of m of the element range `range`, split as evenly as possible.
Block part(Block range, int m, int k) {
  const Block b = even_block(range.length, m, k);
  return {range.offset + b.offset, b.length};
}

// Reduce-scatter of `range` over `ring`: on exit part `pos` of it in `buf` is reduced over the ring. The first
// step reads `src` (which may be `buf`), later ones the partial results in `buf`.
void ring_reduce_scatter(CollectiveSteps& c, const SubRing& ring, const void* src, void* buf, Block range, DType t,
                         ReduceOp op) {
  const int m = ring.size();
  const std::size_t es = dtype_size(t);
  void* tmp = c.scratch(0, part(range, m, 0).length * es);  // part 0 is the largest
  for (int s = 0; s < m - 1; ++s) {
    const Block out = part(range, m, mod(ring.pos - s - 1, m)), in = part(range, m, mod(ring.pos - s - 2, m));
    P2POp ops[2] = {send_op(byte_ptr(s == 0 ? src : buf, out.offset, t), out.length * es, ring.peer(ring.pos + 1)),
                    recv_op(tmp, in.length * es, ring.peer(ring.pos - 1))};
    c.group(ops);
    c.combine(byte_ptr(buf, in.offset, t), byte_ptr(src, in.offset, t), tmp, in.length, t, op);
  }
}

struct Piece {
  char* ptr;
  std::size_t bytes;
};

// All-gather over `ring`: place k owns the pieces pieces(k); on entry this rank holds its own, on exit every
// place's. A place's pieces travel as one message each, matched in order.
template <class Pieces>
void ring_allgather(CollectiveSteps& c, const SubRing& ring, const Pieces& pieces) {
  const int m = ring.size();
  std::vector<P2POp> ops;
  for (int s = 0; s < m - 1; ++s) {
    ops.clear();
    for (const Piece& p : pieces(mod(ring.pos - s, m))) ops.push_back(send_op(p.ptr, p.bytes, ring.peer(ring.pos + 1)));
    for (const Piece& p : pieces(mod(ring.pos - s - 1, m)))
      ops.push_back(recv_op(p.ptr, p.bytes, ring.peer(ring.pos - 1)));
    c.group(ops);
  }
}

// The parts of `range` in `buf` as ring_allgather's pieces.
auto parts_of(void* buf, Block range, int m, DType t) {
  return [=](int k) {
    const Block b = part(range, m, k);
    return std::vector<Piece>{{byte_ptr(buf, b.offset, t), b.length * dtype_size(t)}};
  };
}

// Binomial tree over `ring` from place `from`: each place receives `buf` from its parent, then sends it to its
// children.
void tree_broadcast(CollectiveSteps& c, const SubRing& ring, int from, void* buf, std::size_t bytes) {
  const int m = ring.size(), v = mod(ring.pos - from, m);
  int mask = 1;
  for (; mask < m; mask <<= 1)
    if (v & mask) {
      c.recv(buf, bytes, ring.peer(v - mask + from));
      break;
    }
  std::vector<P2POp> ops;
  for (mask >>= 1; mask > 0; mask >>= 1)
    if (v + mask < m) ops.push_back(send_op(buf, bytes, ring.peer(v + mask + from)));
  if (!ops.empty()) c.group(ops);
}

void allreduce(CollectiveSteps& c, const Layout& g, const CollArgs& a) {
  const DType t = a.dtype;
  if (c.size() == 1) return c.copy(a.recv, a.send, a.count * dtype_size(t));
  const SubRing node = g.intra(), across = g.cross();
  const Block all{0, a.count}, shard = part(all, node.size(), node.pos), mine = part(shard, across.size(), across.pos);
  const void* src = a.send;
  if (node.size() > 1) ring_reduce_scatter(c, node, a.send, a.recv, all, t, a.op), src = a.recv;
  if (across.size() > 1) ring_reduce_scatter(c, across, src, a.recv, shard, t, a.op);
  if (a.op == ReduceOp::avg) c.divide(byte_ptr(a.recv, mine.offset, t), mine.length, t);
  ring_allgather(c, across, parts_of(a.recv, shard, across.size(), t));
  ring_allgather(c, node, parts_of(a.recv, all, node.size(), t));
}

void broadcast(CollectiveSteps& c, const Layout& g, const CollArgs& a) {
  const std::size_t bytes = a.count * dtype_size(a.dtype);
  const int r = c.rank(), root_local = g.local_index[std::size_t(a.root)];
  if (r == a.root) c.copy(a.recv, a.send, bytes);
  if (c.size() == 1 || bytes == 0) return;
  if (r == a.root) {
    std::vector<P2POp> ops;
    for (const auto& m : g.members)
      if (m[std::size_t(root_local)] != r) ops.push_back(send_op(a.recv, bytes, m[std::size_t(root_local)]));
    if (!ops.empty()) c.group(ops);
  } else if (g.local() == root_local) {
    c.recv(a.recv, bytes, a.root);
  }
  tree_broadcast(c, g.intra(), root_local, a.recv, bytes);
}

void allgather(CollectiveSteps& c, const Layout& g, const CollArgs& a) {
  const std::size_t bytes = a.count * dtype_size(a.dtype);
  auto block = [&](int r) { return Piece{byte_ptr(a.recv, a.count * std::size_t(r), a.dtype), bytes}; };
  c.copy(block(c.rank()).ptr, a.send, bytes);
  const SubRing across = g.cross();
  ring_allgather(c, across, [&](int k) { return std::vector<Piece>{block(across.peers[std::size_t(k)])}; });
  ring_allgather(c, g.intra(), [&](int i) {  // place i passes on the blocks of local index i from every node
    std::vector<Piece> v;
    for (const auto& m : g.members) v.push_back(block(m[std::size_t(i)]));
    return v;
  });
}

}  // namespace hier_steps

class Hierarchical final : public HostAlgorithm {
 public:
  std::string_view name() const override { return "hier"; }
  std::string refusal(Collective c, const CollectiveSteps& group) const override {
    if (c != Collective::allreduce && c != Collective::broadcast && c != Collective::allgather)
      return "hier implements allreduce, broadcast and allgather";
    return hier_steps::Layout(group).uneven();
  }

  void run_steps(CollectiveSteps& c, const CollArgs& a) const override {
    const hier_steps::Layout g(c);
    // The map may have changed since the communicator vetted this implementation.
    if (std::string why = g.uneven(); !why.empty()) throw UsageError(why);
    if (a.coll == Collective::allreduce) return hier_steps::allreduce(c, g, a);
    if (a.coll == Collective::broadcast) return hier_steps::broadcast(c, g, a);
    hier_steps::allgather(c, g, a);
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_hier_algorithm() { return std::make_unique<Hierarchical>(); }

}  // namespace parbench
