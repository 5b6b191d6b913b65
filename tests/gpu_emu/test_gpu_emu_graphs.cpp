// Stream capture and CUDA graphs on the emulated GPU against CUDA's documented semantics: a capture records and
// does not run, every launch of the graph runs the recorded work again (reading memory at launch time, with the
// arguments of the capture), event records replay, and the calls CUDA forbids during a capture fail with CUDA's
// errors and invalidate it.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "device/emu/gpu_emu.h"
#include "tests/simt/selftest_kernels.h"

namespace {

using parbench::gpu_emu::Count;
namespace k = parbench::cuda_kernels;

cudaStream_t new_stream(unsigned flags = cudaStreamNonBlocking) {
  cudaStream_t s = nullptr;
  EXPECT_EQ(cudaStreamCreateWithFlags(&s, flags), cudaSuccess);
  return s;
}

template <class T>
std::vector<T> read(const T* dev, std::size_t n) {
  std::vector<T> out(n);
  EXPECT_EQ(cudaMemcpy(out.data(), dev, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  return out;
}

// Ends the capture of `s` expecting it invalidated: no graph, CUDA's error naming why.
void expect_invalidated(cudaStream_t s, const std::string& why) {
  cudaGraph_t g = reinterpret_cast<cudaGraph_t>(1);
  EXPECT_EQ(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
  EXPECT_EQ(g, nullptr);
  const std::string text = cudaGetErrorString(cudaErrorStreamCaptureInvalidated);
  EXPECT_NE(text.find(why), std::string::npos) << text;
  (void)cudaGetLastError();
}

// Every thread of the atomics kernel adds one to ints[0]: a counter of the kernel's runs.
struct Counter {
  static constexpr int kBlocks = 2, kBlock = 32;
  int* ints = nullptr;
  unsigned* uints = nullptr;
  float* floats = nullptr;
  double* doubles = nullptr;
  int* vals = nullptr;
  Counter() {
    cudaMalloc(&ints, 64);
    cudaMalloc(&uints, 64);
    cudaMalloc(&floats, 64);
    cudaMalloc(&doubles, 64);
    cudaMalloc(&vals, kBlocks * kBlock * sizeof(int));
    for (void* p : {static_cast<void*>(ints), static_cast<void*>(uints), static_cast<void*>(floats),
                    static_cast<void*>(doubles)})
      cudaMemset(p, 0, 64);
    cudaMemset(vals, 0, kBlocks * kBlock * sizeof(int));
    cudaDeviceSynchronize();
  }
  ~Counter() {
    for (void* p : {static_cast<void*>(ints), static_cast<void*>(uints), static_cast<void*>(floats),
                    static_cast<void*>(doubles), static_cast<void*>(vals)})
      cudaFree(p);
  }
  void launch(cudaStream_t s) const { k::atomics(ints, uints, floats, doubles, vals, kBlocks, kBlock, s); }
  int runs() const { return read(ints, 1)[0] / (kBlocks * kBlock); }
};

TEST(GpuEmuGraphs, CaptureRecordsAndEveryLaunchRunsTheWorkAgain) {
  cudaSetDevice(0);
  cudaStream_t s = new_stream();
  Counter counter;
  const auto before = parbench::gpu_emu::thread_counts();
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  ASSERT_EQ(cudaStreamIsCapturing(s, &status), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusActive);
  counter.launch(s);
  counter.launch(s);
  unsigned long long id = 0;
  cudaGraph_t building = nullptr;
  std::size_t deps = 9;
  ASSERT_EQ(cudaStreamGetCaptureInfo(s, &status, &id, &building, nullptr, nullptr, &deps), cudaSuccess);
  EXPECT_NE(id, 0u);
  EXPECT_NE(building, nullptr);
  EXPECT_EQ(deps, 1u) << "the next node depends on the last one (a single chain)";
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  EXPECT_EQ(graph, building);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(counter.runs(), 0) << "a capture records the work and does not run it";
  std::size_t nodes = 0;
  ASSERT_EQ(cudaGraphGetNodes(graph, nullptr, &nodes), cudaSuccess);
  EXPECT_EQ(nodes, 2u);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int launch = 1; launch <= 3; ++launch) {
    ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    EXPECT_EQ(counter.runs(), 2 * launch) << "launch " << launch << " runs both captured kernels again";
  }
  const auto after = parbench::gpu_emu::thread_counts();
  EXPECT_EQ(after[Count::launch] - before[Count::launch], 2) << "kernel launches are counted at capture only";
  EXPECT_EQ(after[Count::graph_launch] - before[Count::graph_launch], 3);
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  EXPECT_EQ(cudaGraphLaunch(exec, s), cudaErrorInvalidValue) << "a destroyed graph";
  (void)cudaGetLastError();
  cudaStreamDestroy(s);
}

// The arguments are those of the capture (a pointer and a count, by value); the memory behind them is read at each
// launch, so new input gives new output.
TEST(GpuEmuGraphs, ArgumentsAreCapturedByValueAndMemoryIsReadAtLaunch) {
  cudaSetDevice(1);
  cudaStream_t s = new_stream();
  constexpr int kN = 64, kBlock = 32;
  int *in = nullptr, *out = nullptr, *other = nullptr;
  cudaMalloc(&in, kN * sizeof(int));
  cudaMalloc(&other, kN * sizeof(int));
  cudaMalloc(&out, 2 * sizeof(int));
  std::vector<int> host(kN, 1);
  cudaMemcpy(in, host.data(), kN * sizeof(int), cudaMemcpyHostToDevice);
  cudaMemcpy(other, host.data(), kN * sizeof(int), cudaMemcpyHostToDevice);
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  int* target = in;
  int n = kN;
  k::block_sum(out, target, n, kBlock, s);
  target = other, n = 1;  // too late: the capture holds its own copy of the arguments
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiateWithFlags(&exec, graph, 0), cudaSuccess);
  for (int round = 1; round <= 2; ++round) {
    for (int i = 0; i < kN; ++i) host[std::size_t(i)] = round * (i + 1);
    cudaMemcpy(in, host.data(), kN * sizeof(int), cudaMemcpyHostToDevice);
    cudaDeviceSynchronize();  // the copy from pageable memory may still be landing; `s` does not wait for it
    ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    const std::vector<int> sums = read(out, 2);
    EXPECT_EQ(sums[0], round * (kBlock * (kBlock + 1) / 2)) << "round " << round;
    EXPECT_EQ(sums[1], round * (kN * (kN + 1) / 2 - kBlock * (kBlock + 1) / 2)) << "round " << round;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  for (int* p : {in, out, other}) cudaFree(p);
  cudaStreamDestroy(s);
}

// An event recorded in the capture is recorded again by every launch; another stream then waits for it.
TEST(GpuEmuGraphs, CapturedEventRecordsReplay) {
  cudaSetDevice(2);
  cudaStream_t s = new_stream(), t = new_stream();
  cudaEvent_t e;
  cudaEventCreate(&e);
  Counter counter;
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  counter.launch(s);
  ASSERT_EQ(cudaEventRecord(e, s), cudaSuccess);
  EXPECT_EQ(cudaStreamWaitEvent(s, e, 0), cudaSuccess) << "a wait inside the same capture";
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
  ASSERT_EQ(cudaEventSynchronize(e), cudaSuccess) << "the launch recorded the event";
  EXPECT_EQ(counter.runs(), 1) << "the event follows the kernel before it";
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaEventDestroy(e);
  cudaStreamDestroy(s);
  cudaStreamDestroy(t);
}

TEST(GpuEmuGraphs, SynchronisingCallsDuringACaptureFailAndInvalidateIt) {
  cudaSetDevice(3);
  cudaStream_t s = new_stream();
  void* d = nullptr;
  cudaMalloc(&d, 64);
  std::vector<char> host(64);
  struct Case {
    const char* api;
    std::function<cudaError_t()> call;
  };
  const std::vector<Case> cases = {
      {"cudaStreamSynchronize", [&] { return cudaStreamSynchronize(s); }},
      {"cudaStreamQuery", [&] { return cudaStreamQuery(s); }},
      {"cudaDeviceSynchronize", [] { return cudaDeviceSynchronize(); }},
      {"cudaMalloc", [] {
         void* p = nullptr;
         return cudaMalloc(&p, 16);
       }},
      {"cudaFree", [&] { return cudaFree(d); }},
      {"cudaMemcpy", [&] { return cudaMemcpy(host.data(), d, 64, cudaMemcpyDeviceToHost); }},
      {"cudaMemset", [&] { return cudaMemset(d, 0, 64); }},
      {"cudaMemcpyAsync", [&] { return cudaMemcpyAsync(host.data(), d, 64, cudaMemcpyDeviceToHost, s); }},
  };
  for (const Case& c : cases) {
    ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess) << c.api;
    EXPECT_EQ(c.call(), cudaErrorStreamCaptureUnsupported) << c.api;
    const std::string text = cudaGetErrorString(cudaErrorStreamCaptureUnsupported);
    EXPECT_NE(text.find(c.api), std::string::npos) << text;
    (void)cudaGetLastError();
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    cudaStreamIsCapturing(s, &status);
    EXPECT_EQ(status, cudaStreamCaptureStatusInvalidated) << c.api;
    expect_invalidated(s, c.api);
  }
  // The device memory is still there: cudaFree was refused.
  EXPECT_EQ(cudaMemset(d, 0, 64), cudaSuccess);
  cudaFree(d);
  cudaStreamDestroy(s);
}

TEST(GpuEmuGraphs, EventsAndStreamsAcrossTheCaptureBoundary) {
  cudaSetDevice(0);
  cudaStream_t s = new_stream(), t = new_stream();
  cudaEvent_t inside, outside;
  cudaEventCreate(&inside);
  cudaEventCreate(&outside);
  ASSERT_EQ(cudaEventRecord(outside, t), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(inside, s), cudaSuccess);
  EXPECT_EQ(cudaEventSynchronize(inside), cudaErrorCapturedEvent);
  expect_invalidated(s, "cudaEventSynchronize");
  // Waiting on work recorded outside the capture: refused unless flagged external.
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  EXPECT_EQ(cudaStreamWaitEvent(s, outside, 0), cudaErrorStreamCaptureIsolation);
  expect_invalidated(s, "outside the capture");
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  EXPECT_EQ(cudaStreamWaitEvent(s, outside, cudaEventWaitExternal), cudaSuccess);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  cudaGraphDestroy(graph);
  // A second stream joining the capture through its event: not emulated, said so.
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(inside, s), cudaSuccess);
  EXPECT_EQ(cudaStreamWaitEvent(t, inside, 0), cudaErrorStreamCaptureUnsupported);
  EXPECT_NE(std::string(cudaGetErrorString(cudaErrorStreamCaptureUnsupported)).find("one stream per capture"),
            std::string::npos);
  (void)cudaGetLastError();
  expect_invalidated(s, "waited for one of its events");
  // The legacy stream cannot capture; ending a capture that never began is an illegal state.
  EXPECT_EQ(cudaStreamBeginCapture(nullptr, cudaStreamCaptureModeGlobal), cudaErrorStreamCaptureUnsupported);
  EXPECT_EQ(cudaStreamEndCapture(s, &graph), cudaErrorIllegalState);
  // 3: no mode, yet within the enum's range (its values need two bits; one beyond them is undefined to form).
  EXPECT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureMode(3)), cudaErrorInvalidValue);
  (void)cudaGetLastError();
  cudaEventDestroy(inside);
  cudaEventDestroy(outside);
  cudaStreamDestroy(s);
  cudaStreamDestroy(t);
}

