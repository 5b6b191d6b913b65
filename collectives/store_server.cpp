// The rendezvous store's server: one Boost.Asio thread, a session per connection, reading one request at a time
// (a rank waits for each reply) and answering gets when their key is set.
#include <utility>  // before Boost.Asio, whose awaitable.hpp uses std::exchange

#include <boost/asio.hpp>

#include <atomic>
#include <cstdio>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "base/error.h"
#include "collectives/tcp_store.h"

namespace parbench {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using store::Op;
using store::Reply;
using store::Request;

namespace {
class Session;
}

struct StoreServer::Impl {
  Impl(std::string t, int w, double hello_s) : token(std::move(t)), world_size(w), hello_timeout_s(hello_s) {}
  asio::io_context io;
  tcp::acceptor acceptor{io};
  std::string token;
  int world_size;
  double hello_timeout_s;
  std::map<std::string, std::string> table;
  std::map<std::string, std::vector<std::shared_ptr<Session>>> waiting;  // gets parked until their key is set
  std::set<int> joined;                                                // ranks with a live session
  std::atomic<int> dropped{0};
  int port = 0;  // as bound
  std::thread thread;

  void accept();
};

namespace {

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, StoreServer::Impl& server)
      : socket_(std::move(socket)), server_(server), hello_timer_(server.io) {}

  void start() {
    boost::system::error_code ec;
    const auto peer = socket_.remote_endpoint(ec);
    peer_ = ec ? std::string("an unknown address") : peer.address().to_string() + ":" + std::to_string(peer.port());
    hello_timer_.expires_after(std::chrono::milliseconds(long(server_.hello_timeout_s * 1000)));
    hello_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& e) {
      if (!e && self->rank_ < 0) self->drop("no hello within the time allowed");
    });
    read_request();
  }

  // Answers a get that was waiting for its key.
  void answer(const std::string& value) { send({true, value}); }

 private:
  void read_request() {
    asio::async_read(socket_, asio::buffer(prefix_), [self = shared_from_this()](auto ec, std::size_t) {
      if (ec) return self->close();
      std::string why;
      const auto n = store::frame_length(self->prefix_, why);
      if (!n) return self->drop(why);
      self->body_.resize(*n);
      asio::async_read(self->socket_, asio::buffer(self->body_), [self](auto ec2, std::size_t) {
        if (ec2) return self->close();
        self->handle();
      });
    });
  }

  void handle() {
    std::string why;
    const std::optional<Request> r = store::decode_request(body_, why);
    if (!r) return drop(why);
    if (rank_ < 0) return r->op == Op::hello ? join(*r) : drop("a request before its hello");
    switch (r->op) {
      case Op::hello: return drop("a second hello");
      case Op::set: {
        server_.table[r->key] = r->value;
        auto parked = server_.waiting.extract(r->key);
        if (!parked.empty())
          for (auto& waiter : parked.mapped()) waiter->answer(r->value);
        return send({true, {}});
      }
      case Op::get: {
        if (auto it = server_.table.find(r->key); it != server_.table.end()) return send({true, it->second});
        server_.waiting[r->key].push_back(shared_from_this());  // its only owner until answered
        return;
      }
      case Op::add: {
        std::string& v = server_.table[r->key];
        const std::int64_t now = store::parse_int(v).value_or(0) + *store::parse_int(r->value);
        v = std::to_string(now);
        return send({true, v});
      }
    }
  }

  // A hello from a rank of this job joins it; one from elsewhere gets the reason, then the connection closes.
  void join(const Request& r) {
    std::string why;
    const auto hello = store::parse_hello(r.value, why);
    if (!hello) return drop(why);
    const auto [rank, world] = *hello;
    if (r.key != server_.token) return refuse("a wrong job token (a rank of another job?)");
    if (world != server_.world_size)
      return refuse("rank " + std::to_string(rank) + " was started for " + std::to_string(world) +
                    " ranks, the store for " + std::to_string(server_.world_size) + " (WORLD_SIZE differs)");
    if (!server_.joined.insert(rank).second)
      return refuse("rank " + std::to_string(rank) + " has already joined (two processes with the same RANK?)");
    rank_ = rank;
    hello_timer_.cancel();
    send({true, {}});
  }

  void send(Reply reply) {
    const std::string body = store::encode(reply);
    auto out = std::make_shared<std::string>(store::frame_prefix(body.size()) + body);
    asio::async_write(socket_, asio::buffer(*out), [self = shared_from_this(), out](auto ec, std::size_t) {
      if (ec) return self->close();
      self->read_request();
    });
  }

  void refuse(const std::string& why) {
    log(why);
    const std::string body = store::encode(Reply{false, why});
    auto out = std::make_shared<std::string>(store::frame_prefix(body.size()) + body);
    asio::async_write(socket_, asio::buffer(*out), [self = shared_from_this(), out](auto, std::size_t) {
      self->close();
    });
  }

  void drop(const std::string& why) {
    log(why);
    close();
  }

  void log(const std::string& why) {
    ++server_.dropped;
    std::fprintf(stderr, "parbench store: dropped a connection from %s: %s\n", peer_.c_str(), why.c_str());
  }

  void close() {
    if (closed_) return;
    closed_ = true;
    if (rank_ >= 0) server_.joined.erase(rank_);
    hello_timer_.cancel();
    boost::system::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
  }

  tcp::socket socket_;
  StoreServer::Impl& server_;
  asio::steady_timer hello_timer_;
  std::string peer_;
  unsigned char prefix_[4] = {};
  std::string body_;
  int rank_ = -1;
  bool closed_ = false;
};

}  // namespace

void StoreServer::Impl::accept() {
  acceptor.async_accept([this](const boost::system::error_code& ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted) return;
    if (!ec) std::make_shared<Session>(std::move(socket), *this)->start();
    accept();
  });
}

StoreServer::StoreServer(int port, std::string token, int world_size, double hello_timeout_s)
    : impl_(std::make_shared<Impl>(std::move(token), world_size, hello_timeout_s)) {
  try {
    const tcp::endpoint at(tcp::v4(), std::uint16_t(port));
    impl_->acceptor.open(at.protocol());
    impl_->acceptor.set_option(tcp::acceptor::reuse_address(true));
    impl_->acceptor.bind(at);
    impl_->acceptor.listen();
    impl_->port = impl_->acceptor.local_endpoint().port();
  } catch (const boost::system::system_error& e) {
    throw Error("the rendezvous store cannot listen on port " + std::to_string(port) + ": " + e.what());
  }
  impl_->accept();
  impl_->thread = std::thread([impl = impl_] { impl->io.run(); });
}

StoreServer::~StoreServer() {
  asio::post(impl_->io, [impl = impl_.get()] { impl->io.stop(); });
  impl_->thread.join();
}

int StoreServer::port() const { return impl_->port; }
int StoreServer::dropped() const { return impl_->dropped.load(); }

}  // namespace parbench
