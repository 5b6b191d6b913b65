// simt self-tests: the kernels of tests/simt/selftest_kernels.cu against exact expected values,
// each under forward, reverse and random schedules.
#include <gtest/gtest.h>

#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "base/dtype.h"
#include "tests/simt/selftest_kernels.h"
#include "simt_test_util.h"

namespace k = parbench::simt_kernels;
using simt_test::fresh_rng;
using simt_test::random_ints;

namespace {
constexpr int kPoison = INT_MIN + 12345;
const char* const kVariant[] = {"idx", "up", "down", "xor"};
}

class SimtKernels : public simt_test::ScheduleTest {};
SIMT_ALL_SCHEDULES(SimtKernels);

TEST_P(SimtKernels, BlockReductionWithBarriersInALoop) {
  std::uint64_t seed;
  auto rng = fresh_rng(&seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (int block : {64, 256, 1024}) {
    const int n = 3 * block + 77;  // a partial last block
    auto in = random_ints(rng, std::size_t(n), -1000, 1000);
    const int blocks = (n + block - 1) / block;
    std::vector<int> out(std::size_t(blocks), kPoison);
    k::block_sum(out.data(), in.data(), n, block, nullptr);
    for (int b = 0; b < blocks; ++b) {
      int want = 0;
      for (int i = b * block; i < std::min(n, (b + 1) * block); ++i) want += in[std::size_t(i)];
      EXPECT_EQ(out[std::size_t(b)], want) << "block " << b << " of " << block << " threads";
    }
  }
}

TEST_P(SimtKernels, EarlyReturningThreadsLeaveLaterBarriers) {
  auto rng = fresh_rng();
  const int block = 128, active = 77;
  auto in = random_ints(rng, block, 1, 999);
  std::vector<int> out(block, kPoison), counts(3, kPoison);
  k::early_exit(out.data(), counts.data(), in.data(), block, active, nullptr);
  int odd = 0;
  for (int t = 0; t < active; ++t) {
    EXPECT_EQ(out[std::size_t(t)], in[std::size_t(active - 1 - t)]) << "thread " << t;
    odd += in[std::size_t(t)] & 1;
  }
  for (int t = active; t < block; ++t) EXPECT_EQ(out[std::size_t(t)], kPoison) << "exited thread " << t << " wrote";
  EXPECT_EQ(counts[0], odd);  // __syncthreads_count over the live threads only
  EXPECT_EQ(counts[1], 1);    // __syncthreads_and: all inputs positive
  EXPECT_EQ(counts[2], 0);    // __syncthreads_or: none above 1000
  in[5] = 5000;
  in[6] = -1;
  k::early_exit(out.data(), counts.data(), in.data(), block, active, nullptr);
  EXPECT_EQ(counts[1], 0);
  EXPECT_EQ(counts[2], 1);
}

TEST_P(SimtKernels, DynamicSharedMemory) {
  auto rng = fresh_rng();
  std::uniform_real_distribution<float> d(-10.0f, 10.0f);
  const int n = 1000, block = 96;  // three warps, partial last block
  std::vector<float> in(n), out(n, std::nanf(""));
  for (auto& x : in) x = d(rng);
  k::dynamic_reverse(out.data(), in.data(), n, block, nullptr);
  for (int base = 0; base < n; base += block) {
    const int len = std::min(block, n - base);
    for (int t = 0; t < len; ++t)
      ASSERT_EQ(out[std::size_t(base + t)], in[std::size_t(base + len - 1 - t)]) << "element " << base + t;
  }
}

// CUDA's documented results, written independently of the emulator's formulas.
static int expect_shuffle(const std::vector<int>& v, int t, int kind, int src, unsigned delta, int lane_mask, int width) {
  const int warp = t / 32 * 32, lane = t % 32, seg = lane / width * width, pos = lane % width;
  switch (kind) {
    case 0: return v[std::size_t(warp + seg + ((src % width) + width) % width)];  // srcLane modulo width
    case 1: return pos >= int(delta) ? v[std::size_t(t) - delta] : v[std::size_t(t)];  // below segment start: own
    case 2: return pos + int(delta) < width ? v[std::size_t(t) + delta] : v[std::size_t(t)];  // past end: own
    default: {
      const int target = lane ^ lane_mask;
      return target / width <= lane / width ? v[std::size_t(warp + target)] : v[std::size_t(t)];  // no later segments
    }
  }
}

TEST_P(SimtKernels, EveryShuffleVariantAndWidth) {
  auto rng = fresh_rng();
  const int n = 128;
  auto in = random_ints(rng, n, -100000, 100000);
  int cases = 0;
  for (int width : {8, 16, 32})
    for (int src : {0, 5, width - 1, 37, -3})
      for (unsigned delta : {1u, 3u, unsigned(width) - 1, unsigned(width)})
        for (int lane_mask : {1, 6, 17, 31}) {
          std::vector<int> out(4 * n, kPoison);
          k::shuffle_variants(out.data(), in.data(), n, src, delta, lane_mask, width, nullptr);
          for (int t = 0; t < n; ++t)
            for (int kind = 0; kind < 4; ++kind)
              ASSERT_EQ(out[std::size_t(4 * t + kind)], expect_shuffle(in, t, kind, src, delta, lane_mask, width))
                  << "variant " << kVariant[kind] << " width " << width << " src " << src << " delta "
                  << delta << " mask " << lane_mask << " thread " << t;
          ++cases;
        }
  EXPECT_EQ(cases, 3 * 5 * 4 * 4);
}

TEST_P(SimtKernels, ShufflesMoveFloatDoubleBf16AndHalf) {
  auto rng = fresh_rng();
  std::uniform_real_distribution<float> d(-3.0f, 3.0f);
  std::vector<float> f(32), fo(32, std::nanf(""));
  std::vector<double> dd(32), dout(32, std::nan(""));
  std::vector<std::uint16_t> bf(32), bfo(32, 0xffff), h(32), ho(32, 0xffff);
  for (int i = 0; i < 32; ++i) {
    f[std::size_t(i)] = d(rng);
    dd[std::size_t(i)] = double(d(rng)) * 1e-300;
    bf[std::size_t(i)] = parbench::float_to_bf16(d(rng)).bits;
    h[std::size_t(i)] = parbench::float_to_f16(d(rng)).bits;
  }
  const unsigned delta = 3;
  k::shuffle_types(fo.data(), dout.data(), bfo.data(), ho.data(), f.data(), dd.data(), bf.data(), h.data(), delta, nullptr);
  for (std::size_t i = 0; i < 32; ++i) {
    const std::size_t src = i + delta < 32 ? i + delta : i;
    EXPECT_EQ(fo[i], f[src]) << i;
    EXPECT_EQ(dout[i], dd[src]) << i;
    EXPECT_EQ(bfo[i], bf[src]) << i;
    EXPECT_EQ(ho[i], h[src]) << i;
  }
}

TEST_P(SimtKernels, VotesAndWarpReductionsWithPartialMasks) {
  auto rng = fresh_rng();
  const int block = 48;  // warp 1 has lanes 0..15 only
  for (unsigned mask : {0xffffffffu, 0x0f0f0f0fu, 0x80000001u, 0x0000ffffu, 0xffff0000u})
    for (int lo : {0, 1}) {  // lo = 1: every predicate true, so __all_sync must say 1
      auto pred = random_ints(rng, block, lo, 4);
      std::vector<unsigned> out(4 * block, 0xdeadu), sums(block, 0xdeadu), match(block, 0xdeadu);
      k::vote(out.data(), sums.data(), match.data(), pred.data(), block, mask, nullptr);
      for (int t = 0; t < block; ++t) {
        const int warp = t / 32, lane = t % 32;
        const unsigned exists = warp == 0 ? 0xffffffffu : 0x0000ffffu;
        const unsigned part = mask & exists;
        if (!(mask >> lane & 1u)) {  // the complementary group's ballot
          unsigned other = 0;
          for (int j = 0; j < 32; ++j)
            if ((~mask & exists) >> j & 1u) other |= (pred[std::size_t(warp * 32 + j)] != 0 ? 1u : 0u) << j;
          EXPECT_EQ(out[std::size_t(4 * t)], other) << "thread " << t;
          for (int s = 1; s < 4; ++s) EXPECT_EQ(out[std::size_t(4 * t + s)], unsigned(-7));
          continue;
        }
        unsigned ballot = 0, sum = 0, mx = 0, same = 0;
        for (int j = 0; j < 32; ++j) {
          if (!(part >> j & 1u)) continue;
          const int p = pred[std::size_t(warp * 32 + j)];
          ballot |= (p != 0 ? 1u : 0u) << j;
          sum += unsigned(p);
          mx = std::max(mx, unsigned(p));
          same |= (p % 3 == pred[std::size_t(t)] % 3 ? 1u : 0u) << j;
        }
        SCOPED_TRACE("mask " + std::to_string(mask) + " thread " + std::to_string(t));
        EXPECT_EQ(out[std::size_t(4 * t)], ballot);
        EXPECT_EQ(out[std::size_t(4 * t + 1)], ballot != 0 ? 1u : 0u);
        EXPECT_EQ(out[std::size_t(4 * t + 2)], ballot == part ? 1u : 0u);
        EXPECT_EQ(out[std::size_t(4 * t + 3)], mx);
        EXPECT_EQ(sums[std::size_t(t)], sum);
        EXPECT_EQ(match[std::size_t(t)], same);
        if (lo == 1) {
          EXPECT_EQ(out[std::size_t(4 * t + 2)], 1u);
        }
      }
    }
}

TEST_P(SimtKernels, AtomicsUnderContentionFromManyBlocks) {
  const int saved = parbench::simt::worker_threads();
  parbench::simt::set_worker_threads(4);  // blocks on several OS threads at once
  auto rng = fresh_rng();
  const int blocks = 64, block = 256, total = blocks * block;
  auto vals = random_ints(rng, std::size_t(total), -1000, 1000);
  std::vector<int> ints = {0, INT_MIN, INT_MAX, 0, -1, 0};
  std::vector<unsigned> uints = {0};
  std::vector<float> floats = {0.0f};
  std::vector<double> doubles = {0.0};
  k::atomics(ints.data(), uints.data(), floats.data(), doubles.data(), vals.data(), blocks, block, nullptr);
  parbench::simt::set_worker_threads(saved);
  long long sum = 0;
  unsigned usum = 0;
  for (int v : vals) sum += v, usum += unsigned(v);
  EXPECT_EQ(ints[0], total);
  EXPECT_EQ(ints[1], *std::max_element(vals.begin(), vals.end()));
  EXPECT_EQ(ints[2], *std::min_element(vals.begin(), vals.end()));
  EXPECT_EQ(ints[3], total);  // CAS loop: no lost increments
  EXPECT_GE(ints[4], 0);
  EXPECT_LT(ints[4], total);
  EXPECT_EQ(ints[5], -2 * total);
  EXPECT_EQ(uints[0], usum);
  EXPECT_EQ(floats[0], float(total));  // exact below 2^24
  EXPECT_EQ(doubles[0], double(sum));
}

TEST_P(SimtKernels, WmmaBf16GemmTileMatchesReference) {
  auto rng = fresh_rng();
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  const int m = 32, n = 48, kk = 64;
  for (bool col : {false, true}) {
    std::vector<std::uint16_t> a(std::size_t(m * kk)), b(std::size_t(kk * n));
    std::vector<float> c(std::size_t(m * n));
    for (auto& x : a) x = parbench::float_to_bf16(d(rng)).bits;
    for (auto& x : b) x = parbench::float_to_bf16(d(rng)).bits;
    for (auto& x : c) x = d(rng);
    std::vector<double> ref(std::size_t(m * n));
    for (int r = 0; r < m; ++r)
      for (int j = 0; j < n; ++j) {
        double acc = c[std::size_t(r * n + j)];
        for (int q = 0; q < kk; ++q) {
          const std::uint16_t bv = col ? b[std::size_t(j * kk + q)] : b[std::size_t(q * n + j)];
          acc += double(parbench::bf16_to_float({a[std::size_t(r * kk + q)]})) * parbench::bf16_to_float({bv});
        }
        ref[std::size_t(r * n + j)] = acc;
      }
    k::wmma_gemm_bf16(c.data(), a.data(), b.data(), m, n, kk, col, nullptr);
    double err = 0, norm = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
      ASSERT_FALSE(std::isnan(c[i])) << i;
      err += (c[i] - ref[i]) * (c[i] - ref[i]);
      norm += ref[i] * ref[i];
    }
    EXPECT_LT(std::sqrt(err / norm), 1e-5) << (col ? "B column-major" : "B row-major");
  }
}

