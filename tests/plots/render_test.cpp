// Every figure rendered by gnuplot from realistic inputs: the image decodes and has the requested size;
// failures (bad extension, missing or failing gnuplot) leave no file behind and keep an older image intact.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <random>

#include "base/error.h"
#include "plot_test_util.h"
#include "plots/figures.h"

namespace parbench::plots {
namespace {

using test::ScratchDir;
using test::write_file;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

class Render : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test::have_gnuplot()) GTEST_SKIP() << "gnuplot is not installed";
    seed_ = std::random_device{}();
    write_file(dir_.file("coll.csv"), test::collectives_csv(seed_));
    write_file(dir_.file("train.csv"), test::training_csv(seed_));
    write_file(dir_.file("trace.json"), test::pipeline_trace_json(4, 6, 2));
  }
  FigureOptions options(const std::string& input, const std::string& output, ImageSize size = {}) {
    FigureOptions o;
    o.input = dir_.file(input);
    o.render.output = dir_.file(output);
    o.render.size = size;
    return o;
  }
  void expect_png(const std::string& name, int w, int h) {
    SCOPED_TRACE(name + " seed " + std::to_string(seed_));
    test::PngInfo info;
    ASSERT_NO_THROW(info = test::check_png(dir_.file(name)));
    EXPECT_EQ(info.width, w);
    EXPECT_EQ(info.height, h);
    EXPECT_GT(info.distinct_bytes, 32u);  // something was drawn
  }
  ScratchDir dir_;
  unsigned seed_ = 0;
};

TEST_F(Render, EveryFigureAsPngAtTheDefaultSize) {
  plot_busbw(options("coll.csv", "busbw.png"), {});
  expect_png("busbw.png", 1200, 800);
  CollectiveFilter allreduce;
  allreduce.collectives = {"allreduce"};
  plot_latency(options("coll.csv", "latency.png"), allreduce, 64 * 1024);
  expect_png("latency.png", 1200, 800);
  plot_scaling(options("train.csv", "scaling.png"), {}, "samples_per_s", ScalingMode::strong);
  expect_png("scaling.png", 1200, 800);
  plot_scaling(options("train.csv", "weak.png"), {}, "tokens_per_s", ScalingMode::weak);
  expect_png("weak.png", 1200, 800);
  plot_bubble(options("train.csv", "bubble.png"), {});
  expect_png("bubble.png", 1200, 800);
  plot_memory(options("train.csv", "memory.png"), {});
  expect_png("memory.png", 1200, 800);
  plot_timeline(options("trace.json", "timeline.png"), -1);
  expect_png("timeline.png", 1200, 800);
  write_file(dir_.file("links.csv"), "rank_a,rank_b,node_a,node_b,host_a,host_b,latency_us,gbps,wrong,finding\n"
                                     "0,1,0,0,h,h,2.5,8,0,\n0,2,0,0,h,h,300,1.5,0,rank 2\n1,2,0,0,h,h,310,1.4,0,rank 2\n");
  plot_links(options("links.csv", "links.png"));
  expect_png("links.png", 1200, 800);
  // compare: two runs of our CSV, three repeated rows per size, the new one's 1M row 40% slower.
  std::string old_csv = csv::header_line(csv::collective::header) + "\n", new_csv = old_csv;
  for (int repeat = 0; repeat < 3; ++repeat)
    for (const char* size : {"1024", "65536", "1048576"}) {
      const double t = 10 + repeat;
      const std::string row = std::string("allreduce,ring,cpu,2,1,f32,sum,-1,0,") + size + ",0,";
      old_csv += row + std::to_string(t) + ",1,1,0,,,,,,\n";
      new_csv += row + std::to_string(std::string(size) == "1048576" ? t * 1.4 : t) + ",1,1,0,,,,,,\n";
    }
  write_file(dir_.file("old.csv"), old_csv);
  write_file(dir_.file("new.csv"), new_csv);
  CompareFigure cf{dir_.file("old.csv"), dir_.file("new.csv"), {}, {}};
  plot_compare(options("", "compare.png"), cf);
  expect_png("compare.png", 1200, 800);
  // Only the inputs and the images: no temporary file left.
  EXPECT_THAT(dir_.entries(),
              ElementsAre("bubble.png", "busbw.png", "coll.csv", "compare.png", "latency.png", "links.csv",
                          "links.png", "memory.png", "new.csv", "old.csv", "scaling.png", "timeline.png",
                          "trace.json", "train.csv", "weak.png"));
}

