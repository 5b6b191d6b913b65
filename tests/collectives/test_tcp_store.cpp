// The rendezvous store: its wire format, keys shared between ranks, barriers, and everything that is not a rank
// of this job (another job's token, random bytes, oversized frames, silence) dropped without harm.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <random>
#include <thread>
#include <vector>

#include "base/error.h"
#include "collectives/launch/tcp_store.h"

namespace parbench {
namespace {

using store::Op;

TEST(StoreProtocol, RequestsAndRepliesRoundTrip) {
  const store::Request r{Op::set, "nccl/id", std::string("\0\1\2", 3)};
  std::string why;
  EXPECT_EQ(store::decode_request(store::encode(r), why), r);
  const store::Reply reply{false, "why"};
  EXPECT_EQ(store::decode_reply(store::encode(reply), why), reply);
}

TEST(StoreProtocol, MalformedBodiesAreRefusedWithTheReason) {
  std::string why;
  EXPECT_FALSE(store::decode_request("", why));
  EXPECT_EQ(why, "an empty request");
  EXPECT_FALSE(store::decode_request(std::string(1, char(9)), why));
  EXPECT_EQ(why, "unknown request type 9");
  std::string body = store::encode(store::Request{Op::get, "key", ""});
  EXPECT_FALSE(store::decode_request(body.substr(0, body.size() - 1), why));  // cut inside its last field
  EXPECT_EQ(why, "a request whose fields run past its frame");
  EXPECT_FALSE(store::decode_request(body + "x", why));
  EXPECT_EQ(why, "a request with bytes after its fields");
  EXPECT_FALSE(store::decode_request(store::encode(store::Request{Op::add, "k", "1x"}), why));
  EXPECT_FALSE(store::decode_request(store::encode(store::Request{Op::get, std::string(2000, 'k'), ""}), why));
  EXPECT_EQ(why, "a key of 2000 bytes (at most 1024)");
  const unsigned char huge[4] = {0xff, 0xff, 0xff, 0x7f}, zero[4] = {0, 0, 0, 0};
  EXPECT_FALSE(store::frame_length(huge, why));
  EXPECT_EQ(why, "a frame of 2147483647 bytes (1 to 1048576 accepted)");
  EXPECT_FALSE(store::frame_length(zero, why));
  EXPECT_FALSE(store::parse_hello("3 2", why));
  EXPECT_FALSE(store::parse_hello("-1 2", why));
  EXPECT_EQ(store::parse_hello("1 2", why), (std::pair{1, 2}));
  EXPECT_EQ(store::parse_int("-42"), -42);
  EXPECT_FALSE(store::parse_int("+1"));
  EXPECT_FALSE(store::parse_int("99999999999999999999"));
}

// `n` ranks as threads, each with its own client, running `body(rank, client)`.
void with_ranks(const StoreServer& server, int n, const std::function<void(int, StoreClient&)>& body) {
  std::vector<std::thread> ranks;
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n), nullptr);
  for (int r = 0; r < n; ++r)
    ranks.emplace_back([&, r] {
      try {
        StoreClient c("127.0.0.1", server.port(), "job-1", r, n, 10);
        body(r, c);
      } catch (...) {
        errors[std::size_t(r)] = std::current_exception();
      }
    });
  for (auto& t : ranks) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

TEST(TcpStore, RanksShareKeysCountersAndBarriers) {
  StoreServer server(0, "job-1", 4);
  std::vector<std::string> seen(4);
  std::vector<std::int64_t> added(4);
  with_ranks(server, 4, [&](int rank, StoreClient& c) {
    if (rank == 0) c.set("id", "the-unique-id");
    seen[std::size_t(rank)] = c.get("id");  // waits until rank 0 set it
    added[std::size_t(rank)] = c.add("count", 10);
    c.barrier();
    EXPECT_EQ(c.add("count", 0), 40);  // every rank added before anyone left the barrier
    c.barrier();
  });
  for (const auto& s : seen) EXPECT_EQ(s, "the-unique-id");
  std::sort(added.begin(), added.end());
  EXPECT_EQ(added, (std::vector<std::int64_t>{10, 20, 30, 40}));
  EXPECT_EQ(server.dropped(), 0);
}

TEST(TcpStore, AGetNobodyAnswersTimesOutNamingTheKeyAndRank) {
  StoreServer server(0, "job-1", 2);
  StoreClient c("127.0.0.1", server.port(), "job-1", 1, 2, 0.3);
  try {
    c.get("never");
    FAIL() << "the get returned";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("rank 1 of 2"), std::string::npos) << what;
    EXPECT_NE(what.find("waiting for 'never': no answer within"), std::string::npos) << what;
  }
}

TEST(TcpStore, ClientsOfAnotherJobOrAnotherSizeOrATakenRankAreRefused) {
  StoreServer server(0, "job-1", 2);
  StoreClient first("127.0.0.1", server.port(), "job-1", 0, 2, 5);
  auto refused = [&](const std::string& token, int rank, int world, const std::string& reason) {
    try {
      StoreClient c("127.0.0.1", server.port(), token, rank, world, 5);
      ADD_FAILURE() << "joined: " << reason;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << e.what();
    }
  };
  refused("job-2", 1, 2, "refused: a wrong job token");
  refused("job-1", 1, 3, "refused: rank 1 was started for 3 ranks, the store for 2 (WORLD_SIZE differs)");
  refused("job-1", 0, 2, "refused: rank 0 has already joined (two processes with the same RANK?)");
  EXPECT_EQ(server.dropped(), 3);
  first.set("still", "works");
  EXPECT_EQ(first.get("still"), "works");
}