// Work on the legacy stream while a blocking stream of the same GPU captures would join the capture.
TEST(GpuEmuGraphs, LegacyStreamWorkInvalidatesABlockingStreamsCapture) {
  cudaSetDevice(1);
  cudaStream_t blocking = new_stream(cudaStreamDefault), non_blocking = new_stream();
  void* d = nullptr;
  cudaMalloc(&d, 64);
  ASSERT_EQ(cudaStreamBeginCapture(non_blocking, cudaStreamCaptureModeRelaxed), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(d, 0, 64, nullptr), cudaSuccess);
  cudaGraph_t graph = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(non_blocking, &graph), cudaSuccess) << "no implicit order with a non-blocking one";
  cudaGraphDestroy(graph);
  ASSERT_EQ(cudaStreamBeginCapture(blocking, cudaStreamCaptureModeRelaxed), cudaSuccess);
  (void)cudaMemsetAsync(d, 0, 64, nullptr);
  EXPECT_EQ(cudaGetLastError(), cudaErrorStreamCaptureImplicit);
  expect_invalidated(blocking, "legacy default stream");
  cudaDeviceSynchronize();
  cudaFree(d);
  cudaStreamDestroy(blocking);
  cudaStreamDestroy(non_blocking);
}

// Capture modes across threads: another thread's thread-local capture forbids nothing here; a global one forbids
// this thread's unsafe calls unless it is relaxed; ending a global capture from another thread is refused.
TEST(GpuEmuGraphs, CaptureModesAcrossThreads) {
  cudaSetDevice(2);
  cudaStream_t s = new_stream();
  auto malloc_elsewhere = [](cudaStreamCaptureMode thread_mode) {
    cudaError_t r = cudaSuccess;
    std::thread([&] {
      cudaStreamCaptureMode m = thread_mode;
      cudaThreadExchangeStreamCaptureMode(&m);
      void* p = nullptr;
      r = cudaMalloc(&p, 16);
      if (r == cudaSuccess) cudaFree(p);
      (void)cudaGetLastError();
    }).join();
    return r;
  };
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  EXPECT_EQ(malloc_elsewhere(cudaStreamCaptureModeGlobal), cudaSuccess);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  cudaGraphDestroy(graph);
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  EXPECT_EQ(malloc_elsewhere(cudaStreamCaptureModeRelaxed), cudaSuccess);
  cudaError_t wrong_thread = cudaSuccess;
  std::thread([&] {
    cudaGraph_t g = nullptr;
    wrong_thread = cudaStreamEndCapture(s, &g);
  }).join();
  EXPECT_EQ(wrong_thread, cudaErrorStreamCaptureWrongThread);
  EXPECT_EQ(malloc_elsewhere(cudaStreamCaptureModeGlobal), cudaErrorStreamCaptureUnsupported);
  expect_invalidated(s, "cudaMalloc");
  cudaStreamDestroy(s);
}

}  // namespace
