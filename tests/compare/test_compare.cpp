// parbench-compare: the readers on nccl-tests' forms (the golden files our -J and table are checked against) and
// ours, the statistics on known values, and recorded runs of one build (tests/compare/runs/, bench_allreduce -I 1):
// the same build compared with itself marks nothing in at least 9 of 10 comparisons, and a planted 30% slowdown on
// three sizes is marked on exactly those rows. The runs were recorded one after another on an idle 2-core VM with
// `mpirun -np 2 bench_allreduce --device cpu --impl ring --sizes 4K:4M:x4 -n 30 -w 5 -I 1 -J runN.json -q`.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "base/error.h"
#include "compare/compare.h"
#include "tests/benchmarks/programs.h"

namespace {

using namespace parbench::compare;
using ::testing::HasSubstr;
using RunFile = parbench::compare::Run;  // "Run" inside a test is GoogleTest's
namespace fs = std::filesystem;

std::string run_file(int i) { return std::string(PB_RUNS_DIR) + "/run" + std::to_string(i) + ".json"; }

TEST(CompareRead, NcclTestsJsonWithPerIterationTimes) {
  const RunFile r = read_run(std::string(PB_GOLDEN_DIR) + "/json_per_iter.json");
  EXPECT_EQ(r.format, "nccl-tests json");
  ASSERT_EQ(r.rows.size(), 6u);  // 3 sizes x 2 halves
  const RowKey key{"", "ring", 8, "f32", "sum", -1, 0};
  ASSERT_TRUE(r.rows.count(key)) << "keys: " << r.rows.begin()->first.text();
  const RowSamples& s = r.rows.at(key);
  EXPECT_THAT(s.time_us, ::testing::ElementsAre(::testing::DoubleNear(200, 1e-9), ::testing::DoubleNear(400, 1e-9),
                                                ::testing::DoubleNear(600, 1e-9), ::testing::DoubleNear(800, 1e-9)));
}

TEST(CompareRead, NcclTestsTables) {
  const RunFile plain = read_run(std::string(PB_GOLDEN_DIR) + "/table_plain.txt");
  EXPECT_EQ(plain.format, "nccl-tests table");
  ASSERT_EQ(plain.rows.size(), 6u);
  const RowKey key{"allreduce", "", 8192, "f32", "sum", -1, 1};
  ASSERT_TRUE(plain.rows.count(key));
  EXPECT_EQ(plain.rows.at(key).time_us, std::vector<double>{150.0});
  EXPECT_NEAR(plain.rows.at(key).busbw(), 0.05, 1e-12);
  // -I 1 adds four columns per half and -S 1 a date and a time: the in-place time is still found.
  const RunFile wide = read_run(std::string(PB_GOLDEN_DIR) + "/table_per_iter_timestamps.txt");
  ASSERT_FALSE(wide.rows.empty());
  for (const auto& [k, s] : wide.rows) EXPECT_GT(s.time_us.at(0), 0) << k.text();
}

TEST(CompareRead, OurCsvAndJsonAgree) {
  const auto d = pbtest::fresh_dir("compare_read");
  const std::string csv = (d / "r.csv").string(), json = (d / "r.json").string();
  std::ofstream(csv) << "collective,impl,device,ranks,nodes,dtype,op,root,inplace,bytes,count,time_us,algbw_gbps,"
                        "busbw_gbps,wrong,expected_us,pct_expected\n"
                        "allreduce,ring,cpu,2,1,f32,sum,-1,0,1024,256,10.5,0.1,0.1,0,,\n"
                        "allreduce,ring,cpu,2,1,f32,sum,-1,0,1024,256,11.5,0.1,0.1,0,,\n"
                        "reduce_scatter,rhd,cpu,2,1,bf16,max,-1,1,4096,1024,20,0.2,0.1,0,,\n";
  std::ofstream(json) << R"([{"collective":"allreduce","impl":"ring","dtype":"f32","op":"sum","root":-1,"inplace":0,
    "bytes":1024,"time_us":10.5,"busbw_gbps":0.1}])";
  const RunFile c = read_run(csv), j = read_run(json);
  EXPECT_EQ(c.format, "csv");
  EXPECT_EQ(j.format, "json");
  const RowKey key{"allreduce", "ring", 1024, "f32", "sum", -1, 0};
  EXPECT_EQ(c.rows.at(key).time_us, (std::vector<double>{10.5, 11.5}));  // repeated rows are samples
  EXPECT_EQ(j.rows.at(key).time_us, std::vector<double>{10.5});
  EXPECT_TRUE(c.rows.count({"reducescatter", "rhd", 4096, "bf16", "max", -1, 1}));
  fs::remove_all(d);
}

