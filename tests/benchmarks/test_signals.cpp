// SIGINT and SIGTERM: the sweep stops after the measurement in progress, keeps every completed row, prints one
// line naming where it stopped and exits 130 / 143, in threads mode and under mpirun; bench_train abandons its
// one row; --resume skips the rows already in the CSV and refuses a CSV with another header.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "app/output.h"
#include "programs.h"

using namespace pbtest;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
namespace fs = std::filesystem;

namespace {

std::vector<std::vector<std::string>> csv_rows(const fs::path& p) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(pbtest::read_file(p));
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) rows.push_back(parbench::split_csv_line(line));
  return rows;
}

std::size_t line_count(const fs::path& p) {
  const std::string t = pbtest::read_file(p);
  return std::size_t(std::count(t.begin(), t.end(), '\n'));
}

// A collective sweep that takes minutes: signalled once it has written `rows` CSV lines.
const std::string kLongSweep = " --device cpu --impl ring --sizes 1K:64M:x2 -n 400 -w 1";

}  // namespace

TEST(Signals, SigintStopsAThreadsSweepAfterTheCurrentSizeAndResumeFinishesIt) {
  const fs::path d = fresh_dir("signals_threads");
  const fs::path csv = d / "a.csv", nccl = d / "a.json";
  Background b(bin("bench_allreduce") + " --ranks 2" + kLongSweep + " --csv " + csv.string() + " -J " + nccl.string(),
               d / "log");
  ASSERT_TRUE(eventually(120, [&] { return line_count(csv) >= 7; })) << b.log();
  b.signal(SIGINT);
  EXPECT_EQ(b.wait(60), 130) << b.log();
  const std::string log = b.log();
  EXPECT_THAT(log, MatchesRegex("(.|\n)*bench_allreduce: stopped by SIGINT before allreduce, implementation ring, "
                                "size [0-9]+ bytes \\(f32, sum\\); [0-9]+ completed sizes are in [^\n]*a.csv(.|\n)*"));
  EXPECT_THAT(log, HasSubstr("# Collective test concluded: bench_allreduce"));  // the table is closed properly
  const auto rows = csv_rows(csv);
  ASSERT_GE(rows.size(), 6u);
  EXPECT_EQ(rows.size() % 2, 0u) << "a size is written with both halves";
  EXPECT_EQ(nlohmann::json::parse(pbtest::read_file(nccl))["results"].size(), rows.size() / 2);
  const std::size_t size_at = log.find("size ", log.find("stopped by SIGINT"));
  ASSERT_NE(size_at, std::string::npos) << log;
  EXPECT_EQ(std::stoull(log.substr(size_at + 5)), 2 * std::stoull(rows.back()[9]))
      << "it names the first size it did not measure";

  // --resume: the rows already there are skipped, the rest appended; every size once per half.
  const Finished r = run(bin("bench_allreduce") + " --ranks 2 --device cpu --impl ring --sizes 1K:512K:x2 -n 3 "
                         "--resume --csv " + csv.string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("# resume: " + std::to_string(std::min<std::size_t>(rows.size() / 2, 10)) +
                                  " sizes already in"));
  std::map<std::string, int> seen;
  for (const auto& f : csv_rows(csv)) ++seen[f[8] + "/" + f[9]];
  for (std::uint64_t size = 1024; size <= 512 * 1024; size *= 2)
    for (const char* half : {"0", "1"}) EXPECT_EQ(seen[std::string(half) + "/" + std::to_string(size)], 1) << size;
  fs::remove_all(d);
}

