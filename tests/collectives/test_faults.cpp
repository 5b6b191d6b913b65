// Faults end to end (PARBENCH_FAULT, collectives/communicator/fault_injection.h): a rank killed, stalled, leaving early or
// throwing, under mpirun and in threads mode, in the collective programs and in bench_train's pipeline. Every run
// must end within its --timeout plus a few seconds, exit non-zero, name the failed or late rank and what was being
// measured, leave no process behind and keep the CSV rows measured before the fault. Also a flipped byte in transit
// caught by the data check, for every collective and every implementation that goes through the transport.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "bench_run.h"
#include "collectives/communicator/fault_injection.h"
#include "base/error.h"

namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using namespace pbtest;

struct Timed {
  Result r;
  double seconds;
};

Timed timed_run(const std::string& cmd) {
  const auto t0 = std::chrono::steady_clock::now();
  Result r = run(cmd);
  return {r, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()};
}

// A CSV path no other run uses: its name also finds the run's processes (no process may outlive the run).
std::string unique_csv(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("pb_fault_" + name + "_" + std::to_string(getpid()) + ".csv"))
      .string();
}

bool processes_left(const std::string& marker) {
  for (int i = 0; i < 30; ++i) {  // mpirun's kill of the last ranks may trail its exit a little
    // "[/]" matches the path's first "/" but not the shell's own command line that carries the pattern.
    if (run("pgrep -f '[/]" + marker.substr(1) + "'").status != 0) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return true;
}

int csv_rows(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  int rows = -1;  // the header
  while (std::getline(in, line))
    if (!line.empty()) ++rows;
  return rows;
}

// The programs write each CSV row as soon as it is measured, so a failed run keeps the rows before the fault.
constexpr bool kRowsStream = true;

// The common expectations of a fault: bounded time, non-zero exit, no process left, the rows before the fault.
void expect_clean_failure(const Timed& t, double limit_s, const std::string& csv, int rows_before) {
  EXPECT_NE(t.r.status, 0) << t.r.output;
  EXPECT_LT(t.seconds, limit_s) << t.r.output;
  EXPECT_FALSE(processes_left(csv)) << "a process of the run is still alive";
  if (kRowsStream) EXPECT_GE(csv_rows(csv), rows_before) << "rows measured before the fault are missing from " << csv;
  EXPECT_THAT(t.r.output, Not(HasSubstr("terminate called"))) << t.r.output;
  std::filesystem::remove(csv);
}

// Every row has 4 fault points here (-w 1 -n 2 -c 1, out of place): after:9 strikes in the third row.
const std::string kSweep = " --device cpu --sizes 1K:64K:x2 -w 1 -n 2 -c 1 --inplace off --timeout 2 --csv ";
constexpr const char* kThirdRow = "1,after:9,kind:";

TEST(FaultPlan, ParsesStrictly) {
  using parbench::FaultPlan;
  const FaultPlan p = parbench::parse_fault_plan("rank:2,after:7,kind:throw");
  EXPECT_EQ(p.rank, 2);
  EXPECT_EQ(p.after, 7);
  EXPECT_EQ(p.kind, FaultPlan::Kind::throw_error);
  const FaultPlan slow = parbench::parse_fault_plan("rank:3,kind:slow,delay_us:250");
  EXPECT_EQ(slow.rank, 3);
  EXPECT_EQ(slow.kind, FaultPlan::Kind::slow);
  EXPECT_EQ(slow.delay_us, 250);
  EXPECT_EQ(parbench::parse_fault_plan("rank:0,kind:slow").delay_us, 1000);
  struct Bad {
    const char* text;
    const char* message;
  } bad[] = {{"rank:1", "needs rank and kind"},
             {"rank:x,kind:exit", "rank 'x' is not a number >= 0"},
             {"rank:1,after:-3,kind:exit", "after '-3' is not a number >= 0"},
             {"rank:1,kind:explode", "kind 'explode' is not one of exit, throw, stall, kill, flip"},
             {"rank:1,kind:exit,when:5", "'when:5' is not rank:R, after:N, kind:K or delay_us:D"},
             {"rank:1,kind:slow,delay_us:-5", "delay_us '-5' is not a number >= 0"},
             {"rank:1,kind:kill", "kind kill needs a process per rank (mpirun, torchrun, srun)"}};
  for (const Bad& b : bad) {
    try {
      parbench::parse_fault_plan(b.text);
      ADD_FAILURE() << b.text << " was accepted";
    } catch (const parbench::UsageError& e) {
      EXPECT_THAT(e.what(), HasSubstr(b.message)) << b.text;
    }
  }
}

// An exchange's count is per peer, and its timeout message says so.
TEST(FaultsThreads, StalledAlltoallNamesItsCountPerPeer) {
  const std::string csv = unique_csv("threads_alltoall");
  Timed t = timed_run("PARBENCH_FAULT=rank:" + std::string(kThirdRow) + "stall " + bench("alltoall") +
                      " --ranks 3 --impl naive" + kSweep + csv);
  expect_clean_failure(t, 2 + 4, csv, 2);
  EXPECT_THAT(t.r.output, HasSubstr("alltoall/naive of 4092 bytes (341 x f32 per peer, 3 ranks)"));
}

TEST(FaultPlan, BadValueExitsTwoBeforeAnyWork) {
  const std::string csv = unique_csv("bad");
  Result r = run("PARBENCH_FAULT=rank:1,kind:sometimes " + bench("allreduce") + " --ranks 2" + kSweep + csv);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("kind 'sometimes' is not one of exit, throw, stall, kill, flip"));
  EXPECT_FALSE(std::filesystem::exists(csv));
}

