// The tcp transport between ranks that meet at a TCP store (threads here, each with its own mesh as a process
// would have), over sockets and over shared-memory rings: data across ring wrap-around, matching by tag, early
// arrivals, splits, size mismatches, timeouts naming the late peer, and a peer whose end closes; large messages
// copied once from the sender's memory and, with that refused (PARBENCH_SHM_PULL=off), through the rings.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <cstdint>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "collectives/launch/tcp_store.h"
#include "collectives/transport/transport_tcp.h"

namespace parbench {
namespace {

Deadline in_seconds(double s) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

// `n` ranks as threads, each joined to one store and connected by its own mesh, running body(rank, transport);
// failures rethrown after all ended. node_of[r]: rank r's node (ranks of one node get shared-memory rings).
void with_nodes(const std::vector<int>& node_of, const std::function<void(int, Transport&)>& body) {
  const int n = int(node_of.size());
  StoreServer server(0, "test-job", n);
  std::vector<std::thread> ranks;
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r)
    ranks.emplace_back([&, r] {
      try {
        StoreClient store("127.0.0.1", server.port(), "test-job", r, n, 20);
        std::vector<bool> same_node;
        for (int node : node_of) same_node.push_back(node == node_of[std::size_t(r)]);
        auto mesh = TcpMesh::connect(store, "test-job", r, n, same_node, 20);
        const int local = int(std::count(node_of.begin(), node_of.end(), node_of[std::size_t(r)]));
        EXPECT_EQ(mesh->shm_peers(), local - 1);
        const char* pull = std::getenv("PARBENCH_SHM_PULL");
        EXPECT_EQ(mesh->pull_peers(), pull && std::string(pull) == "off" ? 0 : local - 1);
        auto t = make_tcp_transport(mesh, Device{});
        EXPECT_EQ(t->name(), local == 1 ? "tcp" : local == n ? "shm" : "shm+tcp");
        body(r, *t);
      } catch (...) {
        errors[std::size_t(r)] = std::current_exception();
      }
    });
  for (auto& t : ranks) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

// All ranks on one node (`shm`) or each on its own.
void with_mesh(int n, bool shm, const std::function<void(int, Transport&)>& body) {
  std::vector<int> node_of(static_cast<std::size_t>(n), 0);
  if (!shm) std::iota(node_of.begin(), node_of.end(), 0);
  with_nodes(node_of, body);
}

class TcpTransport : public testing::TestWithParam<bool> {};

TEST_P(TcpTransport, RingExchangeOfMessagesLargerThanARing) {
  constexpr std::size_t kCount = (5 << 20) / 4 + 3;  // 5 MiB and a bit: wraps a 2 MiB ring more than once
  with_mesh(4, GetParam(), [&](int r, Transport& t) {
    std::vector<std::uint32_t> out(kCount), in(kCount, 0);
    std::iota(out.begin(), out.end(), std::uint32_t(r) << 24);
    const P2POp ops[2] = {send_op(out.data(), kCount * 4, (r + 1) % 4), recv_op(in.data(), kCount * 4, (r + 3) % 4)};
    t.group(ops, in_seconds(20));
    const std::uint32_t left = std::uint32_t((r + 3) % 4) << 24;
    for (std::size_t i = 0; i < kCount; i += 4099) ASSERT_EQ(in[i], left + std::uint32_t(i)) << "at " << i;
    EXPECT_EQ(in.back(), left + std::uint32_t(kCount - 1));
  });
}

TEST_P(TcpTransport, MessagesMatchByTagWhateverTheOrderTheyArrive) {
  with_mesh(2, GetParam(), [](int r, Transport& t) {
    int a = 16, b = 17, got = 0;
    if (r == 0) {
      P2POp ops[2] = {send_op(&b, 4, 1), send_op(&a, 4, 1)};
      ops[0].tag = 17, ops[1].tag = 16;
      t.group(ops, in_seconds(20));
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // both arrive before either receive
      for (int tag : {16, 17}) {
        P2POp op = recv_op(&got, 4, 0);
        op.tag = tag;
        t.group({&op, 1}, in_seconds(20));
        EXPECT_EQ(got, tag);
      }
    }
  });
}

TEST_P(TcpTransport, SplitGroupsKeepTheirMessagesApart) {
  with_mesh(4, GetParam(), [](int r, Transport& t) {
    // A group of the same four ranks in another order, then a pair: the same peer and tag in the world and in a
    // group are told apart by the group's context alone.
    auto all = t.split(0, 0, {3, 2, 1, 0}, 3 - r);
    auto pair = t.split(r / 2, 0, r < 2 ? std::vector<int>{0, 1} : std::vector<int>{2, 3}, r % 2);
    const int peer = r ^ 1;
    int world_out = 100 + r, all_out = 200 + r, pair_out = 300 + r, world_in = -1, all_in = -1, pair_in = -1;
    const P2POp sends[1] = {send_op(&world_out, 4, peer)};
    t.group(sends, in_seconds(20));  // sent first, received last
    const P2POp a[2] = {send_op(&all_out, 4, 3 - peer), recv_op(&all_in, 4, 3 - peer)};
    all->group(a, in_seconds(20));
    const P2POp p[2] = {send_op(&pair_out, 4, peer % 2), recv_op(&pair_in, 4, peer % 2)};
    pair->group(p, in_seconds(20));
    const P2POp w[1] = {recv_op(&world_in, 4, peer)};
    t.group(w, in_seconds(20));
    EXPECT_EQ(world_in, 100 + peer);
    EXPECT_EQ(all_in, 200 + peer);
    EXPECT_EQ(pair_in, 300 + peer);
    EXPECT_EQ(all->rank(), 3 - r);
    EXPECT_EQ(pair->size(), 2);
  });
}

TEST_P(TcpTransport, SizeMismatchTimeoutAndAClosedPeerAreNamed) {
  with_mesh(2, GetParam(), [](int r, Transport& t) {
    char big[8] = {}, small[4] = {}, done = 0;
    if (r == 0) {
      P2POp op = send_op(big, 8, 1);
      t.group({&op, 1}, in_seconds(20));
      P2POp end = recv_op(&done, 1, 1);  // kept open until rank 1 is through (an ended peer is an error)
      end.tag = 99;
      t.group({&end, 1}, in_seconds(20));
    } else {
      P2POp op = recv_op(small, 4, 0);
      try {
        t.group({&op, 1}, in_seconds(20));
        ADD_FAILURE() << "a message of 8 bytes was taken by a receive of 4";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("a message of 8 bytes arrived from rank 0 (tag 0) where its receive "
                                             "expects 4 bytes"), std::string::npos) << e.what();
      }
      try {
        t.group({&op, 1}, in_seconds(0.3));  // rank 0 sends nothing more
        ADD_FAILURE() << "no timeout";
      } catch (const TimeoutError& e) {
        EXPECT_EQ(std::string(e.what()), "rank 1 waited for data from rank(s) 0");
      }
      P2POp end = send_op(&done, 1, 0);
      end.tag = 99;
      t.group({&end, 1}, in_seconds(20));
    }
  });
}

INSTANTIATE_TEST_SUITE_P(SocketsAndRings, TcpTransport, testing::Bool(),
                         [](const testing::TestParamInfo<bool>& p) { return p.param ? "shm" : "sockets"; });

// Random bytes of message `what` from rank `from`, the same on both sides.
std::vector<unsigned char> message_bytes(std::size_t bytes, int from, int what) {
  std::mt19937_64 gen(std::uint64_t(from) * 1000003u + std::uint64_t(what) * 7919u + bytes);
  std::vector<unsigned char> v(bytes);
  for (std::size_t i = 0; i < bytes; i += 8) {  // eight bytes per draw
    const std::uint64_t x = gen();
    std::memcpy(v.data() + i, &x, std::min<std::size_t>(8, bytes - i));
  }
  return v;
}

// Large messages between ranks of one node: copied straight from the sender's memory (single copy), or with that
// turned off (as where the system refuses it) through the rings; the same results either way.
class SingleCopy : public testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (!GetParam()) setenv("PARBENCH_SHM_PULL", "off", 1);
  }
  void TearDown() override { unsetenv("PARBENCH_SHM_PULL"); }
};