// A missing __syncthreads: right when threads run last-to-first, wrong when they run first-to-last.
TEST(SimtSchedules, MissingBarrierShowsUnderSomeSchedule) {
  const auto saved = parbench::simt::schedule();
  auto rng = fresh_rng();
  const int block = 64;
  auto in = random_ints(rng, block, 0, 1 << 20);
  auto wrong_under = [&](const char* sched) {
    parbench::simt::set_schedule(parbench::simt::parse_schedule(sched));
    std::vector<int> out(block, kPoison);
    k::missing_barrier(out.data(), in.data(), block, nullptr);
    int wrong = 0;
    for (int t = 0; t < block; ++t) {
      EXPECT_NE(out[std::size_t(t)], kPoison);
      wrong += out[std::size_t(t)] != in[std::size_t(t + 1 < block ? t + 1 : t)];
    }
    return wrong;
  };
  EXPECT_EQ(wrong_under("reverse"), 0);
  EXPECT_EQ(wrong_under("forward"), block - 1);  // every thread but the last read before its neighbour wrote
  EXPECT_GT(wrong_under("random:1"), 0);
  EXPECT_EQ(wrong_under("random:1"), wrong_under("random:1"));  // a seed replays the same schedule
  parbench::simt::set_schedule(saved);
}

// CPU time of this OS thread, which runs every block when there is one simt thread: unlike wall
// time it does not grow when other processes share the cores.
static double thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e9 + double(ts.tv_nsec);
}

