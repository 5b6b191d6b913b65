// The data behind each figure, with exact expected values: grouping and labels, averaging, ideal and
// efficiency, bubble percentages, memory stacks, trace classification, step windows and derived idle time.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include <cstdio>
#include <random>

#include "base/error.h"
#include "plot_test_util.h"
#include "plots/figures.h"
#include "plots/scaling_panels.h"

namespace parbench::plots {
namespace {

using test::ScratchDir;
using test::usage_error;
using test::write_file;
using ::testing::AllOf;
using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Optional;
using ::testing::Pointwise;

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

class Random {
 public:
  double operator()(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng_); }

 private:
  std::mt19937 rng_{std::random_device{}()};
};

std::vector<ColumnSpec> collective_columns() {
  return {{"collective"}, {"impl"}, {"ranks"}, {"dtype"}, {"bytes"}, {"busbw_gbps"}, {"time_us"},
          {"device", false}, {"nodes", false}, {"op", false}, {"root", false}, {"inplace", false}};
}

TEST(CollectivePanels, GroupsFiltersAveragesAndLabels) {
  ScratchDir dir;
  Random r;
  const double a = r(1, 10), b = r(1, 10), c = r(1, 10), d = r(1, 10), e = r(1, 10);
  write_file(dir.file("c.csv"),
             "collective,impl,device,ranks,dtype,bytes,time_us,busbw_gbps\n"
             "allreduce,ring,cpu,2,f32,1024,5," + num(a) + "\n"
             "allreduce,ring,cpu,2,f32,1024,5," + num(b) + "\n"   // repeat: averaged
             "allreduce,ring,cpu,2,f32,8,5," + num(c) + "\n"
             "allreduce,ring,cpu,4,f32,8,5," + num(d) + "\n"
             "allreduce,tree,cpu,2,f32,8,5," + num(e) + "\n"
             "allreduce,ring,cpu,1,f32,8,5,0\n"                   // busbw 0 at one rank: dropped
             "allgather,ring,cpu,2,f32,8,5,3\n");
  const CsvTable t = CsvTable::read(dir.file("c.csv"), collective_columns());
  CollectiveFilter filter;
  filter.collectives = {"allreduce"};
  std::string common;
  std::size_t dropped = 0;
  std::vector<std::string> devices;
  const auto panels = collective_panels(t, filter, "busbw_gbps", 1e300, &common, &dropped, &devices);
  EXPECT_EQ(dropped, 1u);
  EXPECT_EQ(common, "allreduce, f32");  // the device goes to the caption
  EXPECT_THAT(devices, ElementsAre("cpu"));
  // Two rank counts: one panel each (every implementation at both in one panel was unreadable), the lines named
  // by implementation alone, each keeping its colour across panels.
  ASSERT_EQ(panels.size(), 2u);
  EXPECT_EQ(panels[0].title, "allreduce, 2 ranks");
  EXPECT_EQ(panels[1].title, "allreduce, 4 ranks");
  ASSERT_EQ(panels[0].series.size(), 2u);
  ASSERT_EQ(panels[1].series.size(), 1u);
  EXPECT_EQ(panels[0].series[0].label, "ring");
  EXPECT_EQ(panels[0].series[1].label, "tree");
  EXPECT_EQ(panels[1].series[0].label, "ring");
  EXPECT_THAT(panels[0].series[0].points, ElementsAre(std::pair(8.0, c), std::pair(1024.0, (a + b) / 2)));
  EXPECT_THAT(panels[1].series[0].points, ElementsAre(std::pair(8.0, d)));
  EXPECT_NE(panels[0].series[0].color, panels[0].series[1].color);
  EXPECT_EQ(panels[0].series[0].color, panels[1].series[0].color);

  // Without the filter: one panel per collective and rank count, same colour for the same series in all.
  const auto all = collective_panels(t, {}, "busbw_gbps", 1e300, &common, &dropped);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].title, "allgather, 2 ranks");
  EXPECT_EQ(all[0].series[0].label, "ring");
  EXPECT_EQ(all[0].series[0].color, all[1].series[0].color);
  EXPECT_EQ(common, "f32");

  // The latency figure's size cut.
  const auto small = collective_panels(t, filter, "time_us", 64, nullptr, nullptr);
  for (const Series& s : small[0].series)
    for (auto [x, y] : s.points) EXPECT_LE(x, 64.0);

  filter.collectives = {"broadcast"};
  EXPECT_THAT(usage_error([&] { collective_panels(t, filter, "busbw_gbps", 1e300, nullptr, nullptr); }),
              AllOf(HasSubstr("c.csv: no rows to plot after the filters"), HasSubstr("allgather, allreduce")));
}

