// The TCP mesh's setup: each rank listens, publishes its address in the rendezvous store, connects to the lower
// ranks and accepts the higher ones; a connection must present the job's token and a rank still expected.
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <thread>

#include "collectives/transport/shm_ring.h"
#include "collectives/transport/tcp_mesh_state.h"
#include "collectives/launch/tcp_store.h"
#include "collectives/transport/transport.h"

namespace parbench {

namespace {

constexpr std::size_t kMaxHello = 512;
constexpr double kHelloSeconds = 10;  // a connection that says nothing for this long is not one of ours

int ms_left(Deadline deadline) {
  return int(std::max<long long>(
      0, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count()));
}

Deadline after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

bool io_all(int fd, char* p, std::size_t n, Deadline deadline, bool out) {
  while (n > 0) {
    pollfd pfd{fd, short(out ? POLLOUT : POLLIN), 0};
    if (poll(&pfd, 1, ms_left(deadline)) <= 0) return false;
    const ssize_t k = out ? ::send(fd, p, n, MSG_NOSIGNAL) : ::recv(fd, p, n, 0);
    if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (k <= 0) return false;
    p += k, n -= std::size_t(k);
  }
  return true;
}

struct Listener {
  int fd = -1;
  int port = 0;
};

// A socket listening on a free port of `address` (this rank's address as the store's host sees it).
Listener listen_on(const std::string& address, int rank) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST;
  addrinfo* found = nullptr;
  if (int e = getaddrinfo(address.c_str(), "0", &hints, &found); e != 0)
    throw Error("rank " + std::to_string(rank) + ": cannot use address " + address + ": " + gai_strerror(e));
  Listener l;
  l.fd = socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const bool ok = l.fd >= 0 && bind(l.fd, found->ai_addr, found->ai_addrlen) == 0 && listen(l.fd, SOMAXCONN) == 0;
  freeaddrinfo(found);
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (!ok || getsockname(l.fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    throw Error("rank " + std::to_string(rank) + ": cannot listen on " + address + ": " + std::strerror(errno));
  l.port = ntohs(a.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&a)->sin6_port
                                         : reinterpret_cast<sockaddr_in*>(&a)->sin_port);
  return l;
}

int connect_once(const std::string& host, const std::string& port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0) return -1;
  int fd = socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) != 0) close(fd), fd = -1;
  freeaddrinfo(found);
  return fd;
}

std::string hello_of(const std::string& token, int rank) {
  const std::string text = "parbench-mesh " + std::to_string(rank) + " " + token;
  const std::uint32_t n = std::uint32_t(text.size());
  return std::string(reinterpret_cast<const char*>(&n), 4) + text;
}

