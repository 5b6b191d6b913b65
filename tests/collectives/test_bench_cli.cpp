// The collective programs end to end: tables and CSV, bad options (exit 2 with a clear message), a misbehaving
// rank (timeout message, exit 1, no hang), refusals, and the same under mpirun. Also bench_kernels' command
// line (its shapes and its batch counter), the one Google Benchmark program built beside them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "bench_run.h"
#include "base/text.h"
#include "collectives/registry.h"
#include "collectives/communicator/algorithm.h"
#include "collectives/table/types.h"

namespace {

using ::testing::HasSubstr;
using ::testing::Not;

using namespace pbtest;  // run, bench, Result, mpirun

TEST(BenchCli, AllreduceTableAndCsv) {
  auto csv = std::filesystem::temp_directory_path() / ("pb_coll_" + std::to_string(getpid()) + ".csv");
  Result r = run(bench("allreduce") + " --device cpu --ranks 3 --impl ring,naive -d all -o all --sizes 1K,4K -n 2 "
                 "--csv " + csv.string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("# impl: ring"));
  EXPECT_THAT(r.output, HasSubstr("# Avg bus bandwidth"));
  EXPECT_THAT(r.output, HasSubstr("# Out of bounds values : 0 OK"));
  std::ifstream in(csv);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "collective,impl,device,ranks,nodes,dtype,op,root,inplace,bytes,count,time_us,algbw_gbps,"
                  "busbw_gbps,wrong");
  int rows = 0;
  while (std::getline(in, line)) {
    ++rows;
    EXPECT_EQ(line.substr(line.rfind(',') + 1), "0") << line;
    EXPECT_THAT(line, HasSubstr("allreduce,")) << line;
  }
  EXPECT_EQ(rows, 2 * 7 * 5 * 2 * 2);  // impls x dtypes x ops x sizes x halves
  std::filesystem::remove(csv);
}

// Every program the build makes, one per row of the collective table (collectives/table/collectives.cmake reads them).
TEST(BenchCli, EveryProgramRunsClean) {
  std::stringstream list(PB_CMAKE_COLLECTIVES);
  int programs = 0;
  for (std::string c; std::getline(list, c, ',');) {
    ++programs;
    const std::string ranks = c == "hypercube" ? "4" : "5";  // the hypercube needs a power of two
    Result r = run(bench(c) + " --device cpu --ranks " + ranks + " -r 3 --impl naive,ring,tree,rd,rhd "
                   "-d f32,bf16,u8 --sizes 100,1000 -n 2");
    EXPECT_EQ(r.status, 0) << c << "\n" << r.output;
    EXPECT_THAT(r.output, HasSubstr("# Collective test starting: bench_" + c + "\n")) << c;
    EXPECT_THAT(r.output, HasSubstr("# Out of bounds values : 0 OK")) << c;
    EXPECT_THAT(r.output, HasSubstr("# impl: naive")) << c;
  }
  EXPECT_EQ(programs, int(parbench::all_collectives().size()));
  Result help = run(bench("reducescatter") + " --help");
  EXPECT_EQ(help.status, 0) << help.output;
  EXPECT_THAT(help.output, HasSubstr("nccl-tests' reduce_scatter_perf"));
  // --impl's help is the registry's: every registered implementation, hand-written ones last.
  for (const std::string& impl : parbench::algorithm_names()) EXPECT_THAT(help.output, HasSubstr(impl)) << impl;
  EXPECT_THAT(help.output, HasSubstr(parbench::join(parbench::handwritten_algorithm_names()) + " (hand-written)"));
  // Unsupported pairs are reported in the output, not as failures.
  Result r = run(bench("gather") + " --device cpu --ranks 2 --impl naive,ring --sizes 64 -n 1");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("# ring: not run: ring implements allreduce"));
}

TEST(BenchCli, SimtDeviceRuns) {
  Result r = run(bench("allreduce") + " --device simt --ranks 3 --impl ring,rhd -d bf16 -o avg --sizes 1K -n 1");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("device simt"));
}

TEST(BenchCli, BadOptionsExitTwoWithMessage) {
  struct Case {
    std::string args, message;
  } cases[] = {
      {"--sizes 1G:8", "bad size list '1G:8'"},
      {"--sizes 1G:8:x2", "1G:8:x2"},
      {"--impl bogus", "unknown implementation 'bogus'; accepted: nccl, mpi"},
      {"-d float17", "unknown data type 'float17'"},
      {"-o median", "unknown reduction op 'median'"},
      {"-b 1G -e 8", "--minbytes 1G is larger than --maxbytes 8"},
      {"--inplace maybe", "--inplace"},
      {"--impl nccl", "NCCL runs on GPUs only"},
  };
  for (const auto& c : cases) {
    Result r = run(bench("allreduce") + " --device cpu --ranks 2 " + c.args);
    EXPECT_EQ(r.status, 2) << c.args << "\n" << r.output;
    EXPECT_THAT(r.output, HasSubstr(c.message)) << c.args;
    EXPECT_THAT(r.output, Not(HasSubstr("terminate"))) << c.args;
  }
  Result r = run(bench("reduce") + " --device cpu --ranks 4 -r 4 --sizes 1K");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("--root 4 is outside the ranks 0..3"));
}

TEST(BenchCli, MisbehavingRankTimesOut) {
  Result r = run("PARBENCH_TEST_SKIP_RANK=1 " + bench("allreduce") +
                 " --device cpu --ranks 3 --impl ring --sizes 1K --timeout 1");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("allreduce/ring of 1024 bytes"));
  EXPECT_THAT(r.output, HasSubstr("did not finish within the timeout of 1 s"));
}