// The two halves of one implementation: one colour, the in-place line dashed, labels naming the half.
TEST(CollectivePanels, InPlaceHalfSharesItsColourDashed) {
  ScratchDir dir;
  write_file(dir.file("h.csv"),
             "collective,impl,device,ranks,dtype,bytes,time_us,busbw_gbps,inplace\n"
             "allreduce,ring,cpu,2,f32,8,5,1,0\n"
             "allreduce,ring,cpu,2,f32,8,5,2,1\n"
             "allreduce,tree,cpu,2,f32,8,5,3,0\n"
             "allreduce,tree,cpu,2,f32,8,5,4,1\n");
  const CsvTable t = CsvTable::read(dir.file("h.csv"), collective_columns());
  const auto panels = collective_panels(t, {}, "busbw_gbps", 1e300, nullptr, nullptr);
  ASSERT_EQ(panels.size(), 1u);
  const auto& s = panels[0].series;
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0].label, "ring (out-of-place)");
  EXPECT_EQ(s[1].label, "ring (in-place)");
  EXPECT_EQ(s[0].color, s[1].color);
  EXPECT_FALSE(s[0].dashed);
  EXPECT_TRUE(s[1].dashed);
  EXPECT_NE(s[0].color, s[2].color);
  EXPECT_EQ(s[2].color, s[3].color);
}

TEST(SizeTics, PowersOfTwoWithBinarySuffixes) {
  const std::string tics = size_tics_command("x", 8, 1 << 30, 14);
  EXPECT_THAT(tics, AllOf(HasSubstr("set xtics ("), HasSubstr("'1K' 1024"), HasSubstr("'1M' 1048576"),
                          HasSubstr("'1G' 1073741824")));
  EXPECT_LE(std::count(tics.begin(), tics.end(), ','), 13);
  EXPECT_EQ(size_tics_command("x", 8, 64, 14), "set xtics ('8' 8, '16' 16, '32' 32, '64' 64)");
  EXPECT_EQ(byte_unit(3.0 * (1 << 30)).second, "GiB");
  EXPECT_EQ(byte_unit(5e6).second, "MiB");
  EXPECT_EQ(byte_unit(100).second, "B");
}

std::vector<ColumnSpec> training_columns(const std::string& metric) {
  return {{"scheme"}, {"ranks"}, {metric}, {"schedule", false}, {"model", false}, {"device", false}, {"impl", false}};
}

TEST(ScalingSeries, IdealAndEfficiencyStrongAndWeak) {
  ScratchDir dir;
  Random r;
  const double t1 = r(50, 100), t2a = r(80, 200), t2b = r(80, 200), t4 = r(150, 400), tp4 = r(10, 20);
  write_file(dir.file("t.csv"),
             "model,scheme,schedule,ranks,samples_per_s\n"
             "gpt,ddp,,1," + num(t1) + "\n"
             "gpt,ddp,,2," + num(t2a) + "\n"
             "gpt,ddp,,2," + num(t2b) + "\n"
             "gpt,ddp,,4," + num(t4) + "\n"
             "gpt,ddp,,8,\n"                              // no throughput reported: left out
             "gpt,pipeline,1f1b,4," + num(tp4) + "\n");   // one rank count: no scaling to show
  const CsvTable t = CsvTable::read(dir.file("t.csv"), training_columns("samples_per_s"));
  std::string common;
  std::vector<std::string> single;
  const auto strong = scaling_series(t, {}, "samples_per_s", ScalingMode::strong, &common, &single);
  ASSERT_EQ(strong.size(), 1u);
  EXPECT_THAT(single, ElementsAre("pipeline (1f1b)"));
  EXPECT_EQ(common, "gpt");
  const ScalingSeries& s = strong[0];
  EXPECT_EQ(s.label, "ddp");
  EXPECT_THAT(s.ranks, ElementsAre(1.0, 2.0, 4.0));
  const double t2 = (t2a + t2b) / 2;
  EXPECT_THAT(s.throughput, ElementsAre(t1, t2, t4));
  EXPECT_THAT(s.ideal, ElementsAre(t1, t1 * 2, t1 * 4));
  // 100 * t / t need not round back to exactly 100: compare efficiencies to within rounding.
  const std::vector<double> efficiency = {100.0, 100.0 * t2 / (t1 * 2), 100.0 * t4 / (t1 * 4)};
  EXPECT_THAT(s.efficiency, Pointwise(DoubleNear(1e-9), efficiency));

  const auto weak = scaling_series(t, {}, "samples_per_s", ScalingMode::weak, nullptr, nullptr);
  ASSERT_EQ(weak.size(), 1u);
  EXPECT_THAT(weak[0].throughput, ElementsAre(t1, (t2a / 2 + t2b / 2) / 2, t4 / 4));
  EXPECT_THAT(weak[0].ideal, ElementsAre(t1, t1, t1));
  EXPECT_DOUBLE_EQ(weak[0].efficiency[2], 100.0 * (t4 / 4) / t1);

  TrainingFilter only_pipeline;
  only_pipeline.schemes = {"pipeline"};
  EXPECT_THAT(usage_error([&] { scaling_series(t, only_pipeline, "samples_per_s", ScalingMode::strong, nullptr, nullptr); }),
              HasSubstr("one rank count only"));
  TrainingFilter by_model;
  by_model.models = {"llama"};
  EXPECT_THAT(usage_error([&] { scaling_series(t, by_model, "samples_per_s", ScalingMode::strong, nullptr, nullptr); }),
              HasSubstr("no rows to plot"));
}

