// The collective benches as drop-ins for nccl-tests: every option accepted with its effect (rank count from
// -t/-g, -m's aggregated operations, -a's reduction of the timings, -T's deadline, -c's rounds, -z's waits, -C's
// column, -N's cycles, -I's columns, -r all, -u, NCCL_TESTS_SPLIT), bad values refused with exit 2 and no output
// file, the JSON of -J, and a parser written the way nccl-tests' users write them reading the CSV's numbers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "bench_run.h"

namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using namespace pbtest;  // run, bench, Result, mpirun

std::filesystem::path temp(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("pb_nt_" + std::to_string(getpid()) + "_" + name);
}

std::vector<std::string> fields(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> f;
  for (std::string w; in >> w;) f.push_back(w);
  return f;
}

// The usual nccl-tests output parser: find the line with 'out-of-place', skip the two column-title lines, take
// every row up to 'Out of bounds values'; repeated for every block. Returns the rows' fields.
std::vector<std::vector<std::string>> nccl_rows(const std::string& output) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find("out-of-place") == std::string::npos) continue;
    std::getline(in, line);
    std::getline(in, line);
    while (std::getline(in, line) && line.find("Out of bounds values") == std::string::npos)
      if (!line.empty() && line[0] != '#') rows.push_back(fields(line));
  }
  return rows;
}

std::vector<std::vector<std::string>> csv_rows(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::vector<std::vector<std::string>> rows;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, ',');) f.push_back(c);
    rows.push_back(f);
  }
  return rows;
}

// The table prints as many decimals as fit its column (two at most, nccl-tests' rule: a time of 10 ms or more has
// fewer) and the CSV more (time three, which may round the other way): equal to half the table's last digit.
void expect_printed(const std::string& table, const std::string& csv, const char* what) {
  const std::size_t dot = table.find('.'), exponent = table.find_first_of("eE");
  double last_digit = 1;
  if (exponent != std::string::npos) last_digit = std::pow(10.0, std::stoi(table.substr(exponent + 1)));
  else if (dot != std::string::npos) last_digit = std::pow(10.0, -double(table.size() - dot - 1));
  EXPECT_NEAR(std::stod(table), std::stod(csv), 0.5 * last_digit + 0.0006) << what << ": table " << table << ", csv "
                                                                           << csv;
}

int count_lines_with(const std::string& output, const std::string& needle) {
  int n = 0;
  for (std::size_t at = output.find(needle); at != std::string::npos; at = output.find(needle, at + 1)) ++n;
  return n;
}

TEST(NcclTestsDropIn, ParserReadsTheCsvNumbers) {
  const auto csv = temp("parse.csv");
  Result r = run(bench("allreduce") + " --device cpu -t 3 --impl ring,rhd -b 8 -e 64K -f 8 -n 3 --csv " +
                 csv.string());
  ASSERT_EQ(r.status, 0) << r.output;
  const auto rows = nccl_rows(r.output);
  const auto csv_all = csv_rows(csv);
  ASSERT_EQ(rows.size(), 2u * 5) << r.output;  // two blocks of 8, 64, 512, 4K and 32K bytes
  ASSERT_EQ(csv_all.size(), rows.size() * 2);
  std::size_t i = 0;
  for (const auto& row : rows) {
    ASSERT_EQ(row.size(), 13u);
    const auto& oop = csv_all[2 * i];  // out-of-place then in-place per size
    const auto& ip = csv_all[2 * i + 1];
    ++i;
    EXPECT_EQ(row[0], oop[9]);                                                   // size (B)
    EXPECT_EQ(row[1], oop[10]);                                                  // count
    expect_printed(row[row.size() - 6], oop[13], "out-of-place busbw, field -6");
    expect_printed(row[5], oop[11], "out-of-place time");
    expect_printed(row[row.size() - 2], ip[13], "in-place busbw");
    EXPECT_EQ(oop[8], "0");
    EXPECT_EQ(ip[8], "1");
  }
  std::filesystem::remove(csv);
}

