// The rendezvous store's server: one thread polling non-blocking sockets (POSIX only, no library), a session per
// connection. Requests are answered in order; a get whose key is not set yet parks its session, which handles
// nothing more until a set answers it (a rank waits for each reply anyway).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "base/error.h"
#include "collectives/launch/tcp_store.h"

namespace parbench {

using store::Op;
using store::Reply;
using store::Request;

namespace {

using Clock = std::chrono::steady_clock;

struct Session {
  int fd = -1;
  std::string peer;
  Clock::time_point hello_deadline;
  std::string in;            // bytes read, not yet handled
  std::string out;           // replies not yet written
  int rank = -1;             // set by the hello
  bool parked = false;       // a get waits for its key
  bool close_after = false;  // refused: closed once `out` is written
};

std::string peer_of(int fd) {
  sockaddr_in a{};
  socklen_t n = sizeof a;
  char text[INET_ADDRSTRLEN] = {};
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&a), &n) != 0 || !inet_ntop(AF_INET, &a.sin_addr, text, sizeof text))
    return "an unknown address";
  return std::string(text) + ":" + std::to_string(ntohs(a.sin_port));
}

}  // namespace

struct StoreServer::Impl {
  Impl(std::string t, int w, double hello_s) : token(std::move(t)), world_size(w), hello_timeout_s(hello_s) {}
  ~Impl() {
    for (auto& [id, s] : sessions) ::close(s.fd);
    for (int fd : {listen_fd, wake[0], wake[1]})
      if (fd >= 0) ::close(fd);
  }

  std::string token;
  int world_size;
  double hello_timeout_s;
  int listen_fd = -1;
  int wake[2] = {-1, -1};  // a byte written to wake[1] ends the loop
  std::atomic<bool> stopping{false};
  std::map<std::string, std::string> table;
  std::map<std::string, std::vector<std::uint64_t>> waiting;  // parked sessions by the key they wait for
  std::map<std::uint64_t, Session> sessions;                  // by id: an fd may be reused, an id never is
  std::set<int> joined;                                       // ranks with a live session
  std::uint64_t next_id = 0;
  std::atomic<int> dropped{0};
  int port = 0;  // as bound
  std::thread thread;

  void run();
  void accept_all();
  void read_from(std::uint64_t id);
  void write_to(Session& s);
  void handle_frames(std::uint64_t id);
  void handle(std::uint64_t id, const Request& r);
  void join(std::uint64_t id, const Request& r);
  void close(std::uint64_t id);

  void send(Session& s, const Reply& reply) {
    const std::string body = store::encode(reply);
    s.out += store::frame_prefix(body.size()) + body;
  }
  // Another job's rank, or a rank that cannot join: the reason goes back, then the connection closes.
  void refuse(Session& s, const std::string& why) {
    log(s, why);
    send(s, Reply{false, why});
    s.close_after = true;
  }
  void drop(std::uint64_t id, const std::string& why) {
    log(sessions.at(id), why);
    close(id);
  }
  void log(const Session& s, const std::string& why) {
    ++dropped;
    std::fprintf(stderr, "parbench store: dropped a connection from %s: %s\n", s.peer.c_str(), why.c_str());
  }
};

void StoreServer::Impl::close(std::uint64_t id) {
  auto it = sessions.find(id);
  if (it == sessions.end()) return;
  if (it->second.rank >= 0) joined.erase(it->second.rank);
  ::shutdown(it->second.fd, SHUT_RDWR);
  ::close(it->second.fd);
  sessions.erase(it);  // an id left in `waiting` is skipped when its key is set
}

void StoreServer::Impl::accept_all() {
  for (;;) {
    const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;  // EAGAIN: none left; anything else loses that connection only
    Session s;
    s.fd = fd;
    s.peer = peer_of(fd);
    s.hello_deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(hello_timeout_s));
    sessions.emplace(next_id++, std::move(s));
  }
}

void StoreServer::Impl::read_from(std::uint64_t id) {
  Session& s = sessions.at(id);
  char buf[16384];
  for (;;) {
    const ssize_t n = ::recv(s.fd, buf, sizeof buf, 0);
    if (n > 0) {
      s.in.append(buf, std::size_t(n));
      if (s.in.size() > 2 * (4 + std::size_t(store::kMaxFrame)))  // a rank sends one request, then waits
        return drop(id, "more than a request sent ahead of its reply");
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n < 0 && errno == EINTR) continue;
    return close(id);  // the peer closed, or the connection failed
  }
  handle_frames(id);
}