TEST(Signals, SigtermStopsMemcpyAndKernelsWithTheirLine) {
  const fs::path d = fresh_dir("signals_memcpy");
  Background m(bin("bench_memcpy") + " --device cpu --sizes 1K:256M:x2 -n 200 --csv " + (d / "m.csv").string(),
               d / "mlog");
  ASSERT_TRUE(eventually(120, [&] { return line_count(d / "m.csv") >= 4; })) << m.log();
  m.signal(SIGTERM);
  EXPECT_EQ(m.wait(60), 143) << m.log();
  EXPECT_THAT(m.log(), MatchesRegex("(.|\n)*bench_memcpy: stopped by SIGTERM before size [0-9]+ bytes on cpu; "
                                    "[0-9]+ completed sizes are in [^\n]*m.csv(.|\n)*"));
  for (const auto& f : csv_rows(d / "m.csv")) EXPECT_EQ(f.size(), 5u);
#ifdef PB_HAVE_BENCH_KERNELS
  const fs::path k = d / "k.csv";
  Background kb(bin("bench_kernels") + " --device cpu --shape tiny --dtype f32 --min-time 0.3 --csv " + k.string(),
                d / "klog");
  ASSERT_TRUE(eventually(120, [&] { return line_count(k) >= 2; })) << kb.log();
  kb.signal(SIGTERM);
  EXPECT_EQ(kb.wait(60), 143) << kb.log();
  EXPECT_THAT(kb.log(), HasSubstr("bench_kernels: stopped by SIGTERM after "));
  const auto done = csv_rows(k);
  ASSERT_GE(done.size(), 1u);
  // --resume runs only what is missing: the first benchmark is not run again.
  const Finished r = run(bin("bench_kernels") + " --device cpu --shape tiny --dtype f32 --min-time 0.01 "
                         "--benchmark_filter='^(" + done[0][0].substr(0, done[0][0].find('/')) + "|gelu_forward)/' "
                         "--resume --csv " + k.string());
  ASSERT_EQ(r.status, 0) << r.output;
  std::map<std::string, int> seen;
  for (const auto& f : csv_rows(k)) ++seen[f[0]];
  EXPECT_EQ(seen[done[0][0]], 1);
  EXPECT_EQ(seen["gelu_forward/cpu/f32/tiny"], 1);
#endif
  fs::remove_all(d);
}

TEST(Signals, BenchTrainAbandonsItsRunOnSigint) {
  const fs::path d = fresh_dir("signals_train");
  Background b(bin("bench_train") + " --device cpu --ranks 2 --scheme ddp --steps 100000 --csv " +
                   (d / "t.csv").string(),
               d / "log");
  // The rank threads exist once the handlers are installed (they are, before the ranks start).
  const fs::path tasks = "/proc/" + std::to_string(b.pid()) + "/task";
  ASSERT_TRUE(eventually(30, [&] {
    std::error_code ec;
    return std::distance(fs::directory_iterator(tasks, ec), fs::directory_iterator()) >= 3;
  })) << b.log();
  b.signal(SIGINT);
  EXPECT_EQ(b.wait(30), 130) << b.log();
  EXPECT_THAT(b.log(), HasSubstr("bench_train: stopped by SIGINT during gpt training under scheme ddp (100000 timed "
                                 "steps); abandoned, no row written"));
  EXPECT_FALSE(fs::exists(d / "t.csv"));
  fs::remove_all(d);
}

TEST(Resume, RefusesACsvWithAnotherHeaderAndNeedsACsv) {
  const fs::path d = fresh_dir("signals_resume");
  std::ofstream(d / "other.csv") << "device,bytes,time_us,gbps,wrong\ncpu,1024,1,1,0\n";
  const Finished r = run(bin("bench_allreduce") + " --ranks 2 --sizes 1K --resume --csv " + (d / "other.csv").string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_THAT(r.output, AllOf(HasSubstr("its header is\n  device,bytes,time_us,gbps,wrong"),
                              HasSubstr("writes\n  collective,impl,device")));
  EXPECT_EQ(pbtest::read_file(d / "other.csv"), "device,bytes,time_us,gbps,wrong\ncpu,1024,1,1,0\n");
  const Finished n = run(bin("bench_memcpy") + " --sizes 1K --resume");
  EXPECT_EQ(n.status, 2) << n.output;
  EXPECT_THAT(n.output, HasSubstr("--resume needs --csv FILE"));
  fs::remove_all(d);
}

#ifdef PB_MPIEXEC
// Slurm and most schedulers signal every task; OpenMPI's mpirun, signalled itself, forwards SIGTERM to its ranks
// but exits 1 on its own account, so the ranks are signalled here and mpirun passes their 143 on.
TEST(Signals, SigtermToTheRanksOfAnMpirunJob) {
  const fs::path d = fresh_dir("signals_mpi");
  const fs::path csv = d / "m.csv";
  Background b(mpirun(2) + bin("bench_allreduce") + kLongSweep + " --csv " + csv.string(), d / "log");
  ASSERT_TRUE(eventually(120, [&] { return line_count(csv) >= 7; })) << b.log();
  const Finished ranks = run("pkill -TERM -P " + std::to_string(b.pid()) + " -f 'bench_allreduce'");
  EXPECT_EQ(ranks.status, 0) << "no rank found to signal";
  EXPECT_EQ(b.wait(60), 143) << b.log();
  EXPECT_THAT(b.log(), HasSubstr("bench_allreduce: stopped by SIGTERM before allreduce, implementation ring, size "));
  const auto rows = csv_rows(csv);
  EXPECT_GE(rows.size(), 6u);
  for (const auto& f : rows) EXPECT_EQ(f.size(), 21u);
  fs::remove_all(d);
}
#endif
