// The threads transport on its own: eager small sends, rendezvous large ones, matching order per tag, and waits
// that end at their deadline or on an abort; the doorbell and wait policy underneath.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <numeric>
#include <thread>

#include "collectives/transport/doorbell.h"
#include "collectives/transport/transport.h"

namespace parbench {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

Deadline in(std::chrono::milliseconds ms) { return Clock::now() + ms; }

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Runs `body` on every rank of a fresh world (cpu device); an exception escaping a rank is a test failure.
void run_world(int ranks, const std::function<void(Transport&, ThreadsWorld&)>& body) {
  auto world = make_threads_world(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      try {
        auto t = make_threads_transport(world, r, Device{});
        body(*t, *world);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "rank " << r << ": " << e.what();
      }
    });
  for (auto& t : threads) t.join();
}

// Waits (polling) until `flag` is set or 5 s pass; true when set.
bool await(const std::atomic<bool>& flag) {
  const auto end = Clock::now() + 5s;
  while (!flag.load() && Clock::now() < end) std::this_thread::sleep_for(1ms);
  return flag.load();
}

TEST(ThreadsTransport, EagerSendReturnsBeforeTheReceiveIsPosted) {
  std::atomic<bool> send_returned{false};
  run_world(2, [&](Transport& t, ThreadsWorld&) {
    std::vector<char> buf(kThreadsEagerLimit, 'x');
    if (t.rank() == 0) {
      P2POp op = send_op(buf.data(), buf.size(), 1);
      t.group({&op, 1}, in(2000ms));  // would time out if the send waited for the receiver
      std::fill(buf.begin(), buf.end(), 'y');  // the buffer is ours again: the receiver must still get x
      send_returned = true;
    } else {
      EXPECT_TRUE(await(send_returned)) << "the sender was held until its receive was posted";
      std::fill(buf.begin(), buf.end(), 0);
      P2POp op = recv_op(buf.data(), buf.size(), 0);
      t.group({&op, 1}, in(2000ms));
      EXPECT_EQ(std::count(buf.begin(), buf.end(), 'x'), std::ptrdiff_t(buf.size()));
    }
  });
}

TEST(ThreadsTransport, LargeSendWaitsForItsReceive) {
  std::atomic<bool> receive_posted{false};
  const std::size_t bytes = kThreadsEagerLimit + 1;
  run_world(2, [&](Transport& t, ThreadsWorld&) {
    std::vector<char> buf(bytes, 'a');
    if (t.rank() == 0) {
      std::iota(buf.begin(), buf.end(), char(0));
      P2POp op = send_op(buf.data(), bytes, 1);
      t.group({&op, 1}, in(5000ms));
      EXPECT_TRUE(receive_posted.load()) << "a rendezvous send completed before its receive was posted";
    } else {
      std::this_thread::sleep_for(100ms);
      receive_posted = true;
      P2POp op = recv_op(buf.data(), bytes, 0);
      t.group({&op, 1}, in(5000ms));
      for (std::size_t i = 0; i < bytes; i += 4099) ASSERT_EQ(buf[i], char(i)) << "byte " << i;
    }
  });
}

TEST(ThreadsTransport, UnreceivedLargeSendTimesOutAndIsWithdrawn) {
  std::atomic<bool> sender_gave_up{false};
  const std::size_t bytes = kThreadsEagerLimit * 2;
  run_world(2, [&](Transport& t, ThreadsWorld&) {
    std::vector<char> buf(bytes);
    if (t.rank() == 0) {
      P2POp op = send_op(buf.data(), bytes, 1);
      EXPECT_THROW(
          try { t.group({&op, 1}, in(200ms)); } catch (const TimeoutError& e) {
            EXPECT_THAT(e.what(), HasSubstr("rank 0 sent 131072 bytes to rank 1, which never received them"));
            throw;
          },
          TimeoutError);
      sender_gave_up = true;
    } else {
      ASSERT_TRUE(await(sender_gave_up));
      // The withdrawn send (whose buffer may be gone) must not be delivered to a later receive.
      P2POp op = recv_op(buf.data(), bytes, 0);
      EXPECT_THROW(t.group({&op, 1}, in(200ms)), TimeoutError);
    }
  });
}

// Sends on two tags, small (eager or pushed) and large (rendezvous or pushed) mixed, received tag 6 first: each
// tag's messages arrive in posting order. Once with the sender first, once with the receiver first.
TEST(ThreadsTransport, MessagesOfOneTagMatchInPostingOrder) {
  for (bool sender_first : {true, false}) {
    SCOPED_TRACE(sender_first ? "sender first" : "receiver first");
    const std::size_t large = kThreadsEagerLimit + 64;
    run_world(2, [&](Transport& t, ThreadsWorld&) {
      struct Msg {
        int tag;
        std::size_t bytes;
        char fill;
      };
      const Msg a0{5, 8, 'a'}, a1{5, large, 'b'}, b0{6, 8, 'c'}, a2{5, 8, 'd'}, b1{6, large, 'e'};
      std::vector<std::vector<char>> bufs;
      auto op = [&](P2POp::Kind k, const Msg& m) {
        bufs.emplace_back(m.bytes, k == P2POp::send ? m.fill : 0);
        P2POp o{k, bufs.back().data(), m.bytes, 1 - t.rank(), m.tag};
        return o;
      };
      bufs.reserve(8);
      if (t.rank() == 0) {
        if (!sender_first) std::this_thread::sleep_for(50ms);
        std::vector<P2POp> ops = {op(P2POp::send, a0), op(P2POp::send, a1), op(P2POp::send, b0),
                                  op(P2POp::send, a2), op(P2POp::send, b1)};
        t.group(ops, in(5000ms));
        return;
      }
      if (sender_first) std::this_thread::sleep_for(50ms);
      std::vector<P2POp> tag6 = {op(P2POp::recv, b0), op(P2POp::recv, b1)};
      t.group(tag6, in(5000ms));
      std::vector<P2POp> tag5 = {op(P2POp::recv, a0), op(P2POp::recv, a1), op(P2POp::recv, a2)};
      t.group(tag5, in(5000ms));
      const char want[] = {'c', 'e', 'a', 'b', 'd'};
      for (std::size_t i = 0; i < 5; ++i)
        EXPECT_EQ(std::count(bufs[i].begin(), bufs[i].end(), want[i]), std::ptrdiff_t(bufs[i].size()))
            << "receive " << i << " got '" << bufs[i][0] << "'";
    });
  }
}