void StoreServer::Impl::write_to(Session& s) {
  while (!s.out.empty()) {
    const ssize_t n = ::send(s.fd, s.out.data(), s.out.size(), MSG_NOSIGNAL);
    if (n > 0) {
      s.out.erase(0, std::size_t(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return;  // EAGAIN: the rest when poll says writable; a failure shows in the next read
    }
  }
}

// Handles the whole frames read so far, in order, until one parks the session or it closes.
void StoreServer::Impl::handle_frames(std::uint64_t id) {
  for (;;) {
    auto it = sessions.find(id);
    if (it == sessions.end()) return;
    Session& s = it->second;
    if (s.parked || s.close_after || s.in.size() < 4) return;
    std::string why;
    const auto n = store::frame_length(reinterpret_cast<const unsigned char*>(s.in.data()), why);
    if (!n) return drop(id, why);
    if (s.in.size() < 4 + std::size_t(*n)) return;
    const std::string body = s.in.substr(4, *n);
    s.in.erase(0, 4 + std::size_t(*n));
    const std::optional<Request> r = store::decode_request(body, why);
    if (!r) return drop(id, why);
    handle(id, *r);
  }
}

void StoreServer::Impl::handle(std::uint64_t id, const Request& r) {
  Session& s = sessions.at(id);
  if (s.rank < 0) {
    if (r.op != Op::hello) return drop(id, "a request before its hello");
    return join(id, r);
  }
  switch (r.op) {
    case Op::hello:
      return drop(id, "a second hello");
    case Op::set: {
      table[r.key] = r.value;
      send(s, {true, {}});
      auto parked = waiting.extract(r.key);
      if (parked.empty()) return;
      for (const std::uint64_t waiter : parked.mapped()) {
        auto w = sessions.find(waiter);
        if (w == sessions.end()) continue;  // closed while it waited
        w->second.parked = false;
        send(w->second, {true, r.value});
        handle_frames(waiter);  // anything it sent meanwhile; a drop there erases only that session
      }
      return;
    }
    case Op::get: {
      if (auto it = table.find(r.key); it != table.end()) return send(s, {true, it->second});
      s.parked = true;
      waiting[r.key].push_back(id);
      return;
    }
    case Op::add: {
      std::string& v = table[r.key];
      v = std::to_string(store::parse_int(v).value_or(0) + *store::parse_int(r.value));
      return send(s, {true, v});
    }
  }
}

// A hello from a rank of this job joins it; one from elsewhere gets the reason, then the connection closes.
void StoreServer::Impl::join(std::uint64_t id, const Request& r) {
  Session& s = sessions.at(id);
  std::string why;
  const auto hello = store::parse_hello(r.value, why);
  if (!hello) return drop(id, why);
  const auto [rank, world] = *hello;
  if (r.key != token) return refuse(s, "a wrong job token (a rank of another job?)");
  if (world != world_size)
    return refuse(s, "rank " + std::to_string(rank) + " was started for " + std::to_string(world) +
                         " ranks, the store for " + std::to_string(world_size) + " (WORLD_SIZE differs)");
  if (!joined.insert(rank).second)
    return refuse(s, "rank " + std::to_string(rank) + " has already joined (two processes with the same RANK?)");
  s.rank = rank;
  send(s, {true, {}});
}

void StoreServer::Impl::run() {
  std::vector<pollfd> fds;
  std::vector<std::uint64_t> ids;  // the session of fds[i + 2]
  while (!stopping.load()) {
    fds.assign({{listen_fd, POLLIN, 0}, {wake[0], POLLIN, 0}});
    ids.clear();
    auto next_deadline = Clock::time_point::max();
    for (auto& [id, s] : sessions) {
      fds.push_back({s.fd, short(POLLIN | (s.out.empty() ? 0 : POLLOUT)), 0});
      ids.push_back(id);
      if (s.rank < 0) next_deadline = std::min(next_deadline, s.hello_deadline);
    }
    int wait_ms = -1;
    if (next_deadline != Clock::time_point::max()) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(next_deadline - Clock::now()).count();
      wait_ms = int(std::clamp<long long>(left, 0, 60000));
    }
    if (::poll(fds.data(), fds.size(), wait_ms) < 0) {
      if (errno == EINTR) continue;
      std::fprintf(stderr, "parbench store: stopped serving: poll: %s\n", std::strerror(errno));
      return;  // the ranks' calls then end at their timeouts, naming the store
    }
    if (fds[1].revents) break;
    if (fds[0].revents & POLLIN) accept_all();
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const short ev = fds[i + 2].revents;
      auto it = sessions.find(ids[i]);
      if (!ev || it == sessions.end()) continue;
      if (ev & POLLOUT) write_to(it->second);
      if (ev & (POLLIN | POLLHUP | POLLERR)) read_from(ids[i]);
    }
    // Replies queued this round go out now where the socket takes them; refused sessions close once theirs is
    // written; silent ones at their hello deadline.
    const auto now = Clock::now();
    for (auto it = sessions.begin(); it != sessions.end();) {
      const std::uint64_t id = it->first;
      Session& s = it->second;
      ++it;
      write_to(s);
      if (s.close_after && s.out.empty())
        close(id);
      else if (s.rank < 0 && !s.close_after && now >= s.hello_deadline)
        drop(id, "no hello within the time allowed");
    }
  }
}

StoreServer::StoreServer(int port, std::string token, int world_size, double hello_timeout_s)
    : impl_(std::make_shared<Impl>(std::move(token), world_size, hello_timeout_s)) {
  Impl& m = *impl_;
  const auto fail = [&](const char* what) {
    const int e = errno;
    throw Error("the rendezvous store cannot listen on port " + std::to_string(port) + ": " + what + ": " +
                std::strerror(e));
  };
  m.listen_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (m.listen_fd < 0) fail("socket");
  const int one = 1;
  ::setsockopt(m.listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_addr.s_addr = htonl(INADDR_ANY);
  at.sin_port = htons(std::uint16_t(port));
  if (::bind(m.listen_fd, reinterpret_cast<sockaddr*>(&at), sizeof at) != 0) fail("bind");
  if (::listen(m.listen_fd, SOMAXCONN) != 0) fail("listen");
  socklen_t n = sizeof at;
  if (::getsockname(m.listen_fd, reinterpret_cast<sockaddr*>(&at), &n) != 0) fail("getsockname");
  m.port = ntohs(at.sin_port);
  if (::pipe2(m.wake, O_CLOEXEC) != 0) fail("pipe");
  m.thread = std::thread([impl = impl_] { impl->run(); });
}

StoreServer::~StoreServer() {
  impl_->stopping = true;
  const char byte = 0;
  while (::write(impl_->wake[1], &byte, 1) < 0 && errno == EINTR) {
  }
  impl_->thread.join();
}

int StoreServer::port() const { return impl_->port; }
int StoreServer::dropped() const { return impl_->dropped.load(); }

}  // namespace parbench