TEST(TcpStore, NothingListeningEndsWithinTheTimeoutNamingTheAddress) {
  int port = 0;
  {
    StoreServer gone(0, "job-1", 1);  // a port that was free a moment ago
    port = gone.port();
  }
  const auto t0 = std::chrono::steady_clock::now();
  try {
    StoreClient c("127.0.0.1", port, "job-1", 0, 1, 0.3);
    FAIL() << "connected";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(port)), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cannot connect within"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

int raw_connection(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(std::uint16_t(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  return fd;
}

std::string frame_of(const store::Request& r) {
  const std::string body = store::encode(r);
  return store::frame_prefix(body.size()) + body;
}

// Reads one reply frame from a raw connection (the test's own blocking socket).
store::Reply read_reply(int fd) {
  auto read_exactly = [fd](std::size_t n) {
    std::string got(n, '\0');
    for (std::size_t at = 0; at < n;) {
      const ssize_t k = recv(fd, got.data() + at, n - at, 0);
      if (k <= 0) throw Error("the store closed the connection");
      at += std::size_t(k);
    }
    return got;
  };
  const std::string prefix = read_exactly(4);
  std::string why;
  const auto n = store::frame_length(reinterpret_cast<const unsigned char*>(prefix.data()), why);
  if (!n) throw Error(why);
  const auto reply = store::decode_reply(read_exactly(*n), why);
  if (!reply) throw Error(why);
  return *reply;
}

TEST(TcpStore, FramesSplitByteByByteOrSentTogetherAreAnsweredInOrder) {
  StoreServer server(0, "job-1", 2);
  const int split = raw_connection(server.port());  // rank 0: every byte in a send of its own
  for (const char ch : frame_of({Op::hello, "job-1", "0 2"}) + frame_of({Op::add, "n", "5"})) {
    ASSERT_EQ(send(split, &ch, 1, MSG_NOSIGNAL), 1);
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  EXPECT_EQ(read_reply(split), (store::Reply{true, ""}));
  EXPECT_EQ(read_reply(split), (store::Reply{true, "5"}));
  const int joined = raw_connection(server.port());  // rank 1: hello, add, set and get in one send
  const std::string all = frame_of({Op::hello, "job-1", "1 2"}) + frame_of({Op::add, "n", "-2"}) +
                          frame_of({Op::set, "k", "v"}) + frame_of({Op::get, "k", ""});
  ASSERT_EQ(send(joined, all.data(), all.size(), MSG_NOSIGNAL), ssize_t(all.size()));
  EXPECT_EQ(read_reply(joined), (store::Reply{true, ""}));
  EXPECT_EQ(read_reply(joined), (store::Reply{true, "3"}));
  EXPECT_EQ(read_reply(joined), (store::Reply{true, ""}));
  EXPECT_EQ(read_reply(joined), (store::Reply{true, "v"}));
  EXPECT_EQ(server.dropped(), 0);
  close(split);
  close(joined);
}

TEST(TcpStore, ARankThatLeavesWhileItsGetWaitsChangesNothingForTheOthers) {
  StoreServer server(0, "job-1", 3);
  const int leaver = raw_connection(server.port());
  const std::string hello_get = frame_of({Op::hello, "job-1", "2 3"}) + frame_of({Op::get, "late", ""});
  ASSERT_EQ(send(leaver, hello_get.data(), hello_get.size(), MSG_NOSIGNAL), ssize_t(hello_get.size()));
  EXPECT_EQ(read_reply(leaver), (store::Reply{true, ""}));
  std::thread waiter([&] {
    StoreClient c("127.0.0.1", server.port(), "job-1", 1, 3, 10);
    EXPECT_EQ(c.get("late"), "set");  // parked beside the leaver's get
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  close(leaver);  // parked, then gone: its rank is free again
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  StoreClient setter("127.0.0.1", server.port(), "job-1", 0, 3, 10);
  setter.set("late", "set");
  waiter.join();
  StoreClient back("127.0.0.1", server.port(), "job-1", 2, 3, 10);  // rank 2 rejoins
  EXPECT_EQ(back.get("late"), "set");
  EXPECT_EQ(server.dropped(), 0);
}

TEST(TcpStore, StrayConnectionsAreDroppedAndTheJobGoesOn) {
  StoreServer server(0, "job-1", 2, /*hello_timeout_s=*/0.2);
  std::mt19937 gen(7);
  std::string noise(4096, '\0');
  for (char& ch : noise) ch = char(gen());
  noise[0] = noise[1] = noise[2] = '\x7f';  // a frame length far over the bound
  std::vector<int> strays;
  strays.push_back(raw_connection(server.port()));
  ASSERT_EQ(send(strays.back(), noise.data(), noise.size(), MSG_NOSIGNAL), ssize_t(noise.size()));
  strays.push_back(raw_connection(server.port()));  // a well-formed frame, but not a hello
  const std::string body = store::encode(store::Request{Op::set, "id", "forged"});
  const std::string frame = store::frame_prefix(body.size()) + body;
  ASSERT_EQ(send(strays.back(), frame.data(), frame.size(), MSG_NOSIGNAL), ssize_t(frame.size()));
  strays.push_back(raw_connection(server.port()));  // silent: dropped when its hello time is up
  with_ranks(server, 2, [](int rank, StoreClient& c) {
    if (rank == 1) c.set("id", "genuine");
    EXPECT_EQ(c.get("id"), "genuine");
    c.barrier();
  });
  for (int i = 0; i < 50 && server.dropped() < 3; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(server.dropped(), 3);
  for (int fd : strays) close(fd);
}

}  // namespace
}  // namespace parbench