TEST(BenchCli, WrongResultsFailTheRun) {
  Result r = run("PARBENCH_TEST_CORRUPT_RANK=0 " + bench("allreduce") +
                 " --device cpu --ranks 2 --impl ring --sizes 1K -n 1 --inplace off -d float");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("# Out of bounds values : 1 FAILED"));
  EXPECT_THAT(r.output, HasSubstr("error: 1 wrong elements"));
}

#ifdef PB_HAVE_BENCH_KERNELS
TEST(BenchKernelsCli, UnknownShapeExitsTwoWithAcceptedNames) {
  Result r = run(bench("kernels") + " --device cpu --shape bogus");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("bench_kernels: error: --shape: unknown shape 'bogus'; "
                                  "accepted: tiny, small, gpt2-124M, gpt2-1.5B"));
  EXPECT_THAT(r.output, Not(HasSubstr("Failed to match")));
}

// A shape outside the host defaults runs on a host device (it used to match no benchmark and exit 0).
TEST(BenchKernelsCli, EveryShapeOnEveryDevice) {
  Result r = run(bench("kernels") + " --device cpu --shape gpt2-124M --min-time 0.01 "
                 "--benchmark_filter=convert_f32_bf16");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("convert_f32_bf16_roundtrip/cpu/f32/gpt2-124M"));
  EXPECT_THAT(r.output, Not(HasSubstr("Failed to match")));
}

// Samples are batches of calls; the time and the rates stay per call: FLOP/s times the time is one call's
// FLOPs (gelu_forward counts 9 per element of the B x T x 4C = 2 x 32 x 256 tiny output).
TEST(BenchKernelsCli, BatchCounterAndPerCallRates) {
  Result r = run(bench("kernels") + " --device cpu --shape tiny --dtype f32 --min-time 0.01 "
                 "--benchmark_filter=^gelu_forward");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("gelu_forward/cpu/f32/tiny"));
  EXPECT_THAT(r.output, HasSubstr("batch="));

  r = run(bench("kernels") + " --device cpu --shape tiny --dtype f32 --min-time 0.01 "
          "--benchmark_filter=^gelu_forward --benchmark_format=json");
  ASSERT_EQ(r.status, 0) << r.output;
  auto number = [&](const std::string& key) {
    const std::string quoted = "\"" + key + "\": ";
    const std::size_t at = r.output.find(quoted);
    return at == std::string::npos ? -1.0 : std::stod(r.output.substr(at + quoted.size()));
  };
  double batch = number("batch"), iterations = number("iterations"), us = number("real_time"),
         flops = number("FLOP/s");
  ASSERT_GE(batch, 1) << r.output;
  EXPECT_LE(batch, 1000);
  EXPECT_EQ(std::fmod(iterations, batch), 0) << r.output;  // iterations count calls, whole batches of them
  EXPECT_NEAR(flops * us * 1e-6, 9.0 * 2 * 32 * 256, 0.01 * 9.0 * 2 * 32 * 256) << r.output;
}
#endif

#ifdef PB_MPIEXEC

TEST(BenchCliMpi, AllreduceUnderMpirun) {
  Result r = run(mpirun(2) + bench("allreduce") + " --device cpu --impl mpi,ring,rhd --sizes 1K,64K -n 2 -o all");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("2 rank(s) on 1 node(s) (mpirun, mpi bootstrap)"));
  EXPECT_THAT(r.output, HasSubstr("# impl: mpi"));
  EXPECT_THAT(r.output, HasSubstr("# Out of bounds values : 0 OK"));
  // Rank 0 prints the table alone.
  std::size_t first = r.output.find("# impl: mpi");
  EXPECT_EQ(r.output.find("# impl: mpi", first + 1), std::string::npos) << r.output;
}

// A rank that skips the collective: the other ends at the deadline, naming the operation; MPI's blocking and
// non-blocking forms both through the watchdog, the deadline given either way.
TEST(BenchCliMpi, MisbehavingRankTimesOutAndAborts) {
  for (const std::string impl : {"mpi", "mpi-nb"}) {
    const std::string deadline = impl == "mpi" ? " --timeout 1" : " -T 1";
    Result r = run("PARBENCH_TEST_SKIP_RANK=1 " + mpirun(2) + bench("allreduce") + " --device cpu --impl " + impl +
                   " --sizes 1K" + deadline);
    EXPECT_NE(r.status, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr("allreduce/" + impl + " of 1024 bytes"));
    EXPECT_THAT(r.output, HasSubstr("did not finish within the timeout of 1 s: the watchdog stopped the job"));
  }
}

TEST(BenchCliMpi, UsageErrorPrintedOnce) {
  Result r = run(mpirun(2) + bench("allreduce") + " --device cpu --impl bogus");
  EXPECT_NE(r.status, 0);
  std::size_t first = r.output.find("unknown implementation 'bogus'");
  ASSERT_NE(first, std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("unknown implementation 'bogus'", first + 1), std::string::npos) << r.output;
  // A parse-time refusal too (CLI11 validator, before the program body runs).
  r = run(mpirun(2) + bench("allreduce") + " --device cpu --timeout -1");
  EXPECT_NE(r.status, 0);
  first = r.output.find("--timeout: -1 is not accepted");
  ASSERT_NE(first, std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("--timeout: -1 is not accepted", first + 1), std::string::npos) << r.output;
}
#endif

}  // namespace
