// A TCP connection between every pair of processes of a job started without MPI, and the one I/O thread per process
// that moves their messages: frames of (context, tag, bytes) matched to receives in posting order per (context,
// tag, peer), an early arrival kept until its receive is posted. The tcp transport (transport_tcp.cpp) sits on it.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace parbench {

class StoreClient;
class ShmRing;

class TcpMesh {
 public:
  using Deadline = std::chrono::steady_clock::time_point;
  // One message of a group: `peer` is a rank of the mesh (the world), `group_peer` the rank the caller names.
  struct Op {
    bool send = false;
    char* buf = nullptr;
    std::size_t bytes = 0;
    int peer = 0, group_peer = 0;
    std::uint64_t context = 0;
    int tag = 0;
  };
  class Batch;  // ops posted together, completed together
  // From this size on, a message to a peer of this node that can read this process's memory is copied once,
  // straight from the send's buffer into the receive's (below it, through the ring: in, then out).
  static constexpr std::size_t kPullMinBytes = std::size_t(64) << 10;

  // Connects rank `rank` of `size` to every other: each listens on a free port of the address its store
  // connection uses, publishes it in the store, connects to the lower ranks and accepts the higher ones (each
  // presenting `token` and its rank; anything else is dropped). Error naming the peer when it cannot by `timeout_s`.
  // Peers with `same_node[p]` (this node's processes) get a pair of shared-memory rings for their messages when
  // both sides can make them (see shm_ring.h), the socket otherwise; a peer that can read this process's memory
  // (process_vm_readv, unless PARBENCH_SHM_PULL=off) copies large messages from it directly.
  static std::shared_ptr<TcpMesh> connect(StoreClient& store, const std::string& token, int rank, int size,
                                          const std::vector<bool>& same_node, double timeout_s);
  ~TcpMesh();
  TcpMesh(const TcpMesh&) = delete;
  TcpMesh& operator=(const TcpMesh&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  int shm_peers() const { return shm_peers_; }  // peers whose messages go through shared memory
  int pull_peers() const { return pull_peers_; }  // of those, the ones that copy large messages straight from here

  // An empty batch, for post; one that was waited for or cancelled may be posted again (no allocation per step).
  static std::shared_ptr<Batch> new_batch();
  // Posts `ops` (sends queued in order per peer, receives matched in posting order) as `batch`.
  void post(std::span<const Op> ops, Batch& batch);
  // Waits for every op of the batch. On failure (a peer's connection closed, a message of another size than its
  // receive) Error; after `deadline` TimeoutError naming the late peers as `who` sees them. Either way the batch
  // is taken back: no op touches its buffers afterwards.
  void wait(Batch& batch, Deadline deadline, const std::string& who);
  // Takes the batch's unfinished ops back (their buffers may go); a partly sent message is finished from a copy. A
  // send already offered for single copy (kPullMinBytes) is the exception: its receiver may still read the buffer,
  // which a failed job no longer looks at (a buffer gone by then fails that receive, never this process).
  void cancel(Batch& batch);

  struct State;  // connections, queues and the I/O thread (tcp_mesh.cpp)

 private:
  // `rings[p]`: the (in, out) rings of peer p, or empty ones for a socket peer.
  TcpMesh(int rank, int size, std::vector<int> fds, std::vector<std::pair<ShmRing, ShmRing>>& rings);
  int rank_, size_, shm_peers_ = 0, pull_peers_ = 0;
  std::unique_ptr<State> state_;
};

}  // namespace parbench
