// Caching pool over a fake raw allocator with a capacity: reuse, best fit, the slack rule, release on exhaustion,
// foreign pointers, and a random workload checked against a model of what must be live.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "base/error.h"
#include "core/caching_pool.h"
#include "tests/core/caching_pool_fakes.h"

using namespace parbench;

using parbench::pool_fakes::FakeRaw;

TEST(CachingPool, ReleasedBlockIsReusedWithoutTheRawAllocator) {
  FakeRaw raw{1 << 20};
  CachingPool pool = raw.make();
  void* a = pool.allocate(1000);
  pool.deallocate(a);
  void* b = pool.allocate(1000);
  EXPECT_EQ(a, b);
  void* c = pool.allocate(700);  // rounds to 1024 like the first: but that block is in use now
  EXPECT_NE(c, b);
  EXPECT_EQ(raw.allocs, 2);
  EXPECT_EQ(raw.frees, 0);
  pool.deallocate(b);
  pool.deallocate(c);
  EXPECT_EQ(pool.stats().cached_bytes, 2048u);
  EXPECT_EQ(pool.stats().reserved_bytes, 2048u);
  EXPECT_EQ(pool.stats().reuses, 1u);
}

TEST(CachingPool, RequestsRoundToTheGranule) {
  FakeRaw raw{1 << 20};
  CachingPool pool = raw.make();
  void* a = pool.allocate(1);
  void* z = pool.allocate(0);  // a zero-byte request still gets a distinct block, as cudaMalloc's does
  EXPECT_NE(a, z);
  EXPECT_EQ(raw.live[a], CachingPool::kGranule);
  EXPECT_EQ(raw.live[z], CachingPool::kGranule);
  pool.deallocate(a);
  pool.deallocate(z);
}

TEST(CachingPool, BestFitWithinAQuarter) {
  FakeRaw raw{1 << 24};
  CachingPool pool = raw.make();
  void* big = pool.allocate(100 * 512);
  void* mid = pool.allocate(80 * 512);
  pool.deallocate(big);
  pool.deallocate(mid);
  EXPECT_EQ(pool.allocate(70 * 512), mid);  // the smallest that fits: 80 <= 70 * 1.25
  EXPECT_EQ(pool.allocate(80 * 512), big);  // 100 <= 80 * 1.25
  void* small = pool.allocate(40 * 512);    // nothing cached; a 100-block would be more than a quarter too large
  EXPECT_EQ(raw.allocs, 3);
  for (void* p : {mid, big, small}) pool.deallocate(p);
  EXPECT_EQ(pool.allocate(80 * 512), mid);
  EXPECT_EQ(pool.allocate(79 * 512 + 1), big);  // rounds to 80 granules: 100 is exactly a quarter more
  EXPECT_EQ(raw.allocs, 3);
}

TEST(CachingPool, ExhaustionReturnsTheCacheAndRetries) {
  FakeRaw raw{4096};
  CachingPool pool = raw.make();
  void* a = pool.allocate(2048);
  void* b = pool.allocate(2048);
  pool.deallocate(a);
  pool.deallocate(b);
  void* c = pool.allocate(4096);  // neither cached block fits; the budget is full until they go back
  EXPECT_NE(c, nullptr);
  EXPECT_EQ(raw.frees, 2);
  EXPECT_EQ(pool.stats().cached_bytes, 0u);
  EXPECT_EQ(pool.stats().reserved_bytes, 4096u);
  try {
    pool.allocate(10);
    FAIL() << "allocating past the capacity must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("allocating 10 bytes (4096 bytes already in use)"), std::string::npos)
        << e.what();
  }
  pool.deallocate(c);
}

TEST(CachingPool, ForeignAndDoubleReleaseAreRejected) {
  FakeRaw raw{1 << 20};
  CachingPool pool = raw.make();
  int x;
  EXPECT_THROW(pool.deallocate(&x), Error);
  void* a = pool.allocate(64);
  pool.deallocate(a);
  EXPECT_THROW(pool.deallocate(a), Error);
}

TEST(CachingPool, DestructionReturnsEveryBlock) {
  FakeRaw raw{1 << 20};
  {
    CachingPool pool = raw.make();
    pool.deallocate(pool.allocate(100));
    (void)pool.allocate(5000);  // still handed out
    pool.release_cached();
    EXPECT_EQ(raw.frees, 1);
  }
  EXPECT_EQ(raw.frees, 2);
  EXPECT_TRUE(raw.live.empty());
}

// Random allocate/release traffic: live blocks never overlap, each is at least as large as asked, and a steady
// mix of the same sizes stops reaching the raw allocator.
TEST(CachingPool, RandomTrafficKeepsBlocksDisjointAndSettles) {
  FakeRaw raw{std::size_t(1) << 30};
  CachingPool pool = raw.make();
  std::mt19937 rng(7);
  // Each size plus up to 7 stays within its granule, so the classes are distinct.
  const std::vector<std::size_t> sizes = {8, 600, 4000, 5000, 65000, (1 << 20) - 100};
  std::map<char*, std::size_t> live;
  auto check_disjoint = [&] {
    char* end = nullptr;
    for (auto& [p, n] : live) {
      ASSERT_TRUE(end == nullptr || p >= end) << "two live blocks overlap";
      end = p + n;
    }
  };
  int allocs_after_warmup = 0;
  for (int round = 0; round < 40; ++round) {
    const int before = raw.allocs;
    for (std::size_t n : sizes) {
      const std::size_t bytes = n + std::size_t(rng() % 8);
      char* p = static_cast<char*>(pool.allocate(bytes));
      ASSERT_GE(raw.live.count(p) ? raw.live[p] : 0, bytes);
      live[p] = bytes;
    }
    check_disjoint();
    std::vector<char*> order;
    for (auto& [p, n] : live) order.push_back(p);
    std::shuffle(order.begin(), order.end(), rng);
    for (char* p : order) pool.deallocate(p);
    live.clear();
    if (round >= 1) allocs_after_warmup += raw.allocs - before;
  }
  EXPECT_EQ(allocs_after_warmup, 0);
  EXPECT_EQ(raw.frees, 0);
}