// Threads mode: a rank thread that throws, stalls or leaves; the others end within the timeout, naming it.
TEST(FaultsThreads, ThrowStallAndExitNameTheRankAndTheMeasurement) {
  for (const std::string kind : {"throw", "stall", "exit"}) {
    const std::string csv = unique_csv("threads_" + kind);
    Timed t = timed_run("PARBENCH_FAULT=rank:" + std::string(kThirdRow) + kind + " " + bench("allreduce") +
                        " --ranks 3 --impl ring" + kSweep + csv);
    SCOPED_TRACE(kind);
    expect_clean_failure(t, 2 + 4, csv, 2);
    EXPECT_THAT(t.r.output, HasSubstr("allreduce/ring of 4096 bytes (1024 x f32 per rank, 3 ranks), out of place"));
    if (kind == "throw") EXPECT_THAT(t.r.output, HasSubstr("rank 1: while measuring allreduce/ring of 4096 bytes"));
    else EXPECT_THAT(t.r.output, HasSubstr(kind == "stall" ? "late: rank 1, which waits for no message"
                                                            : "late: rank 1, whose thread has left"));
  }
}

// A rank that skipped the measured collective waits in the next one: the ranks wait for each other, and the
// report says so instead of blaming a rank that merely waits.
TEST(FaultsThreads, RanksInDifferentOperationsAreACycle) {
  Timed t = timed_run("PARBENCH_TEST_SKIP_RANK=1 " + bench("allreduce") +
                      " --device cpu --ranks 2 --impl ring --sizes 1K --timeout 1 -q");
  EXPECT_EQ(t.r.status, 1) << t.r.output;
  EXPECT_LT(t.seconds, 1 + 4) << t.r.output;
  EXPECT_THAT(t.r.output, testing::ContainsRegex("late: rank [01], which waits for rank [01] in turn \\(a cycle"));
}

TEST(FaultsThreads, PipelineStageThatDiesOrStalls) {
  for (const std::string kind : {"throw", "stall"}) {
    SCOPED_TRACE(kind);
    Timed t = timed_run("PARBENCH_FAULT=rank:1,after:10,kind:" + kind + " " + bench("train") +
                        " --device cpu --model gpt --layers 2 --hidden 32 --heads 2 --seq 8 --vocab 64 --scheme pp --ranks 2"
                        " --schedule 1f1b --microbatches 4 --global-batch 8 --steps 3 --timeout 2");
    EXPECT_NE(t.r.status, 0) << t.r.output;
    EXPECT_LT(t.seconds, 2 + 4) << t.r.output;
    EXPECT_THAT(t.r.output, HasSubstr("training step 1 of 4 (scheme pp, schedule 1f1b, 2 stages)")) << t.r.output;
    EXPECT_THAT(t.r.output, HasSubstr(kind == "throw" ? "rank 1: while measuring" : "late: rank 1"));
  }
}