// bench_train --simulate rows (predicted = 1) beside measured ones: a series of their own, labelled "predicted".
TEST(ScalingSeries, PredictedRowsFormTheirOwnSeries) {
  ScratchDir dir;
  Random r;
  const double m1 = r(50, 100), m2 = r(80, 200), p1 = r(50, 100), p2 = r(80, 200);
  write_file(dir.file("t.csv"),
             "model,scheme,schedule,ranks,samples_per_s,predicted\n"
             "gpt,ddp,,1," + num(m1) + ",0\n"
             "gpt,ddp,,2," + num(m2) + ",0\n"
             "gpt,ddp,,1," + num(p1) + ",1\n"
             "gpt,ddp,,2," + num(p2) + ",1\n");
  std::vector<ColumnSpec> cols = training_columns("samples_per_s");
  cols.push_back({"predicted", false});
  const CsvTable t = CsvTable::read(dir.file("t.csv"), cols);
  const auto series = scaling_series(t, {}, "samples_per_s", ScalingMode::strong, nullptr, nullptr);
  ASSERT_EQ(series.size(), 2u);
  EXPECT_EQ(series[0].label, "ddp");
  EXPECT_THAT(series[0].throughput, ElementsAre(m1, m2));
  EXPECT_EQ(series[1].label, "ddp (predicted)");
  EXPECT_THAT(series[1].throughput, ElementsAre(p1, p2));
}

// The overlap row: the mean fraction per rank count of the rows that report one, percent on the figure; predicted
// rows and runs without a value leave gaps, not zeros.
TEST(ScalingSeries, OverlapMeanPerRankCountWithGapsWhereNoneIsReported) {
  ScratchDir dir;
  Random r;
  const double a = r(0, 1), b = r(0, 1);
  write_file(dir.file("t.csv"),
             "model,scheme,schedule,ranks,samples_per_s,predicted,overlap\n"
             "gpt,ddp,,1,50,0,0\n"
             "gpt,ddp,,2,90,0," + num(a) + "\n"
             "gpt,ddp,,2,94,0," + num(b) + "\n"
             "gpt,ddp,,4,170,0,\n"       // a run that reported no overlap
             "gpt,ddp,,8,,0,0.9\n"       // no throughput: the whole row is left out
             "gpt,ddp,,1,52,1,\n"        // predicted rows have no overlap
             "gpt,ddp,,2,99,1,\n");
  std::vector<ColumnSpec> cols = training_columns("samples_per_s");
  cols.push_back({"predicted", false});
  cols.push_back({"overlap", false});
  const CsvTable t = CsvTable::read(dir.file("t.csv"), cols);
  const auto series = scaling_series(t, {}, "samples_per_s", ScalingMode::strong, nullptr, nullptr);
  ASSERT_EQ(series.size(), 2u);
  EXPECT_THAT(series[0].ranks, ElementsAre(1.0, 2.0, 4.0));
  ASSERT_EQ(series[0].overlap.size(), 3u);
  EXPECT_THAT(series[0].overlap[0], Optional(0.0));
  EXPECT_THAT(series[0].overlap[1], Optional((a + b) / 2));
  EXPECT_EQ(series[0].overlap[2], std::nullopt);
  EXPECT_EQ(series[1].label, "ddp (predicted)");
  EXPECT_THAT(series[1].overlap, ElementsAre(std::nullopt, std::nullopt));
  EXPECT_TRUE(any_overlap(series));
  EXPECT_THAT(overlap_points(series[0]), ElementsAre(ElementsAre(1.0, 0.0), ElementsAre(2.0, 100 * ((a + b) / 2))));
  EXPECT_THAT(overlap_points(series[1]), IsEmpty());
}

