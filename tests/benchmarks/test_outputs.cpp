// Results survive: output paths are checked before any work (exit 2 at once), CSV rows and JSON files are on
// disk as each row is measured (a run killed mid-sweep keeps whole rows and valid JSON), under mpirun one
// process writes, and bench_train refuses a CSV with another header before training.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "app/output.h"
#include "programs.h"

using namespace pbtest;
using ::testing::AllOf;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

const char* const kCollectiveHeader =
    "collective,impl,device,ranks,nodes,dtype,op,root,inplace,bytes,count,time_us,algbw_gbps,busbw_gbps,wrong,"
    "expected_us,pct_expected,own_median_us,own_max_us,own_max_rank,outlier_ranks";

// Work that would take minutes: each program must refuse the bad path before starting it.
std::vector<std::string> long_runs() {
  std::vector<std::string> runs = {
      bin("bench_allreduce") + " --ranks 2 --device cpu --sizes 8:64M:x2 -n 1000",
      bin("bench_memcpy") + " --device cpu --sizes 1K:256M:x2 -n 1000",
      bin("bench_train") + " --device cpu --ranks 2 --scheme ddp --steps 1000",
  };
#ifdef PB_HAVE_BENCH_KERNELS
  runs.push_back(bin("bench_kernels") + " --device cpu --min-time 10");
#endif
  return runs;
}

}  // namespace

TEST(OutputPaths, EveryProgramRefusesAMissingDirectoryBeforeAnyWork) {
  for (const std::string& program : long_runs())
    for (const std::string option : {"--csv", "--json", "--trace"}) {
      const Finished r = run(program + " " + option + " /nonexistent/dir/x.out");
      EXPECT_EQ(r.status, 2) << program << " " << option << "\n" << r.output;
      EXPECT_THAT(r.output, AllOf(HasSubstr(std::string(option) + " '/nonexistent/dir/x.out'"),
                                  HasSubstr("directory '/nonexistent/dir' does not exist"),
                                  HasSubstr("expected a file in an existing directory")))
          << program;
      EXPECT_LT(r.seconds, 20) << program << " " << option << " worked before checking its output path";
    }
  const Finished j = run(bin("bench_allreduce") + " --ranks 2 --sizes 8:64M:x2 -n 1000 -J /nonexistent/dir/x.json");
  EXPECT_EQ(j.status, 2) << j.output;
  EXPECT_THAT(j.output, HasSubstr("-J/--output_file '/nonexistent/dir/x.json'"));
  const fs::path d = fresh_dir("outputs_plotpath");
  std::ofstream(d / "in.csv") << kCollectiveHeader << "\nallreduce,ring,cpu,2,1,f32,sum,0,0,8,2,1,1,1,0,,,,,,\n";
  const Finished p = run(bin("parbench-plot") + " busbw -i " + (d / "in.csv").string() + " -o /nonexistent/dir/b.png");
  EXPECT_EQ(p.status, 2) << p.output;
  EXPECT_THAT(p.output, HasSubstr("-o/--output '/nonexistent/dir/b.png': directory '/nonexistent/dir' does not exist"));
  const Finished same = run(bin("bench_memcpy") + " --sizes 1K --csv " + (d / "x").string() + " --json " +
                            (d / "x").string());
  EXPECT_EQ(same.status, 2) << same.output;
  EXPECT_THAT(same.output, HasSubstr("--csv and --json name the same file"));
  EXPECT_FALSE(fs::exists(d / "x"));
  fs::remove_all(d);
}

