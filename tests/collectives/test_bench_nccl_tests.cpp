// The collective benches as drop-ins for nccl-tests: every option accepted with its effect (rank count from
// -t/-g, -m's aggregated operations, -a's reduction of the timings, -T's deadline, -c's rounds, -z's waits, -C's
// column, -N's cycles, -I's columns, -r all, -u, NCCL_TESTS_SPLIT), bad values refused with exit 2 and no output
// file, the JSON of -J, and a parser written the way nccl-tests' users write them reading the CSV's numbers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
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
                                  "#wrong     time   algbw   busbw  #wrong \n"));
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
  EXPECT_EQ(ev["barrier"], 0);
  // nccl-tests' -z: 1 a wait and a barrier after each operation, 2 the wait alone, 3 per iteration a barrier (not
  // timed) then its operations and one wait; 3 under -G is 0.
  struct Blocking {
    std::string args;
    int waits, barriers;
  } modes[] = {{"-m 2 -z 1", 1 + 4 * 2, 4 * 2}, {"-m 2 -z 2", 1 + 4 * 2, 0}, {"-m 2 -z 3", 1 + 4, 4},
               {"-m 2 -z 3 -I 1", 1 + 4, 4}, {"-m 2 -z 3 -G 1", 2, 0}, {"-I 1", 1 + 4 + 1, 0}};
  for (const Blocking& m : modes) {
    r = run(base + " " + m.args);
    ASSERT_EQ(r.status, 0) << r.output;
    ev = rank0_events(trace);
    const int ops_per_iter = m.args.find("-m 2") != std::string::npos ? 2 : 1;
    EXPECT_EQ(ev["allreduce/ring"], (2 + 4) * ops_per_iter + 1) << m.args;
    EXPECT_EQ(ev["wait"], m.waits) << m.args;  // -I: one per iteration (and the batch's, empty)
    EXPECT_EQ(ev["barrier"], m.barriers) << m.args;
  }
  r = run(base + " -m 2 -z 1");
  EXPECT_THAT(r.output, Not(HasSubstr("Blocking Enabled")));  // -q
  r = run(bench("allreduce") + " --device cpu -t 2 --impl ring -b 1K -e 1K -n 1 -z 1");
  EXPECT_THAT(r.output, HasSubstr("\n# Blocking Enabled: wait for completion and barrier after each collective \n"));
  r = run(bench("allreduce") + " --device cpu -t 2 --impl ring -b 1K -e 1K -n 1 -z 2");
  EXPECT_THAT(r.output, HasSubstr("\n# Blocking Enabled: wait for completion after each collective (no barrier) \n"));
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
  EXPECT_EQ(j["version"], 2);  // nccl-tests' JSON_FILE_VERSION
  EXPECT_EQ(j["config"]["nthreads"], 4);
  EXPECT_EQ(j["config"]["iterations"], 2);
  EXPECT_EQ(j["config"]["step_factor"], 2);
  EXPECT_EQ(j["config"]["minimum_bytes"], 1024);
  EXPECT_EQ(j["config"]["devices"].size(), 4u);
  EXPECT_FALSE(j.contains("devices"));
  ASSERT_EQ(j["results"].size(), 3u);
  const auto csv_all = csv_rows(csv);
  for (std::size_t i = 0; i < 3; ++i) {
    const auto& res = j["results"][i];
    EXPECT_TRUE(res["out_of_place"].contains("cpu_time"));
    EXPECT_FALSE(res["out_of_place"].contains("time"));
    EXPECT_EQ(res["size"], std::stoll(csv_all[2 * i][9]));
    EXPECT_NEAR(res["out_of_place"]["bus_bw"].get<double>(), std::stod(csv_all[2 * i][13]), 1e-6);
    EXPECT_TRUE(res["out_of_place"]["nwrong"].is_number_float());
    EXPECT_EQ(res["out_of_place"]["nwrong"].get<double>(), 0.0);
    EXPECT_EQ(res["redop"], "sum");
    EXPECT_EQ(res["experiment_name"], "ring");
  }
  EXPECT_EQ(j["out_of_bounds"]["count"], 0);
  EXPECT_EQ(j["out_of_bounds"]["okay"], "true");
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
  EXPECT_THAT(r.output, HasSubstr("   i_min    i_max    i_p99    i_cv%"));  // -I
  // Rows: -N 2 cycles x 7 types x 3 roots x 2 sizes, per implementation; -S ends each with a date and a time.
  const auto rows = nccl_rows(r.output);
  ASSERT_EQ(rows.size(), 2u * 2 * 7 * 3 * 2);
  for (const auto& row : rows) {
    ASSERT_EQ(row.size(), 13u + 8 + 2);
    EXPECT_EQ(row[row.size() - 2].size(), 10u) << row[row.size() - 2];  // YYYY-MM-DD
    EXPECT_EQ(row[row.size() - 1].size(), 8u) << row[row.size() - 1];   // HH:MM:SS
    EXPECT_EQ(row[8], "0");  // out-of-place #wrong
  }
  std::map<std::string, int> roots;
  for (const auto& row : rows) ++roots[row[4]];
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

