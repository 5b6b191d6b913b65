// alltoallv's split (collectives/table/alltoallv_split.h): nccl-tests' distance-weighted formula with known values, the
// invariants at every rank count and spread, and the environment's values and matrix files, good and bad.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <string>

#include "base/error.h"
#include "collectives/table/alltoallv_split.h"
#include "tests/test_files.h"

namespace parbench {
namespace {

AlltoallvPattern spread(double s) {
  AlltoallvPattern p;
  p.spread = s;
  return p;
}

std::string usage_error(const auto& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no UsageError)";
}

TEST(AlltoallvSplit, UniformAtSpreadZero) {
  const AlltoallvPattern p = spread(0.0);
  // 4 ranks, 64 f32 per peer: 1024 bytes a rank, 256 to every rank, itself included.
  for (int from = 0; from < 4; ++from)
    for (int to = 0; to < 4; ++to) EXPECT_EQ(alltoallv_peer_bytes(p, from, to, 4, 1024), 256u) << from << to;
  const AlltoallvSplit s = alltoallv_split(p, 2, 4, 64, DType::f32);
  EXPECT_EQ(s.send_counts, (std::vector<std::size_t>{64, 64, 64, 64}));
  EXPECT_EQ(s.recv_displs, (std::vector<std::size_t>{0, 64, 128, 192}));
  EXPECT_EQ(s.send_total, 256u);
}

TEST(AlltoallvSplit, DistanceWeightedAtSpreadOne) {
  const AlltoallvPattern p = spread(1.0);
  // 4 ranks, 960 bytes: 960 d / 6 = 160 d bytes to the rank d ahead (d = 0..3), nothing to itself.
  EXPECT_EQ(alltoallv_peer_bytes(p, 0, 0, 4, 960), 0u);
  EXPECT_EQ(alltoallv_peer_bytes(p, 0, 1, 4, 960), 160u);
  EXPECT_EQ(alltoallv_peer_bytes(p, 0, 2, 4, 960), 320u);
  EXPECT_EQ(alltoallv_peer_bytes(p, 0, 3, 4, 960), 480u);
  EXPECT_EQ(alltoallv_peer_bytes(p, 3, 0, 4, 960), 160u);  // distance in rank order, around
  EXPECT_EQ(alltoallv_peer_bytes(p, 2, 1, 4, 960), 480u);
  // Rounded down to 16 bytes: 100 d / 6 = 16.7, 33.3, 50 -> 16, 32, 48.
  EXPECT_EQ(alltoallv_peer_bytes(p, 1, 2, 4, 100), 16u);
  EXPECT_EQ(alltoallv_peer_bytes(p, 1, 3, 4, 100), 32u);
  EXPECT_EQ(alltoallv_peer_bytes(p, 1, 0, 4, 100), 48u);
  // Half and half: (1 - 0.5) 240 + 0.5 x 160 d at 960 bytes over 4 ranks.
  const AlltoallvPattern half = spread(0.5);
  EXPECT_EQ(alltoallv_peer_bytes(half, 0, 0, 4, 960), 112u);  // 120 -> 112
  EXPECT_EQ(alltoallv_peer_bytes(half, 0, 3, 4, 960), 352u);  // 360 -> 352
  // One rank keeps its total, rounded to 16.
  EXPECT_EQ(alltoallv_peer_bytes(p, 0, 0, 1, 100), 96u);
}

// Every rank count, spread and size: nothing to itself at spread 1, 16-byte shares, every rank sending and
// receiving the same total, and each rank's receive layout matching its senders' send layouts.
TEST(AlltoallvSplit, TotalsEqualSharesAlignedNothingToSelf) {
  std::mt19937 rng(std::random_device{}());
  for (int n = 1; n <= 9; ++n)
    for (double s : {0.0, 0.25, 0.5, 1.0})
      for (int round = 0; round < 4; ++round) {
        const std::size_t count = std::uniform_int_distribution<std::size_t>(0, 5000)(rng);
        const AlltoallvPattern p = spread(s);
        const AlltoallvSplit first = alltoallv_split(p, 0, n, count, DType::f32);
        EXPECT_LE(first.send_total, count * std::size_t(n));
        for (int r = 0; r < n; ++r) {
          const AlltoallvSplit mine = alltoallv_split(p, r, n, count, DType::f32);
          EXPECT_EQ(mine.send_total, first.send_total) << n << " " << s << " " << r;
          EXPECT_EQ(mine.recv_total, first.send_total) << n << " " << s << " " << r;
          if (s == 1.0 && n > 1) {
            EXPECT_EQ(mine.send_counts[std::size_t(r)], 0u);
          }
          for (int q = 0; q < n; ++q) {
            EXPECT_EQ(mine.send_counts[std::size_t(q)] * 4 % 16, 0u);
            const AlltoallvSplit peer = alltoallv_split(p, q, n, count, DType::f32);
            EXPECT_EQ(mine.recv_counts[std::size_t(q)], peer.send_counts[std::size_t(r)]);
            if (mine.recv_counts[std::size_t(q)] == 0) continue;
            const AlltoallvSource src =
                alltoallv_source(p, r, n, count, DType::f32, mine.recv_displs[std::size_t(q)]);
            EXPECT_EQ(src.rank, q);
            EXPECT_EQ(src.index, peer.send_displs[std::size_t(r)]);
          }
        }
      }
}

TEST(AlltoallvSplit, CountIsPerPeerRoundedTo16Bytes) {
  const AlltoallvPattern p = spread(1.0);
  EXPECT_EQ(alltoallv_count(p, 1000, DType::f32, 4), 248u);  // 250 -> 248 (4 f32 in 16 bytes)
  EXPECT_EQ(alltoallv_count(p, 1000, DType::f64, 4), 250u);  // 250 (2 f64 in 16 bytes)
  EXPECT_EQ(alltoallv_count(p, 1000, DType::u8, 4), 240u);   // 250 -> 240
  EXPECT_EQ(alltoallv_count(p, 10, DType::f32, 4), 0u);
}

TEST(AlltoallvSplit, SpreadAndScaleValues) {
  EXPECT_EQ(parse_alltoallv_spread("0"), 0.0);
  EXPECT_EQ(parse_alltoallv_spread("0.25"), 0.25);
  EXPECT_EQ(parse_alltoallv_spread("1.0"), 1.0);
  for (const char* bad : {"1.5", "-0.1", "half", "", "0.5x", "nan", "inf"}) {
    const std::string what = usage_error([&] { parse_alltoallv_spread(bad); });
    EXPECT_NE(what.find("NCCL_TESTS_ALLTOALLV_SPREAD='" + std::string(bad) + "'"), std::string::npos) << what;
    EXPECT_NE(what.find("from 0.0 (uniform) to 1.0"), std::string::npos) << what;
  }
  EXPECT_EQ(parse_alltoallv_scale("2.5"), 2.5);
  for (const char* bad : {"-1", "x", ""}) {
    const std::string what = usage_error([&] { parse_alltoallv_scale(bad); });
    EXPECT_NE(what.find("NCCL_TESTS_ALLTOALLV_MATRIX_SCALE='" + std::string(bad) + "'"), std::string::npos) << what;
  }
}

TEST(AlltoallvSplit, MatrixParsedScaledAndUsed) {
  // Rank i sends cell [i][j] to rank j; larger than the ranks: the first rows and columns are used.
  const AlltoallvPattern p = parse_alltoallv_matrix("0 16 32\n48 64 80\n\n 96 112 128 \n", "m.txt", 1.5);
  ASSERT_TRUE(p.from_matrix());
  EXPECT_EQ(p.dim, 3);
  EXPECT_EQ(alltoallv_peer_bytes(p, 0, 1, 3, 0), 16u);   // 24 -> 16
  EXPECT_EQ(alltoallv_peer_bytes(p, 1, 0, 3, 0), 64u);   // 72 -> 64
  EXPECT_EQ(alltoallv_peer_bytes(p, 2, 2, 3, 0), 192u);  // 192
  EXPECT_EQ(alltoallv_count(p, 4096, DType::f32, 3), 0u);
  const AlltoallvSplit s = alltoallv_split(p, 1, 2, 0, DType::f32);  // 2 ranks: [[0, 16], [64, 96]] x 1.5
  EXPECT_EQ(s.send_counts, (std::vector<std::size_t>{16, 24}));
  EXPECT_EQ(s.recv_counts, (std::vector<std::size_t>{4, 24}));
  const AlltoallvTotals most = alltoallv_largest_totals(p, 3, 0, DType::u8);
  EXPECT_EQ(most.send, 144u + 160u + 192u);  // row 2, scaled and rounded
  EXPECT_EQ(most.recv, 48u + 112u + 192u);   // column 2
}

TEST(AlltoallvSplit, BadMatricesNameTheFileAndTheForm) {
  struct Case {
    std::string text, message;
  } cases[] = {
      {"", "it is empty"},
      {"16 32\n48\n", "row 1 has 1 values"},
      {"16 32\n48 64\n80 96\n", "row 0 has 2 values where 3 rows need 3"},
      {"16 20\n32 48\n", "row 0 column 1 is '20', not a multiple of 16 bytes"},
      {"16 x\n32 48\n", "row 0 column 1 is 'x', not a non-negative integer"},
      {"16 -16\n32 48\n", "row 0 column 1 is '-16'"},
      {"16 1.5\n32 48\n", "row 0 column 1 is '1.5'"},
  };
  for (const Case& c : cases) {
    const std::string what = usage_error([&] { parse_alltoallv_matrix(c.text, "t.txt", 1.0); });
    EXPECT_NE(what.find("NCCL_TESTS_ALLTOALLV_MATRIX_FILE=t.txt: "), std::string::npos) << what;
    EXPECT_NE(what.find(c.message), std::string::npos) << c.text << " -> " << what;
    EXPECT_NE(what.find("accepted: a whitespace-separated square matrix"), std::string::npos) << what;
  }
  const AlltoallvPattern two = parse_alltoallv_matrix("16 32\n48 64\n", "t.txt", 1.0);
  const std::string small = usage_error([&] { alltoallv_split(two, 0, 3, 0, DType::f32); });
  EXPECT_NE(small.find("is a 2x2 matrix, too small for 3 ranks"), std::string::npos) << small;
}

TEST(AlltoallvSplit, MatrixRunSizesFollowNcclTests) {
  const AlltoallvPattern p = parse_alltoallv_matrix("0 16\n32 48\n", "t.txt", 1.0);  // largest: rank 1 sends 80
  check_alltoallv_run(p, {80}, 2);
  check_alltoallv_run(p, {1024}, 2);
  EXPECT_NE(usage_error([&] { check_alltoallv_run(p, {64}, 2); }).find("one size of at least 80"),
            std::string::npos);
  EXPECT_NE(usage_error([&] { check_alltoallv_run(p, {80, 160}, 2); }).find("-b 80 -e 80"), std::string::npos);
  check_alltoallv_run(spread(1.0), {8, 1024}, 5);  // the generated split takes any sweep
}

TEST(AlltoallvSplit, EnvironmentReadsTheFile) {
  const std::string path = pbtest::scratch_file("alltoallv_matrix.txt");
  std::ofstream(path) << "0 32\n16 0\n";
  setenv("NCCL_TESTS_ALLTOALLV_MATRIX_FILE", path.c_str(), 1);
  setenv("NCCL_TESTS_ALLTOALLV_MATRIX_SCALE", "2", 1);
  const AlltoallvPattern p = alltoallv_pattern_from_env();
  EXPECT_EQ(alltoallv_peer_bytes(p, 0, 1, 2, 0), 64u);
  EXPECT_EQ(p.describe(), "matrix " + path + " (2x2) x 2");
  setenv("NCCL_TESTS_ALLTOALLV_MATRIX_FILE", (path + ".missing").c_str(), 1);
  const std::string missing = usage_error([] { alltoallv_pattern_from_env(); });
  EXPECT_NE(missing.find(path + ".missing cannot be read"), std::string::npos) << missing;
  unsetenv("NCCL_TESTS_ALLTOALLV_MATRIX_FILE");
  unsetenv("NCCL_TESTS_ALLTOALLV_MATRIX_SCALE");
  setenv("NCCL_TESTS_ALLTOALLV_SPREAD", "0.75", 1);
  EXPECT_EQ(alltoallv_pattern_from_env().describe(), "distance-weighted, spread 0.75");
  setenv("NCCL_TESTS_ALLTOALLV_SPREAD", "2", 1);
  EXPECT_NE(usage_error([] { alltoallv_pattern_from_env(); }).find("NCCL_TESTS_ALLTOALLV_SPREAD='2'"),
            std::string::npos);
  unsetenv("NCCL_TESTS_ALLTOALLV_SPREAD");
}

}  // namespace
}  // namespace parbench