TEST_P(SingleCopy, OddSizesAroundTheThresholdArriveWhole) {
  const std::size_t sizes[] = {TcpMesh::kPullMinBytes - 1, TcpMesh::kPullMinBytes, TcpMesh::kPullMinBytes + 1,
                               (1 << 20) + 3, (5 << 20) + 7};
  with_mesh(3, true, [&](int r, Transport& t) {
    for (std::size_t bytes : sizes) {
      const auto out = message_bytes(bytes, r, 1);
      std::vector<unsigned char> in(bytes, 0xab);
      const P2POp ops[2] = {send_op(out.data(), bytes, (r + 1) % 3), recv_op(in.data(), bytes, (r + 2) % 3)};
      t.group(ops, in_seconds(20));
      ASSERT_TRUE(in == message_bytes(bytes, (r + 2) % 3, 1)) << bytes << " bytes at rank " << r;
    }
  });
}

TEST_P(SingleCopy, EarlyArrivalsPostedSendsAndAMismatchKeepTheStreamInOrder) {
  constexpr std::size_t kBig = (3 << 20) + 5, kOther = 200003;
  with_mesh(2, true, [&](int r, Transport& t) {
    const int peer = 1 - r;
    if (r == 0) {  // two large messages by tag, a small one, then one of a size rank 1 does not expect
      const auto a = message_bytes(kBig, 0, 16), b = message_bytes(kOther, 0, 17), small = message_bytes(9, 0, 0);
      P2POp posted[2] = {send_op(a.data(), kBig, peer), send_op(b.data(), kOther, peer)};
      posted[0].tag = 16, posted[1].tag = 17;
      t.post_sends(posted);
      const P2POp next[1] = {send_op(small.data(), 9, peer)};
      t.group(next, in_seconds(20));
      t.finish_sends(in_seconds(20));
      const auto wrong = message_bytes(kOther, 0, 18);
      const P2POp w[1] = {send_op(wrong.data(), kOther, peer)};
      t.group(w, in_seconds(20));  // over once rank 1 has let it go
    }
    if (r == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // everything arrives before its receive
      std::vector<unsigned char> a(kBig, 0xab), b(kOther, 0xab), small(9, 0xab);
      P2POp second = recv_op(b.data(), kOther, peer);
      second.tag = 17;
      t.group({&second, 1}, in_seconds(20));
      P2POp first = recv_op(a.data(), kBig, peer);
      first.tag = 16;
      t.group({&first, 1}, in_seconds(20));
      P2POp third = recv_op(small.data(), 9, peer);
      t.group({&third, 1}, in_seconds(20));
      EXPECT_TRUE(a == message_bytes(kBig, 0, 16));
      EXPECT_TRUE(b == message_bytes(kOther, 0, 17));
      EXPECT_TRUE(small == message_bytes(9, 0, 0));
      std::vector<unsigned char> half(kOther / 2);
      P2POp mismatch = recv_op(half.data(), half.size(), peer);
      try {
        t.group({&mismatch, 1}, in_seconds(20));
        ADD_FAILURE() << "a message of " << kOther << " bytes was taken by a receive of " << half.size();
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("a message of 200003 bytes arrived from rank 0"), std::string::npos)
            << e.what();
      }
    }
    // Afterwards the pair still exchanges whole messages both ways.
    const auto out = message_bytes(kBig, r, 2);
    std::vector<unsigned char> in(kBig, 0xab);
    const P2POp ops[2] = {send_op(out.data(), kBig, peer), recv_op(in.data(), kBig, peer)};
    t.group(ops, in_seconds(20));
    EXPECT_TRUE(in == message_bytes(kBig, peer, 2)) << "rank " << r;
  });
}