// Flip: the rank that receives in each collective (the root gathers and reduces, the others get broadcasts and
// scatters) and every hand-written implementation of it; each implementation's block must fail its check, and
// the first wrong element is named.
struct FlipCase {
  const char* collective;
  int rank;
};
const FlipCase kFlipCases[] = {{"allreduce", 1}, {"allgather", 1}, {"reducescatter", 1},
                               {"broadcast", 1}, {"reduce", 0},    {"gather", 0},
                               {"scatter", 1},   {"alltoall", 1},  {"sendrecv", 1}};
const std::string kHandWritten = " --impl naive,tree,ring,rd,rhd";

// Every implementation block that ran has its footer FAILED, and the first wrong element is reported.
void expect_every_block_caught(const Result& r, const std::string& what) {
  EXPECT_EQ(r.status, 1) << what << "\n" << r.output;
  const std::string block = "# impl: ";
  int blocks = 0;
  for (std::size_t at = r.output.find(block); at != std::string::npos; at = r.output.find(block, at + 1)) {
    ++blocks;
    const std::string impl = r.output.substr(at + block.size(), r.output.find('\n', at) - at - block.size());
    const std::size_t footer = r.output.find("# Out of bounds values", at);
    ASSERT_NE(footer, std::string::npos) << what;
    EXPECT_THAT(r.output.substr(footer, 60), HasSubstr("FAILED")) << what << " " << impl;
  }
  EXPECT_GE(blocks, 1) << what << "\n" << r.output;
  EXPECT_THAT(r.output, testing::ContainsRegex("wrong element\\(s\\) in check round 1; the first at index [0-9]+: "
                                               "expected [-0-9.e+]+, got ")) << what;
}

TEST(FaultsFlip, ThreadsTransportEveryCollectiveAndImplementation) {
  for (const FlipCase& c : kFlipCases) {
    const std::string what = std::string(c.collective) + " at rank " + std::to_string(c.rank);
    Result r = run("PARBENCH_FAULT=rank:" + std::to_string(c.rank) + ",kind:flip " + bench(c.collective) +
                   " --device cpu --ranks 3" + kHandWritten + " --sizes 1K -n 1 -w 0 --inplace both -d f32,i8");
    expect_every_block_caught(r, what);
  }
}

TEST(FaultsFlip, CleanWithoutTheFault) {
  Result r = run(bench("allreduce") + " --device cpu --ranks 3" + kHandWritten + " --sizes 1K -n 1 -w 0");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, Not(HasSubstr("wrong element")));
}

#ifdef PB_MPIEXEC
TEST(FaultsFlip, MpiTransportEveryCollectiveAndImplementation) {
  for (const FlipCase& c : kFlipCases) {
    const std::string what = std::string(c.collective) + " at rank " + std::to_string(c.rank) + " (mpirun)";
    Result r = run("PARBENCH_FAULT=rank:" + std::to_string(c.rank) + ",kind:flip " + mpirun(3) + bench(c.collective) +
                   " --device cpu" + kHandWritten + " --sizes 1K -n 1 -w 0 --inplace both");
    expect_every_block_caught(r, what);
  }
}

// Under mpirun, for the ring (our transport) and MPI's own allreduce, and allgather.
TEST(FaultsMpi, KilledRankEndsTheJob) {
  for (const std::string impl : {"ring", "mpi"}) {
    SCOPED_TRACE(impl);
    const std::string csv = unique_csv("kill_" + impl);
    Timed t = timed_run("PARBENCH_FAULT=rank:" + std::string(kThirdRow) + "kill " + mpirun(2) + bench("allreduce") +
                        " --impl " + impl + kSweep + csv);
    expect_clean_failure(t, 2 + 5, csv, 2);
    EXPECT_THAT(t.r.output, HasSubstr("rank 1"));
    EXPECT_THAT(t.r.output, HasSubstr("signal 9"));
    // The survivor, signalled by mpirun while it waits for the dead rank, says what it was measuring.
    EXPECT_THAT(t.r.output, HasSubstr("SIGTERM while rank 0 measures allreduce/" + impl + " of 4096 bytes"));
  }
}