TEST(NcclTestsDropIn, OneImplementationIsNcclTestsLayout) {
  Result r = run(bench("allreduce") + " --device cpu -t 2 -b 8 -e 128 -f 2 -n 1");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("# Collective test starting: bench_allreduce\n# nThread 2 nGpus 1 minBytes 8 "
                                  "maxBytes 128 step: 2(factor) warmup iters: 1 iters: 1 agg iters: 1 validation: 1 "
                                  "graph: 0 unalign: 0\n#\n# Using devices\n#  Rank  0 Group  0 Pid"));
  EXPECT_THAT(r.output, HasSubstr("#       size         count      type   redop    root     time   algbw   busbw  "
                                  "#wrong     time   algbw   busbw  #wrong\n"));
  EXPECT_THAT(r.output, HasSubstr("\n# Out of bounds values : 0 OK\n# Avg bus bandwidth    : "));
  EXPECT_THAT(r.output, HasSubstr("\n#\n# Collective test concluded: bench_allreduce\n"));
  EXPECT_THAT(r.output, Not(HasSubstr("# impl:")));  // one block: no block title
  EXPECT_EQ(nccl_rows(r.output).size(), 5u);
  r = run(bench("allreduce") + " --device cpu -t 2 -b 1K -e 3K -i 1K -n 1");  // adding -i instead of -f
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("minBytes 1024 maxBytes 3072 step: 1024(bytes) warmup iters"));
  EXPECT_EQ(nccl_rows(r.output).size(), 3u);
}

TEST(NcclTestsDropIn, RanksAreThreadsTimesGpus) {
  const auto csv = temp("ranks.csv");
  Result r = run(bench("allgather") + " --device cpu -t 2 -g 3 --impl ring -b 1K -e 1K -n 1 --csv " + csv.string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("# nThread 2 nGpus 3 "));
  EXPECT_EQ(count_lines_with(r.output, "#  Rank "), 6);
  EXPECT_THAT(r.output, HasSubstr("#  Rank  5 Group  0"));
  for (const auto& row : csv_rows(csv)) EXPECT_EQ(row[3], "6");
  std::filesystem::remove(csv);
  r = run(bench("allreduce") + " --device cpu -t 2 -g 3 --ranks 4 -b 1K -e 1K");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("--ranks 4 disagrees with -t 2 x -g 3"));
}

// Counts a trace's events by name on rank 0 (pid 1).
std::map<std::string, int> rank0_events(const std::filesystem::path& p) {
  std::ifstream in(p);
  const nlohmann::json j = nlohmann::json::parse(in);
  std::map<std::string, int> n;
  for (const auto& e : j.is_object() ? j["traceEvents"] : j)
    if (e.value("pid", 0) == 1 && e.value("ph", "") == "X") ++n[e.value("name", "")];
  return n;
}

TEST(NcclTestsDropIn, AggIterationsAndBlockingCountOperationsAndWaits) {
  const auto trace = temp("agg.json");
  const std::string base = bench("allreduce") + " --device cpu -t 2 --impl ring -b 1K -e 1K -n 4 -w 2 -c 1 "
                           "--inplace off -q --trace " + trace.string();
  Result r = run(base + " -m 3");
  ASSERT_EQ(r.status, 0) << r.output;
  auto ev = rank0_events(trace);
  EXPECT_EQ(ev["allreduce/ring"], (2 + 4) * 3 + 1);  // warm-up and timed iterations of 3, one check round
  EXPECT_EQ(ev["wait"], 2);                          // -z 0: one after the warm-up, one per timed batch
  r = run(base + " -m 2 -z 1");
  ASSERT_EQ(r.status, 0) << r.output;
  ev = rank0_events(trace);
  EXPECT_EQ(ev["allreduce/ring"], (2 + 4) * 2 + 1);
  EXPECT_EQ(ev["wait"], 1 + 4 * 2);  // a wait after each timed operation
  r = run(base + " -I 1");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(rank0_events(trace)["wait"], 1 + 4 + 1);  // -I: one per iteration (and the batch's, empty)
  std::filesystem::remove(trace);
}