// The micro-benchmark: cost of one barrier arrival and one shuffle per CUDA thread.
TEST(SimtCost, BarrierAndShuffle) {
  const int saved = parbench::simt::worker_threads();
  parbench::simt::set_worker_threads(1);
  const int blocks = 8, block = 256, iters = 200, total = blocks * block;
  std::vector<int> out(total, kPoison);
  k::barrier_loop(out.data(), 1, block, 1, nullptr);  // warm-up: maps the fiber stacks
  auto t0 = std::chrono::steady_clock::now();
  const double c0 = thread_cpu_ns();
  k::barrier_loop(out.data(), blocks, block, iters, nullptr);
  const double c1 = thread_cpu_ns();
  auto t1 = std::chrono::steady_clock::now();
  for (int t = 0; t < total; ++t) {
    const long long want = (long long)iters * (iters - 1) / 2 + (long long)iters * ((t % block + 1) % block);
    ASSERT_EQ(out[std::size_t(t)], want) << t;
  }
  std::fill(out.begin(), out.end(), kPoison);
  auto t2 = std::chrono::steady_clock::now();
  const double c2 = thread_cpu_ns();
  k::shuffle_loop(out.data(), blocks, block, iters, nullptr);
  const double c3 = thread_cpu_ns();
  auto t3 = std::chrono::steady_clock::now();
  for (int w = 0; w < total / 32; ++w) {
    std::vector<unsigned> v(32);
    for (int l = 0; l < 32; ++l) v[std::size_t(l)] = unsigned(w * 32 + l);
    for (int i = 0; i < iters; ++i) {
      std::vector<unsigned> next(32);
      for (int l = 0; l < 32; ++l) next[std::size_t(l)] = v[std::size_t(l)] + v[std::size_t(l ^ (1 << (i % 5)))];
      v = next;
    }
    for (int l = 0; l < 32; ++l) ASSERT_EQ(unsigned(out[std::size_t(w * 32 + l)]), v[std::size_t(l)]) << w * 32 + l;
  }
  parbench::simt::set_worker_threads(saved);
  const double barriers = double(total) * 2 * iters, shuffles = double(total) * iters;
  const double ns_barrier = std::chrono::duration<double, std::nano>(t1 - t0).count() / barriers;
  const double ns_shuffle = std::chrono::duration<double, std::nano>(t3 - t2).count() / shuffles;
  std::printf("simt cost (1 OS thread, %d threads x %d blocks), per CUDA thread: __syncthreads %.1f ns wall "
              "(%.1f ns CPU), __shfl_xor_sync %.1f ns wall (%.1f ns CPU)\n",
              block, blocks, ns_barrier, (c1 - c0) / barriers, ns_shuffle, (c3 - c2) / shuffles);
  RecordProperty("ns_per_barrier_arrival", std::to_string(ns_barrier));
  RecordProperty("ns_per_shuffle", std::to_string(ns_shuffle));
}