TEST(CompareRead, BadFilesNameTheFileAndTheForms) {
  const auto d = pbtest::fresh_dir("compare_bad");
  std::ofstream(d / "empty.txt") << "# nothing here\n";
  std::ofstream(d / "short.csv") << "collective,impl,bytes\nallreduce,ring,8\n";
  std::ofstream(d / "other.json") << R"({"results": 3})";
  const std::pair<std::string, std::string> cases[] = {
      {"empty.txt", "no rows found (read as nccl-tests table)"},
      {"short.csv", "no column 'dtype' in its header"},
      {"other.json", "JSON that is not a run's"},
      {"missing.csv", "cannot read"}};
  for (const auto& [file, message] : cases) {
    try {
      read_run((d / file).string());
      ADD_FAILURE() << file << " was read";
    } catch (const parbench::UsageError& e) {
      EXPECT_THAT(e.what(), HasSubstr(message)) << file;
      EXPECT_THAT(e.what(), HasSubstr((d / file).string())) << file;
    }
  }
  fs::remove_all(d);
}

TEST(CompareStatistics, RatioOfMediansAndItsInterval) {
  const Ratio same = time_ratio({10, 10, 10}, {10, 10, 10}, 0.95, 500);
  EXPECT_DOUBLE_EQ(same.value, 1.0);
  EXPECT_DOUBLE_EQ(*same.lo, 1.0);
  EXPECT_DOUBLE_EQ(*same.hi, 1.0);
  const Ratio slower = time_ratio({10, 11, 9, 10, 10}, {13, 14.3, 11.7, 13, 13}, 0.95, 2000);
  EXPECT_DOUBLE_EQ(slower.value, 1.3);
  EXPECT_GT(*slower.lo, 1.05);
  EXPECT_EQ(judge(slower, 0.05), Mark::slower);
  EXPECT_FALSE(time_ratio({10}, {12, 13}, 0.95, 500).lo) << "one sample: no interval";
  EXPECT_EQ(judge(time_ratio({10}, {12, 13}, 0.95, 500), 0.05), Mark::unknown);
  EXPECT_EQ(judge({0.9, 0.85, 0.93}, 0.05), Mark::faster);
  EXPECT_EQ(judge({1.03, 1.01, 1.2}, 0.05), Mark::none) << "an interval reaching into the threshold";
}

int marked(const Comparison& c) {
  int n = 0;
  for (const RowComparison& r : c.rows) n += r.mark == Mark::slower || r.mark == Mark::faster;
  return n;
}

TEST(CompareRecorded, SameBuildMarksNothingInNineOfTen) {
  const RunFile base = read_run(run_file(0));
  int with_marks = 0;
  for (int i = 1; i <= 10; ++i) {
    const RunFile other = read_run(run_file(i));
    const Comparison c = compare_runs(base, other, {});
    EXPECT_EQ(c.rows.size(), base.rows.size()) << i;
    EXPECT_TRUE(c.only_old.empty() && c.only_new.empty() && c.ambiguous.empty()) << i;
    with_marks += marked(c) > 0;
  }
  EXPECT_LE(with_marks, 1);
}

// Run 1 with every sample of three sizes (both halves) made 30% longer.
std::string planted(const fs::path& dir, const std::set<std::uint64_t>& sizes) {
  nlohmann::json j;
  std::ifstream(run_file(1)) >> j;
  for (auto& r : j["results"])
    if (sizes.count(r["size"].get<std::uint64_t>()))
      for (const char* half : {"out_of_place", "in_place"}) {
        r[half]["time"] = r[half]["time"].get<double>() * 1.3;
        for (auto& t : r[std::string(half) + "_per_iter"]["times_us"]) t = t.get<double>() * 1.3;
      }
  const std::string path = (dir / "planted.json").string();
  std::ofstream(path) << j.dump();
  return path;
}

TEST(CompareRecorded, PlantedSlowdownMarksExactlyItsRows) {
  const auto d = pbtest::fresh_dir("compare_planted");
  const std::set<std::uint64_t> slow = {16384, 262144, 4194304};
  const Comparison c = compare_runs(read_run(run_file(0)), read_run(planted(d, slow)), {});
  for (const RowComparison& r : c.rows)
    EXPECT_EQ(r.mark, slow.count(r.key.bytes) ? Mark::slower : Mark::none) << r.key.text();
  // The program: the table, and exit 1 because rows are slower (0 with --fail-on never, and for the same run).
  pbtest::Finished p = pbtest::run(std::string(PB_COMPARE) + " " + run_file(0) + " " + (d / "planted.json").string());
  EXPECT_EQ(p.status, 1) << p.output;
  EXPECT_THAT(p.output, HasSubstr("# 6 slower, 0 faster"));
  p = pbtest::run(std::string(PB_COMPARE) + " --fail-on never " + run_file(0) + " " + (d / "planted.json").string());
  EXPECT_EQ(p.status, 0) << p.output;
  p = pbtest::run(std::string(PB_COMPARE) + " " + run_file(0) + " " + run_file(0));
  EXPECT_EQ(p.status, 0) << p.output;
  EXPECT_THAT(p.output, HasSubstr("# 0 slower, 0 faster"));
  p = pbtest::run(std::string(PB_COMPARE) + " --threshold -1 " + run_file(0) + " " + run_file(0));
  EXPECT_EQ(p.status, 2) << p.output;
  p = pbtest::run(std::string(PB_COMPARE) + " " + run_file(0) + " " + (d / "none.json").string());
  EXPECT_EQ(p.status, 2) << p.output;
  EXPECT_THAT(p.output, HasSubstr("cannot read " + (d / "none.json").string()));
  fs::remove_all(d);
}

}  // namespace
