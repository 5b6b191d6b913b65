// bench_alltoallv and bench_hypercube end to end: nccl-tests' size, count and bandwidth columns worked out by hand,
// the split's environment (spread, matrix file and scale, and their bad values: exit 2 before any row), the
// hypercube's refusal of other rank counts, the CSV's collective column, and the same under mpirun.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bench_run.h"

namespace {

using ::testing::HasSubstr;
using ::testing::Not;

using namespace pbtest;  // run, bench, Result, mpirun

// The table row of `size` (its first column) as whitespace-separated columns; empty when there is none.
std::vector<std::string> row_of(const std::string& output, const std::string& size) {
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream cols(line);
    std::vector<std::string> v;
    for (std::string c; cols >> c;) v.push_back(c);
    if (!v.empty() && v[0] == size) return v;
  }
  return {};
}

// Columns: size count type redop root, then time algbw busbw #wrong out of place and in place. The bandwidths
// are worked out from the size and time columns (bytes / us / 1e3 = GB/s, times the collective's algbw factor), so
// a slow machine, whose bandwidths print as 0.00, checks them as well as a fast one; the tolerance is the two
// printed decimals.
void expect_bandwidths(const std::vector<std::string>& row, double algbw_factor, double busbw_per_algbw,
                       const std::string& output) {
  ASSERT_GE(row.size(), 13u) << output;
  const double bytes = std::stod(row[0]);
  for (std::size_t half : {5u, 9u}) {
    const double time_us = std::stod(row[half]);
    const double algbw = std::stod(row[half + 1]), busbw = std::stod(row[half + 2]);
    ASSERT_GT(time_us, 0) << output;
    const double expected = bytes / time_us / 1e3 * algbw_factor;
    EXPECT_NEAR(algbw, expected, 0.0051 + 1e-4 * expected) << output;
    EXPECT_NEAR(busbw, expected * busbw_per_algbw, 0.0051 + 1e-4 * expected) << output;
    EXPECT_EQ(row[half + 3], "0") << output;
  }
}

std::string temp_file(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / ("pb_" + std::to_string(getpid()) + "_" + name);
  std::ofstream(path) << text;
  return path.string();
}

// 1 KiB at 4 ranks: 64 f32 per peer, 1024 bytes a rank split 1024 d / 6 to the rank d ahead, rounded down to 16
// bytes: 160 + 336 + 512 = 1008 bytes sent and received by each rank; 64 KiB: 4096 per peer, 10912 + 21840 +
// 32768 = 65520 bytes.
TEST(BenchExchanges, AlltoallvSizesAndBandwidth) {
  Result r = run(bench("alltoallv") + " --device cpu --ranks 4 --impl naive,ring --sizes 1K,64K -n 2");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("# ring: not run: ring implements"));
  EXPECT_THAT(r.output, HasSubstr("# Out of bounds values : 0 OK"));
  std::vector<std::string> row = row_of(r.output, "1008");
  ASSERT_FALSE(row.empty()) << r.output;
  EXPECT_EQ(row[1], "64");
  row = row_of(r.output, "65520");
  ASSERT_FALSE(row.empty()) << r.output;
  EXPECT_EQ(row[1], "4096");
  expect_bandwidths(row, 1.0, 0.75, r.output);
  EXPECT_THAT(r.output, HasSubstr("# alltoallv's split: distance-weighted, spread 1\n"));
  // Uniform: 4 x 256 bytes, 256 of them to itself.
  r = run("NCCL_TESTS_ALLTOALLV_SPREAD=0 " + bench("alltoallv") + " --device simt --ranks 3 --impl naive "
          "-d f32,f64,u8 --sizes 96 -n 1");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_FALSE(row_of(r.output, "96").empty()) << r.output;  // 32 per peer of 96 bytes, already 16-byte multiples
  EXPECT_THAT(r.output, HasSubstr("# Out of bounds values : 0 OK"));
}

TEST(BenchExchanges, AlltoallvMatrixFile) {
  // Rank 1 sends the most: 32 + 16 + 48 = 96 bytes, 196608 scaled by 2048; the size column is the largest total,
  // the count 0.
  const std::string m = temp_file("matrix.txt", "0 16 32\n32 16 48\n16 0 0\n");
  Result r = run("NCCL_TESTS_ALLTOALLV_MATRIX_FILE=" + m + " NCCL_TESTS_ALLTOALLV_MATRIX_SCALE=2048 " +
                 bench("alltoallv") + " --device cpu --ranks 3 --impl naive -b 192K -e 192K -n 2");
  ASSERT_EQ(r.status, 0) << r.output;
  const std::vector<std::string> row = row_of(r.output, "196608");
  ASSERT_FALSE(row.empty()) << r.output;
  EXPECT_EQ(row[1], "0");
  expect_bandwidths(row, 1.0, 2.0 / 3.0, r.output);
  // nccl-tests' rule: one size, at least the largest total.
  r = run("NCCL_TESTS_ALLTOALLV_MATRIX_FILE=" + m + " " + bench("alltoallv") + " --device cpu --ranks 3 -b 8 -e 1K");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("the sizes must be one size of at least 96 bytes"));
  std::filesystem::remove(m);
}