// A CSV written before the overlap column existed plots as before: no overlap anywhere, no error.
TEST(ScalingSeries, CsvWithoutOverlapColumnHasNoOverlap) {
  ScratchDir dir;
  write_file(dir.file("t.csv"), "model,scheme,schedule,ranks,samples_per_s\ngpt,ddp,,1,50\ngpt,ddp,,2,90\n");
  std::vector<ColumnSpec> cols = training_columns("samples_per_s");
  cols.push_back({"overlap", false});
  const CsvTable t = CsvTable::read(dir.file("t.csv"), cols);
  const auto series = scaling_series(t, {}, "samples_per_s", ScalingMode::strong, nullptr, nullptr);
  ASSERT_EQ(series.size(), 1u);
  EXPECT_THAT(series[0].throughput, ElementsAre(50.0, 90.0));
  EXPECT_THAT(series[0].overlap, ElementsAre(std::nullopt, std::nullopt));
  EXPECT_FALSE(any_overlap(series));
}

TEST(ScalingSeries, OverlapOutsideZeroToOneIsRefusedNamingTheCell) {
  ScratchDir dir;
  std::vector<ColumnSpec> cols = training_columns("samples_per_s");
  cols.push_back({"overlap", false});
  for (const std::string& bad : {std::string("1.5"), std::string("-0.1")}) {
    write_file(dir.file("t.csv"), "scheme,ranks,samples_per_s,overlap\nddp,1,50,0\nddp,2,90," + bad + "\n");
    const CsvTable t = CsvTable::read(dir.file("t.csv"), cols);
    EXPECT_THAT(usage_error([&] { scaling_series(t, {}, "samples_per_s", ScalingMode::strong, nullptr, nullptr); }),
                HasSubstr("t.csv:3: column 'overlap': '" + bad + "' is outside 0..1"));
  }
  write_file(dir.file("t.csv"), "scheme,ranks,samples_per_s,overlap\nddp,1,50,0\nddp,2,90,most\n");
  const CsvTable t = CsvTable::read(dir.file("t.csv"), cols);
  EXPECT_THAT(usage_error([&] { scaling_series(t, {}, "samples_per_s", ScalingMode::strong, nullptr, nullptr); }),
              HasSubstr("t.csv:3: column 'overlap': 'most' is not a number"));
}

TEST(BubbleSeries, PercentOfStepSkippingNonPipelineRows) {
  ScratchDir dir;
  Random r;
  const double m1 = r(0.5, 0.9), m4 = r(0.2, 0.5), g4 = r(0.2, 0.5);
  write_file(dir.file("t.csv"),
             "scheme,schedule,pp,microbatches,bubble_measured,bubble_theory\n"
             "ddp,,1,1,,\n"
             "pipeline,1f1b,4,1," + num(m1) + ",0.75\n"
             "pipeline,1f1b,4,4," + num(m4) + ",\n"
             "pipeline,gpipe,4,4," + num(g4) + ",0.42857142857142855\n");
  const CsvTable t = CsvTable::read(dir.file("t.csv"), {{"scheme"}, {"schedule"}, {"pp", false}, {"microbatches"},
                                                        {"bubble_measured"}, {"bubble_theory"}});
  std::string common;
  const auto series = bubble_series(t, {}, &common);
  ASSERT_EQ(series.size(), 2u);
  EXPECT_EQ(common, "pp=4, pipeline");
  EXPECT_EQ(series[0].label, "1f1b");
  EXPECT_THAT(series[0].measured, ElementsAre(std::pair(1.0, 100 * m1), std::pair(4.0, 100 * m4)));
  EXPECT_THAT(series[0].theory, ElementsAre(std::pair(1.0, 75.0)));
  EXPECT_EQ(series[1].label, "gpipe");
  EXPECT_THAT(series[1].theory, ElementsAre(std::pair(4.0, 100 * 0.42857142857142855)));
}

TEST(BubbleSeries, ReplayedWhenTheCsvHasIt) {
  ScratchDir dir;
  Random r;
  const double m2 = r(0.3, 0.6), r2 = r(0.3, 0.6), r8 = r(0.1, 0.3);
  write_file(dir.file("t.csv"),
             "scheme,schedule,microbatches,bubble_measured,bubble_theory,bubble_replayed\n"
             "pp,gpipe,2," + num(m2) + ",0.3333," + num(r2) + "\n"
             "pp,gpipe,8,0.2,0.1111,\n"
             "pp,gpipe,8,0.2,0.1111," + num(r8) + "\n");
  const CsvTable t = CsvTable::read(dir.file("t.csv"), {{"scheme"}, {"schedule"}, {"microbatches"},
                                                        {"bubble_measured"}, {"bubble_theory"},
                                                        {"bubble_replayed", false}});
  const auto series = bubble_series(t, {}, nullptr);
  ASSERT_EQ(series.size(), 1u);
  // The empty cell is left out of the mean at m = 8; the measured mean has both rows.
  EXPECT_THAT(series[0].replayed, ElementsAre(std::pair(2.0, 100 * r2), std::pair(8.0, 100 * r8)));
  EXPECT_THAT(series[0].measured, ElementsAre(std::pair(2.0, 100 * m2), std::pair(8.0, 20.0)));
}

