// The collective benches' nccl-tests layer in pieces, against values worked out by hand from nccl-tests 2.19's
// rules: its number narrowing, its per-iteration statistics, the per-process folding of -I, the JSON element's
// keys and value types, NCCL_TESTS_SPLIT's forms, and -J's file staying valid and linear in size as rows append.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/error.h"
#include "collective_bench/json_stream.h"
#include "collective_bench/options.h"
#include "collective_bench/nccl_tests_output.h"

namespace {

using namespace parbench;

std::string read(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(NcclNumbers, NarrowLikeGetFloatStr) {
  EXPECT_EQ(float_str(3.856, 7), "   3.86");
  EXPECT_EQ(float_str(0.004, 6), "  0.00");
  EXPECT_EQ(float_str(9999.994, 7), "9999.99");    // 4 integer digits: two decimals still
  EXPECT_EQ(float_str(12345.67, 7), "12345.7");    // 5: one
  EXPECT_EQ(float_str(123456.7, 7), " 123457");    // 6: none
  EXPECT_EQ(float_str(1234567.8, 7), "1234568");   // 7: none
  EXPECT_EQ(float_str(12345678.9, 7), "1.2e+07");  // 8: an exponent with one decimal
  EXPECT_EQ(float_str(123.456, 6), "123.46");
  EXPECT_EQ(float_str(1234.56, 6), "1234.6");
  EXPECT_EQ(float_str(123456.0, 6), "123456");
  EXPECT_EQ(float_str(1234567.0, 6), " 1e+06");  // below width 7: no decimal in the exponent form
}

TEST(NcclNumbers, IterationStatistics) {
  const IterStats s = iteration_stats({7, 3, 10, 1, 5, 9, 2, 8, 4, 6});
  EXPECT_EQ(s.min, 1);
  EXPECT_EQ(s.max, 10);
  EXPECT_EQ(s.p50, 6);   // sorted[n / 2], not the mean of the middle two
  EXPECT_EQ(s.p95, 10);  // nearest rank: ceil(0.95 x 10) = 10th
  EXPECT_EQ(s.p99, 10);
  EXPECT_DOUBLE_EQ(s.avg, 5.5);
  EXPECT_DOUBLE_EQ(s.stdev, std::sqrt(8.25));  // over n
  EXPECT_DOUBLE_EQ(s.cv_pct, std::sqrt(8.25) / 5.5 * 100);
  const IterStats t = iteration_stats({4, 1, 3, 2});
  EXPECT_EQ(t.p50, 3);
  EXPECT_EQ(t.p95, 4);  // ceil(3.8) = 4th
  const IterStats many = iteration_stats(std::vector<double>(200, 1.0));
  EXPECT_EQ(many.cv_pct, 0);
}

TEST(NcclPerIter, FoldsRanksToProcessesThenProcesses) {
  // Ranks 0, 1 in process (h, 10), ranks 2, 3 in (h, 20); three iterations each.
  std::vector<RankInfo> ranks(4);
  for (int r = 0; r < 4; ++r) ranks[r].rank = r, ranks[r].host = "h", ranks[r].pid = r < 2 ? 10 : 20;
  const std::vector<double> all = {1, 5, 2,  4, 1, 1,  3, 3, 9,  2, 2, 2};
  const PerIterResult p = fold_iteration_times(all, 3, 1, ranks);
  ASSERT_EQ(p.per_process.size(), 2u);
  EXPECT_EQ(p.per_process[0], (std::vector<double>{4, 5, 2}));
  EXPECT_EQ(p.per_process[1], (std::vector<double>{3, 3, 9}));
  EXPECT_EQ(p.times, (std::vector<double>{4, 5, 9}));
  EXPECT_EQ(p.skipped, 1);
  EXPECT_EQ(p.stats.min, 5);  // over iterations 1 and 2 only
  EXPECT_EQ(p.stats.max, 9);
  for (auto& r : ranks) r.pid = 10;  // one process: no per-process lists
  const PerIterResult one = fold_iteration_times(all, 3, 0, ranks);
  EXPECT_TRUE(one.per_process.empty());
  EXPECT_EQ(one.times, (std::vector<double>{4, 5, 9}));
  ranks[2].host = "other";  // the same pid on another host is another process
  EXPECT_EQ(fold_iteration_times(all, 3, 0, ranks).per_process.size(), 2u);
}

TEST(NcclJson, ResultElementKeysAndTypes) {
  RowResult r;
  r.bytes = 1024, r.count = 256, r.dtype = DType::f32, r.redop = "sum", r.root = 3;
  r.half[0].ran = true, r.half[0].t.time = 2e-6, r.half[0].algbw = 0.5, r.half[0].busbw = 0.75, r.half[0].wrong = 0;
  r.half[0].per_iter = fold_iteration_times({1e-6, 2e-6}, 2, 0, {RankInfo{}});
  r.half[1].ran = true, r.half[1].wrong = -1;
  const auto j = result_json(r, "ring", false, true, 40);
  std::vector<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"size", "count", "type", "redop", "root", "out_of_place",
                                            "out_of_place_per_iter", "in_place", "actual_iterations",
                                            "experiment_name"}));
  EXPECT_EQ(j["root"], "     3");
  EXPECT_TRUE(j["out_of_place"]["nwrong"].is_number_float());
  EXPECT_TRUE(j["in_place"]["nwrong"].is_null());
  EXPECT_DOUBLE_EQ(j["out_of_place"]["time"].get<double>(), 2.0);
  const auto& p = j["out_of_place_per_iter"];
  std::vector<std::string> pk;
  for (auto it = p.begin(); it != p.end(); ++it) pk.push_back(it.key());
  EXPECT_EQ(pk, (std::vector<std::string>{"skipped_iterations", "min_us", "max_us", "avg_us", "p50_us", "p95_us",
                                          "p99_us", "stdev_us", "cv_pct", "times_us"}));
  EXPECT_EQ(p["times_us"].size(), 2u);
  EXPECT_DOUBLE_EQ(p["max_us"].get<double>(), 2.0);
  EXPECT_FALSE(result_json(r, "ring", true, false, 40).contains("out_of_place_per_iter"));
  EXPECT_TRUE(result_json(r, "ring", true, false, 40)["out_of_place"].contains("cpu_time"));
  const auto tail = nlohmann::json::parse("{\"x\":[" + json_tail(2, 1.5, "").substr(1));
  EXPECT_EQ(tail["out_of_bounds"]["okay"], "false");
  EXPECT_EQ(tail["average_bus_bandwidth"]["okay"], "unchecked");
  EXPECT_FALSE(tail.contains("end_time"));
}

