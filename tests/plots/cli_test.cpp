// parbench-plot as users run it: exit 0 with an image, 2 with a message naming file/line/column for bad input
// (and no image), 1 when gnuplot is missing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "plot_test_util.h"

namespace parbench::plots {
namespace {

using test::run_plot;
using test::ScratchDir;
using test::write_file;
using ::testing::AllOf;
using ::testing::HasSubstr;

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test::have_gnuplot()) GTEST_SKIP() << "gnuplot is not installed";
  }
  ScratchDir dir_;
};

TEST_F(Cli, DrawsAFigure) {
  write_file(dir_.file("c.csv"), test::collectives_csv(7));
  const auto r = run_plot({"busbw", "-i", dir_.file("c.csv"), "-o", dir_.file("b.png"), "--collective", "allreduce",
                           "--ranks", "2,4", "--size", "900x600", "--title", "it's busbw"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto info = test::check_png(dir_.file("b.png"));
  EXPECT_EQ(info.width, 900);
  EXPECT_EQ(info.height, 600);
}

TEST_F(Cli, MalformedCsvExitsTwoNamingFileLineColumnAndWritesNothing) {
  write_file(dir_.file("nonnum.csv"), "model,scheme,ranks,samples_per_s\ngpt,ddp,1,100\ngpt,ddp,2,lots\n");
  auto r = run_plot({"scaling", "-i", dir_.file("nonnum.csv"), "-o", dir_.file("s.png")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, AllOf(HasSubstr("nonnum.csv:3: column 'samples_per_s'"), HasSubstr("'lots' is not a number")));

  write_file(dir_.file("nocol.csv"), "scheme,schedule,microbatches,bubble_measured\npipeline,1f1b,4,0.3\n");
  r = run_plot({"bubble", "-i", dir_.file("nocol.csv"), "-o", dir_.file("s.png")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, AllOf(HasSubstr("nocol.csv:1: missing column 'bubble_theory'")));

  write_file(dir_.file("norows.csv"), "scheme,params_bytes\n");
  r = run_plot({"memory", "-i", dir_.file("norows.csv"), "-o", dir_.file("s.svg")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("missing column"));  // the header check comes first

  std::string header = "scheme,params_bytes,grads_bytes,optimizer_bytes,activations_bytes,comm_buffer_bytes,"
                       "workspace_bytes\n";
  write_file(dir_.file("norows.csv"), header);
  r = run_plot({"memory", "-i", dir_.file("norows.csv"), "-o", dir_.file("s.svg")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("norows.csv: no data rows"));

  r = run_plot({"latency", "-i", dir_.file("missing.csv"), "-o", dir_.file("s.png")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, AllOf(HasSubstr("cannot open input"), HasSubstr("missing.csv")));

  EXPECT_FALSE(test::file_exists(dir_.file("s.png")));
  EXPECT_FALSE(test::file_exists(dir_.file("s.svg")));
  EXPECT_EQ(dir_.entries().size(), 3u);  // the three inputs only
}

TEST_F(Cli, UsageErrorsExitTwo) {
  write_file(dir_.file("c.csv"), test::collectives_csv(3));
  auto r = run_plot({"busbw", "-i", dir_.file("c.csv"), "-o", dir_.file("b.gif")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, AllOf(HasSubstr("b.gif"), HasSubstr("'.gif'")));
  r = run_plot({"busbw", "-i", dir_.file("c.csv"), "-o", dir_.file("b.png"), "--size", "big"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("image size 'big'"));
  r = run_plot({"latency", "-i", dir_.file("c.csv"), "-o", dir_.file("b.png"), "--max-bytes", "64Q"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("64Q"));
  r = run_plot({"scaling", "-i", dir_.file("c.csv"), "-o", dir_.file("b.png"), "--mode", "sideways"});
  EXPECT_EQ(r.exit_code, 2);
  r = run_plot({});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_FALSE(test::file_exists(dir_.file("b.png")));
}

TEST_F(Cli, MissingGnuplotExitsOne) {
  write_file(dir_.file("c.csv"), test::collectives_csv(5));
  const auto r = run_plot({"busbw", "-i", dir_.file("c.csv"), "-o", dir_.file("b.png"), "--gnuplot",
                           dir_.file("nowhere/gnuplot")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("cannot run gnuplot"));
  EXPECT_EQ(dir_.entries().size(), 1u);
}

}  // namespace
}  // namespace parbench::plots
