// The tensor-core building blocks of device/mma.h under simt, lane by lane against the PTX ISA's definitions:
// mma.sync m16n8k16 (bf16, f16), ldmatrix x1/x2/x4 with and without .trans, cp.async groups, the swizzles.
// Inputs are small integers, exact in bf16 and f16, so every expected value is exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <set>
#include <vector>

#include "base/dtype.h"
#include "device/simt/simt_types.h"
#include "device/swizzle.h"
#include "simt_test_util.h"
#include "tests/simt/tensor_core_kernels.h"

namespace k = parbench::simt_kernels;
using simt_test::fresh_rng;
using simt_test::random_ints;

namespace {

std::uint16_t f16_bits(int v) {  // small integers only: exact in f16
  return parbench::float16::float_to_f16_bits(float(v));
}
std::uint16_t bf16_bits(int v) { return parbench::float16::float_to_bf16_bits(float(v)); }

struct MmaCase {
  std::vector<int> a, b, c;  // a 16x16, b 16x8 (k by n), c 16x8
  std::vector<float> want;   // D = A B + C, 16x8
};
void set_want(MmaCase& m) {
  m.want.assign(128, 0.f);
  for (int r = 0; r < 16; ++r)
    for (int n = 0; n < 8; ++n) {
      int s = m.c[std::size_t(r * 8 + n)];
      for (int kk = 0; kk < 16; ++kk) s += m.a[std::size_t(r * 16 + kk)] * m.b[std::size_t(kk * 8 + n)];
      m.want[std::size_t(r * 8 + n)] = float(s);
    }
}
MmaCase random_mma(std::mt19937_64& rng) {
  MmaCase m{random_ints(rng, 256, -8, 8), random_ints(rng, 128, -8, 8), random_ints(rng, 128, -100, 100), {}};
  set_want(m);
  return m;
}

// Runs one mma and returns how many of the 128 lane registers differ from the ISA's placement of D.
int mma_mismatches(const MmaCase& m, bool bf16, bool swap_a_k_halves) {
  auto bits = [&](const std::vector<int>& v) {
    std::vector<std::uint16_t> out(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) out[i] = bf16 ? bf16_bits(v[i]) : f16_bits(v[i]);
    return out;
  };
  auto a = bits(m.a), b = bits(m.b);
  std::vector<float> c(m.c.begin(), m.c.end()), lane_d(128, -1e9f), d(128, -1e9f);
  k::mma_once(lane_d.data(), d.data(), a.data(), b.data(), c.data(), bf16, swap_a_k_halves, nullptr);
  int bad = 0;
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 4; ++i) {
      const int row = lane / 4 + 8 * (i / 2), col = 2 * (lane % 4) + i % 2;
      const float want = m.want[std::size_t(row * 8 + col)];
      bad += lane_d[std::size_t(4 * lane + i)] != want;
      if (!swap_a_k_halves) {
        EXPECT_EQ(lane_d[std::size_t(4 * lane + i)], want) << "lane " << lane << " register " << i;
      }
    }
  if (!swap_a_k_halves) {
    EXPECT_EQ(d, m.want);
  }
  return bad;
}

}  // namespace

class SimtMma : public simt_test::ScheduleTest {};
SIMT_ALL_SCHEDULES(SimtMma);

