// The rendezvous store's client: a blocking socket, every wait bounded by the rank's timeout.
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "base/error.h"
#include "collectives/launch/tcp_store.h"

namespace parbench {

using store::Op;
using store::Reply;
using store::Request;

namespace {

using Clock = std::chrono::steady_clock;

Clock::time_point deadline_after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

int ms_left(Clock::time_point deadline) {
  return int(std::max<long long>(
      0, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count()));
}

// One attempt at every address of host:port; the connected socket, or -1 with `why`.
int try_connect(const std::string& host, int port, std::string& why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int e = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); e != 0) {
    why = std::string("cannot resolve the host: ") + gai_strerror(e);
    return -1;
  }
  int fd = -1;
  for (addrinfo* a = found; a && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      why = std::strerror(errno);
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  return fd;
}

// Moves all `n` bytes through `fd` (send or receive) before the deadline; false on timeout, error or a closed peer.
template <class Io>
bool transfer_all(int fd, char* p, std::size_t n, Clock::time_point deadline, short events, Io io) {
  while (n > 0) {
    pollfd pfd{fd, events, 0};
    if (poll(&pfd, 1, ms_left(deadline)) <= 0) return false;
    const ssize_t k = io(fd, p, n);
    if (k <= 0) {
      if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      return false;
    }
    p += k, n -= std::size_t(k);
  }
  return true;
}

bool send_all(int fd, std::string data, Clock::time_point deadline) {
  return transfer_all(fd, data.data(), data.size(), deadline, POLLOUT,
                      [](int f, char* p, std::size_t n) { return ::send(f, p, n, MSG_NOSIGNAL); });
}

bool recv_all(int fd, char* p, std::size_t n, Clock::time_point deadline) {
  return transfer_all(fd, p, n, deadline, POLLIN, [](int f, char* q, std::size_t m) { return ::recv(f, q, m, 0); });
}

}  // namespace

StoreClient::StoreClient(const std::string& host, int port, const std::string& token, int rank, int world_size,
                         double timeout_s)
    : where_(host + ":" + std::to_string(port)), rank_(rank), world_size_(world_size), timeout_s_(timeout_s) {
  const auto deadline = deadline_after(timeout_s);
  std::string why;
  while ((fd_ = try_connect(host, port, why)) < 0) {  // rank 0's store may not listen yet
    if (Clock::now() >= deadline)
      fail("cannot connect within " + std::to_string(timeout_s) + " s (" + why +
           "; is MASTER_ADDR/MASTER_PORT right and rank 0 running?)");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  call({Op::hello, token, std::to_string(rank) + " " + std::to_string(world_size)}, "joining the job");
}

StoreClient::~StoreClient() {
  if (fd_ >= 0) close(fd_);
}

void StoreClient::fail(const std::string& what) const {
  throw Error("rendezvous store at " + where_ + ", rank " + std::to_string(rank_) + " of " +
              std::to_string(world_size_) + ": " + what);
}

Reply StoreClient::call(const Request& request, const std::string& what) {
  const auto deadline = deadline_after(timeout_s_);
  const std::string body = store::encode(request);
  if (!send_all(fd_, store::frame_prefix(body.size()) + body, deadline)) fail(what + ": the store went away");
  unsigned char prefix[4];
  if (!recv_all(fd_, reinterpret_cast<char*>(prefix), 4, deadline))
    fail(what + ": no answer within " + std::to_string(timeout_s_) + " s" +
         (request.op == Op::get ? " (no rank set the key: did every rank start, with the same WORLD_SIZE?)" : ""));
  std::string why;
  const auto n = store::frame_length(prefix, why);
  if (!n) fail(what + ": " + why);
  std::string reply_body(*n, '\0');
  if (!recv_all(fd_, reply_body.data(), reply_body.size(), deadline)) fail(what + ": the answer was cut short");
  const auto reply = store::decode_reply(reply_body, why);
  if (!reply) fail(what + ": " + why);
  if (!reply->ok) fail(what + ": refused: " + reply->value);
  return *reply;
}

void StoreClient::set(const std::string& key, const std::string& value) {
  call({Op::set, key, value}, "setting '" + key + "'");
}

std::string StoreClient::get(const std::string& key) { return call({Op::get, key, {}}, "waiting for '" + key + "'").value; }

std::int64_t StoreClient::add(const std::string& key, std::int64_t delta) {
  const Reply r = call({Op::add, key, std::to_string(delta)}, "adding to '" + key + "'");
  const auto v = store::parse_int(r.value);
  if (!v) fail("adding to '" + key + "': the store answered '" + r.value + "', not a number");
  return *v;
}

std::string StoreClient::local_address() const {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  char host[NI_MAXHOST] = "";
  if (getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0 ||
      getnameinfo(reinterpret_cast<sockaddr*>(&a), len, host, sizeof host, nullptr, 0, NI_NUMERICHOST) != 0)
    fail(std::string("cannot read this end's address: ") + std::strerror(errno));
  return host;
}

void StoreClient::barrier() {
  const std::string key = "parbench/barrier/" + std::to_string(barriers_++);
  if (add(key, 1) == world_size_) set(key + "/done", "");
  get(key + "/done");
}

}  // namespace parbench
