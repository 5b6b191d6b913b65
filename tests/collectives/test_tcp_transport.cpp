// The tcp transport between ranks that meet at a TCP store (threads here, each with its own mesh as a process
// would have), over sockets and over shared-memory rings: data across ring wrap-around, matching by tag, early
// arrivals, splits, size mismatches, timeouts naming the late peer, and a peer whose end closes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <numeric>
#include <thread>
#include <vector>

#include "base/error.h"
#include "collectives/tcp_store.h"
#include "collectives/transport_tcp.h"

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