TEST(NcclTestsDropIn, AverageReducesTheRanksTimes) {
  // The hook makes rank r measure (r + 1) x 100 us: rank 0 100, mean 250, min 100, max 400 over 4 ranks.
  const char* expected[] = {"100.00", "250.00", "100.00", "400.00"};
  for (int a = 0; a < 4; ++a) {
    Result r = run("PARBENCH_TEST_RANK_TIME_US=100 " + bench("allreduce") + " --device cpu -t 4 --impl ring -b 4K "
                   "-e 4K -n 1 -a " + std::to_string(a));
    ASSERT_EQ(r.status, 0) << r.output;
    const auto rows = nccl_rows(r.output);
    ASSERT_EQ(rows.size(), 1u) << r.output;
    EXPECT_EQ(rows[0][5], expected[a]) << "-a " << a;
    EXPECT_EQ(rows[0][9], expected[a]) << "-a " << a;
  }
}

TEST(NcclTestsDropIn, TimeoutOptionBoundsTheWait) {
  Result r = run("PARBENCH_TEST_SKIP_RANK=1 " + bench("allreduce") + " --device cpu -t 3 --impl ring -b 1K -e 1K "
                 "-T 1");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("allreduce/ring of 1024 bytes"));
  EXPECT_THAT(r.output, HasSubstr("did not finish within the timeout of 1 s"));
}

TEST(NcclTestsDropIn, CheckRoundsCountEveryRound) {
  Result r = run("PARBENCH_TEST_CORRUPT_RANK=0 " + bench("allreduce") + " --device cpu -t 2 --impl ring -b 1K "
                 "-e 1K -n 1 --inplace off -c 3");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("# Out of bounds values : 3 FAILED"));
  r = run(bench("allreduce") + " --device cpu -t 2 --impl ring -b 1K -e 1K -n 1 -c 0");
  ASSERT_EQ(r.status, 0) << r.output;
  const auto rows = nccl_rows(r.output);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0][8], "N/A");
  EXPECT_EQ(rows[0][12], "N/A");
}

TEST(NcclTestsDropIn, CputimeColumnAndJsonVersion3) {
  const auto json = temp("out.json");
  const auto csv = temp("out.csv");
  Result r = run(bench("reducescatter") + " --device cpu -t 4 --impl ring -b 1K -e 4K -f 2 -n 2 -C 1 -J " +
                 json.string() + " --csv " + csv.string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("     size         count      type   redop    root  cputime   algbw"));
  std::ifstream in(json);
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["version"], 3);
  EXPECT_EQ(j["config"]["nthreads"], 4);
  EXPECT_EQ(j["config"]["iterations"], 2);
  EXPECT_EQ(j["config"]["step_factor"], 2);
  EXPECT_EQ(j["config"]["minimum_bytes"], 1024);
  EXPECT_EQ(j["devices"].size(), 4u);
  ASSERT_EQ(j["results"].size(), 3u);
  const auto csv_all = csv_rows(csv);
  for (std::size_t i = 0; i < 3; ++i) {
    const auto& res = j["results"][i];
    EXPECT_TRUE(res["out_of_place"].contains("cpu_time"));
    EXPECT_FALSE(res["out_of_place"].contains("time"));
    EXPECT_EQ(res["size"], std::stoll(csv_all[2 * i][9]));
    EXPECT_NEAR(res["out_of_place"]["bus_bw"].get<double>(), std::stod(csv_all[2 * i][13]), 1e-6);
    EXPECT_EQ(res["out_of_place"]["nwrong"], 0);
    EXPECT_EQ(res["redop"], "sum");
    EXPECT_EQ(res["experiment_name"], "ring");
  }
  EXPECT_EQ(j["out_of_bounds"]["count"], 0);
  EXPECT_TRUE(j["out_of_bounds"]["okay"].get<bool>());
  std::filesystem::remove(json);
  std::filesystem::remove(csv);
}