// A sweep killed (SIGKILL: nothing of ours runs) after some rows: every row written so far is whole, and both
// JSON files parse and hold the rows measured before the last one at least.
TEST(Rows, AKilledCollectiveSweepKeepsWholeRowsAndValidJson) {
  const fs::path d = fresh_dir("outputs_killed");
  const fs::path csv = d / "r.csv", json = d / "r.json", nccl = d / "nccl.json";
  Background b(bin("bench_allreduce") + " --ranks 2 --device cpu --impl ring --sizes 1K:1M:x2 -n 3000 -w 1 --csv " +
                   csv.string() + " --json " + json.string() + " -J " + nccl.string(),
               d / "log");
  const bool got_rows = eventually(120, [&] { return lines_of(pbtest::read_file(csv)).size() >= 5; });
  b.signal(SIGKILL);
  EXPECT_EQ(b.wait(10), 128 + SIGKILL);
  ASSERT_TRUE(got_rows) << b.log();
  const std::string text = pbtest::read_file(csv);
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  const auto lines = lines_of(text);
  EXPECT_EQ(lines[0], kCollectiveHeader);
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const auto f = parbench::split_csv_line(lines[i]);
    ASSERT_EQ(f.size(), 21u) << lines[i];
    EXPECT_EQ(f[0], "allreduce");
    EXPECT_EQ(f[9], std::to_string(1024 << ((i - 1) / 2))) << "rows out of order";
  }
  const std::size_t rows = lines.size() - 1;
  const auto ours = nlohmann::json::parse(pbtest::read_file(json));
  EXPECT_GE(ours.size() + 1, rows);  // a row is in the CSV a moment before the JSON is rewritten
  EXPECT_LE(ours.size(), rows);
  const auto j = nlohmann::json::parse(pbtest::read_file(nccl));
  EXPECT_EQ(j["version"], 2);
  EXPECT_GE(j["results"].size(), rows / 2 - 1);
  EXPECT_LE(j["results"].size(), (rows + 1) / 2);
  // Nothing else was written; a kill inside an atomic rewrite may leave its temporary file (never the target).
  for (const auto& e : fs::directory_iterator(d)) {
    const std::string name = e.path().filename().string();
    EXPECT_TRUE(name == "r.csv" || name == "r.json" || name == "nccl.json" || name == "log" ||
                name.find(".json.tmp.") != std::string::npos)
        << name;
  }
  fs::remove_all(d);
}

TEST(Rows, MemcpyAndKernelsWriteARowPerMeasurement) {
  const fs::path d = fresh_dir("outputs_memcpy");
  const Finished m = run(bin("bench_memcpy") + " --device cpu --sizes 1K,4K,16K -q --csv " + (d / "m.csv").string() +
                         " --json " + (d / "m.json").string());
  ASSERT_EQ(m.status, 0) << m.output;
  EXPECT_EQ(lines_of(pbtest::read_file(d / "m.csv")).size(), 4u);
  EXPECT_EQ(lines_of(pbtest::read_file(d / "m.csv"))[0], "device,bytes,time_us,gbps,wrong");
  EXPECT_EQ(nlohmann::json::parse(pbtest::read_file(d / "m.json")).size(), 3u);
#ifdef PB_HAVE_BENCH_KERNELS
  const Finished k = run(bin("bench_kernels") + " --device cpu --shape tiny --dtype f32 --min-time 0.01 "
                         "--benchmark_filter='^gelu_' --csv " + (d / "k.csv").string() + " --json " +
                         (d / "k.json").string());
  ASSERT_EQ(k.status, 0) << k.output;
  const auto lines = lines_of(pbtest::read_file(d / "k.csv"));
  ASSERT_EQ(lines.size(), 3u) << pbtest::read_file(d / "k.csv");  // gelu forward and backward
  EXPECT_THAT(lines[0], HasSubstr("name,iterations,real_time,cpu_time,time_unit,batch,flops_per_s"));
  EXPECT_THAT(lines[1], HasSubstr("gelu_"));
  EXPECT_EQ(nlohmann::json::parse(pbtest::read_file(d / "k.json")).size(), 2u);
#endif
  fs::remove_all(d);
}

