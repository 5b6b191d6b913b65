// The stream-ordering hazard checker (device/emu/hazards.h): each kind of missing order is reported, naming both
// operations, with the order CUDA offers (an event wait, a synchronization, a host wait) it is not, and the verdict
// does not depend on whether the first operation happened to finish before the second was queued.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <nccl.h>

#include <chrono>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "base/host_order.h"
#include "device/emu/gpu_emu.h"
#include "device/emu/hazards.h"
#include "tests/simt/selftest_kernels.h"

namespace parbench::gpu_emu {
namespace {

constexpr int kN = 256, kBlock = 64;

// Two GPUs' buffers and streams, the hazard checker in report mode for the test's length.
class Hazards : public ::testing::Test {
 protected:
  void SetUp() override {
    set_hazard_mode(HazardMode::report);
    take_hazard_reports();
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    for (cudaStream_t* s : {&compute_, &comm_, &third_}) ASSERT_EQ(cudaStreamCreateWithFlags(s, cudaStreamNonBlocking), cudaSuccess);
    for (int** p : {&in_, &out_, &other_}) ASSERT_EQ(cudaMalloc(p, kN * sizeof(int)), cudaSuccess);
    ASSERT_EQ(cudaEventCreate(&event_), cudaSuccess);
    std::vector<int> ones(kN, 1);
    ASSERT_EQ(cudaMemcpy(in_, ones.data(), kN * sizeof(int), cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  void TearDown() override {
    cudaDeviceSynchronize();
    for (cudaStream_t s : {compute_, comm_, third_}) cudaStreamDestroy(s);
    for (int* p : {in_, out_, other_}) cudaFree(p);
    cudaEventDestroy(event_);
    take_hazard_reports();
    set_hazard_mode(HazardMode::abort);
  }
  // out_[b] = the sum of in_'s block b, on `s`.
  void sum_on(cudaStream_t s, int* out, const int* in) { cuda_kernels::block_sum(out, in, kN, kBlock, s); }
  // The one report the test expects, with every word in `words`; fails on none or more.
  static void expect_one_report(const std::vector<std::string>& words) {
    const std::vector<std::string> reports = take_hazard_reports();
    ASSERT_EQ(reports.size(), 1u) << (reports.empty() ? "no report" : reports.back());
    for (const std::string& w : words) EXPECT_NE(reports[0].find(w), std::string::npos) << w << " in " << reports[0];
  }
  static void expect_no_report() {
    const std::vector<std::string> reports = take_hazard_reports();
    EXPECT_TRUE(reports.empty()) << reports.front();
  }
  // The device is idle: whatever the checker says next cannot come from timing.
  static void let_everything_finish() { std::this_thread::sleep_for(std::chrono::milliseconds(20)); }
  cudaStream_t compute_ = nullptr, comm_ = nullptr, third_ = nullptr;
  int *in_ = nullptr, *out_ = nullptr, *other_ = nullptr;
  cudaEvent_t event_ = nullptr;
};

// Two ranks' communicators on GPUs 0 and 1 in this thread; rank r's allreduce of `buf[r]` in place on `s[r]`.
struct TwoRanks {
  ncclComm_t comms[2]{};
  TwoRanks() {
    const int devs[2] = {0, 1};
    EXPECT_EQ(ncclCommInitAll(comms, 2, devs), ncclSuccess);
  }
  ~TwoRanks() {
    for (ncclComm_t c : comms) ncclCommDestroy(c);
  }
  void allreduce(int* const buf[2], cudaStream_t const s[2]) {
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    for (int r = 0; r < 2; ++r)
      ASSERT_EQ(ncclAllReduce(buf[r], buf[r], kN, ncclInt32, ncclSum, comms[r], s[r]), ncclSuccess);
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  }
};

// GPU 1's side of the two-rank tests: a buffer and a stream.
struct Peer {
  int* buf = nullptr;
  cudaStream_t s = nullptr;
  Peer() {
    cudaSetDevice(1);
    cudaMalloc(&buf, kN * sizeof(int));
    cudaMemset(buf, 0, kN * sizeof(int));
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaDeviceSynchronize();
    cudaSetDevice(0);
  }
  ~Peer() {
    cudaSetDevice(1);
    cudaStreamSynchronize(s);
    cudaStreamDestroy(s);
    cudaFree(buf);
    cudaSetDevice(0);
  }
};

TEST_F(Hazards, ComputeReadingACollectivesOutputWithoutAWait) {
  TwoRanks ranks;
  Peer peer;
  int* bufs[2] = {in_, peer.buf};
  cudaStream_t streams[2] = {comm_, peer.s};
  ranks.allreduce(bufs, streams);
  let_everything_finish();
  sum_on(compute_, out_, in_);  // reads the allreduce's output: nothing orders it after the allreduce
  expect_one_report({"kernel block_sum", "reads", "pointer argument 1", "ncclAllReduce", "the receive buffer",
                     "writes", "GPU 0 stream"});
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  ranks.allreduce(bufs, streams);
  ASSERT_EQ(cudaEventRecord(event_, comm_), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(compute_, event_, 0), cudaSuccess);
  sum_on(compute_, out_, in_);
  expect_no_report();
}

TEST_F(Hazards, CollectiveReadingABufferTheComputeStreamIsStillWriting) {
  TwoRanks ranks;
  Peer peer;
  int* bufs[2] = {out_, peer.buf};
  cudaStream_t streams[2] = {comm_, peer.s};
  sum_on(compute_, out_, in_);  // writes out_, the allreduce's input
  ranks.allreduce(bufs, streams);
  expect_one_report({"ncclAllReduce", "the send buffer", "kernel block_sum", "pointer argument 0"});
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  sum_on(compute_, out_, in_);
  ASSERT_EQ(cudaEventRecord(event_, compute_), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(comm_, event_, 0), cudaSuccess);
  ranks.allreduce(bufs, streams);
  expect_no_report();
}

TEST_F(Hazards, CopyRacingAKernelOnAnotherStream) {
  sum_on(compute_, out_, in_);
  let_everything_finish();
  ASSERT_EQ(cudaMemcpyAsync(other_, out_, kN / kBlock * sizeof(int), cudaMemcpyDeviceToDevice, comm_), cudaSuccess);
  expect_one_report({"cudaMemcpyAsync", "reads", "the source", "kernel block_sum", "writes", "bytes 0..16"});
  // The other way round: a kernel overwriting what a copy on another stream still reads.
  ASSERT_EQ(cudaStreamSynchronize(comm_), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(other_, in_, kN * sizeof(int), cudaMemcpyDeviceToDevice, comm_), cudaSuccess);
  sum_on(compute_, in_ + kN - kN / kBlock, out_);  // writes the end of in_, which the copy reads
  expect_one_report({"kernel block_sum", "writes", "cudaMemcpyAsync", "the source", "reads"});
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  // Ordered by a host wait: none.
  sum_on(compute_, out_, in_);
  ASSERT_EQ(cudaStreamSynchronize(compute_), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(other_, out_, kN / kBlock * sizeof(int), cudaMemcpyDeviceToDevice, comm_), cudaSuccess);
  expect_no_report();
}

TEST_F(Hazards, HostTouchingPinnedMemoryBeforeItsCopyEnds) {
  if (pinned_guard_key() < 0) GTEST_SKIP() << "no memory protection keys here: pinned memory is not guarded";
  int* pinned = nullptr;
  ASSERT_EQ(cudaMallocHost(&pinned, kN * sizeof(int)), cudaSuccess);
  volatile int* host = pinned;
  sum_on(compute_, out_, in_);
  ASSERT_EQ(cudaMemcpyAsync(pinned, out_, 4 * sizeof(int), cudaMemcpyDeviceToHost, compute_), cudaSuccess);
  let_everything_finish();
  int seen = host[0];  // the copy may not have run on a GPU: no wait for it
  expect_one_report({"a host thread reads byte 0 of", "cudaMallocHost", "cudaMemcpyAsync of 16 bytes", "writes",
                     "(the destination)"});
  ASSERT_EQ(cudaStreamSynchronize(compute_), cudaSuccess);
  seen = host[0];
  EXPECT_EQ(seen, kBlock);
  expect_no_report();
  // A host write into the source of a copy to the GPU still queued.
  ASSERT_EQ(cudaMemcpyAsync(other_, pinned, 4 * sizeof(int), cudaMemcpyHostToDevice, compute_), cudaSuccess);
  host[1] = 7;
  expect_one_report({"a host thread writes byte 4 of", "reads", "(the source)"});
  ASSERT_EQ(cudaStreamSynchronize(compute_), cudaSuccess);
  host[1] = 8;
  expect_no_report();
  ASSERT_EQ(cudaFreeHost(pinned), cudaSuccess);
}

TEST_F(Hazards, EventRecordedOnTheWrongStream) {
  sum_on(compute_, out_, in_);
  ASSERT_EQ(cudaEventRecord(event_, third_), cudaSuccess);  // should be compute_, which writes out_
  ASSERT_EQ(cudaStreamWaitEvent(comm_, event_, 0), cudaSuccess);
  sum_on(comm_, other_, out_);
  expect_one_report({"kernel block_sum", "reads", "pointer argument 1", "writes", "pointer argument 0"});
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  sum_on(compute_, out_, in_);
  ASSERT_EQ(cudaEventRecord(event_, compute_), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(comm_, event_, 0), cudaSuccess);
  sum_on(comm_, other_, out_);
  expect_no_report();
}

// As a GPU would fault: the error is sticky, so GPUs 2 and 3, which no other test here uses.
TEST(HazardsAffinity, KernelOnOneGpuTouchingAnothersBufferWithoutPeerAccess) {
  int* theirs = nullptr;
  ASSERT_EQ(cudaSetDevice(3), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&theirs, kN * sizeof(int)), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(2), cudaSuccess);
  int* mine = nullptr;
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaMalloc(&mine, kN * sizeof(int)), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  std::string text;
  try {
    cuda_kernels::block_sum(mine, theirs, kN, kBlock, s);  // peer access from GPU 2 to 3 never enabled
  } catch (const std::exception& e) {
    text = e.what();
  }
  EXPECT_NE(text.find("illegal memory access"), std::string::npos) << text;
  EXPECT_NE(text.find("on GPU 2: pointer argument 1"), std::string::npos) << text;
  EXPECT_NE(text.find("memory of GPU 3"), std::string::npos) << text;
  EXPECT_NE(text.find("peer access from GPU 2 is not enabled"), std::string::npos) << text;
  EXPECT_EQ(cudaStreamSynchronize(s), cudaErrorIllegalAddress) << "sticky, as on a GPU";
  cudaSetDevice(0);
}

// What CUDA orders needs no event: one stream, the legacy stream and a blocking stream, the device's and an
// event's synchronization, a successful query.
TEST_F(Hazards, EveryOrderCudaGivesIsSeen) {
  sum_on(compute_, out_, in_);
  sum_on(compute_, other_, out_);  // the same stream
  cudaStream_t blocking = nullptr;
  ASSERT_EQ(cudaStreamCreate(&blocking), cudaSuccess);
  sum_on(nullptr, out_, in_);  // after every blocking stream, but compute_ is non-blocking:
  expect_one_report({"legacy stream", "pointer argument 0"});
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  sum_on(nullptr, out_, in_);
  sum_on(blocking, other_, out_);  // a blocking stream waits for the legacy stream
  sum_on(nullptr, in_ + 8, other_);  // and the legacy stream for it
  expect_no_report();
  ASSERT_EQ(cudaEventRecord(event_, blocking), cudaSuccess);
  ASSERT_EQ(cudaEventSynchronize(event_), cudaSuccess);
  sum_on(comm_, out_, other_);
  ASSERT_EQ(cudaStreamSynchronize(comm_), cudaSuccess);
  sum_on(third_, other_, out_);
  while (cudaStreamQuery(third_) == cudaErrorNotReady) std::this_thread::yield();
  sum_on(compute_, out_, other_);
  expect_no_report();
  cudaStreamDestroy(blocking);
}

TEST_F(Hazards, HostThreadsHandOverWhatTheyWaitedForThroughHostOrder) {
  sum_on(compute_, out_, in_);
  int tag = 0;
  std::thread([&] {
    cudaStreamSynchronize(compute_);
    host_order::publish(&tag);
  }).join();
  sum_on(comm_, other_, out_);  // this thread has not seen the other's wait
  expect_one_report({"pointer argument 1"});
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  sum_on(compute_, out_, in_);
  std::thread([&] {
    cudaStreamSynchronize(compute_);
    host_order::publish(&tag);
  }).join();
  host_order::receive(&tag);
  sum_on(comm_, other_, out_);
  expect_no_report();
}

TEST_F(Hazards, GraphLaunchesAreCheckedAtEachLaunch) {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(comm_, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  sum_on(comm_, other_, out_);
  ASSERT_EQ(cudaStreamEndCapture(comm_, &graph), cudaSuccess);
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  expect_no_report();  // captured, not run
  sum_on(compute_, out_, in_);
  ASSERT_EQ(cudaGraphLaunch(exec, comm_), cudaSuccess);
  expect_one_report({"kernel block_sum", "pointer argument 1"});
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, comm_), cudaSuccess);
  expect_no_report();
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

TEST(HazardsAbort, TheDefaultStopsAtTheFirstWithBothOperationsNamed) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        set_hazard_mode(HazardMode::abort);
        cudaSetDevice(0);
        cudaStream_t a = nullptr;
        cudaStream_t b = nullptr;
        cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking);
        cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking);
        int* p = nullptr;
        cudaMalloc(&p, 64);
        cudaMemsetAsync(p, 0, 64, a);
        cudaMemsetAsync(p, 1, 64, b);
      },
      "stream-ordering hazard: cudaMemsetAsync of 64 bytes .* writes bytes 0..64 .*which cudaMemsetAsync of 64 "
      "bytes .* writes.*stopping at the first hazard");
}

}  // namespace
}  // namespace parbench::gpu_emu