TEST(NcclTestsDropIn, SplitMaskAndSymbolFormsRunGroups) {
  for (const char* env : {"NCCL_TESTS_SPLIT_MASK=0b1 ", "NCCL_TESTS_SPLIT='&0x1' ", "NCCL_TESTS_SPLIT='%2' "}) {
    Result r = run(std::string(env) + bench("allreduce") + " --device cpu -t 4 --impl ring -b 1K -e 1K -n 1");
    ASSERT_EQ(r.status, 0) << env << r.output;
    EXPECT_THAT(r.output, HasSubstr("#  Rank  3 Group  1")) << env;
    EXPECT_THAT(r.output, HasSubstr("#  Rank  2 Group  0")) << env;
    EXPECT_THAT(r.output, HasSubstr("groups of 2 at world rank 0")) << env;
  }
  Result r = run("NCCL_TESTS_DEVICE=1 " + bench("allreduce") + " --device cpu -t 2 --impl ring -b 1K -e 1K -n 1");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("# NCCL_TESTS_DEVICE=1: not applied on device cpu"));
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
      {"NCCL_TESTS_SPLIT='AND 0b12' ", "", "NCCL_TESTS_SPLIT='AND 0b12' is not understood"},
      {"NCCL_TESTS_SPLIT_MASK=0xZ ", "", "NCCL_TESTS_SPLIT_MASK='0xZ' is not a mask; accepted: a number"},
      {"NCCL_TESTS_DEVICE=one ", "", "NCCL_TESTS_DEVICE='one' is not a GPU index; accepted: a number from 0"},
  };
  for (const auto& c : cases) {
    const std::string prog = c.args.find("-r ") != std::string::npos ? "reduce" : "allreduce";
    Result r = run(c.env + bench(prog) + " --device cpu -t 2 -b 1K -e 1K -J " + json.string() + " " + c.args);
    EXPECT_EQ(r.status, 2) << c.args << "\n" << r.output;
    EXPECT_THAT(r.output, HasSubstr(c.message)) << c.args;
    EXPECT_FALSE(std::filesystem::exists(json)) << c.args;
  }
}

// Golden outputs: a deterministic run (the rank-time hook fixes every time, so every number follows) in each
// output form, masked where a run differs (pid, host, times of day, paths, environment) and compared with
// tests/collectives/golden/ whole; PB_UPDATE_GOLDEN=1 rewrites them. A change that moves a column, a number's form
// or a JSON key or type fails here.
const std::string kGoldenRun = "PARBENCH_TEST_RANK_TIME_US=100 " + bench("allreduce") +
                               " --device cpu -t 2 --impl ring -b 8 -e 8K -f 32 -n 4 -w 1";

std::string masked_text(std::string s) {
  s = std::regex_replace(s, std::regex("Pid +[0-9]+ on +[^ ]+ "), "Pid PID on HOST ");
  return std::regex_replace(s, std::regex("[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}"),
                            "YYYY-MM-DD hh:mm:ss");
}

nlohmann::ordered_json masked_json(nlohmann::ordered_json j) {
  j["start_time"] = "START", j["end_time"] = "END", j["args"] = "ARGS", j["env"] = nlohmann::ordered_json::array();
  for (auto& d : j["config"]["devices"]) d["pid"] = 0, d["hostname"] = "HOST";
  return j;
}