TEST(MemoryBars, CategoriesPerSchemeWithEstimate) {
  ScratchDir dir;
  Random r;
  std::vector<double> v(12);
  for (double& x : v) x = std::floor(r(1e6, 1e9));
  std::string csv = "scheme,ranks,params_bytes,grads_bytes,optimizer_bytes,activations_bytes,comm_buffer_bytes,"
                    "workspace_bytes,estimate_bytes\n";
  csv += "zero3,8";
  for (int i = 0; i < 6; ++i) csv += "," + num(v[i]);
  csv += ",123456789\nddp,8";
  for (int i = 6; i < 12; ++i) csv += "," + num(v[i]);
  csv += ",\n";
  write_file(dir.file("m.csv"), csv);
  std::vector<ColumnSpec> cols = {{"scheme"}, {"ranks", false}, {"estimate_bytes", false}};
  for (const auto& c : kMemoryCategories) cols.push_back({c});
  const CsvTable t = CsvTable::read(dir.file("m.csv"), cols);
  std::string common;
  const auto bars = memory_bars(t, {}, &common);
  ASSERT_EQ(bars.size(), 2u);
  EXPECT_EQ(common, "8 ranks");
  EXPECT_EQ(bars[0].label, "ddp");
  EXPECT_THAT(bars[0].bytes, ElementsAre(v[6], v[7], v[8], v[9], v[10], v[11]));
  EXPECT_FALSE(bars[0].estimate.has_value());
  EXPECT_EQ(bars[1].label, "zero3");
  EXPECT_THAT(bars[1].bytes, ElementsAre(v[0], v[1], v[2], v[3], v[4], v[5]));
  EXPECT_EQ(bars[1].estimate, 123456789.0);
}

TEST(LinkGrid, PairsIntoASymmetricMatrix) {
  ScratchDir dir;
  Random r;
  const double lat = r(1, 100), bw = r(0.1, 10);
  write_file(dir.file("l.csv"), "rank_a,rank_b,node_a,node_b,host_a,host_b,latency_us,gbps,wrong,finding\n"
                                "0,1,0,0,h0,h0," + num(lat) + "," + num(bw) + ",0,\n"
                                "0,2,0,1,h0,h1,7,0.5,0,rank 2\n"
                                "1,2,0,1,h0,h1,8,0.25,0,rank 2\n");
  const CsvTable t = CsvTable::read(dir.file("l.csv"), {{"rank_a"}, {"rank_b"}, {"latency_us"}, {"gbps"},
                                                        {"finding"}, {"host_a", false}, {"host_b", false}});
  const LinkGrid g = link_grid(t);
  ASSERT_EQ(g.n, 3);
  EXPECT_EQ(g.latency_us[0 * 3 + 1], lat);
  EXPECT_EQ(g.latency_us[1 * 3 + 0], lat);
  EXPECT_EQ(g.gbps[2 * 3 + 1], 0.25);
  EXPECT_TRUE(std::isnan(g.latency_us[1 * 3 + 1]));
  EXPECT_THAT(g.slow, ElementsAre(false, false, true, false, false, true, true, true, false));
  EXPECT_THAT(g.hosts, ElementsAre("h0", "h0", "h1"));
  for (const std::string& bad : {std::string("1,1"), std::string("1,0")}) {  // a rank with itself; 0-1 again
    write_file(dir.file("b.csv"), "rank_a,rank_b,latency_us,gbps,finding\n0,1,1,1,\n" + bad + ",1,1,\n");
    const CsvTable b = CsvTable::read(dir.file("b.csv"), {{"rank_a"}, {"rank_b"}, {"latency_us"}, {"gbps"},
                                                          {"finding"}});
    EXPECT_THROW(link_grid(b), UsageError) << bad;
  }
}

