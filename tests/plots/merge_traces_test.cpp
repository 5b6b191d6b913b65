// parbench-plot merge-traces: per-rank traces on one time axis, and refusals that write nothing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "plot_test_util.h"

namespace parbench::plots {
namespace {

using test::run_plot;
using test::ScratchDir;
using test::write_file;
using ::testing::HasSubstr;

// A parbench-shaped trace of one rank: metadata and two ranges, times relative to `origin_ns`.
std::string rank_trace(int rank, std::int64_t origin_ns, double ts0_us) {
  nlohmann::json j = {{"traceEvents",
                       {{{"name", "process_name"}, {"ph", "M"}, {"pid", rank + 1}, {"tid", 2},
                         {"args", {{"name", "rank " + std::to_string(rank)}}}},
                        {{"name", "F"}, {"ph", "X"}, {"ts", ts0_us}, {"dur", 5.0}, {"pid", rank + 1}, {"tid", 2}},
                        {{"name", "B"}, {"ph", "X"}, {"ts", ts0_us + 7.5}, {"dur", 9.0}, {"pid", rank + 1},
                         {"tid", 2}}}},
                      {"otherData", {{"producer", "parbench"}, {"time_origin_steady_ns", origin_ns}}}};
  return j.dump();
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

TEST(MergeTraces, ShiftsEachFileOntoTheEarliestOrigin) {
  ScratchDir dir;
  std::mt19937_64 rng(std::random_device{}());
  const std::int64_t origin0 = 1'000'000'000 + std::int64_t(rng() % 1'000'000'000);
  const std::int64_t later = std::int64_t(rng() % 5'000'000);  // rank 1 started up to 5 ms later
  const double t0 = double(rng() % 1000), t1 = double(rng() % 1000);
  write_file(dir.file("t.json"), rank_trace(0, origin0, t0));
  write_file(dir.file("t.rank1.json"), rank_trace(1, origin0 + later, t1));
  const auto r = run_plot({"merge-traces", "-o", dir.file("all.json"), dir.file("t.rank1.json"), dir.file("t.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json m = read_json(dir.file("all.json"));
  EXPECT_EQ(m["otherData"]["time_origin_steady_ns"].get<std::int64_t>(), origin0);
  ASSERT_EQ(m["traceEvents"].size(), 6u);
  std::map<std::string, double> ts;  // "pid name" -> ts
  for (const auto& e : m["traceEvents"])
    if (e["ph"] == "X") ts[std::to_string(e["pid"].get<int>()) + " " + e["name"].get<std::string>()] = e["ts"];
  EXPECT_DOUBLE_EQ(ts["1 F"], t0);
  EXPECT_DOUBLE_EQ(ts["1 B"], t0 + 7.5);
  EXPECT_NEAR(ts["2 F"], t1 + double(later) / 1e3, 1e-6);
  EXPECT_NEAR(ts["2 B"], t1 + 7.5 + double(later) / 1e3, 1e-6);
}

TEST(MergeTraces, RefusesForeignFilesAndRepeatedRanksWritingNothing) {
  ScratchDir dir;
  write_file(dir.file("a.json"), rank_trace(0, 100, 0));
  write_file(dir.file("b.json"), rank_trace(0, 200, 0));
  write_file(dir.file("plain.json"), R"({"traceEvents":[]})");
  write_file(dir.file("text.json"), "rank 0 F 12 ms");
  write_file(dir.file("overflow.json"), R"({"traceEvents":[{"ts":1E400000}]})");
  struct Case {
    std::vector<std::string> inputs;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{dir.file("a.json"), dir.file("b.json")}, "hold trace process 1; give each rank's trace once"},
      {{dir.file("a.json"), dir.file("plain.json")}, "plain.json: no otherData.time_origin_steady_ns"},
      {{dir.file("text.json")}, "text.json: not JSON"},
      {{dir.file("overflow.json")}, "overflow.json: not JSON ([json.exception.out_of_range.406] number overflow"},
      {{dir.file("missing.json")}, "cannot open trace"}};
  for (const Case& c : cases) {
    std::vector<std::string> args = {"merge-traces", "-o", dir.file("out.json")};
    args.insert(args.end(), c.inputs.begin(), c.inputs.end());
    const auto r = run_plot(args);
    EXPECT_EQ(r.exit_code, 2) << c.message;
    EXPECT_THAT(r.err, HasSubstr(c.message));
    EXPECT_FALSE(std::filesystem::exists(dir.file("out.json"))) << c.message;
  }
}

}  // namespace
}  // namespace parbench::plots