void expect_golden(const std::string& name, const std::string& text) {
  const std::filesystem::path path = std::filesystem::path(PB_GOLDEN_DIR) / name;
  if (std::getenv("PB_UPDATE_GOLDEN")) {
    std::ofstream(path) << text;
    return;
  }
  std::ifstream in(path);
  std::stringstream want;
  want << in.rdbuf();
  ASSERT_TRUE(in.good() || in.eof()) << "missing " << path;
  EXPECT_EQ(text, want.str()) << name << " differs from " << path;
}

// The end column of each blank-separated field of a line.
std::vector<std::size_t> field_ends(const std::string& line) {
  std::vector<std::size_t> ends;
  for (std::size_t i = 0; i < line.size(); ++i)
    if (line[i] != ' ' && (i + 1 == line.size() || line[i + 1] == ' ')) ends.push_back(i + 1);
  return ends;
}

// Every row's fields end where the column names end (nccl-tests right-aligns both), the time of day aside (its
// title sits one column left of it in nccl-tests too).
void expect_rows_under_names(const std::string& output, bool timestamps) {
  std::istringstream in(output);
  std::string line, names;
  std::vector<std::string> rows;
  while (std::getline(in, line)) {
    if (line.rfind("#       size", 0) == 0) names = line;
    else if (!line.empty() && line[0] != '#' && !names.empty()) rows.push_back(line);
  }
  ASSERT_FALSE(rows.empty()) << output;
  auto want = field_ends(names);
  want.erase(want.begin());  // the '#'
  if (timestamps) want.pop_back();
  for (const std::string& row : rows) {
    auto got = field_ends(row);
    if (timestamps) got.resize(got.size() - 2);  // the date and the time
    EXPECT_EQ(got, want) << row << "\n" << names;
  }
}

TEST(NcclTestsGolden, TableForms) {
  struct Form {
    const char *file, *args;
    bool timestamps;
  } forms[] = {{"table_plain.txt", "", false},
               {"table_per_iter_timestamps.txt", " -I 1 -K 1 -S 1", true},
               {"table_cputime.txt", " -C 1", false}};
  for (const Form& f : forms) {
    Result r = run(kGoldenRun + f.args);
    ASSERT_EQ(r.status, 0) << r.output;
    expect_golden(f.file, masked_text(r.output));
    expect_rows_under_names(r.output, f.timestamps);
  }
  Result r = run(kGoldenRun + " -c 0");  // nccl-tests' N/A is one column narrower than #wrong: checked whole
  ASSERT_EQ(r.status, 0) << r.output;
  expect_golden("table_unchecked.txt", masked_text(r.output));
}

TEST(NcclTestsGolden, JsonForms) {
  const auto json = temp("golden.json");
  for (const auto& [file, args] : {std::pair{"json_plain.json", ""}, std::pair{"json_per_iter.json", " -I 1 -K 1"}}) {
    Result r = run(kGoldenRun + args + " -q -J " + json.string());
    ASSERT_EQ(r.status, 0) << r.output;
    std::ifstream in(json);
    expect_golden(file, masked_json(nlohmann::ordered_json::parse(in)).dump(1) + "\n");
  }
  std::filesystem::remove(json);
}