// Two runs' rows grouped by all but the size, ascending size, medians and the ratio as parbench-compare gives them.
TEST(CompareGroups, RowsBySizeWithMediansAndMarks) {
  compare::Run old_run, new_run;
  Random r;
  const double base = r(5, 50);
  for (std::uint64_t bytes : {4096u, 1024u, 65536u})
    for (int inplace : {0, 1}) {
      const compare::RowKey k{"allreduce", "ring", bytes, "f32", "sum", -1, inplace};
      const double slow = bytes == 65536 ? 1.5 : 1.0;  // 64K made 50% slower in the new run
      old_run.rows[k].time_us = {base, base * 1.01, base * 0.99, base};
      new_run.rows[k].time_us = {base * slow, base * slow * 1.01, base * slow * 0.99, base * slow};
    }
  const compare::Comparison c = compare::compare_runs(old_run, new_run, {});
  const std::vector<CompareGroup> g = compare_groups(c, {});
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[0].label, "allreduce ring f32 sum out of place");
  EXPECT_EQ(g[1].label, "allreduce ring f32 sum in place");
  EXPECT_EQ(g[1].color, 1);
  ASSERT_EQ(g[0].points.size(), 3u);
  EXPECT_THAT(std::vector<double>({g[0].points[0].bytes, g[0].points[1].bytes, g[0].points[2].bytes}),
              ElementsAre(1024, 4096, 65536));
  EXPECT_DOUBLE_EQ(g[0].points[0].old_us, base);
  EXPECT_DOUBLE_EQ(g[0].points[2].new_us, base * 1.5);
  EXPECT_DOUBLE_EQ(g[0].points[2].ratio, 1.5);
  EXPECT_LE(g[0].points[2].lo, 1.5);
  EXPECT_GE(g[0].points[2].hi, 1.5);
  EXPECT_EQ(g[0].points[2].mark, compare::Mark::slower);
  EXPECT_EQ(g[0].points[0].mark, compare::Mark::none);
  CollectiveFilter other;
  other.impls = {"tree"};
  EXPECT_THAT(usage_error([&] { compare_groups(c, other); }), HasSubstr("no rows of the two runs match"));
  compare::Run wide_old, wide_new;  // 8 groups: more than a figure shows
  for (int root = 0; root < 8; ++root) {
    const compare::RowKey k{"broadcast", "ring", 1024, "f32", "none", root, 0};
    wide_old.rows[k].time_us = wide_new.rows[k].time_us = {1, 2};
  }
  EXPECT_THAT(usage_error([&] { compare_groups(compare::compare_runs(wide_old, wide_new, {}), {}); }),
              HasSubstr("8 groups of rows (broadcast ring f32 root 0 out of place, "));
}

TEST(Timeline, ClassifiesEventsByNameThenCategory) {
  EXPECT_EQ(classify_event("F mb=3", "compute"), SpanKind::forward);
  EXPECT_EQ(classify_event("forward layer=2", "compute"), SpanKind::forward);
  EXPECT_EQ(classify_event("B", "compute"), SpanKind::backward);
  EXPECT_EQ(classify_event("B12", "compute"), SpanKind::backward);
  EXPECT_EQ(classify_event("W mb=1", "compute"), SpanKind::weight_grad);
  EXPECT_EQ(classify_event("backward_weight", "compute"), SpanKind::weight_grad);
  EXPECT_EQ(classify_event("send", "compute"), SpanKind::communication);
  EXPECT_EQ(classify_event("recv mb=2", ""), SpanKind::communication);
  EXPECT_EQ(classify_event("allreduce grads", "communication"), SpanKind::communication);
  EXPECT_EQ(classify_event("adam", "optimizer"), SpanKind::optimizer);
  EXPECT_EQ(classify_event("wait", "idle"), SpanKind::idle);
  EXPECT_EQ(classify_event("Fused gelu", "compute"), std::nullopt);
  EXPECT_EQ(classify_event("layer 3", "compute"), std::nullopt);
}

TEST(Timeline, PicksTheStepAndDerivesIdleFromComputeGaps) {
  ScratchDir dir;
  write_file(dir.file("t.json"), test::pipeline_trace_json(3, 2, 2));
  // GPipe, F = 1 ms, B = 2 ms, 0.2 ms per receive. Stage 2 computes F at 2.4-4.4 and B at 4.4-8.4; the step
  // ends with the optimizer at 12.8-13.1 on every stage.
  const Timeline tl = read_timeline(dir.file("t.json"), 0);
  EXPECT_THAT(tl.rows, ElementsAre("stage 0", "stage 1", "stage 2"));
  EXPECT_EQ(tl.steps, 2);
  EXPECT_EQ(tl.step, 0);
  EXPECT_NEAR(tl.span_ms, 13.1, 1e-9);
  EXPECT_TRUE(tl.implicit_idle);
  std::vector<std::pair<double, double>> idle2;
  int forward = 0, backward = 0, comm = 0;
  for (const Span& s : tl.spans) {
    EXPECT_GE(s.start_ms, 0);
    EXPECT_LE(s.end_ms, tl.span_ms + 1e-9);
    if (s.kind == SpanKind::idle && s.row == 2) idle2.emplace_back(s.start_ms, s.end_ms);
    if (s.kind == SpanKind::forward || s.kind == SpanKind::backward) {
      ++(s.kind == SpanKind::forward ? forward : backward);
      EXPECT_TRUE(s.microbatch.has_value());
    }
    comm += s.kind == SpanKind::communication;
    EXPECT_NE(s.kind, SpanKind::other_compute);  // the "step" ranges are windows, not boxes
  }
  EXPECT_EQ(forward, 6);
  EXPECT_EQ(backward, 6);
  EXPECT_EQ(comm, 8);
  ASSERT_EQ(idle2.size(), 2u);
  EXPECT_NEAR(idle2[0].first, 0, 1e-9);
  EXPECT_NEAR(idle2[0].second, 2.4, 1e-9);
  EXPECT_NEAR(idle2[1].first, 8.4, 1e-9);
  EXPECT_NEAR(idle2[1].second, 12.8, 1e-9);

  const Timeline last = read_timeline(dir.file("t.json"), -1);
  EXPECT_EQ(last.step, 1);
  EXPECT_NEAR(last.span_ms, 13.1, 1e-9);
  EXPECT_THAT(usage_error([&] { read_timeline(dir.file("t.json"), 2); }), HasSubstr("has 2 steps (0..1)"));
}

