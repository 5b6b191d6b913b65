// The mesh engine's side for peers of this node (shared-memory rings): callers that poll the rings themselves, and
// single copy, where a large message is copied once, straight from the sender's buffer into the receive (pull
// frames, see tcp_mesh_state.h), instead of into the ring and out of it again.
#include <sched.h>

#include <cerrno>
#include <cstring>

#include "collectives/transport/tcp_mesh_state.h"

namespace parbench {

// The waiting caller moves the rings' bytes itself, as an MPI caller polls, rather than sleeping until the I/O
// thread has (a wakeup per message); meanwhile that thread asks no doorbell for them. Sockets stay its own (a ring
// peer's end shows there, and that thread looks at the sockets every millisecond while a caller polls), so a look
// makes no system call. Between looks the caller lets go of the lock and watches the rings' counters.
void TcpMesh::State::poll_rings(std::unique_lock<std::mutex>& lock, Deadline deadline,
                                const std::function<bool()>& over) {
  activity = true;
  if (pollers++ == 0)
    for (Peer& p : peers)
      if (p.shm()) p.in_ring.header().reader_sleeping.store(0), p.out_ring.header().writer_sleeping.store(0);
  while (!over()) {
    for (int q = 0; q < int(peers.size()); ++q)
      if (peers[std::size_t(q)].shm()) pump_ring(q);
    if (over() || Clock::now() >= deadline) break;
    RingWatch watch;
    for (std::size_t q = 0; q < peers.size(); ++q) watch.add(q, peers[q]);
    lock.unlock();
    watch_rings(watch);
    lock.lock();
  }
  activity = true;
  if (--pollers == 0 && long_sleep) wake_io();  // asleep without doorbells: back to looking every millisecond
}

// Without the lock (the rings' counters are atomics; peers and rings stay put while the mesh lives): returns once a
// watched ring has bytes for this rank (or room for its waiting sends), or after `watch_ns` of looking and one
// yield of the core (ranks may outnumber cores: let the peer run). Plain loads, no pause instruction (see doorbell.h).
void TcpMesh::State::watch_rings(const RingWatch& watch) const {
  constexpr int kLooksPerClock = 64;
  const Clock::time_point until = Clock::now() + std::chrono::nanoseconds(watch_ns);
  do {
    for (int look = 0; look < kLooksPerClock; ++look)
      for (std::size_t q = 0; q < peers.size(); ++q) {
        const Peer& p = peers[q];
        if (!p.shm() || !watch.data(q)) continue;
        if (p.in_ring.has_data() || (watch.room(q) && p.out_ring.has_room())) return;
      }
  } while (Clock::now() < until);
  sched_yield();
}

// A large message to a ring peer that can read this process's memory: sent as a pull frame, its address instead of
// its bytes.
void TcpMesh::State::offer_pull(Msg& m, const Peer& p) const {
  if (m.op.bytes < TcpMesh::kPullMinBytes || !p.shm() || !p.out_ring.pulls()) return;
  m.header.magic = kPullMagic;
  m.header.source = reinterpret_cast<std::uintptr_t>(m.op.buf);
}

// A pull frame from peer `from`: copied into its posted receive `recv` now, or kept as an early arrival (its
// address only) until one is posted; a receive of another size (`mismatched`, already failed) lets it go.
void TcpMesh::State::on_pull(int from, const FrameHeader& h, const std::shared_ptr<Msg>& recv, bool mismatched) {
  if (recv) return pull_into(from, recv, h.source);
  if (mismatched) return queue_pulled(from);
  auto e = std::make_shared<Msg>();
  e->op = {false, nullptr, std::size_t(h.bytes), from, from, h.context, int(h.tag)};
  e->pull_from = h.source;
  e->complete = true;
  early[Key{h.context, int(h.tag), from}].push_back(e);
}

// One copy from the sender's memory into the receive, then the pulled frame that lets the sender go on. A copy that
// fails (the sender's process ended under it) fails everything waiting on that peer, as its closed connection would.
void TcpMesh::State::pull_into(int from, const std::shared_ptr<Msg>& recv, std::uint64_t source) {
  Peer& p = peers[std::size_t(from)];
  const int e = copy_from_process(p.in_ring.writer_pid(), source, recv->op.buf, recv->op.bytes);
  if (e != 0) {
    close_peer(from, e == ESRCH ? "closed" : std::string("could not be read (") + std::strerror(e) + ")");
    return finish(recv, p.closed_why);
  }
  moved += recv->op.bytes;
  queue_pulled(from);
  finish(recv);
}

void TcpMesh::State::queue_pulled(int to) {
  Peer& p = peers[std::size_t(to)];
  if (!p.open) return;
  auto m = std::make_shared<Msg>();  // no batch: nobody waits for it
  m->op.send = true;
  m->op.peer = m->op.group_peer = to;
  m->header = {0, 0, kPulledMagic, 0, 0};
  p.sends.push_back(m);
  if (p.sends.size() == 1) pump_send(to);
}

// Peer `from` has copied the oldest message sent to it by pull frame.
void TcpMesh::State::on_pulled(int from) {
  Peer& p = peers[std::size_t(from)];
  if (p.pulled.empty()) return close_peer(from, "acknowledged a message it was never offered");
  std::shared_ptr<Msg> m = std::move(p.pulled.front());
  p.pulled.pop_front();
  finish(m);
}

}  // namespace parbench