// Reads -J's file the way a script of nccl-tests' users does: every key it relies on, with its type. `procs`
// processes of `ranks` ranks in all; -I runs give per-iteration objects of `iters` times.
void expect_nccl_json(const std::filesystem::path& path, int ranks, int procs, int iters, int skipped) {
  std::ifstream in(path);
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_TRUE(j["version"].is_number_integer());
  EXPECT_TRUE(j["nccl_version"].is_number_integer());
  EXPECT_TRUE(j["start_time"].is_string() && j["end_time"].is_string());
  EXPECT_TRUE(j["args"].is_array() && j["env"].is_array());
  EXPECT_FALSE(j.contains("devices"));  // inside config, as nccl-tests writes it
  const auto& cfg = j["config"];
  for (const char* k : {"nthreads", "ngpus", "minimum_bytes", "maximum_bytes", "warmup_iters", "iterations",
                        "aggregated_iterations", "validation", "graph"})
    EXPECT_TRUE(cfg[k].is_number_integer()) << k;
  for (const char* k : {"blocking_collectives", "per_iter_timing", "parallel_init"})
    EXPECT_TRUE(cfg[k] == "true" || cfg[k] == "false") << k << " " << cfg[k];
  EXPECT_EQ(cfg["per_iter_timing"], iters > 0 ? "true" : "false");
  ASSERT_EQ(cfg["devices"].size(), std::size_t(ranks));
  std::set<int> pids;
  for (int r = 0; r < ranks; ++r) {
    const auto& d = cfg["devices"][r];
    EXPECT_EQ(d["rank"], r);
    for (const char* k : {"group", "pid", "device"}) EXPECT_TRUE(d[k].is_number_integer()) << k;
    for (const char* k : {"hostname", "device_hex", "device_info"}) EXPECT_TRUE(d[k].is_string()) << k;
    pids.insert(d["pid"].get<int>());
  }
  EXPECT_EQ(pids.size(), std::size_t(procs));
  ASSERT_FALSE(j["results"].empty());
  for (const auto& res : j["results"]) {
    EXPECT_TRUE(res["size"].is_number_integer() && res["count"].is_number_integer());
    EXPECT_TRUE(res["type"].is_string() && res["redop"].is_string() && res["experiment_name"].is_string());
    ASSERT_TRUE(res["root"].is_string());
    EXPECT_EQ(res["root"].get<std::string>().size(), 6u);  // "%6i"
    EXPECT_TRUE(res["actual_iterations"].is_number_integer());
    for (const char* half : {"out_of_place", "in_place"}) {
      const auto& h = res[half];
      for (const char* k : {"time", "alg_bw", "bus_bw", "nwrong"}) EXPECT_TRUE(h[k].is_number_float()) << k;
      const std::string per = std::string(half) + "_per_iter";
      ASSERT_EQ(res.contains(per), iters > 0) << per;
      if (iters == 0) continue;
      const auto& p = res[per];
      EXPECT_EQ(p["skipped_iterations"], skipped);
      for (const char* k : {"min_us", "max_us", "avg_us", "p50_us", "p95_us", "p99_us", "stdev_us", "cv_pct"})
        EXPECT_TRUE(p[k].is_number_float()) << k;
      ASSERT_EQ(p["times_us"].size(), std::size_t(iters));
      ASSERT_EQ(p.contains("per_process_max_times_us"), procs > 1);
      if (procs == 1) continue;
      const auto& pp = p["per_process_max_times_us"];
      ASSERT_EQ(pp.size(), std::size_t(procs));
      for (int i = 0; i < iters; ++i) {  // the reported time is the slowest process's
        double most = 0;
        for (const auto& row : pp) most = std::max(most, row.at(i).get<double>());
        EXPECT_EQ(p["times_us"][i].get<double>(), most);
      }
    }
  }
  EXPECT_TRUE(j["out_of_bounds"]["count"].is_number_integer());
  EXPECT_EQ(j["out_of_bounds"]["okay"], "true");
  EXPECT_TRUE(j["average_bus_bandwidth"]["bandwidth"].is_number_float());
  EXPECT_EQ(j["average_bus_bandwidth"]["okay"], "unchecked");
}

TEST(NcclTestsDropIn, PerIterationJsonOneProcess) {
  const auto json = temp("iter.json");
  Result r = run(bench("allreduce") + " --device cpu -t 2 -g 2 --impl ring -b 1K -e 4K -f 4 -n 6 -K 2 -I 1 -J " +
                 json.string());
  ASSERT_EQ(r.status, 0) << r.output;
  expect_nccl_json(json, 4, 1, 6, 2);
  r = run(bench("allreduce") + " --device cpu -t 2 --impl ring -b 1K -e 1K -n 3 -J " + json.string());
  ASSERT_EQ(r.status, 0) << r.output;
  expect_nccl_json(json, 2, 1, 0, 0);
  std::filesystem::remove(json);
}