TEST_F(Render, PngCheckRejectsDamagedImages) {
  plot_bubble(options("train.csv", "bubble.png", {400, 300}), {});
  const std::string good = test::read_file(dir_.file("bubble.png"));
  write_file(dir_.file("cut.png"), good.substr(0, good.size() / 2));
  EXPECT_THROW(test::check_png(dir_.file("cut.png")), std::runtime_error);
  std::string flipped = good;
  flipped[good.size() / 2] = static_cast<char>(flipped[good.size() / 2] ^ 0x40);
  write_file(dir_.file("flipped.png"), flipped);
  EXPECT_THROW(test::check_png(dir_.file("flipped.png")), std::runtime_error);
  EXPECT_EQ(test::check_png(dir_.file("bubble.png")).width, 400);
}

TEST_F(Render, SvgAndPngAtOtherSizes) {
  plot_busbw(options("coll.csv", "busbw.svg", {640, 480}), {});
  EXPECT_EQ(test::svg_size(dir_.file("busbw.svg")), std::pair(640, 480));
  plot_timeline(options("trace.json", "timeline.SVG", {1600, 900}), 0);
  EXPECT_EQ(test::svg_size(dir_.file("timeline.SVG")), std::pair(1600, 900));
  plot_memory(options("train.csv", "memory.png", {800, 600}), {});
  expect_png("memory.png", 800, 600);
}

TEST_F(Render, ScriptCopyIsWrittenBesideTheImage) {
  FigureOptions o = options("train.csv", "bubble.png");
  o.render.script_copy = dir_.file("bubble.gp");
  plot_bubble(o, {});
  const std::string script = test::read_file(dir_.file("bubble.gp"));
  EXPECT_THAT(script, AllOf(HasSubstr("set terminal pngcairo size 1200,800"), HasSubstr("plot '-'"),
                            HasSubstr("set output '" + dir_.file("bubble.png") + "'")));
}

// The scaling figure gets an overlap row (percent, a gap where a rank count has no value) when the CSV has the column;
// an older CSV without it keeps the two-row figure.
TEST_F(Render, ScalingShowsTheOverlapRowOnlyWhenTheCsvHasOverlap) {
  write_file(dir_.file("overlap.csv"),
             "scheme,ranks,samples_per_s,overlap\n"
             "ddp,1,50,0\nddp,2,90,0.5\nddp,4,170,0.75\n"
             "zero3,1,40,0\nzero3,2,70,0.25\nzero3,4,120,\n");
  FigureOptions o = options("overlap.csv", "overlap.png");
  o.render.script_copy = dir_.file("overlap.gp");
  plot_scaling(o, {}, "samples_per_s", ScalingMode::strong);
  expect_png("overlap.png", 1200, 800);
  const std::string script = test::read_file(dir_.file("overlap.gp"));
  const std::size_t label = script.find("set ylabel 'comm. overlapped (%)'");
  ASSERT_NE(label, std::string::npos) << script;
  // The bottom row, from its placement on: the x axis labels and one data block per series that has values.
  const std::string row = script.substr(script.rfind("set origin", label));
  // The script copy writes data at full precision: "2.000000000000000000e+00 5.000000000000000000e+01".
  const auto block = [](const std::vector<std::pair<int, int>>& points) {
    std::string text;
    char line[96];
    for (auto [x, y] : points) {
      std::snprintf(line, sizeof line, "%.18e %.18e\n", double(x), double(y));
      text += line;
    }
    return text + "e\n";
  };
  EXPECT_THAT(row, AllOf(testing::StartsWith("set origin 0,0\n"), HasSubstr("set xlabel 'ranks'"),
                         HasSubstr("\n" + block({{1, 0}, {2, 50}, {4, 75}}) + block({{1, 0}, {2, 25}}))));
  EXPECT_THAT(script, HasSubstr("set origin 0,0.27\n"));  // the efficiency row above it

  o = options("train.csv", "old.png");
  o.render.script_copy = dir_.file("old.gp");
  plot_scaling(o, {}, "samples_per_s", ScalingMode::strong);
  expect_png("old.png", 1200, 800);
  const std::string old = test::read_file(dir_.file("old.gp"));
  EXPECT_THAT(old, AllOf(HasSubstr("set ylabel 'scaling efficiency (%)'"), HasSubstr("set origin 0,0.34\n")));
  EXPECT_THAT(old, Not(HasSubstr("overlapped")));
}