TEST(NcclSplit, EveryFormAndBadValues) {
  struct Case {
    const char* text;
    const char* op;
    std::uint64_t value;
  } good[] = {{"AND 0x7", "AND", 7}, {"AND:0x7", "AND", 7}, {"&0x7", "AND", 7}, {"& 7", "AND", 7},
              {"or 1", "OR", 1},     {"|1", "OR", 1},       {"MOD 8", "MOD", 8}, {"%8", "MOD", 8},
              {"DIV 0b100", "DIV", 4}, {"/4", "DIV", 4},    {" AND 0B11 ", "AND", 3}};
  for (const Case& c : good) {
    const SplitRule r = parse_split_rule(c.text);
    EXPECT_EQ(r.op, c.op) << c.text;
    EXPECT_EQ(r.value, c.value) << c.text;
  }
  EXPECT_EQ(parse_split_rule("%3").color(7), 1);
  EXPECT_EQ(parse_split_rule("/2").color(7), 3);
  EXPECT_EQ(parse_split_rule("|8").color(3), 11);
  for (const char* bad : {"XOR 1", "AND", "AND 0x", "AND -1", "AND 0b2", "MOD 0", "/0", "AND 7 8", "AND 7K", "^3"}) {
    try {
      parse_split_rule(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const UsageError& e) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr("NCCL_TESTS_SPLIT='" + std::string(bad) + "'"));
      EXPECT_THAT(e.what(), ::testing::HasSubstr("accepted: 'AND|OR|MOD|DIV <number>'"));
    }
  }
  setenv("NCCL_TESTS_SPLIT_MASK", "0b110", 1);
  EXPECT_EQ(split_rule_from_environment().op, "AND");
  EXPECT_EQ(split_rule_from_environment().value, 6u);
  setenv("NCCL_TESTS_SPLIT", "MOD 2", 1);  // NCCL_TESTS_SPLIT wins
  EXPECT_EQ(split_rule_from_environment().op, "MOD");
  unsetenv("NCCL_TESTS_SPLIT");
  setenv("NCCL_TESTS_SPLIT_MASK", "seven", 1);
  try {
    split_rule_from_environment();
    ADD_FAILURE() << "a bad mask was accepted";
  } catch (const UsageError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("NCCL_TESTS_SPLIT_MASK='seven'"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("0x hexadecimal or 0b binary"));
  }
  unsetenv("NCCL_TESTS_SPLIT_MASK");
  EXPECT_TRUE(split_rule_from_environment().op.empty());
}