// -z 3 times each iteration after its barrier: a rank that starts every iteration 100 ms late makes the others
// wait in the barrier (left out), where without -z 3 they wait inside the timed operation. (Half the delay as the
// bound, so that a loaded machine's slower operations stay on their side of it.)
TEST(NcclTestsDropIn, BlockingThreeLeavesTheBarrierOutOfTheTimes) {
  const auto json = temp("late.json");
  for (const char* z : {"0", "3"}) {
    Result r = run("PARBENCH_TEST_LATE_RANK=1 " + bench("allreduce") + " --device cpu -t 2 --impl ring -b 1K -e 1K "
                   "-n 3 -I 1 -z " + z + " -J " + json.string());
    ASSERT_EQ(r.status, 0) << r.output;
    std::ifstream in(json);
    const nlohmann::json j = nlohmann::json::parse(in);
    for (const char* half : {"out_of_place_per_iter", "in_place_per_iter"}) {
      const auto& p = j["results"][0][half];
      if (z[0] == '0') {
        EXPECT_GT(p["min_us"].get<double>(), 50000) << half;
      } else {
        EXPECT_LT(p["p50_us"].get<double>(), 50000) << half;
      }
    }
    if (z[0] == '3') {
      EXPECT_LT(j["results"][0]["out_of_place"]["time"].get<double>(), 50000);
    }
  }
  std::filesystem::remove(json);
}

// -S puts the date and the time after the in-place columns: out-of-place busbw is field -8 there and -6 without.
TEST(NcclTestsDropIn, TimestampsEndTheRow) {
  const auto csv = temp("ts.csv");
  Result r = run(bench("allreduce") + " --device cpu -t 2 --impl ring -b 1K -e 4K -f 2 -n 2 -S 1 --csv " +
                 csv.string());
  ASSERT_EQ(r.status, 0) << r.output;
  const auto rows = nccl_rows(r.output);
  const auto csv_all = csv_rows(csv);
  ASSERT_EQ(rows.size(), 3u);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& row = rows[i];
    ASSERT_EQ(row.size(), 15u);
    EXPECT_TRUE(std::regex_match(row[13], std::regex("[0-9]{4}-[0-9]{2}-[0-9]{2}"))) << row[13];
    EXPECT_TRUE(std::regex_match(row[14], std::regex("[0-9]{2}:[0-9]{2}:[0-9]{2}"))) << row[14];
    expect_printed(row[row.size() - 8], csv_all[2 * i][13], "out-of-place busbw, field -8 with -S");
  }
  std::filesystem::remove(csv);
}

// An endless sweep (-N 0) killed with SIGKILL leaves -J's file parseable, with the rows written so far.
TEST(NcclTestsDropIn, KilledEndlessRunLeavesParseableJson) {
  const auto json = temp("killed.json");
  Result r = run("timeout -s KILL 3 " + bench("allreduce") + " --device cpu -t 2 --impl ring -b 1K -e 64K -f 2 "
                 "-n 2 -N 0 -I 1 -q -J " + json.string());
  EXPECT_NE(r.status, 0);
  std::ifstream in(json);
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_GE(j["results"].size(), 1u);  // (hundreds on an idle machine)
  EXPECT_FALSE(j.contains("end_time"));  // the run did not finish
  EXPECT_EQ(j["config"]["devices"].size(), 2u);
  std::filesystem::remove(json);
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

// Under mpirun: config.devices has every rank of every process, and -I's objects one list per process (each the
// maximum over its threads and GPUs).
TEST(NcclTestsDropInMpi, PerIterationJsonPerProcess) {
  const auto json = temp("mpi_iter.json");
  Result r = run(mpirun(2) + bench("allreduce") + " --device cpu -t 2 -g 2 --impl ring -b 1K -e 4K -f 4 -n 5 -I 1 "
                 "-J " + json.string());
  ASSERT_EQ(r.status, 0) << r.output;
  expect_nccl_json(json, 8, 2, 5, 0);
  r = run(mpirun(2) + bench("allreduce") + " --device cpu --impl ring -b 1K -e 1K -n 3 -I 1 -K 1 -J " +
          json.string());
  ASSERT_EQ(r.status, 0) << r.output;
  expect_nccl_json(json, 2, 2, 3, 1);
  std::filesystem::remove(json);
}

// (mpi-nb's watchdog timeout: BenchCliMpi.MisbehavingRankTimesOutAndAborts.)
#endif

}  // namespace