TEST(Timeline, ExplicitIdleEventsAreUsedAsGiven) {
  ScratchDir dir;
  write_file(dir.file("t.json"), test::pipeline_trace_json(2, 3, 1, true));
  const Timeline tl = read_timeline(dir.file("t.json"), -1);
  EXPECT_FALSE(tl.implicit_idle);
  int idle = 0;
  for (const Span& s : tl.spans) idle += s.kind == SpanKind::idle;
  EXPECT_EQ(idle, 1);  // stage 1 finishes its backwards before stage 0
}

TEST(Timeline, UnclassifiedRangesInsideOrAroundKnownOnesAreNotDrawn) {
  ScratchDir dir;
  // rank 0: "train" around everything, "layer 0" inside F, "loss" alone; no step events: the whole trace.
  write_file(dir.file("t.json"),
             "[{\"name\":\"train\",\"cat\":\"compute\",\"ph\":\"X\",\"ts\":0,\"dur\":5000,\"pid\":0},"
             "{\"name\":\"F mb=0\",\"cat\":\"compute\",\"ph\":\"X\",\"ts\":0,\"dur\":1000,\"pid\":0,\"args\":{\"chunk\":1}},"
             "{\"name\":\"layer 0\",\"cat\":\"compute\",\"ph\":\"X\",\"ts\":100,\"dur\":500,\"pid\":0},"
             "{\"name\":\"loss\",\"cat\":\"compute\",\"ph\":\"X\",\"ts\":1500,\"dur\":500,\"pid\":0},"
             "{\"name\":\"B mb=0\",\"cat\":\"compute\",\"ph\":\"X\",\"ts\":3000,\"dur\":2000,\"pid\":0}]");
  const Timeline tl = read_timeline(dir.file("t.json"), -1);
  EXPECT_EQ(tl.steps, 0);
  EXPECT_NEAR(tl.span_ms, 5.0, 1e-12);
  std::vector<std::tuple<SpanKind, double, double>> got;
  for (const Span& s : tl.spans) got.emplace_back(s.kind, s.start_ms, s.end_ms);
  std::sort(got.begin(), got.end());
  EXPECT_THAT(got, ElementsAre(std::tuple(SpanKind::forward, 0.0, 1.0), std::tuple(SpanKind::backward, 3.0, 5.0),
                               std::tuple(SpanKind::other_compute, 1.5, 2.0), std::tuple(SpanKind::idle, 1.0, 1.5),
                               std::tuple(SpanKind::idle, 2.0, 3.0)));
  EXPECT_EQ(tl.spans[0].microbatch, 0);
  EXPECT_EQ(tl.spans[0].chunk, 1);
}

// A GPU trace: per rank a compute stream (tid 1) and a comm stream (tid 2). With rows per track, each is a row
// named by the thread_name metadata; communication fills its own row, which gets no idle time; the step window
// still comes from the step ranges.
TEST(Timeline, RowsPerTrackShowEachStream) {
  ScratchDir dir;
  const std::string meta =
      "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":1,\"args\":{\"name\":\"rank 0\"}},"
      "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":1,\"args\":{\"name\":\"compute stream\"}},"
      "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":2,\"args\":{\"name\":\"comm stream\"}},";
  write_file(dir.file("t.json"),
             "[" + meta +
                 "{\"name\":\"step\",\"cat\":\"compute\",\"ph\":\"X\",\"ts\":1000,\"dur\":6000,\"pid\":1,\"tid\":1},"
                 "{\"name\":\"backward\",\"cat\":\"compute\",\"ph\":\"X\",\"ts\":1000,\"dur\":4000,\"pid\":1,"
                 "\"tid\":1},"
                 "{\"name\":\"optimizer\",\"cat\":\"optimizer\",\"ph\":\"X\",\"ts\":6000,\"dur\":1000,\"pid\":1,"
                 "\"tid\":1},"
                 "{\"name\":\"allreduce bucket\",\"cat\":\"communication\",\"ph\":\"X\",\"ts\":3000,\"dur\":3000,"
                 "\"pid\":1,\"tid\":2}]");
  using Row = std::tuple<int, SpanKind, double, double>;
  const auto rows_of = [](const Timeline& tl) {
    std::vector<Row> got;
    for (const Span& s : tl.spans) got.emplace_back(s.row, s.kind, s.start_ms, s.end_ms);
    std::sort(got.begin(), got.end());
    return got;
  };
  const Timeline tracks = read_timeline(dir.file("t.json"), -1, true);
  EXPECT_TRUE(tracks.by_track);
  EXPECT_THAT(tracks.rows, ElementsAre("rank 0: compute stream", "rank 0: comm stream"));
  EXPECT_NEAR(tracks.span_ms, 6.0, 1e-12);
  EXPECT_THAT(rows_of(tracks),
              ElementsAre(Row(0, SpanKind::backward, 0.0, 4.0), Row(0, SpanKind::optimizer, 5.0, 6.0),
                          Row(0, SpanKind::idle, 4.0, 5.0), Row(1, SpanKind::communication, 2.0, 5.0)));
  // One row per rank as before: the communication shares the rank's row.
  const Timeline ranks = read_timeline(dir.file("t.json"), -1);
  EXPECT_THAT(ranks.rows, ElementsAre("rank 0"));
  EXPECT_THAT(rows_of(ranks),
              ElementsAre(Row(0, SpanKind::backward, 0.0, 4.0), Row(0, SpanKind::communication, 2.0, 5.0),
                          Row(0, SpanKind::optimizer, 5.0, 6.0), Row(0, SpanKind::idle, 4.0, 5.0)));
}

