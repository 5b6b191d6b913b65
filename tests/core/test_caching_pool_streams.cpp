// The caching pool across streams, with fake streams and events whose completion the test controls: blocks are
// reused per stream, a block used on another stream waits for that stream's event, a steady state allocates and
// creates nothing, exhaustion waits for pending blocks; and the thread's current stream.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "core/caching_pool.h"
#include "core/current_stream.h"
#include "core/device.h"
#include "core/memory.h"
#include "core/stream.h"
#include "tests/core/caching_pool_fakes.h"

using namespace parbench;
using pool_fakes::FakeRaw;
using pool_fakes::FakeStreams;
using pool_fakes::pointer_text;

namespace {
void* const kA = FakeStreams::stream(1);
void* const kB = FakeStreams::stream(2);
void* const kC = FakeStreams::stream(3);
}  // namespace

TEST(CachingPoolStreams, SameStreamReuseIsImmediate) {
  FakeRaw raw{1 << 20};
  FakeStreams fs;
  CachingPool pool = raw.make(fs.ops());
  void* p = pool.allocate(1000, kA);
  fs.queue(kA);  // work on its own stream, still running: stream order covers it
  pool.record_stream(p, kA);  // its own stream: nothing to wait for
  pool.deallocate(p);
  EXPECT_EQ(pool.stats().cached_bytes, 1024u);
  EXPECT_EQ(pool.stats().pending_blocks, 0u);
  EXPECT_EQ(pool.allocate(1000, kA), p);
  EXPECT_EQ(raw.allocs, 1);
  EXPECT_EQ(fs.creates, 0);
  EXPECT_EQ(fs.records, 0);
}

TEST(CachingPoolStreams, BlockUsedOnAnotherStreamWaitsForItsEvent) {
  FakeRaw raw{1 << 20};
  FakeStreams fs;
  CachingPool pool = raw.make(fs.ops());
  void* p = pool.allocate(4096, kA);
  pool.record_stream(p, kB);
  pool.record_stream(p, kB);  // twice: still one stream to wait for
  EXPECT_EQ(fs.records, 0) << "the event is recorded at the release, not at record_stream";
  fs.queue(kB);  // B's use of p, queued before the release
  pool.deallocate(p);
  EXPECT_EQ(fs.records, 1);
  EXPECT_EQ(pool.stats().pending_blocks, 1u);
  EXPECT_EQ(pool.stats().pending_bytes, 4096u);
  EXPECT_EQ(pool.stats().cached_bytes, 0u);
  void* q = pool.allocate(4096, kA);
  EXPECT_NE(q, p) << "handed out while B may still use it";
  pool.deallocate(q);
  fs.queue(kB);  // work queued on B after the release does not hold the block back
  fs.completed[kB] = 1;
  const std::set<void*> reused = {pool.allocate(4096, kA), pool.allocate(4096, kA)};
  EXPECT_EQ(reused, (std::set<void*>{p, q}));
  EXPECT_EQ(pool.stats().pending_blocks, 0u);
  EXPECT_EQ(pool.stats().pending_bytes, 0u);
  EXPECT_EQ(raw.allocs, 2);
}

TEST(CachingPoolStreams, EveryOtherStreamMustComplete) {
  FakeRaw raw{1 << 20};
  FakeStreams fs;
  CachingPool pool = raw.make(fs.ops());
  void* p = pool.allocate(512, kA);
  pool.record_stream(p, kB);
  pool.record_stream(p, kC);
  fs.queue(kB);
  fs.queue(kC);
  pool.deallocate(p);
  EXPECT_EQ(fs.records, 2);
  fs.complete(kB);
  void* q = pool.allocate(512, kA);
  EXPECT_NE(q, p) << "C's event is still pending";
  pool.deallocate(q);  // deallocate looks at the pending blocks too
  fs.complete(kC);
  pool.deallocate(pool.allocate(100 * 512, kB));  // any call on any stream moves completed blocks to the cache
  EXPECT_EQ(pool.stats().pending_blocks, 0u);
  EXPECT_EQ(pool.stats().cached_bytes, 512u + 512u + 100u * 512u);
  EXPECT_EQ(fs.creates, 2);  // the completed events were kept for reuse, not destroyed
  EXPECT_EQ(fs.destroys, 0);
}