// Rank `rank` connects to lower rank `peer`, whose address the store holds, and presents itself.
int connect_to_lower(StoreClient& store, const std::string& token, int rank, int peer, Deadline deadline) {
  std::istringstream where(store.get("parbench/mesh/" + std::to_string(peer)));
  std::string host, port;
  where >> host >> port;
  const std::string me = "rank " + std::to_string(rank) + ": ", at = " at " + host + " port " + port;
  int fd = -1;
  while ((fd = connect_once(host, port)) < 0) {
    if (Clock::now() >= deadline)
      throw Error(me + "cannot connect to rank " + std::to_string(peer) + at + ": " + std::strerror(errno));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::string hello = hello_of(token, rank);
  char ack = 0;
  if (!io_all(fd, hello.data(), hello.size(), deadline, true) || !io_all(fd, &ack, 1, deadline, false) || ack != 'k') {
    close(fd);
    throw Error(me + "rank " + std::to_string(peer) + at + " did not accept the connection in time");
  }
  return fd;
}

// Reads a connection's hello: the rank it presents when it is one of this job's higher ranks not yet connected,
// else -1 with `why`.
int read_hello(int fd, const std::string& token, int rank, int size, const std::vector<int>& fds, Deadline deadline,
               std::string& why) {
  const Deadline hello_by = std::min(deadline, after(kHelloSeconds));
  std::uint32_t n = 0;
  if (!io_all(fd, reinterpret_cast<char*>(&n), 4, hello_by, false)) return why = "no hello in time", -1;
  if (n == 0 || n > kMaxHello) return why = "a hello of " + std::to_string(n) + " bytes", -1;
  std::string text(n, '\0');
  if (!io_all(fd, text.data(), n, hello_by, false)) return why = "a hello cut short", -1;
  std::istringstream in(text);
  std::string magic, peer_token;
  int peer = -1;
  in >> magic >> peer;
  if (!in || magic != "parbench-mesh") return why = "not a parbench rank", -1;
  std::getline(in >> std::ws, peer_token);
  if (peer_token != token) return why = "a wrong job token (a rank of another job?)", -1;
  if (peer <= rank || peer >= size) return why = "rank " + std::to_string(peer) + ", not one that connects here", -1;
  if (fds[std::size_t(peer)] >= 0) return why = "rank " + std::to_string(peer) + " a second time", -1;
  return peer;
}

// One message of the ring handshake: a status byte, then a name of at most 255 bytes.
bool send_note(int fd, char status, const std::string& name, Deadline deadline) {
  std::string note = std::string(1, status) + char(name.size()) + name;
  return io_all(fd, note.data(), note.size(), deadline, true);
}

bool recv_note(int fd, char& status, std::string& name, Deadline deadline) {
  char head[2];
  if (!io_all(fd, head, 2, deadline, false)) return false;
  status = head[0];
  name.assign(std::size_t(static_cast<unsigned char>(head[1])), '\0');
  return io_all(fd, name.data(), name.size(), deadline, false);
}

// Shared-memory rings with the peers of this node, in two rounds (every rank sends to all before it reads, so no
// rank waits on one that waits on it): each offers the ring it writes (or says it has none), maps the rings
// offered to it, then both sides say whether they have both; a pair uses rings only when both have. A peer that
// cannot keeps the socket; PARBENCH_SHM=off keeps it for all. PARBENCH_SHM_PULL=off keeps every message's bytes in
// the rings (no single copy from the sender's memory, see shm_ring.h).
std::vector<std::pair<ShmRing, ShmRing>> make_rings(const std::vector<int>& fds, const std::vector<bool>& same_node,
                                                    int rank, Deadline deadline) {
  const std::size_t n = fds.size();
  std::vector<std::pair<ShmRing, ShmRing>> rings(n);
  const char* off = std::getenv("PARBENCH_SHM");
  if (off && std::string(off) == "off") return rings;
  const char* pull = std::getenv("PARBENCH_SHM_PULL");
  const bool try_pull = !(pull && std::string(pull) == "off");
  std::vector<int> peers;
  for (std::size_t p = 0; p < n; ++p)
    if (same_node[p] && int(p) != rank) peers.push_back(int(p));
  const auto fail = [&](int p) {
    return Error("rank " + std::to_string(rank) + ": rank " + std::to_string(p) +
                 " stopped answering while the shared-memory rings were set up");
  };
  for (int p : peers) {
    const std::string name =
        "/parbench-" + std::to_string(getpid()) + "-" + std::to_string(rank) + "-" + std::to_string(p);
    try {
      rings[std::size_t(p)].second = ShmRing::create(name);
    } catch (const Error&) {  // no room in /dev/shm: this pair keeps its socket
    }
    if (!send_note(fds[std::size_t(p)], rings[std::size_t(p)].second ? 'r' : 'n', name, deadline)) throw fail(p);
  }
  for (int p : peers) {
    char status = 0;
    std::string name;
    if (!recv_note(fds[std::size_t(p)], status, name, deadline)) throw fail(p);
    try {
      if (status == 'r') rings[std::size_t(p)].first = ShmRing::open(name, try_pull);
    } catch (const Error&) {
    }
  }
  for (int p : peers) {
    const bool both = rings[std::size_t(p)].first && rings[std::size_t(p)].second;
    if (!send_note(fds[std::size_t(p)], both ? 'y' : 'n', "", deadline)) throw fail(p);
  }
  for (int p : peers) {
    char status = 0;
    std::string ignored;
    if (!recv_note(fds[std::size_t(p)], status, ignored, deadline)) throw fail(p);
    auto& [in, out] = rings[std::size_t(p)];
    out.unlink();  // mapped by the peer (or never to be): the name can go
    if (status != 'y' || !in || !out) in = ShmRing(), out = ShmRing();
  }
  return rings;
}

std::string missing_ranks(const std::vector<int>& fds, int from) {
  std::string s;
  for (int q = from; q < int(fds.size()); ++q)
    if (fds[std::size_t(q)] < 0) s += (s.empty() ? "" : ", ") + std::to_string(q);
  return s;
}

}  // namespace

std::shared_ptr<TcpMesh> TcpMesh::connect(StoreClient& store, const std::string& token, int rank, int size,
                                          const std::vector<bool>& same_node, double timeout_s) {
  const Deadline deadline = after(timeout_s);
  const std::string me = "rank " + std::to_string(rank) + ": ";
  const Listener l = listen_on(store.local_address(), rank);
  struct CloseListener {
    int fd;
    ~CloseListener() { close(fd); }
  } close_listener{l.fd};
  std::vector<int> fds(std::size_t(size), -1);
  try {
    store.set("parbench/mesh/" + std::to_string(rank), store.local_address() + " " + std::to_string(l.port));
    for (int p = 0; p < rank; ++p) fds[std::size_t(p)] = connect_to_lower(store, token, rank, p, deadline);
    for (int expected = size - 1 - rank; expected > 0;) {
      pollfd pfd{l.fd, POLLIN, 0};
      if (poll(&pfd, 1, ms_left(deadline)) <= 0)
        throw Error(me + "rank(s) " + missing_ranks(fds, rank + 1) + " never connected within " +
                    std::to_string(int(timeout_s)) + " s");
      const int fd = accept4(l.fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      std::string why;
      const int peer = read_hello(fd, token, rank, size, fds, deadline, why);
      const char ack = 'k';
      if (peer < 0 || !io_all(fd, const_cast<char*>(&ack), 1, deadline, true)) {
        std::fprintf(stderr, "parbench: rank %d dropped a connection to its mesh port: %s\n", rank, why.c_str());
        close(fd);
        continue;
      }
      fds[std::size_t(peer)] = fd, --expected;
    }
    const int one = 1;
    for (int fd : fds)
      if (fd >= 0) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto rings = make_rings(fds, same_node, rank, deadline);
    return std::shared_ptr<TcpMesh>(new TcpMesh(rank, size, fds, rings));
  } catch (...) {
    for (int fd : fds)
      if (fd >= 0) close(fd);
    throw;
  }
}

}  // namespace parbench