// Found by fuzz_trace (ts 5e35, dur 3: the end rounds to the start): an instant event at the window's start got
// a span but no row, and the timeline failed with map::at. Its rank has a row now, the event a span of no length.
TEST(Timeline, InstantEventAtTheWindowStartHasARow) {
  ScratchDir dir;
  write_file(dir.file("t.json"),
             "[{\"name\":\"F mb=0\",\"cat\":\"compute\",\"ph\":\"X\",\"ts\":0,\"dur\":0,\"pid\":1},"
             "{\"name\":\"B mb=0\",\"cat\":\"compute\",\"ph\":\"X\",\"ts\":0,\"dur\":2000,\"pid\":0}]");
  const Timeline tl = read_timeline(dir.file("t.json"), -1);
  EXPECT_THAT(tl.rows, ElementsAre("rank 0", "rank 1"));
  ASSERT_GE(tl.spans.size(), 2u);
  bool instant = false;
  for (const Span& s : tl.spans) instant = instant || (s.row == 1 && s.kind == SpanKind::forward && s.end_ms == 0);
  EXPECT_TRUE(instant);
  write_file(dir.file("huge.json"),
             "[{\"name\":\"forward\",\"ph\":\"X\",\"ts\":5000000000000000000000000000000000000,\"dur\":3,"
             "\"pid\":0,\"tid\":0}]");
  const Timeline huge = read_timeline(dir.file("huge.json"), -1);
  EXPECT_THAT(huge.rows, ElementsAre("rank 0"));
  EXPECT_EQ(huge.span_ms, 0);
}

TEST(Timeline, BadTracesNameTheFileAndPlace) {
  ScratchDir dir;
  write_file(dir.file("bad.json"), "{\"traceEvents\": [ {\"ph\":\"X\", ");
  EXPECT_THAT(usage_error([&] { read_timeline(dir.file("bad.json"), -1); }),
              AllOf(HasSubstr("bad.json: not valid JSON"), HasSubstr("line 1")));
  write_file(dir.file("overflow.json"), "[{\"name\":\"forward\",\"ph\":\"X\",\"ts\":5E700000,\"dur\":3}]");
  EXPECT_THAT(usage_error([&] { read_timeline(dir.file("overflow.json"), -1); }),
              AllOf(HasSubstr("overflow.json: not valid JSON"), HasSubstr("number overflow")));
  write_file(dir.file("nodur.json"), "[{\"name\":\"F\",\"ph\":\"X\",\"ts\":1,\"pid\":0}]");
  EXPECT_THAT(usage_error([&] { read_timeline(dir.file("nodur.json"), -1); }),
              HasSubstr("nodur.json: traceEvents[0]: 'dur' is missing"));
  write_file(dir.file("obj.json"), "{\"events\": []}");
  EXPECT_THAT(usage_error([&] { read_timeline(dir.file("obj.json"), -1); }), HasSubstr("not a Chrome trace"));
  write_file(dir.file("meta.json"), "[{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0}]");
  EXPECT_THAT(usage_error([&] { read_timeline(dir.file("meta.json"), -1); }), HasSubstr("no complete events"));
  EXPECT_THAT(usage_error([&] { read_timeline(dir.file("none.json"), -1); }), HasSubstr("cannot open input"));
}

}  // namespace
}  // namespace parbench::plots