// 2000 rows through the report: each costs its own bytes plus the short tail (a rewrite per row would write the
// whole file each time, about 1000 times its final size), and the file parses after every row.
TEST(NcclJsonFile, AppendsRowsInLinearBytesAndStaysValid) {
  const auto path = std::filesystem::temp_directory_path() / ("pb_nt_stream_" + std::to_string(getpid()) + ".json");
  BenchOptions o;
  NcclReport report("bench_allreduce", o, 8, 8, {"bench_allreduce"});
  RowResult r;
  r.bytes = 8, r.count = 2, r.redop = "sum";
  r.half[0].ran = r.half[1].ran = true;
  std::vector<RankInfo> ranks(2);
  for (int i = 0; i < 2000; ++i) {
    r.half[0].busbw = i;
    report.json_row(path.string(), r, "ring", ranks, 0, double(i) / 2);
    if (i < 5 || i % 500 == 0) {
      const auto j = nlohmann::json::parse(read(path));
      ASSERT_EQ(j["results"].size(), std::size_t(i + 1));
      EXPECT_FALSE(j.contains("end_time"));
    }
  }
  report.json_finish(0, 1.0);  // a shorter tail than the last row's: the file is cut to it
  const std::uint64_t size = std::filesystem::file_size(path);
  EXPECT_LT(report.json_bytes_written(), size * 2) << size;
  const auto j = nlohmann::json::parse(read(path));
  EXPECT_EQ(j["results"].size(), 2000u);
  EXPECT_EQ(j["results"][1999]["out_of_place"]["bus_bw"], 1999.0);
  EXPECT_EQ(j["config"]["devices"].size(), 2u);
  EXPECT_EQ(j["average_bus_bandwidth"]["bandwidth"], 1.0);
  EXPECT_TRUE(j.contains("end_time"));
  std::filesystem::remove(path);
}

TEST(NcclJsonFile, TailShorterOrLongerKeepsTheFileExact) {
  const auto path = std::filesystem::temp_directory_path() / ("pb_nt_tail_" + std::to_string(getpid()) + ".json");
  JsonListFile f;
  f.open(path.string(), "{\"a\":[", "]}");
  EXPECT_EQ(read(path), "{\"a\":[]}");
  f.append("1", "],\"long\":\"xxxxxxxx\"}");
  f.append("2", "]}");
  EXPECT_EQ(read(path), "{\"a\":[\n1,\n2]}");
  f.set_tail("],\"t\":0}");
  EXPECT_EQ(read(path), "{\"a\":[\n1,\n2],\"t\":0}");
  EXPECT_EQ(f.bytes_written(), 8u + 2 + 20 + 3 + 2 + 8);
  std::filesystem::remove(path);
  EXPECT_THROW(JsonListFile().open("/nonexistent/dir/x.json", "[", "]"), std::runtime_error);
}

}  // namespace