// Bad values: exit 2, the variable, the value and the accepted form named, no table row.
TEST(BenchExchanges, AlltoallvBadEnvironment) {
  const std::string bad_matrix = temp_file("bad.txt", "16 32\n48 50\n");
  const std::string small_matrix = temp_file("small.txt", "16 32\n48 64\n");
  struct Case {
    std::string env, message;
  } cases[] = {
      {"NCCL_TESTS_ALLTOALLV_SPREAD=1.5", "NCCL_TESTS_ALLTOALLV_SPREAD='1.5' is not a spread; accepted: a number"},
      {"NCCL_TESTS_ALLTOALLV_SPREAD=wide", "NCCL_TESTS_ALLTOALLV_SPREAD='wide'"},
      {"NCCL_TESTS_ALLTOALLV_MATRIX_FILE=/nonexistent/m.txt", "/nonexistent/m.txt cannot be read"},
      {"NCCL_TESTS_ALLTOALLV_MATRIX_FILE=" + bad_matrix, "row 1 column 1 is '50', not a multiple of 16 bytes"},
      {"NCCL_TESTS_ALLTOALLV_MATRIX_FILE=" + small_matrix, "is a 2x2 matrix, too small for 3 ranks"},
      {"NCCL_TESTS_ALLTOALLV_MATRIX_FILE=" + small_matrix + " NCCL_TESTS_ALLTOALLV_MATRIX_SCALE=-2",
       "NCCL_TESTS_ALLTOALLV_MATRIX_SCALE='-2' is not a scale"},
  };
  for (const Case& c : cases) {
    Result r = run(c.env + " " + bench("alltoallv") + " --device cpu --ranks 3 -b 1K -e 1K -n 1");
    EXPECT_EQ(r.status, 2) << c.env << "\n" << r.output;
    EXPECT_THAT(r.output, HasSubstr(c.message)) << c.env;
    EXPECT_THAT(r.output, Not(HasSubstr("Out of bounds"))) << c.env;
    EXPECT_TRUE(row_of(r.output, "1024").empty()) << r.output;
  }
  std::filesystem::remove(bad_matrix);
  std::filesystem::remove(small_matrix);
}

// 64 KiB at 4 ranks: 16384 f32 over 4 ranks, 4096 each (a multiple of 4); algbw 3/4 of size / time, busbw = algbw.
TEST(BenchExchanges, HypercubeSizesBandwidthAndRefusal) {
  auto csv = std::filesystem::temp_directory_path() / ("pb_cube_" + std::to_string(getpid()) + ".csv");
  Result r = run(bench("hypercube") + " --device cpu --ranks 4 --impl naive --sizes 64K,1000 -n 2 --csv " +
                 csv.string());
  ASSERT_EQ(r.status, 0) << r.output;
  std::vector<std::string> row = row_of(r.output, "65536");
  ASSERT_FALSE(row.empty()) << r.output;
  EXPECT_EQ(row[1], "4096");
  // The hypercube's algbw counts the (n - 1) / n of the buffer that reaches each rank; its busbw is the same.
  expect_bandwidths(row, 0.75, 1.0, r.output);
  row = row_of(r.output, "960");  // 250 f32 / 4 = 62, rounded down to 60 (a multiple of 4): 960 bytes
  ASSERT_FALSE(row.empty()) << r.output;
  EXPECT_EQ(row[1], "60");
  std::ifstream in(csv);
  std::string line;
  std::getline(in, line);
  std::getline(in, line);
  EXPECT_THAT(line, ::testing::StartsWith("hypercube,naive,cpu,4,1,f32,none,-1,0,65536,4096,"));
  std::filesystem::remove(csv);
  r = run(bench("hypercube") + " --device cpu --ranks 3 --impl naive --sizes 1K -n 1");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("none of the implementations asked for can run hypercube here:\n  naive: hypercube "
                                  "exchanges with rank ^ 1, ^ 2, ^ 4, ... and needs a power-of-two number of ranks "
                                  "(1, 2, 4, 8, ...), not 3"));
  // Left to choose, it names every implementation it tried and why each cannot.
  r = run(bench("hypercube") + " --device cpu --ranks 3 --sizes 1K -n 1");
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("no collective implementation can run hypercube here (nccl: "));
  EXPECT_THAT(r.output, HasSubstr("; naive: hypercube exchanges with rank ^ 1"));
}

// The data check reads the split: one spoiled element of rank 1's output (its first, from rank 0) fails the run.
TEST(BenchExchanges, SpoiledOutputsFailTheCheck) {
  for (const std::string coll : {"alltoallv", "hypercube"}) {
    Result r = run("PARBENCH_TEST_CORRUPT_RANK=1 " + bench(coll) + " --device cpu --ranks 4 --impl naive --sizes 1K "
                   "-n 1");
    EXPECT_EQ(r.status, 1) << r.output;
    EXPECT_THAT(r.output, HasSubstr("rank 1: " + coll + "/naive of")) << r.output;
    EXPECT_THAT(r.output, HasSubstr("# Out of bounds values : 2 FAILED")) << r.output;
  }
}

#ifdef PB_MPIEXEC
TEST(BenchExchangesMpi, BothUnderMpirun) {
  for (const std::string coll : {"alltoallv", "hypercube"}) {
    Result r = run(mpirun(4) + bench(coll) + " --device cpu --impl mpi,mpi-nb,naive --sizes 1K,64K -n 2");
    EXPECT_EQ(r.status, 0) << coll << "\n" << r.output;
    EXPECT_THAT(r.output, HasSubstr("# impl: mpi-nb")) << coll;
    EXPECT_THAT(r.output, HasSubstr("# Out of bounds values : 0 OK")) << coll;
  }
}
#endif

}  // namespace