TEST(ThreadsTransport, SizeMismatchIsAnErrorEitherWayRound) {
  for (bool sender_first : {true, false}) {
    std::string message;
    run_world(2, [&](Transport& t, ThreadsWorld&) {
      std::vector<char> buf(64);
      if (t.rank() == 0) {
        if (!sender_first) std::this_thread::sleep_for(50ms);
        P2POp op = send_op(buf.data(), 16, 1);
        t.group({&op, 1}, in(2000ms));
        return;
      }
      if (sender_first) std::this_thread::sleep_for(50ms);
      P2POp op = recv_op(buf.data(), 32, 0);
      try {
        t.group({&op, 1}, in(2000ms));
      } catch (const Error& e) {
        message = e.what();
      }
    });
    EXPECT_THAT(message, HasSubstr("rank 1 expected 32 bytes from rank 0, which sent 16"))
        << (sender_first ? "sender first" : "receiver first");
  }
}

TEST(ThreadsTransport, BlockedReceiveEndsAtItsDeadline) {
  run_world(2, [&](Transport& t, ThreadsWorld&) {
    if (t.rank() == 0) return;
    int v = 0;
    P2POp op = recv_op(&v, sizeof v, 0);
    const auto t0 = Clock::now();
    try {
      t.group({&op, 1}, in(300ms));
      ADD_FAILURE() << "a receive nobody sends to completed";
    } catch (const TimeoutError& e) {
      EXPECT_THAT(e.what(), HasSubstr("rank 1 waited for data from rank(s) 0"));
    }
    EXPECT_GE(seconds_since(t0), 0.29);
    EXPECT_LT(seconds_since(t0), 5.0);
  });
}

// Rank 1 sleeps in a receive, rank 2 in a rendezvous send nobody receives; rank 0's abort wakes both at once.
TEST(ThreadsTransport, AbortWakesRanksBlockedInReceivesAndSends) {
  run_world(3, [&](Transport& t, ThreadsWorld& world) {
    std::vector<char> buf(kThreadsEagerLimit + 1);
    if (t.rank() == 0) {
      std::this_thread::sleep_for(200ms);
      abort_threads_world(world, "rank 0 failed: test");
      return;
    }
    P2POp op = t.rank() == 1 ? recv_op(buf.data(), 4, 0) : send_op(buf.data(), buf.size(), 0);
    const auto t0 = Clock::now();
    try {
      t.group({&op, 1}, in(30000ms));
      ADD_FAILURE() << "rank " << t.rank() << " completed without its peer";
    } catch (const AbortedError& e) {
      EXPECT_THAT(e.what(), HasSubstr("rank " + std::to_string(t.rank()) + " stopped: rank 0 failed: test"));
    }
    EXPECT_LT(seconds_since(t0), 10.0) << "the abort did not wake rank " << t.rank();
  });
}

// More ranks than cores (the waits soon sleep): many ring steps, each value checked.
TEST(ThreadsTransport, OversubscribedRingDeliversEveryStep) {
  const int n = std::max(16, 2 * usable_cores());
  run_world(n, [&](Transport& t, ThreadsWorld&) {
    const int r = t.rank(), right = (r + 1) % n, left = (r + n - 1) % n;
    for (int step = 0; step < 200; ++step) {
      int out = r * 1000 + step, got = -1;
      P2POp ops[2] = {send_op(&out, sizeof out, right), recv_op(&got, sizeof got, left)};
      t.group(ops, in(20000ms));
      ASSERT_EQ(got, left * 1000 + step) << "rank " << r << " step " << step;
    }
  });
}

TEST(Doorbell, RingWakesASleeperAndTheDeadlineEndsAWait) {
  Doorbell bell;
  const WaitPolicy sleep_at_once{};
  std::uint32_t ticket = bell.ticket();
  const auto t0 = Clock::now();
  EXPECT_FALSE(bell.wait(ticket, in(100ms), sleep_at_once));
  EXPECT_GE(seconds_since(t0), 0.099);
  std::thread ringer([&] {
    std::this_thread::sleep_for(50ms);
    bell.ring();
  });
  const auto t1 = Clock::now();
  EXPECT_TRUE(bell.wait(ticket, in(10000ms), sleep_at_once));
  EXPECT_LT(seconds_since(t1), 5.0);
  ringer.join();
  EXPECT_TRUE(bell.wait(ticket, in(0ms), sleep_at_once)) << "a ring before the wait is not lost";
}

TEST(Doorbell, WaitPolicyYieldsLongerWhenEveryThreadHasACore) {
  EXPECT_GT(wait_policy(32, 2).yield.count(), 0);
  EXPECT_LT(wait_policy(3, 2).yield, wait_policy(2, 2).yield);
  EXPECT_EQ(wait_policy(32, 2).yield, wait_policy(3, 2).yield);
  EXPECT_GE(usable_cores(), 1);
}

}  // namespace
}  // namespace parbench