INSTANTIATE_TEST_SUITE_P(PulledOrThroughTheRings, SingleCopy, testing::Bool(),
                         [](const testing::TestParamInfo<bool>& p) { return p.param ? "pulled" : "rings"; });

TEST(TcpTransportNodes, RingsWithinANodeAndSocketsBetweenNodes) {
  constexpr std::size_t kCount = (3 << 20) / 4;
  with_nodes({0, 0, 1, 1}, [&](int r, Transport& t) {  // two nodes of two ranks: 0-1 and 2-3 share rings
    std::vector<std::uint32_t> out(kCount, std::uint32_t(r + 1)), in_right(kCount), in_left(kCount);
    const int right = (r + 1) % 4, left = (r + 3) % 4;
    const P2POp ops[4] = {send_op(out.data(), kCount * 4, right), send_op(out.data(), kCount * 4, left),
                          recv_op(in_left.data(), kCount * 4, left), recv_op(in_right.data(), kCount * 4, right)};
    t.group(ops, in_seconds(20));
    EXPECT_EQ(in_left.front(), std::uint32_t(left + 1));
    EXPECT_EQ(in_left.back(), std::uint32_t(left + 1));
    EXPECT_EQ(in_right.back(), std::uint32_t(right + 1));
  });
}

TEST(TcpTransportEnds, AReceiveFromAPeerWhoseProcessEndedFailsAtOnce) {
  for (bool shm : {false, true}) {
    StoreServer server(0, "end-job", 2);
    std::thread peer([&] {  // joins, connects, and ends
      StoreClient store("127.0.0.1", server.port(), "end-job", 1, 2, 20);
      auto mesh = TcpMesh::connect(store, "end-job", 1, 2, {shm, shm}, 20);
    });
    StoreClient store("127.0.0.1", server.port(), "end-job", 0, 2, 20);
    auto t = make_tcp_transport(TcpMesh::connect(store, "end-job", 0, 2, {shm, shm}, 20), Device{});
    peer.join();
    int x = 0;
    P2POp op = recv_op(&x, 4, 1);
    const auto start = Clock::now();
    try {
      t->group({&op, 1}, in_seconds(20));
      ADD_FAILURE() << "received from a peer that sent nothing";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), "rank 0: the connection to rank 1 closed (that process ended or failed)");
    }
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  }
}

}  // namespace
}  // namespace parbench
