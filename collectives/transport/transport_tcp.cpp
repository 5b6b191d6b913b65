// The tcp transport: the ranks of a job started without MPI (torchrun, srun) exchange their messages over the TCP
// mesh (through shared-memory rings between the processes of one node). A sub-group's messages carry a context of their own, so one connection per pair of processes serves every
// split. Device (cuda) memory is staged through pinned host buffers, as the MPI transport stages it.
#include "collectives/transport/transport_tcp.h"

#include <algorithm>
#include <array>

#include "collectives/transport/group_staging.h"
#include "core/memory.h"

namespace parbench {
namespace {

std::uint64_t mix(std::uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A split's context, the same on every member and (but for a 2^-64 chance) unlike any other group's: the parent's,
// the split's sequence number and the color, mixed. The world's is 0.
std::uint64_t child_context(std::uint64_t parent, std::uint64_t seq, int color) {
  const std::uint64_t c = mix(mix(mix(parent) ^ (seq + 1)) ^ (std::uint64_t(std::uint32_t(color)) + 1));
  return c == parent || c == 0 ? c ^ 0x5a5a5a5a5a5a5a5aull : c;
}

class TcpTransport final : public Transport {
 public:
  TcpTransport(std::shared_ptr<TcpMesh> mesh, std::vector<int> world_of, int rank, std::uint64_t context,
               Device device, std::unique_ptr<Transport> companion)
      : mesh_(std::move(mesh)), world_of_(std::move(world_of)), rank_(rank), context_(context), device_(device),
        companion_(std::move(companion)), who_("rank " + std::to_string(rank)), batch_(TcpMesh::new_batch()),
        group_staging_(device), send_staging_(device) {}
  ~TcpTransport() override { abandon_sends(); }

  // "shm" when every peer is on this node (shared-memory rings), "tcp" when none is, "shm+tcp" for a mix.
  std::string_view name() const override {
    const int shm = mesh_->shm_peers();
    return shm == 0 ? "tcp" : shm == mesh_->size() - 1 ? "shm" : "shm+tcp";
  }
  int rank() const override { return rank_; }
  int size() const override { return int(world_of_.size()); }
  const Transport* companion() const override { return companion_.get(); }

  std::unique_ptr<Transport> split(int color, int key, const std::vector<int>& members, int new_rank) override {
    std::vector<int> world;
    for (int m : members) world.push_back(world_of_[std::size_t(m)]);
    // Every rank splits the companion too, in the same order (the Communicator's split is collective).
    std::unique_ptr<Transport> companion = companion_ ? companion_->split(color, key, members, new_rank) : nullptr;
    return std::make_unique<TcpTransport>(mesh_, std::move(world), new_rank, child_context(context_, splits_++, color),
                                          device_, std::move(companion));
  }

  void group(std::span<const P2POp> ops, Deadline deadline) override {
    if (device_.on_host() && ops.size() <= kFewOps) {  // the common step (a send and a receive): nothing staged
      std::array<TcpMesh::Op, kFewOps> few;
      for (std::size_t i = 0; i < ops.size(); ++i) few[i] = mesh_op(ops[i], static_cast<char*>(ops[i].buf));
      return run(std::span<const TcpMesh::Op>(few.data(), ops.size()), deadline);
    }
    const std::vector<char*> bufs = group_staging_.stage(ops);
    std::vector<TcpMesh::Op> mesh_ops;
    for (std::size_t i = 0; i < ops.size(); ++i) mesh_ops.push_back(mesh_op(ops[i], bufs[i]));
    run(mesh_ops, deadline);
    group_staging_.unstage(ops, bufs);
  }

  void post_sends(std::span<const P2POp> ops) override {
    std::vector<TcpMesh::Op> mesh_ops;
    for (const P2POp& op : ops) {
      if (op.kind != P2POp::send) throw Error("post_sends: a receive among the sends");
      char* buf = send_staging_.stage(op);  // a host copy lives until finish_sends
      mesh_ops.push_back(mesh_op(op, buf));
    }
    posted_.push_back(TcpMesh::new_batch());
    mesh_->post(mesh_ops, *posted_.back());
  }

  void finish_sends(Deadline deadline) override {
    auto posted = std::move(posted_);
    posted_.clear();
    try {
      for (auto& b : posted) mesh_->wait(*b, deadline, "rank " + std::to_string(rank_) + " (posted sends)");
    } catch (...) {
      for (auto& b : posted) mesh_->cancel(*b);
      send_staging_.release();
      throw;
    }
    send_staging_.release();
  }

  void abandon_sends() override {
    for (auto& b : posted_) mesh_->cancel(*b);
    posted_.clear();
    send_staging_.release();
  }

 private:
  static constexpr std::size_t kFewOps = 8;

  void run(std::span<const TcpMesh::Op> ops, Deadline deadline) {
    mesh_->post(ops, *batch_);
    mesh_->wait(*batch_, deadline, who_);
  }

  TcpMesh::Op mesh_op(const P2POp& op, char* buf) const {
    if (op.peer < 0 || op.peer >= size())
      throw Error("rank " + std::to_string(rank_) + ": peer " + std::to_string(op.peer) + " outside the group");
    return {op.kind == P2POp::send, buf, op.bytes, world_of_[std::size_t(op.peer)], op.peer, context_, op.tag};
  }

  std::shared_ptr<TcpMesh> mesh_;
  std::vector<int> world_of_;  // group rank -> mesh (world) rank
  int rank_;
  std::uint64_t context_;
  Device device_;
  std::unique_ptr<Transport> companion_;
  std::uint64_t splits_ = 0;
  std::string who_;  // how timeouts name this rank
  std::shared_ptr<TcpMesh::Batch> batch_;  // a group's, posted again each step
  std::vector<std::shared_ptr<TcpMesh::Batch>> posted_;  // post_sends not yet finished
  GroupStaging group_staging_;
  PostedSendStaging send_staging_;  // posted sends' host copies (device memory), until finish_sends
};

}  // namespace

std::unique_ptr<Transport> make_tcp_transport(std::shared_ptr<TcpMesh> mesh, Device device,
                                              std::unique_ptr<Transport> companion) {
  std::vector<int> world(std::size_t(mesh->size()));
  for (int r = 0; r < mesh->size(); ++r) world[std::size_t(r)] = r;
  const int rank = mesh->rank();
  return std::make_unique<TcpTransport>(std::move(mesh), std::move(world), rank, 0, device, std::move(companion));
}

}  // namespace parbench
