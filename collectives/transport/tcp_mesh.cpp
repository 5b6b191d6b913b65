// The mesh's message engine: one I/O thread per process polls every connection, reads frames into the receives
// posted for them (or keeps them until posted) and writes queued sends; callers post under the same lock and wait
// on a condition variable with their deadline.
#include "collectives/transport/tcp_mesh.h"

#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <utility>

#include "collectives/launch/launcher.h"
#include "collectives/transport/doorbell.h"
#include "collectives/transport/tcp_mesh_state.h"
#include "collectives/transport/transport.h"

namespace parbench {

namespace {

// Group ranks, each with the host of its world rank when known: "3 (on node1), 5 (on node2)".
std::string ranks_text(const std::vector<std::pair<int, int>>& group_and_world) {
  std::string s;
  for (auto [g, w] : group_and_world) s += (s.empty() ? "" : ", ") + std::to_string(g) + with_host(w);
  return s;
}

// A byte on a ring peer's socket: its doorbell (data or room in a ring); the socket's end is the peer's.
void ring_doorbell(Peer& p) {
  const char b = 'd';
  [[maybe_unused]] ssize_t ignored = ::send(p.fd, &b, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

// How a connection ended, for close_peer: "closed", or with the socket's error ("closed: Connection reset by
// peer"), so that every message about a peer that went away reads alike.
std::string closed_how(int error) { return error == 0 ? "closed" : "closed: " + std::string(std::strerror(error)); }

}  // namespace

TcpMesh::TcpMesh(int rank, int size, std::vector<int> fds, std::vector<std::pair<ShmRing, ShmRing>>& rings)
    : rank_(rank), size_(size), state_(new State) {
  State& s = *state_;
  s.rank = rank;
  s.peers.resize(std::size_t(size));
  for (std::size_t p = 0; p < std::size_t(size); ++p) {
    s.peers[p].fd = fds[p];
    s.peers[p].in_ring = std::move(rings[p].first);
    s.peers[p].out_ring = std::move(rings[p].second);
    shm_peers_ += s.peers[p].shm() ? 1 : 0;
    pull_peers_ += s.peers[p].shm() && s.peers[p].out_ring.pulls() ? 1 : 0;
  }
  s.shm_peers = shm_peers_;
  // Every process of this node with a core of its own: a waiting caller watches its rings for a while before it
  // yields (a yield on a loaded machine may hand the core away for a whole time slice); otherwise it yields soon.
  s.watch_ns = shm_peers_ + 1 <= usable_cores() ? 20000 : 0;
  if (pipe2(s.wake, O_CLOEXEC | O_NONBLOCK) != 0) throw Error(std::string("pipe: ") + std::strerror(errno));
  s.io = std::thread([&s] { s.run_io(); });
}

TcpMesh::~TcpMesh() {
  State& s = *state_;
  {
    std::lock_guard lock(s.mu);
    s.stop = true;
  }
  s.wake_io();
  s.io.join();
  for (auto& p : s.peers)
    if (p.fd >= 0) close(p.fd);
  close(s.wake[0]);
  close(s.wake[1]);
}

std::shared_ptr<TcpMesh::Batch> TcpMesh::new_batch() { return std::make_shared<Batch>(); }

void TcpMesh::post(std::span<const Op> ops, Batch& batch) {
  State& s = *state_;
  std::lock_guard lock(s.mu);
  s.recycle(batch);
  batch.left = int(ops.size());
  batch.error.clear();
  bool sending = false;
  for (const Op& op : ops) {
    std::shared_ptr<Msg> m = s.new_msg();
    m->op = op;
    m->batch = &batch;
    batch.msgs.push_back(m);
    if (op.send) {
      m->header = {op.context, std::uint32_t(op.tag), kFrameMagic, op.bytes, 0};
      s.queue_send(m);
      sending = true;
    } else {
      s.post_recv(m);
    }
  }
  s.activity = true;
  // What is left to write: a socket's waits for the I/O thread to poll for room; a ring's is looked at within a
  // millisecond, unless the thread sleeps.
  bool left = false;
  for (const Peer& p : s.peers) left = left || (!p.sends.empty() && (!p.shm() || s.long_sleep));
  if (sending && left) s.wake_io();
}

void TcpMesh::wait(Batch& batch, Deadline deadline, const std::string& who) {
  State& s = *state_;
  std::unique_lock lock(s.mu);
  const auto over = [&] { return batch.left == 0 || !batch.error.empty(); };
  if (s.shm_peers > 0)
    s.poll_rings(lock, deadline, over);
  else
    s.cv.wait_until(lock, deadline, over);
  if (batch.left == 0 && batch.error.empty()) return;
  if (!batch.error.empty()) {
    const std::string error = batch.error;
    s.cancel(batch);
    throw Error(error);
  }
  std::vector<std::pair<int, int>> from, to;
  for (const auto& m : batch.msgs) {
    if (m->batch != &batch) continue;
    auto& list = m->op.send ? to : from;
    const std::pair<int, int> peer{m->op.group_peer, m->op.peer};
    if (std::find(list.begin(), list.end(), peer) == list.end()) list.push_back(peer);
  }
  s.cancel(batch);
  if (!from.empty()) throw TimeoutError(who + " waited for data from rank(s) " + ranks_text(from));
  throw TimeoutError(who + " sent data to rank(s) " + ranks_text(to) + ", which never received it");
}

void TcpMesh::cancel(Batch& batch) {
  std::lock_guard lock(state_->mu);
  state_->cancel(batch);
}

// --- State: everything below runs with `mu` held (poll_rings lets go of it between its looks).

std::shared_ptr<Msg> TcpMesh::State::new_msg() {
  if (spare.empty()) return std::make_shared<Msg>();
  std::shared_ptr<Msg> m = std::move(spare.back());
  spare.pop_back();
  return m;
}

// A batch's messages that nothing else holds any more (queues, an arrival in progress, a pulled send) are kept for
// new_msg, cleared.
void TcpMesh::State::recycle(Batch& batch) {
  constexpr std::size_t kSpareMsgs = 64;
  for (std::shared_ptr<Msg>& m : batch.msgs)
    if (m.use_count() == 1 && spare.size() < kSpareMsgs) {
      *m = Msg{};
      spare.push_back(std::move(m));
    }
  batch.msgs.clear();
}

void TcpMesh::State::finish(const std::shared_ptr<Msg>& m, const std::string& error) {
  Batch* b = m->batch;
  m->batch = nullptr;
  if (!b) return;
  if (!error.empty() && b->error.empty()) b->error = error;
  --b->left;
  cv.notify_all();
}

void TcpMesh::State::queue_send(const std::shared_ptr<Msg>& m) {
  if (m->op.peer == rank) return send_to_self(m);
  Peer& p = peers[std::size_t(m->op.peer)];
  if (!p.open) return finish(m, p.closed_why);
  offer_pull(*m, p);
  p.sends.push_back(m);
  if (p.sends.size() == 1) pump_send(m->op.peer);  // an idle connection: write now, from the caller's thread
}

// A message to this rank itself (a split's exchange includes the caller): copied into its receive, or kept.
void TcpMesh::State::send_to_self(const std::shared_ptr<Msg>& m) {
  const Key key{m->op.context, m->op.tag, rank};
  if (auto it = posted.find(key); it != posted.end() && !it->second.empty()) {
    std::shared_ptr<Msg> r = it->second.front();
    it->second.pop_front();
    drop_if_empty(posted, it);
    if (r->op.bytes != m->op.bytes) return finish(r, size_mismatch(*r, m->op.bytes)), finish(m);
    if (m->op.bytes) std::memcpy(r->op.buf, m->op.buf, m->op.bytes);
    return finish(r), finish(m);
  }
  auto e = std::make_shared<Msg>();
  e->op = m->op;
  e->own.assign(m->op.buf, m->op.buf + m->op.bytes);
  e->op.buf = e->own.data();
  e->complete = true;
  early[key].push_back(e);
  finish(m);
}

void TcpMesh::State::post_recv(const std::shared_ptr<Msg>& m) {
  const Key key{m->op.context, m->op.tag, m->op.peer};
  if (auto it = early.find(key); it != early.end() && !it->second.empty()) {
    std::shared_ptr<Msg> e = it->second.front();
    it->second.pop_front();
    drop_if_empty(early, it);
    if (e->op.bytes != m->op.bytes) {
      if (e->pull_from) queue_pulled(m->op.peer);  // dropped: the sender's send is over
      return finish(m, size_mismatch(*m, e->op.bytes));
    }
    if (e->pull_from) return pull_into(m->op.peer, m, e->pull_from);
    if (e->complete) {
      if (m->op.bytes) std::memcpy(m->op.buf, e->op.buf, m->op.bytes);
      return finish(m);
    }
    e->waiter = m;  // still arriving: copied when complete
    m->early = e.get();
    return;
  }
  Peer& p = peers[std::size_t(m->op.peer)];
  if (!p.open) return finish(m, p.closed_why);
  posted[key].push_back(m);
}

std::string TcpMesh::State::size_mismatch(const Msg& recv, std::size_t arrived) const {
  return "rank " + std::to_string(rank) + ": a message of " + std::to_string(arrived) + " bytes arrived from rank " +
         std::to_string(recv.op.peer) + " (tag " + std::to_string(recv.op.tag) + ") where its receive expects " +
         std::to_string(recv.op.bytes) + " bytes: the ranks disagree on the call";
}

// The header of peer `from`'s next message has arrived: its posted receive, or an early arrival kept for one.
void TcpMesh::State::on_header(int from, const FrameHeader& h) {
  Peer& p = peers[std::size_t(from)];
  const Key key{h.context, int(h.tag), from};
  std::shared_ptr<Msg> m;
  bool mismatched = false;
  if (auto it = posted.find(key); it != posted.end() && !it->second.empty()) {
    m = it->second.front();
    it->second.pop_front();
    drop_if_empty(posted, it);
    if (m->op.bytes != h.bytes) {
      finish(m, size_mismatch(*m, h.bytes));
      m = nullptr, mismatched = true;
    }
  }
  if (h.magic == kPullMagic) return on_pull(from, h, m, mismatched);
  if (!m) {
    m = std::make_shared<Msg>();
    m->op = {false, nullptr, std::size_t(h.bytes), from, from, h.context, int(h.tag)};
    m->own.resize(m->op.bytes);
    m->op.buf = m->own.data();
    if (!mismatched) early[key].push_back(m);  // a mismatched one is read and dropped
  }
  p.in = m;
  if (h.bytes == 0) complete_in(from);
}

void TcpMesh::State::complete_in(int from) {
  std::shared_ptr<Msg> m = std::move(peers[std::size_t(from)].in);
  m->complete = true;
  if (m->batch) return finish(m);
  if (std::shared_ptr<Msg> w = std::move(m->waiter)) {
    if (w->op.bytes) std::memcpy(w->op.buf, m->op.buf, w->op.bytes);
    w->early = nullptr;
    finish(w);
  }
}

ssize_t TcpMesh::State::read_some(Peer& p, char* dst, std::size_t n) {
  if (!p.shm()) return ::recv(p.fd, dst, n, MSG_DONTWAIT);
  const std::size_t k = p.in_ring.read(dst, n);
  if (k == 0) return errno = EAGAIN, -1;
  if (p.in_ring.header().writer_sleeping.load()) ring_doorbell(p);  // room for a writer waiting for it
  return ssize_t(k);
}

ssize_t TcpMesh::State::write_some(Peer& p, const iovec* pieces, int n) {
  if (!p.shm()) {
    msghdr msg{};
    msg.msg_iov = const_cast<iovec*>(pieces);
    msg.msg_iovlen = std::size_t(n);
    return ::sendmsg(p.fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
  }
  const std::size_t k = p.out_ring.write(pieces, n);
  if (k == 0) return errno = EAGAIN, -1;
  if (p.out_ring.header().reader_sleeping.load()) ring_doorbell(p);
  return ssize_t(k);
}

// A ring peer's socket carries doorbells only, and its end is the peer's: drained here (by the I/O thread); false
// once the peer's end was found (after what it wrote before it ended has been read).
bool TcpMesh::State::drain_doorbells(int from) {
  Peer& p = peers[std::size_t(from)];
  char bells[64];
  for (;;) {
    const ssize_t k = ::recv(p.fd, bells, sizeof bells, MSG_DONTWAIT);
    if (k > 0) continue;
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return true;
    if (p.in_ring.has_data()) return true;  // read what the peer wrote before it ended first
    close_peer(from, closed_how(k == 0 ? 0 : errno));
    return false;
  }
}

// The bytes that peer `from` sent, through its ring or its socket, into the message arriving now.
void TcpMesh::State::pump_in(int from) {
  Peer& p = peers[std::size_t(from)];
  while (p.open) {
    char* dst;
    std::size_t want;
    if (!p.in) {
      dst = reinterpret_cast<char*>(&p.in_header) + p.header_done;
      want = sizeof(FrameHeader) - p.header_done;
    } else {
      dst = p.in->op.buf + p.in->done;
      want = p.in->op.bytes - p.in->done;
    }
    const ssize_t k = read_some(p, dst, want);
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (k <= 0) return close_peer(from, closed_how(k == 0 ? 0 : errno));
    moved += std::uint64_t(k);
    if (!p.in) {
      p.header_done += std::size_t(k);
      if (p.header_done < sizeof(FrameHeader)) continue;
      p.header_done = 0;
      const std::uint32_t magic = p.in_header.magic;
      const bool pulls = p.shm() && (magic == kPullMagic || magic == kPulledMagic);
      if ((magic != kFrameMagic && !pulls) || p.in_header.bytes > kMaxFrameBytes)
        return close_peer(from, "sent bytes that are not a message frame");
      if (magic == kPulledMagic) on_pulled(from);
      else on_header(from, p.in_header);
    } else if ((p.in->done += std::size_t(k)) == p.in->op.bytes) {
      complete_in(from);
    }
  }
}

void TcpMesh::State::pump_send(int to) {
  Peer& p = peers[std::size_t(to)];
  while (p.open && !p.sends.empty()) {
    Msg& m = *p.sends.front();
    iovec iov[2];
    int n = 0;
    if (m.header_done < sizeof(FrameHeader))
      iov[n++] = {reinterpret_cast<char*>(&m.header) + m.header_done, sizeof(FrameHeader) - m.header_done};
    const bool pull = m.header.magic != kFrameMagic;  // a pull or pulled frame: the header alone
    if (m.done < m.op.bytes && !pull) iov[n++] = {m.op.buf + m.done, m.op.bytes - m.done};
    ssize_t k = n ? write_some(p, iov, n) : 0;
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (k < 0) return close_peer(to, closed_how(errno));
    moved += std::uint64_t(k);
    const std::size_t head = std::min(std::size_t(k), sizeof(FrameHeader) - m.header_done);
    m.header_done += head;
    m.done += std::size_t(k) - head;
    if (m.header_done == sizeof(FrameHeader) && (pull || m.done == m.op.bytes)) {
      std::shared_ptr<Msg> sent = std::move(p.sends.front());
      p.sends.pop_front();
      if (sent->header.magic == kPullMagic) p.pulled.push_back(std::move(sent));  // done once pulled
      else finish(sent);
    }
  }
}

// Peer `who`'s connection ended: everything still waiting on it fails, naming the peer; what already arrived stays.
void TcpMesh::State::close_peer(int who, const std::string& how) {
  Peer& p = peers[std::size_t(who)];
  if (!p.open) return;
  p.open = false;
  p.closed_why = "rank " + std::to_string(rank) + with_host(rank) + ": the connection to rank " + std::to_string(who) +
                 with_host(who) + " " + how +
                 " (that process ended or failed)";
  for (auto& m : p.sends) finish(m, p.closed_why);
  for (auto& m : p.pulled) finish(m, p.closed_why);
  p.sends.clear();
  p.pulled.clear();
  if (std::shared_ptr<Msg> m = std::move(p.in)) {
    finish(m, p.closed_why);
    if (m->waiter) finish(m->waiter, p.closed_why);
  }
  for (auto it = posted.begin(); it != posted.end();) {
    if (std::get<2>(it->first) != who) {
      ++it;
      continue;
    }
    for (auto& m : it->second) finish(m, p.closed_why);
    it = posted.erase(it);
  }
}

void TcpMesh::State::cancel(Batch& batch) {
  for (const auto& m : batch.msgs) {
    if (m->batch != &batch) continue;
    m->batch = nullptr;
    Peer& p = peers[std::size_t(m->op.peer)];
    if (m->op.send) {
      auto it = std::find(p.sends.begin(), p.sends.end(), m);
      if (it == p.sends.end()) continue;
      if (m->header_done == 0) {
        p.sends.erase(it);
      } else {  // partly written: the rest goes from a copy, so the frames that follow stay whole
        m->own.assign(m->op.buf, m->op.buf + m->op.bytes);
        m->op.buf = m->own.data();
      }
    } else if (m->early) {
      m->early->waiter = nullptr;
    } else if (p.in == m) {  // arriving: the rest lands in a buffer of its own
      m->own.resize(m->op.bytes);
      m->op.buf = m->own.data();
    } else if (auto q = posted.find(Key{m->op.context, m->op.tag, m->op.peer}); q != posted.end()) {
      q->second.erase(std::remove(q->second.begin(), q->second.end(), m), q->second.end());
      drop_if_empty(posted, q);
    }
  }
  batch.left = 0;
}

void TcpMesh::State::wake_io() {
  const char b = 1;
  [[maybe_unused]] ssize_t ignored = write(wake[1], &b, 1);
}

// Before the I/O thread sleeps: ring peers are told to ring the doorbell for new data (and for room, when sends
// wait for it). True when there is work already, so that it must not sleep.
bool TcpMesh::State::prepare_to_sleep() {
  bool work = false;
  if (pollers > 0) return false;  // a caller moves the rings' bytes and wakes this thread when it stops
  for (Peer& p : peers) {
    if (!p.open || !p.shm()) continue;
    p.in_ring.header().reader_sleeping.store(1);
    work = work || p.in_ring.has_data();
    if (p.sends.empty()) continue;
    p.out_ring.header().writer_sleeping.store(1);
    work = work || p.out_ring.has_room();
  }
  return work;
}

// The I/O thread looks at the rings every millisecond without doorbells while they are busy (a doorbell is a
// system call for the writer and a wakeup here, per message), and asks for doorbells and sleeps once
// kQuietPolls looks in a row found nothing to move and no caller waits.
void TcpMesh::State::run_io() {
  constexpr int kQuietPolls = 20;
  std::vector<pollfd> fds;
  std::vector<int> who;
  int quiet = 0;
  for (;;) {
    int timeout_ms = 1;
    std::uint64_t before = 0;
    {
      std::lock_guard lock(mu);
      if (stop) return;
      poll_list(fds, who);
      if (std::exchange(activity, false)) quiet = 0;
      const bool armed = shm_peers == 0 || (quiet >= kQuietPolls && pollers == 0);
      const bool work = armed && shm_peers > 0 && prepare_to_sleep();
      long_sleep = armed && !work;
      timeout_ms = !armed ? 1 : work ? 0 : 1000;
      before = moved;
    }
    const int ready = poll(fds.data(), nfds_t(fds.size()), timeout_ms);
    std::lock_guard lock(mu);
    long_sleep = false;
    after_poll(fds, who, ready);
    quiet = moved != before ? 0 : quiet + 1;
  }
}

// The wake pipe, then every open connection: for reading, and for room to write what waits to be written.
void TcpMesh::State::poll_list(std::vector<pollfd>& fds, std::vector<int>& who) const {
  fds.assign(1, pollfd{wake[0], POLLIN, 0});
  who.assign(1, -1);
  for (int q = 0; q < int(peers.size()); ++q) {
    const Peer& p = peers[std::size_t(q)];
    if (!p.open || p.fd < 0) continue;
    // A ring peer's socket is always writable: room in its ring is looked for, or comes by doorbell.
    fds.push_back({p.fd, short(POLLIN | (p.sends.empty() || p.shm() ? 0 : POLLOUT)), 0});
    who.push_back(q);
  }
}

void TcpMesh::State::after_poll(const std::vector<pollfd>& fds, const std::vector<int>& who, int ready) {
  for (Peer& p : peers)
    if (p.shm()) p.in_ring.header().reader_sleeping.store(0), p.out_ring.header().writer_sleeping.store(0);
  char drain[64];
  while (read(wake[0], drain, sizeof drain) > 0) {
  }
  for (std::size_t i = 1; i < fds.size(); ++i) {
    const int q = who[i];
    const bool shm = peers[std::size_t(q)].shm();
    if (shm || (ready > 0 && (fds[i].revents & (POLLIN | POLLHUP | POLLERR)))) pump_recv(q);
    if (shm || (ready > 0 && (fds[i].revents & POLLOUT))) pump_send(q);
  }
}

}  // namespace parbench