TEST(NcclTestsDropIn, EveryOptionIsAccepted) {
  Result r = run(bench("broadcast") + " --device cpu -t 1 -g 3 -b 8 -e 16 -f 2 -i 8 -n 3 -w 1 -m 2 -N 2 -a 3 -I 1 "
                 "-K 1 -p 1 -c 2 -z 2 -G 2 -C 0 -R 1 -S 1 -M 1 -u 3 -D 0 -V 0 -y 1 -T 30 -o sum -d all -r all "
                 "--impl ring,tree");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 1 iters: 3 agg iters: 2 "
                                  "validation: 2 graph: 2 unalign: 3\n"));
  EXPECT_THAT(r.output, HasSubstr("-G 2: not applied: CUDA graphs need --device cuda"));
  EXPECT_THAT(r.output, HasSubstr("-R 1: NCCL buffer registration is not applied here"));
  EXPECT_THAT(r.output, HasSubstr("#  Rank  2 memory: buffers"));  // -M
  EXPECT_THAT(r.output, HasSubstr("     min      max      p99      cv"));  // -I
  // Rows: -N 2 cycles x 7 types x 3 roots x 2 sizes, per implementation; -S starts each with a time of day.
  const auto rows = nccl_rows(r.output);
  ASSERT_EQ(rows.size(), 2u * 2 * 7 * 3 * 2);
  for (const auto& row : rows) {
    ASSERT_EQ(row.size(), 1u + 13 + 8);
    EXPECT_EQ(row[0].size(), 19u) << row[0];  // YYYY-MM-DDTHH:MM:SS
    EXPECT_EQ(row[9], "0");                   // out-of-place #wrong (after the 4 -I columns it is field 9)
  }
  std::map<std::string, int> roots;
  for (const auto& row : rows) ++roots[row[5]];
  EXPECT_EQ(roots, (std::map<std::string, int>{{"0", 56}, {"1", 56}, {"2", 56}}));
}

TEST(NcclTestsDropIn, UnalignedBuffersCheckClean) {
  for (const char* c : {"allreduce", "allgather", "reducescatter", "gather", "scatter", "alltoall", "sendrecv"}) {
    Result r = run(bench(c) + " --device cpu -t 3 -u 1 --impl naive -d float,int8 -b 24 -e 96 -f 4 -n 1");
    EXPECT_EQ(r.status, 0) << c << "\n" << r.output;
    EXPECT_EQ(count_lines_with(r.output, "# Out of bounds values : 0 OK"), 1) << c << "\n" << r.output;
    EXPECT_THAT(r.output, HasSubstr("unalign: 1\n")) << c;
  }
}

TEST(NcclTestsDropIn, SplitRunsGroups) {
  const auto csv = temp("split.csv");
  Result r = run("NCCL_TESTS_SPLIT='MOD 2' " + bench("allreduce") + " --device cpu -t 4 --impl ring -b 1K -e 1K "
                 "-n 1 --csv " + csv.string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("#  Rank  1 Group  1"));
  EXPECT_THAT(r.output, HasSubstr("#  Rank  2 Group  0"));
  EXPECT_THAT(r.output, HasSubstr("groups of 2 at world rank 0"));
  const auto rows = csv_rows(csv);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0][3], "2");  // the group's size, which sets busbw's factor
  EXPECT_NEAR(std::stod(rows[0][13]), std::stod(rows[0][12]) * 1.0, 1e-9);  // 2(n-1)/n = 1 for n = 2
  std::filesystem::remove(csv);
}

TEST(NcclTestsDropIn, BadValuesExitTwoWithoutOutputFile) {
  const auto json = temp("bad.json");
  struct Case {
    std::string env, args, message;
  } cases[] = {
      {"", "-a 4", "4 is not accepted: expected a number in 0..3"},
      {"", "-z 7", "7 is not accepted: expected a number in 0..3"},
      {"", "-t 0", "0 is not accepted: expected a number in 1..1024"},
      {"", "-I 1 -K 5 -n 5", "-K 5 skips every one of the 5 iterations; accepted: -K below -n"},
      {"", "-r 9 --impl ring", "--root 9 is outside the ranks 0..1; accepted: a rank or all"},
      {"", "-r x", "--root x is outside"},
      {"NCCL_TESTS_SPLIT='XOR 3' ", "", "NCCL_TESTS_SPLIT='XOR 3' is not understood; accepted: 'AND|OR|MOD|DIV"},
      {"NCCL_TESTS_SPLIT='MOD 0' ", "", "accepted: 'AND|OR|MOD|DIV <number>'"},
      {"", "-T -2", "-2 is not accepted: expected a number >= 0"},
  };
  for (const auto& c : cases) {
    const std::string prog = c.args.find("-r ") != std::string::npos ? "reduce" : "allreduce";
    Result r = run(c.env + bench(prog) + " --device cpu -t 2 -b 1K -e 1K -J " + json.string() + " " + c.args);
    EXPECT_EQ(r.status, 2) << c.args << "\n" << r.output;
    EXPECT_THAT(r.output, HasSubstr(c.message)) << c.args;
    EXPECT_FALSE(std::filesystem::exists(json)) << c.args;
  }
}

