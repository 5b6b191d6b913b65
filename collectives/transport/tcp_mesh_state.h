// The TCP mesh's internals, shared by its engine (tcp_mesh.cpp) and its connection setup (tcp_mesh_connect.cpp).
#pragma once
#include <fcntl.h>
#include <poll.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "collectives/transport/shm_ring.h"
#include "collectives/transport/tcp_mesh.h"
#include "collectives/transport/transport.h"

namespace parbench {

// Every message starts with this header (host byte order: the ranks of one job run one architecture). The magic
// says which kind of frame it is and catches a stream that lost its framing; the length bound a corrupted one.
struct FrameHeader {
  std::uint64_t context;
  std::uint32_t tag;
  std::uint32_t magic;
  std::uint64_t bytes;
  std::uint64_t source;  // a pull frame: where the message lies in the sender's memory
};
inline constexpr std::uint32_t kFrameMagic = 0x50424d31;   // "PBM1": the message's bytes follow
// Single copy between ring peers (see shm_ring.h): a message of at least TcpMesh::kPullMinBytes to a peer that can
// read this process's memory goes as a pull frame (no bytes follow); the receiver copies it straight from `source`
// into its receive and answers with a pulled frame, which completes the oldest pulled send (its buffer stays put
// until then).
inline constexpr std::uint32_t kPullMagic = 0x50424d50;    // "PBMP"
inline constexpr std::uint32_t kPulledMagic = 0x50424d41;  // "PBMA"
inline constexpr std::uint64_t kMaxFrameBytes = std::uint64_t(1) << 40;

// A send, a posted receive, or an early arrival (a message read before its receive was posted).
struct Msg {
  TcpMesh::Op op;
  TcpMesh::Batch* batch = nullptr;  // null once finished, taken back, or for an early arrival
  std::size_t done = 0;             // payload bytes moved
  FrameHeader header{};             // sends: what goes first
  std::size_t header_done = 0;
  std::vector<char> own;            // an early arrival's bytes; a taken-back message's remaining buffer
  bool complete = false;            // an early arrival has all its bytes
  std::shared_ptr<Msg> waiter;      // an early arrival: the receive posted while it was still arriving
  std::uint64_t pull_from = 0;      // an early arrival by pull frame: where its bytes lie in the sender's memory
  Msg* early = nullptr;             // a receive: the early arrival it waits on
};

class TcpMesh::Batch {
 public:
  int left = 0;           // ops not finished
  std::string error;      // the first failure
  std::vector<std::shared_ptr<Msg>> msgs;
};

struct Peer {
  int fd = -1;  // the connection; with rings, only their doorbells and the peer's end
  ShmRing in_ring, out_ring;  // a peer of this node: the messages' bytes, both ways
  bool shm() const { return bool(in_ring); }
  bool open = true;
  std::string closed_why;
  std::deque<std::shared_ptr<Msg>> sends;  // written in order
  std::deque<std::shared_ptr<Msg>> pulled;  // sent by pull frame, waiting for their pulled frames, in order
  FrameHeader in_header{};
  std::size_t header_done = 0;
  std::shared_ptr<Msg> in;  // the message arriving now
};

// Which rings a polling caller watches while it lets go of the lock: the open ring peers' incoming ones, and the
// outgoing ones of those with sends waiting for room (bit masks for the first 64 peers; every one beyond).
struct RingWatch {
  std::uint64_t open = 0, sending = 0;
  bool sending_beyond = false;
  void add(std::size_t q, const Peer& p) {
    if (!p.shm() || !p.open) return;
    if (q < 64) open |= std::uint64_t(1) << q, sending |= std::uint64_t(!p.sends.empty()) << q;
    else sending_beyond = sending_beyond || !p.sends.empty();
  }
  bool data(std::size_t q) const { return q >= 64 || (open >> q & 1); }
  bool room(std::size_t q) const { return q >= 64 ? sending_beyond : (sending >> q & 1) != 0; }
};

struct TcpMesh::State {
  using Key = std::tuple<std::uint64_t, int, int>;  // context, tag, peer
  int rank = 0;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Peer> peers;  // by mesh rank; this rank's own entry unused
  std::map<Key, std::deque<std::shared_ptr<Msg>>> posted, early;  // an empty queue may stay (drop_if_empty)
  int shm_peers = 0;
  long watch_ns = 0;       // how long a polling caller watches its rings before it yields (see watch_rings)
  int pollers = 0;         // callers in poll_rings
  bool activity = false;   // a caller posted or polled since the I/O thread last looked
  bool long_sleep = false;  // the I/O thread sleeps until a doorbell or a socket wakes it
  std::uint64_t moved = 0;  // bytes read and written so far
  std::vector<std::shared_ptr<Msg>> spare;  // finished messages for new_msg
  int wake[2] = {-1, -1};
  bool stop = false;
  std::thread io;

  using Queues = std::map<Key, std::deque<std::shared_ptr<Msg>>>;
  // An emptied queue goes unless it is one of the Communicator's channels (tags below kFirstMatchedTag, a few per
  // group and peer): those stay, so that a message costs no allocation of a map node and a deque.
  static void drop_if_empty(Queues& queues, Queues::iterator it) {
    if (it->second.empty() && std::get<1>(it->first) >= kFirstMatchedTag) queues.erase(it);
  }
  std::shared_ptr<Msg> new_msg();
  void recycle(TcpMesh::Batch& batch);
  void finish(const std::shared_ptr<Msg>& m, const std::string& error = {});
  void queue_send(const std::shared_ptr<Msg>& m);
  void send_to_self(const std::shared_ptr<Msg>& m);
  void post_recv(const std::shared_ptr<Msg>& m);
  std::string size_mismatch(const Msg& recv, std::size_t arrived) const;
  void on_header(int from, const FrameHeader& h);
  void offer_pull(Msg& m, const Peer& p) const;
  void on_pull(int from, const FrameHeader& h, const std::shared_ptr<Msg>& recv, bool mismatched);
  void pull_into(int from, const std::shared_ptr<Msg>& recv, std::uint64_t source);
  void queue_pulled(int to);
  void on_pulled(int from);
  void complete_in(int from);
  ssize_t read_some(Peer& p, char* dst, std::size_t n);
  ssize_t write_some(Peer& p, const iovec* pieces, int n);
  bool drain_doorbells(int from);
  void pump_recv(int from) {  // doorbells (ring peers), then pump_in
    if (!peers[std::size_t(from)].shm() || drain_doorbells(from)) pump_in(from);
  }
  void pump_in(int from);
  void pump_ring(int q) { pump_in(q), pump_send(q); }  // a ring peer's bytes both ways, no system call
  void pump_send(int to);
  void close_peer(int who, const std::string& how);
  void cancel(TcpMesh::Batch& batch);
  void wake_io();
  void poll_rings(std::unique_lock<std::mutex>& lock, TcpMesh::Deadline deadline, const std::function<bool()>& over);
  void watch_rings(const RingWatch& watch) const;
  bool prepare_to_sleep();
  void poll_list(std::vector<pollfd>& fds, std::vector<int>& who) const;
  void after_poll(const std::vector<pollfd>& fds, const std::vector<int>& who, int ready);
  void run_io();
};

}  // namespace parbench