TEST(FaultsMpi, StalledRankIsNamedAtTheTimeout) {
  for (const std::string impl : {"ring", "mpi"}) {
    SCOPED_TRACE(impl);
    const std::string csv = unique_csv("stall_" + impl);
    Timed t = timed_run("PARBENCH_FAULT=rank:" + std::string(kThirdRow) + "stall " + mpirun(2) +
                        bench("allreduce") + " --impl " + impl + kSweep + csv);
    expect_clean_failure(t, 2 + 5, csv, 2);
    EXPECT_THAT(t.r.output, HasSubstr("rank 0: allreduce/" + impl + " of 4096 bytes (1024 x f32 per rank, 2 ranks)"));
    if (impl == "ring") EXPECT_THAT(t.r.output, HasSubstr("waited for data from rank(s) 1"));
    EXPECT_THAT(t.r.output, HasSubstr("late: rank(s) 1 did not answer"));
  }
}

TEST(FaultsMpi, RankThatThrowsOrLeavesEarly) {
  for (const std::string kind : {"throw", "exit"}) {
    SCOPED_TRACE(kind);
    const std::string csv = unique_csv("mpi_" + kind);
    Timed t = timed_run("PARBENCH_FAULT=rank:" + std::string(kThirdRow) + kind + " " + mpirun(2) +
                        bench("allreduce") + " --impl ring" + kSweep + csv);
    expect_clean_failure(t, 2 + 5, csv, 2);
    if (kind == "throw")
      EXPECT_THAT(t.r.output,
                  testing::ContainsRegex("error: rank 1 of 2 on [^ ]+: while measuring allreduce/ring of 4096 bytes"));
    else
      EXPECT_THAT(t.r.output, testing::ContainsRegex(
                                  "waited for data from rank\\(s\\) 1 \\(on [^ ]+\\); late: rank\\(s\\) 1 did not answer"));
  }
}

TEST(FaultsMpi, AllgatherStall) {
  const std::string csv = unique_csv("allgather");
  Timed t = timed_run("PARBENCH_FAULT=rank:" + std::string(kThirdRow) + "stall " + mpirun(2) + bench("allgather") +
                      " --impl rd" + kSweep + csv);
  expect_clean_failure(t, 2 + 5, csv, 2);
  EXPECT_THAT(t.r.output, HasSubstr("allgather/rd of 4096 bytes"));
  EXPECT_THAT(t.r.output,
              testing::ContainsRegex("waited for data from rank\\(s\\) 1 \\(on [^ ]+\\); late: rank\\(s\\) 1 did not answer"));
}

TEST(FaultsMpi, PipelineStageThatStalls) {
  Timed t = timed_run("PARBENCH_FAULT=rank:1,after:10,kind:stall " + mpirun(2) + bench("train") +
                      " --device cpu --model gpt --layers 2 --hidden 32 --heads 2 --seq 8 --vocab 64 --scheme pp"
                      " --schedule 1f1b --microbatches 4 --global-batch 8 --steps 3 --timeout 2");
  EXPECT_NE(t.r.status, 0) << t.r.output;
  EXPECT_LT(t.seconds, 2 + 2 + 5) << t.r.output;
  EXPECT_THAT(t.r.output, HasSubstr("training step 1 of 4 (scheme pp, schedule 1f1b, 2 stages)")) << t.r.output;
  EXPECT_THAT(t.r.output, testing::ContainsRegex("from rank\\(s\\) 1 \\(on [^ ]+\\); late: rank\\(s\\) 1 did not answer"))
      << t.r.output;
}
#endif

}  // namespace