TEST(CachingPoolStreams, CacheIsPerStream) {
  FakeRaw raw{1 << 20};
  FakeStreams fs;
  CachingPool pool = raw.make(fs.ops());
  void* a = pool.allocate(2048, kA);
  pool.deallocate(a);
  void* b = pool.allocate(2048, kB);
  EXPECT_NE(b, a) << "a block cached for A was handed to a request on B";
  void* legacy = pool.allocate(2048);  // the legacy default stream is a stream of its own
  EXPECT_NE(legacy, a);
  EXPECT_EQ(pool.allocate(2048, kA), a);
  pool.deallocate(b);
  pool.deallocate(legacy);
  EXPECT_EQ(pool.allocate(2048, nullptr), legacy);
  EXPECT_EQ(pool.allocate(2000, kB), b);
  EXPECT_EQ(raw.allocs, 3);
}

TEST(CachingPoolStreams, RecordOnAnotherStreamNeedsEventOps) {
  FakeRaw raw{1 << 20};
  CachingPool pool = raw.make();
  void* p = pool.allocate(64, kA);
  pool.record_stream(p, kA);
  EXPECT_THROW(pool.record_stream(p, kB), Error);
  pool.deallocate(p);
}

TEST(CachingPoolStreams, UnknownPointersAreNamed) {
  FakeRaw raw{1 << 20};
  FakeStreams fs;
  CachingPool pool = raw.make(fs.ops());
  int x;
  auto message_of = [](auto&& call) -> std::string {
    try {
      call();
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  };
  const std::string freed = message_of([&] { pool.deallocate(&x); });
  EXPECT_NE(freed.find("deallocate of pointer " + pointer_text(&x)), std::string::npos) << freed;
  const std::string recorded = message_of([&] { pool.record_stream(&x, kB); });
  EXPECT_NE(recorded.find("record_stream of pointer " + pointer_text(&x)), std::string::npos) << recorded;
  void* p = pool.allocate(64, kA);
  pool.deallocate(p);
  EXPECT_NE(message_of([&] { pool.record_stream(p, kB); }).find(pointer_text(p)), std::string::npos);
  EXPECT_NE(message_of([&] { pool.deallocate(p); }).find(pointer_text(p)), std::string::npos);
}

TEST(CurrentStream, NestedGuardsRestore) {
  EXPECT_EQ(current_stream(), nullptr);
  {
    CurrentStream outer(kA);
    EXPECT_EQ(current_stream(), kA);
    {
      CurrentStream inner(kB);
      EXPECT_EQ(current_stream(), kB);
      void* seen = kC;
      std::thread([&] { seen = current_stream(); }).join();
      EXPECT_EQ(seen, nullptr) << "the current stream is the calling thread's";
      {
        CurrentStream legacy(nullptr);
        EXPECT_EQ(current_stream(), nullptr);
      }
      EXPECT_EQ(current_stream(), kB);
    }
    EXPECT_EQ(current_stream(), kA);
  }
  EXPECT_EQ(current_stream(), nullptr);
}

// A step as the product runs it: activations on the compute stream A, some of them read by the communication
// stream B; a gradient bucket on B that A reads back. Both streams finish before the next step's allocations.
TEST(CachingPoolStreams, SteadyStateAllocatesAndCreatesNothing) {
  FakeRaw raw{1 << 26};
  FakeStreams fs;
  CachingPool pool = raw.make(fs.ops());
  const std::vector<std::size_t> compute_sizes = {1000, 70000, 70000, 300000, 512, 4096};
  int allocs_after_first = 0, creates_after_first = 0;
  for (int step = 0; step < 10; ++step) {
    const int allocs_before = raw.allocs, creates_before = fs.creates;
    std::vector<void*> acts;
    for (std::size_t n : compute_sizes) acts.push_back(pool.allocate(n, kA));
    void* bucket = pool.allocate(200000, kB);
    pool.record_stream(bucket, kA);
    for (std::size_t i = 0; i < acts.size(); i += 2) pool.record_stream(acts[i], kB);
    fs.queue(kA);
    fs.queue(kB);
    for (void* p : acts) pool.deallocate(p);
    pool.deallocate(bucket);
    EXPECT_EQ(pool.stats().pending_blocks, 4u);
    fs.complete(kA);
    fs.complete(kB);
    if (step > 0) {
      allocs_after_first += raw.allocs - allocs_before;
      creates_after_first += fs.creates - creates_before;
    }
  }
  EXPECT_EQ(allocs_after_first, 0);
  EXPECT_EQ(creates_after_first, 0);
  EXPECT_EQ(fs.creates, 4);
  EXPECT_EQ(fs.records, 40);
  EXPECT_EQ(fs.syncs, 0) << "the normal path never waits";
  EXPECT_EQ(raw.frees, 0);
}

TEST(CachingPoolStreams, ExhaustionReturnsTheCacheBeforeWaiting) {
  FakeRaw raw{4096};
  FakeStreams fs;
  CachingPool pool = raw.make(fs.ops());
  void* a = pool.allocate(2048, kA);
  void* b = pool.allocate(2048, kA);
  pool.record_stream(a, kB);
  fs.queue(kB);
  pool.deallocate(a);  // pending on B
  pool.deallocate(b);  // cached
  void* c = pool.allocate(2048, kB);  // returning b is enough: no wait
  EXPECT_NE(c, nullptr);
  EXPECT_EQ(fs.syncs, 0);
  EXPECT_EQ(pool.stats().pending_waits, 0u);
  EXPECT_EQ(pool.stats().pending_blocks, 1u);
  EXPECT_EQ(raw.frees, 1);
  pool.deallocate(c);
}

TEST(CachingPoolStreams, ExhaustionWaitsForPendingBlocksAndRetries) {
  FakeRaw raw{4096};
  FakeStreams fs;
  CachingPool pool = raw.make(fs.ops());
  void* a = pool.allocate(2048, kA);
  void* b = pool.allocate(1024, kA);
  pool.record_stream(a, kB);
  fs.queue(kB);
  pool.deallocate(a);  // pending on B
  pool.deallocate(b);  // cached
  void* c = pool.allocate(4096, kA);  // the cache's 1024 bytes are not enough; a's 2048 are, once B is done
  EXPECT_NE(c, nullptr);
  EXPECT_EQ(fs.syncs, 1);
  EXPECT_EQ(fs.completed[kB], 1u) << "the pool waited for B's event";
  EXPECT_EQ(raw.frees, 2);
  CachingPool::Stats s = pool.stats();
  EXPECT_EQ(s.pending_waits, 1u);
  EXPECT_EQ(s.pending_blocks, 0u);
  EXPECT_EQ(s.pending_bytes, 0u);
  EXPECT_EQ(s.cached_bytes, 0u);
  EXPECT_EQ(s.reserved_bytes, 4096u);
  pool.record_stream(c, kB);
  fs.queue(kB);
  pool.deallocate(c);
  EXPECT_EQ(fs.creates, 1) << "the waited-for event is reused";
  try {
    pool.allocate(10, kA);  // waits for c's event, returns c, and then fits
    (void)pool.allocate(4096, kA);
    FAIL() << "allocating past the capacity must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("allocating 4096 bytes (512 bytes already in use)"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(fs.syncs, 2);
  EXPECT_EQ(pool.stats().pending_waits, 2u);
}

TEST(CachingPoolStreams, DestructionReturnsBlocksAndDestroysEvents) {
  FakeRaw raw{1 << 20};
  FakeStreams fs;
  {
    CachingPool pool = raw.make(fs.ops());
    void* a = pool.allocate(100, kA);
    void* b = pool.allocate(100, kA);
    void* c = pool.allocate(100, kA);
    pool.record_stream(a, kB);
    pool.record_stream(b, kB);
    fs.queue(kB);
    pool.deallocate(a);
    fs.complete(kB);
    fs.queue(kB);
    pool.deallocate(b);  // a's event has completed: b's release records it again
    EXPECT_EQ(fs.creates, 1);
    EXPECT_EQ(fs.records, 2);
    (void)c;  // still handed out
  }
  EXPECT_TRUE(raw.live.empty());
  EXPECT_EQ(fs.live_events(), 0u);
}

// Random traffic on three streams against a model that remembers, for every released block, its stream and how
// far each other stream that used it had queued work: a block must come back only on its stream and once that
// work is done, the stats must add up, and the pool may wait only when the raw allocator is exhausted.
TEST(CachingPoolStreams, RandomTrafficNeverHandsOutABlockStillInUse) {
  struct Live {
    void* stream;
    std::set<void*> used_on;
  };
  struct Released {
    void* stream;
    std::map<void*, std::uint64_t> marks;
  };
  std::map<void*, Live> live;  // before the pool: its destructor's raw frees look here
  std::map<void*, Released> released;
  FakeRaw raw{64 * 1024};
  FakeStreams fs;
  CachingPool pool = raw.make(fs.ops());
  const std::vector<void*> streams = {nullptr, kA, kB};
  raw.on_free = [&](void* p) {
    EXPECT_EQ(live.count(p), 0u) << "raw free of a block handed out";
    released.erase(p);
  };
  std::mt19937 rng(11);
  const std::vector<std::size_t> sizes = {512, 2048, 3000, 8192};
  auto pick = [&](auto& m) { return std::next(m.begin(), long(rng() % m.size()))->first; };
  int ooms = 0;
  for (int step = 0; step < 20000; ++step) {
    const unsigned action = rng() % 10;
    void* s = streams[rng() % streams.size()];
    if (action < 3) {
      const std::size_t bytes = sizes[rng() % sizes.size()] - rng() % 100;
      const std::size_t want = (bytes + 511) / 512 * 512;
      void* p = nullptr;
      try {
        p = pool.allocate(bytes, s);
      } catch (const Error&) {
        ++ooms;
        EXPECT_GT(raw.used + want, raw.capacity) << "out of memory while the budget had room";
        EXPECT_EQ(pool.stats().cached_bytes + pool.stats().pending_bytes, 0u) << "gave up holding memory back";
        continue;
      }
      ASSERT_EQ(live.count(p), 0u) << "handed out twice";
      ASSERT_GE(raw.live.at(p), bytes);
      if (auto r = released.find(p); r != released.end()) {
        ASSERT_EQ(r->second.stream, s) << "a block of another stream";
        for (auto& [t, mark] : r->second.marks) ASSERT_TRUE(fs.done(t, mark)) << "reused while another stream uses it";
        released.erase(r);
      }
      live[p] = Live{s, {}};
    } else if (action < 5 && !live.empty()) {
      void* p = pick(live);
      fs.queue(s);
      pool.record_stream(p, s);
      if (s != live[p].stream) live[p].used_on.insert(s);
    } else if (action < 8 && !live.empty()) {
      void* p = pick(live);
      Released r{live[p].stream, {}};
      for (void* t : live[p].used_on) r.marks[t] = fs.queued[t];
      live.erase(p);
      pool.deallocate(p);
      released[p] = r;
    } else if (fs.queued[s] > fs.completed[s]) {
      fs.completed[s] += 1 + rng() % (fs.queued[s] - fs.completed[s]);  // some of its work is done
    }
    const CachingPool::Stats st = pool.stats();
    std::size_t live_bytes = 0;
    for (auto& [p, l] : live) live_bytes += raw.live.at(p);
    ASSERT_EQ(st.reserved_bytes, raw.used);
    ASSERT_EQ(live_bytes + st.cached_bytes + st.pending_bytes, st.reserved_bytes);
    ASSERT_EQ(fs.syncs > 0, st.pending_waits > 0) << "waited without running out";
  }
  EXPECT_GT(ooms, 0) << "the budget never ran out: the exhaustion path went untested";
  EXPECT_GT(pool.stats().pending_waits, 0u);
  EXPECT_GT(pool.stats().reuses, 1000u);
  EXPECT_EQ(fs.destroys, 0);
  std::printf("%d out of memory, %zu waits, %zu reuses, %zu raw allocations, %d events\n", ooms,
              pool.stats().pending_waits, pool.stats().reuses, pool.stats().raw_allocs, fs.creates);
  for (auto& [p, l] : live) pool.deallocate(p);
  live.clear();
  for (void* s : streams) fs.complete(s);
  pool.release_cached();
  EXPECT_TRUE(raw.live.empty());
  EXPECT_EQ(pool.stats().pending_blocks, 0u);
}

// The per-GPU pool's wiring, where a GPU (real or emulated) is usable: it allocates on the thread's current
// stream, its CUDA events let a block recorded on another stream come back, and host devices ignore the record.
TEST(CachingPoolStreams, DevicePoolUsesTheCurrentStreamAndEvents) {
  int x = 0;
  device_record_stream(Device{}, &x, nullptr);  // host memory: nothing to do, nothing checked
  if (!probe_cuda().usable) GTEST_SKIP() << "no usable GPU";
  if (const char* pool = std::getenv("PARBENCH_CUDA_POOL"); pool && std::string(pool) == "off")
    GTEST_SKIP() << "the pool is off";
  const Device d = resolve_device("cuda:0");
  Stream s1(d, true), s2(d, true);
  const std::size_t bytes = (3 << 20) + 17;  // a size no other test here asks for
  void* p = nullptr;
  {
    CurrentStream on_s1(s1.native());
    p = device_malloc(d, bytes);
  }
  device_free(d, p);
  void* legacy = device_malloc(d, bytes);
  EXPECT_NE(legacy, p) << "a block cached for one stream went to a request on the legacy default stream";
  device_free(d, legacy);
  CurrentStream on_s1(s1.native());
  EXPECT_EQ(device_malloc(d, bytes), p);
  device_memset(d, p, 0, bytes);
  device_record_stream(d, p, s2.native());
  EXPECT_THROW(device_record_stream(d, &x, s2.native()), Error);
  device_free(d, p);
  s2.synchronize();
  EXPECT_EQ(device_malloc(d, bytes), p) << "the event recorded on s2 at the free has completed";
  device_free(d, p);
}