TEST_P(SimtMma, Bf16MatchesTheIsaLayoutLaneByLane) {
  std::uint64_t seed;
  auto rng = fresh_rng(&seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (int rep = 0; rep < 3; ++rep) EXPECT_EQ(mma_mismatches(random_mma(rng), true, false), 0);
}

TEST_P(SimtMma, F16MatchesTheIsaLayoutLaneByLane) {
  std::uint64_t seed;
  auto rng = fresh_rng(&seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (int rep = 0; rep < 3; ++rep) EXPECT_EQ(mma_mismatches(random_mma(rng), false, false), 0);
}

TEST_P(SimtMma, SwappedKHalvesOfAFail) {
  // A planted layout error (the kernel puts A's k 8..15 where 0..7 belong) must show: A's two k halves differ.
  auto rng = fresh_rng();
  MmaCase m = random_mma(rng);
  for (int r = 0; r < 16; ++r) m.a[std::size_t(r * 16 + 3)] = m.a[std::size_t(r * 16 + 11)] + 1;
  set_want(m);
  EXPECT_EQ(mma_mismatches(m, true, false), 0);
  EXPECT_GT(mma_mismatches(m, true, true), 0);
}

TEST_P(SimtMma, LdmatrixEveryCountWithAndWithoutTrans) {
  std::uint64_t seed;
  auto rng = fresh_rng(&seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::vector<std::uint16_t> tile(256);
  std::iota(tile.begin(), tile.end(), std::uint16_t(1));
  std::vector<int> row_of_lane(32);
  std::iota(row_of_lane.begin(), row_of_lane.end(), 0);
  std::shuffle(row_of_lane.begin(), row_of_lane.end(), rng);  // any row order: each lane's own address counts
  auto at = [&](int row, int col) { return std::uint32_t(tile[std::size_t(row * 8 + col)]); };
  for (int n : {1, 2, 4})
    for (bool trans : {false, true}) {
      std::vector<std::uint32_t> out(std::size_t(32 * n), 0u);
      k::ldmatrix_once(out.data(), tile.data(), row_of_lane.data(), n, trans, nullptr);
      for (int lane = 0; lane < 32; ++lane)
        for (int j = 0; j < n; ++j) {
          const int g = lane / 4, t = lane % 4;
          auto addr = [&](int r) { return row_of_lane[std::size_t(8 * j + r)]; };
          const std::uint32_t want = trans ? at(addr(2 * t), g) | at(addr(2 * t + 1), g) << 16
                                           : at(addr(g), 2 * t) | at(addr(g), 2 * t + 1) << 16;
          EXPECT_EQ(out[std::size_t(n * lane + j)], want)
              << "x" << n << (trans ? ".trans" : "") << " lane " << lane << " register " << j;
        }
    }
}

TEST_P(SimtMma, CpAsyncLandsAtItsWaitAndZeroFills) {
  auto rng = fresh_rng();
  std::vector<std::uint32_t> src(256);
  for (auto& w : src) w = std::uint32_t(rng());
  for (int src_bytes : {16, 8, 0}) {
    std::vector<std::uint32_t> seen(512, 0u);
    k::cp_async_groups(seen.data(), src.data(), src_bytes, nullptr);
    for (int t = 0; t < 32; ++t) {
      const std::uint32_t* s = &seen[std::size_t(t * 16)];
      unsigned char want1[16] = {};
      std::memcpy(want1, &src[std::size_t(t * 8 + 4)], std::size_t(src_bytes));
      for (int w = 0; w < 4; ++w) {
        EXPECT_EQ(s[w], 0xffffffffu) << "thread " << t << ": chunk 0 read before any wait is not the poison";
        EXPECT_EQ(s[4 + w], 0xffffffffu) << "thread " << t << ": chunk 1 landed before its group's wait";
        EXPECT_EQ(s[8 + w], src[std::size_t(t * 8 + w)]) << "thread " << t << ": chunk 0 after wait<1>";
        std::uint32_t w1;
        std::memcpy(&w1, want1 + 4 * w, 4);
        EXPECT_EQ(s[12 + w], w1) << "thread " << t << ", " << src_bytes << " source bytes: chunk 1 after wait<0>";
      }
    }
  }
}

template <int kChunks>
void expect_conflict_free_swizzle() {
  using parbench::swizzle_chunk;
  for (int row = 0; row < 64; ++row) {
    std::set<int> phys;
    for (int c = 0; c < kChunks; ++c) phys.insert(swizzle_chunk<kChunks>(row, c));
    EXPECT_EQ(int(phys.size()), kChunks) << kChunks << " chunks per row: row " << row << " is not a permutation";
    EXPECT_EQ(*phys.rbegin(), kChunks - 1);
  }
  // The 8 rows one ldmatrix phase reads (same logical chunk) fall in 8 different 16-byte bank groups.
  for (int row0 = 0; row0 < 64; row0 += 8)
    for (int c = 0; c < kChunks; ++c) {
      std::set<int> groups;
      for (int r = row0; r < row0 + 8; ++r) groups.insert((r * kChunks + swizzle_chunk<kChunks>(r, c)) % 8);
      EXPECT_EQ(groups.size(), 8u) << kChunks << " chunks per row, rows " << row0 << "+, chunk " << c;
    }
}

TEST(SimtSwizzle, PermutesEachRowAndSpreadsEightRowsOverTheBanks) {
  expect_conflict_free_swizzle<2>();
  expect_conflict_free_swizzle<4>();
  expect_conflict_free_swizzle<8>();
  expect_conflict_free_swizzle<16>();
  // Without the swizzle, rows of 64 bytes collide: rows r and r + 2 start in the same bank group.
  EXPECT_EQ((0 * 4 + 0) % 8, (2 * 4 + 0) % 8);
}

// Misuse that is undefined on a GPU aborts under simt, naming the operation and the call site.
TEST(SimtMmaDeath, MisuseAbortsNamingTheSite) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // the process has a pool of OS threads
  EXPECT_DEATH(k::tensor_core_misuse(0, nullptr),
               "simt: mma.sync m16n8k16 needs all 32 lanes of the warp at [^ ]*tensor_core_kernels.cu:[0-9]+");
  EXPECT_DEATH(k::tensor_core_misuse(1, nullptr),
               "simt: ldmatrix row address not 16-byte aligned at [^ ]*tensor_core_kernels.cu:[0-9]+");
  EXPECT_DEATH(k::tensor_core_misuse(2, nullptr),
               "simt: cp.async address not 16-byte aligned at [^ ]*tensor_core_kernels.cu:[0-9]+");
}