#ifdef PB_MPIEXEC
TEST(NcclTestsDropInMpi, ScriptsCommandLineRuns) {
  Result r = run(mpirun(2) + bench("allreduce") + " --device cpu -b 1 -e 1M -f 2 -g 1 -c 0 -n 2 -t 1 -z 0 "
                 "-G 0 -a 3 -C 0 -T 10 -p 0 -N 1 -R 0 -m 1");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("2 rank(s) on 1 node(s) (mpirun, mpi bootstrap)"));
  EXPECT_EQ(nccl_rows(r.output).size(), 21u);  // 1 B .. 1 MiB (sizes below one element report 0 elements)
  EXPECT_EQ(count_lines_with(r.output, "#  Rank "), 2);
}

// Ranks = processes x t x g, as nccl-tests counts them: 2 processes x 2 threads x 1 here, each process's ranks
// its threads; groups of NCCL_TESTS_SPLIT across them.
TEST(NcclTestsDropInMpi, ThreadsPerProcessMultiplyTheRanks) {
  const auto csv = temp("mpi_t.csv");
  Result r = run(mpirun(2) + bench("allreduce") + " --device cpu -t 2 --impl ring,rhd,mpi -b 8 -e 4K -f 8 -n 2 -d "
                 "float,int32 -o sum,max --csv " + csv.string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("# nThread 2 nGpus 1 "));
  EXPECT_EQ(count_lines_with(r.output, "#  Rank "), 4);
  EXPECT_EQ(count_lines_with(r.output, "# Out of bounds values : 0 OK"), 2);
  EXPECT_THAT(r.output, HasSubstr("# mpi: not run: the MPI library's collectives need one process per rank"));
  const auto rows = csv_rows(csv);
  ASSERT_EQ(rows.size(), 2u * 4 * 2 * 2 * 2);  // impls x sizes x types x ops x halves
  for (const auto& row : rows) EXPECT_EQ(row[3], "4");
  r = run("NCCL_TESTS_SPLIT='DIV 2' " + mpirun(2) + bench("allgather") + " --device cpu -g 2 --impl ring -b 1K "
          "-e 1K -n 1 --csv " + csv.string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("#  Rank  1 Group  0"));
  EXPECT_THAT(r.output, HasSubstr("#  Rank  2 Group  1"));
  for (const auto& row : csv_rows(csv)) EXPECT_EQ(row[3], "2");
  std::filesystem::remove(csv);
  r = run("PARBENCH_TEST_SKIP_RANK=3 " + mpirun(2) + bench("allreduce") + " --device cpu -t 2 --impl ring -b 1K "
          "-e 1K -T 1");
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("allreduce/ring of 1024 bytes"));
  EXPECT_THAT(r.output, HasSubstr("did not finish within the timeout of 1 s"));
}

TEST(NcclTestsDropInMpi, BlockingAndNonBlockingLibraryForms) {
  Result r = run(mpirun(3) + bench("allreduce") + " --device cpu --impl mpi,mpi-nb -d all -o all -b 1K "
                 "-e 4K -f 4 -n 2");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("# impl: mpi\n"));
  EXPECT_THAT(r.output, HasSubstr("# impl: mpi-nb\n"));
  EXPECT_EQ(count_lines_with(r.output, "# Out of bounds values : 0 OK"), 2);
  for (const char* c : {"allgather", "reducescatter", "broadcast", "reduce", "gather", "scatter", "alltoall",
                        "sendrecv"}) {
    r = run(mpirun(3) + bench(c) + " --device cpu --impl mpi,mpi-nb -r 2 -b 96 -e 96 -n 2 -d float,bf16");
    EXPECT_EQ(r.status, 0) << c << "\n" << r.output;
    EXPECT_EQ(count_lines_with(r.output, "# Out of bounds values : 0 OK"), 2) << c;
  }
}

// (mpi-nb's watchdog timeout: BenchCliMpi.MisbehavingRankTimesOutAndAborts.)
#endif

}  // namespace