#ifdef PB_HAVE_BENCH_KERNELS
// Explicit dimensions, odd on purpose: the kernels are checked against the reference at them before timing (a wrong
// result is an error row and exit status 1), and the rows are named by the dimensions.
TEST(Rows, KernelsRunAtExplicitDimensions) {
  const fs::path d = fresh_dir("outputs_kernel_dims");
  const Finished k = run(bin("bench_kernels") + " --device simt --shape T=37,B=3,C=40,NH=5,V=41 --dtype bf16 "
                         "--min-time 0.01 --benchmark_filter='^(layernorm_backward|matmul_backward_fc|adamw)' --csv " +
                         (d / "k.csv").string());
  ASSERT_EQ(k.status, 0) << k.output;
  const auto lines = lines_of(pbtest::read_file(d / "k.csv"));
  ASSERT_EQ(lines.size(), 5u) << pbtest::read_file(d / "k.csv");  // header, layernorm, matmul, both adamw
  auto fields_of = [](const std::string& line) {
    std::vector<std::string> fields;
    std::stringstream row(line);
    for (std::string f; std::getline(row, f, ',');) fields.push_back(f);
    return fields;
  };
  const std::vector<std::string> header = fields_of(lines[0]);
  const auto error_column = std::size_t(std::find(header.begin(), header.end(), "error_occurred") - header.begin());
  ASSERT_LT(error_column, header.size()) << lines[0];
  for (std::size_t i = 1; i < lines.size(); ++i) {
    EXPECT_THAT(lines[i], HasSubstr("/simt/bf16/B3_T37_C40_NH5_V41"));
    const std::vector<std::string> fields = fields_of(lines[i]);
    ASSERT_GT(fields.size(), error_column) << lines[i];
    EXPECT_EQ(fields[error_column], "0") << lines[i];
  }
  fs::remove_all(d);
}
#endif

TEST(Rows, BenchTrainRefusesACsvWithAnotherHeaderBeforeTraining) {
  const fs::path d = fresh_dir("outputs_train");
  const fs::path csv = d / "t.csv";
  std::ofstream(csv) << kCollectiveHeader << "\n";
  const Finished r = run(bin("bench_train") + " --device cpu --ranks 2 --scheme ddp --steps 1000 --csv " + csv.string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_THAT(r.output, AllOf(HasSubstr("its header is\n  collective,impl"), HasSubstr("writes\n  model,scheme")));
  EXPECT_LT(r.seconds, 20);
  EXPECT_EQ(pbtest::read_file(csv), std::string(kCollectiveHeader) + "\n");
  fs::remove(csv);
  const std::string small = bin("bench_train") + " --device cpu --model mlp --layers 2 --hidden 16 --ranks 2 "
                            "--scheme ddp --global-batch 4 --steps 1 --warmup 0 -q --csv " + csv.string();
  ASSERT_EQ(run(small).status, 0);
  ASSERT_EQ(run(small).status, 0);
  const auto lines = lines_of(pbtest::read_file(csv));
  ASSERT_EQ(lines.size(), 3u);  // one header, a row per run
  EXPECT_THAT(lines[0], HasSubstr("model,scheme,schedule"));
  fs::remove_all(d);
}

#ifdef PB_MPIEXEC
TEST(Rows, UnderMpirunOneProcessWritesEachRowOnce) {
  const fs::path d = fresh_dir("outputs_mpi");
  const Finished r = run(mpirun(2) + bin("bench_allreduce") + " --device cpu --impl ring --sizes 1K,2K,4K -n 2 --csv " +
                         (d / "m.csv").string());
  ASSERT_EQ(r.status, 0) << r.output;
  const auto lines = lines_of(pbtest::read_file(d / "m.csv"));
  ASSERT_EQ(lines.size(), 7u) << pbtest::read_file(d / "m.csv");  // header + 3 sizes x (out-of-place, in-place)
  EXPECT_EQ(std::count(lines.begin(), lines.end(), lines[0]), 1);
  fs::remove_all(d);
}
#endif