std::string error_of(const std::function<void()>& f, bool* usage) {
  try {
    f();
  } catch (const UsageError& e) {
    *usage = true;
    return e.what();
  } catch (const Error& e) {
    *usage = false;
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST_F(Render, UnsupportedExtensionIsAUsageErrorNamingIt) {
  bool usage = false;
  EXPECT_THAT(error_of([&] { plot_busbw(options("coll.csv", "busbw.jpg"), {}); }, &usage),
              AllOf(HasSubstr("busbw.jpg"), HasSubstr("'.jpg'"), HasSubstr(".png or .svg")));
  EXPECT_TRUE(usage);
  EXPECT_THAT(error_of([&] { plot_busbw(options("coll.csv", "noext"), {}); }, &usage), HasSubstr("extension ''"));
  EXPECT_THAT(error_of([&] { plot_busbw(options("coll.csv", "nodir/busbw.png"), {}); }, &usage),
              HasSubstr("does not exist"));
  EXPECT_TRUE(usage);
  EXPECT_THAT(dir_.entries(), ElementsAre("coll.csv", "trace.json", "train.csv"));
}

TEST_F(Render, MissingGnuplotIsARuntimeErrorAndLeavesNothing) {
  FigureOptions o = options("coll.csv", "busbw.png");
  o.render.gnuplot = dir_.file("no-such-gnuplot");
  bool usage = true;
  EXPECT_THAT(error_of([&] { plot_busbw(o, {}); }, &usage), AllOf(HasSubstr("no-such-gnuplot"), HasSubstr("not found")));
  EXPECT_FALSE(usage);
  o.render.gnuplot = "parbench-no-such-gnuplot-in-path";
  EXPECT_THAT(error_of([&] { plot_busbw(o, {}); }, &usage), HasSubstr("was not found"));
  EXPECT_THAT(dir_.entries(), ElementsAre("coll.csv", "trace.json", "train.csv"));
}

TEST_F(Render, FailingGnuplotReportsItsMessageAndKeepsTheOldImage) {
  // A stand-in that reads part of the script, complains and fails, like gnuplot on a bad command.
  write_file(dir_.file("fake-gnuplot"), "#!/bin/sh\nhead -c 10 >/dev/null\necho 'line 3: unknown terminal' >&2\nexit 3\n");
  ::chmod(dir_.file("fake-gnuplot").c_str(), 0755);
  write_file(dir_.file("busbw.png"), "old image");
  FigureOptions o = options("coll.csv", "busbw.png");
  o.render.gnuplot = dir_.file("fake-gnuplot");
  bool usage = true;
  EXPECT_THAT(error_of([&] { plot_busbw(o, {}); }, &usage),
              AllOf(HasSubstr("failed drawing"), HasSubstr("exit status 3"), HasSubstr("line 3: unknown terminal")));
  EXPECT_FALSE(usage);
  EXPECT_EQ(test::read_file(dir_.file("busbw.png")), "old image");
  EXPECT_THAT(dir_.entries(), ElementsAre("busbw.png", "coll.csv", "fake-gnuplot", "trace.json", "train.csv"));

  // One that exits 0 without drawing is a failure too.
  write_file(dir_.file("fake-gnuplot"), "#!/bin/sh\ncat >/dev/null\nexit 0\n");
  EXPECT_THAT(error_of([&] { plot_busbw(o, {}); }, &usage), HasSubstr("exited without writing the image"));
  EXPECT_EQ(test::read_file(dir_.file("busbw.png")), "old image");
}

TEST_F(Render, ImageSizeOption) {
  EXPECT_EQ(parse_image_size("1200x800").width, 1200);
  EXPECT_EQ(parse_image_size("640X480").height, 480);
  for (const char* bad : {"1200", "x800", "1200x", "50x50", "1200x80000", "12a0x800", "-1x800"})
    EXPECT_THROW(parse_image_size(bad), UsageError) << bad;
}

}  // namespace
}  // namespace parbench::plots
