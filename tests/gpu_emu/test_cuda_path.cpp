// parbench's cuda-path building blocks on the emulated GPU, counted as nsys would: the caching pool keeps
// cudaMalloc and cudaFree out of repeated allocations, staging and offload memory is pinned, the copies that
// promise a finished result wait for one stream, not the whole device, traced ranges time GPU work by events, and
// ranks in threads mode map only each other's GPUs.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "collectives/registry.h"
#include "collectives/bootstrap.h"
#include "core/allocator.h"
#include "core/current_stream.h"
#include "core/host_counts.h"
#include "core/memory.h"
#include "core/stream.h"
#include "device/emu/emu.h"
#include "device/emu/gpu_emu.h"
#include "profiles/range.h"
#include "profiles/stream_ranges.h"
#include "tests/float16_devices.h"
#include "tests/parallel/train_test_util.h"

namespace parbench {
namespace {

using gpu_emu::Count;

const Device kGpu{DeviceKind::cuda, 1};

// What the calling thread did while `f` ran.
template <class F>
gpu_emu::ApiCounts counted(F f) {
  const gpu_emu::ApiCounts before = gpu_emu::thread_counts();
  f();
  gpu_emu::ApiCounts d = gpu_emu::thread_counts();
  for (std::size_t i = 0; i < d.n.size(); ++i) d.n[i] -= before.n[i];
  return d;
}

// Two rank threads on the one emulated GPU, each with the GPU current.
template <class F>
void on_two_gpu_ranks(F body) {
  LaunchOptions o;
  o.ranks = 2;
  o.device = Device{DeviceKind::cuda, 0};
  run_ranks(o, [&](Communicator& comm) {
    make_device_current(comm.device());
    body(comm);
  });
}

// Work queued on `s` that lasts `how_long`: what is ordered after it runs late, what is not runs first.
void hold_stream(void* s, const char* what, std::chrono::milliseconds how_long = std::chrono::milliseconds(60)) {
  gpu_emu::enqueue(gpu_emu::resolve_stream(static_cast<cudaStream_t>(s)), what,
                   [how_long] { std::this_thread::sleep_for(how_long); });
}

cudaMemoryType memory_type(const void* p) {
  cudaPointerAttributes a{};
  EXPECT_EQ(cudaPointerGetAttributes(&a, p), cudaSuccess);
  return a.type;
}

TEST(CudaMemory, ReleasedMemoryIsReusedWithoutCudaMallocOrCudaFree) {
  TrackedAllocator alloc(kGpu);
  // A first "step" grows the pool; the same allocations again touch neither cudaMalloc nor cudaFree.
  auto step = [&] {
    std::vector<void*> live;
    for (std::size_t bytes : {1000u, 4096u, 70000u, 1000u}) live.push_back(alloc.allocate(bytes, MemCategory::activations));
    for (void* p : live) alloc.deallocate(p);
  };
  step();
  const gpu_emu::ApiCounts again = counted([&] {
    for (int i = 0; i < 3; ++i) step();
  });
  EXPECT_EQ(again[Count::malloc], 0);
  EXPECT_EQ(again[Count::free], 0);
  EXPECT_EQ(again[Count::device_sync], 0);
  EXPECT_EQ(alloc.current_total(), 0u);  // the accounting still sees every release
  EXPECT_EQ(alloc.peak_total(), 1000u + 4096u + 70000u + 1000u);
}

TEST(CudaMemory, ReusedBlockHoldsWhatTheNewOwnerWrites) {
  // A released block's next owner sees its own data, also with the previous owner's copy still queued: both are
  // ordered on the device's default stream.
  std::vector<float> a(4096, 1.0f), b(4096, 2.0f), out(4096, 0.0f);
  void* p = device_malloc(kGpu, a.size() * sizeof(float));
  make_device_current(kGpu);
  device_memcpy(kGpu, p, Device{}, a.data(), a.size() * sizeof(float));
  device_free(kGpu, p);
  void* q = device_malloc(kGpu, b.size() * sizeof(float));
  EXPECT_EQ(p, q);
  device_memcpy(kGpu, q, Device{}, b.data(), b.size() * sizeof(float));
  device_memcpy(Device{}, out.data(), kGpu, q, out.size() * sizeof(float));
  EXPECT_EQ(out, b);
  device_free(kGpu, q);
}

TEST(CudaMemory, DeviceToDeviceCopyWaitsForTheStreamNotTheDevice) {
  std::vector<int> host(1000, 7), back(1000, 0);
  void* x = device_malloc(kGpu, 4000);
  void* y = device_malloc(kGpu, 4000);
  make_device_current(kGpu);
  device_memcpy(kGpu, x, Device{}, host.data(), 4000);
  const gpu_emu::ApiCounts c = counted([&] { device_memcpy(kGpu, y, kGpu, x, 4000); });
  EXPECT_EQ(c[Count::device_sync], 0);
  EXPECT_EQ(c[Count::stream_sync], 1);
  device_memcpy(Device{}, back.data(), kGpu, y, 4000);
  EXPECT_EQ(back, host);
  device_free(kGpu, x);
  device_free(kGpu, y);
}

TEST(CudaMemory, StagingIsPinnedAndGrowsOnlyWhenTooSmall) {
  HostStaging staging(kGpu);
  char* first = nullptr;
  const gpu_emu::ApiCounts grow = counted([&] { first = staging.get(1000); });
  EXPECT_EQ(grow[Count::host_malloc], 1);
  EXPECT_EQ(memory_type(first), cudaMemoryTypeHost);
  const gpu_emu::ApiCounts reuse = counted([&] {
    for (std::size_t bytes : {1u, 500u, 1000u}) EXPECT_EQ(staging.get(bytes), first);
  });
  EXPECT_EQ(reuse[Count::host_malloc] + reuse[Count::host_free], 0);
  char* larger = nullptr;
  const gpu_emu::ApiCounts regrow = counted([&] { larger = staging.get(1500); });
  EXPECT_EQ(regrow[Count::host_free], 1);
  EXPECT_EQ(regrow[Count::host_malloc], 1);
  EXPECT_GE(staging.capacity(), 2000u);  // doubled, so a growing sweep reallocates a logarithmic number of times
  std::memset(larger, 1, staging.capacity());

  HostStaging on_host{Device{}};  // for a host device: plain memory, no CUDA call
  const gpu_emu::ApiCounts plain = counted([&] { (void)on_host.get(100); });
  EXPECT_EQ(plain[Count::host_malloc], 0);
}

TEST(CudaMemory, PinnedHostAllocatorForOffload) {
  TrackedAllocator host(Device{}, kGpu);
  void* p = host.allocate(1 << 16, MemCategory::optimizer);
  EXPECT_EQ(memory_type(p), cudaMemoryTypeHost);
  EXPECT_EQ(host.current(MemCategory::optimizer), std::size_t(1) << 16);
  host.deallocate(p);
  EXPECT_EQ(host.current_total(), 0u);
}

TEST(CudaThreads, PeerAccessOnlyBetweenTheRanksGpus) {
  // Ranks on GPUs 1 and 2 of the emulator's 4: each may map the other, and no GPU without a rank.
  const int gpus = gpu_emu::device_count();
  ASSERT_GE(gpus, 4);
  LaunchOptions o;
  o.ranks = 2;
  o.device = Device{DeviceKind::cuda, 1};
  run_ranks(o, [](Communicator&) {});
  EXPECT_TRUE(gpu_emu::peer_enabled(1, 2));
  EXPECT_TRUE(gpu_emu::peer_enabled(2, 1));
  for (int other : {0, 3}) {
    EXPECT_FALSE(gpu_emu::peer_enabled(1, other)) << "GPU 1 mapped GPU " << other << ", which has no rank";
    EXPECT_FALSE(gpu_emu::peer_enabled(2, other)) << "GPU 2 mapped GPU " << other << ", which has no rank";
  }
}

TEST(CudaThreads, SplitGroupsRunNcclAndDestroyTheirCommunicators) {
  const int before = gpu_emu::nccl_comms_alive();
  LaunchOptions o;
  o.ranks = 4;
  o.device = Device{DeviceKind::cuda, 0};
  run_ranks(o, [](Communicator& world) {
    ASSERT_NE(world.nccl_comm(), nullptr) << world.nccl_unavailable();
    Communicator pair = world.split(world.rank() % 2, world.rank());
    ASSERT_NE(pair.nccl_comm(), nullptr) << "a split group must get its own NCCL communicator: "
                                         << pair.nccl_unavailable();
    EXPECT_EQ(pair.resolve(Collective::allreduce).name(), "nccl");
    void* d = device_malloc(world.device(), 4 * sizeof(float));
    const std::vector<float> mine(4, float(world.rank() + 1));
    device_memcpy(world.device(), d, Device{}, mine.data(), 16);
    const gpu_emu::ApiCounts c = counted([&] { pair.allreduce(d, d, 4, DType::f32, ReduceOp::sum); });
    EXPECT_EQ(c[Count::library_call], 1) << "one ncclAllReduce";
    std::vector<float> out(4);
    device_memcpy(Device{}, out.data(), world.device(), d, 16);
    const float want = world.rank() % 2 == 0 ? 1 + 3 : 2 + 4;
    for (float x : out) EXPECT_EQ(x, want);
    device_free(world.device(), d);
  });
  EXPECT_EQ(gpu_emu::nccl_comms_alive(), before) << "every communicator, split ones too, is destroyed at the end";
}

// A collective ordered on the caller's stream (CollArgs::stream): NCCL is queued behind the stream's work, a
// hand-written algorithm waits for it first, so both see what slow work on that stream wrote. Queued on the
// legacy default stream instead (which a non-blocking stream does not wait for), they would read the buffer
// before the write.
TEST(CudaThreads, CollectivesRunOnTheCallersStream) {
  on_two_gpu_ranks([](Communicator& comm) {
    cudaStream_t s = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    auto* d = static_cast<float*>(device_malloc(comm.device(), 4 * sizeof(float)));
    for (const char* impl : {"nccl", "ring"}) {
      device_memset(comm.device(), d, 0, 4 * sizeof(float));
      const float value = float(comm.rank() + 1);
      gpu_emu::enqueue(gpu_emu::resolve_stream(s), "test: a slow write on the caller's stream", [d, value] {
        std::this_thread::sleep_for(std::chrono::milliseconds(60));
        for (int i = 0; i < 4; ++i) d[i] = value;
      });
      CollArgs a;
      a.coll = Collective::allreduce, a.send = d, a.recv = d, a.count = 4, a.dtype = DType::f32, a.stream = s;
      comm.run(a, find_algorithm(impl));
      ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
      std::vector<float> out(4);
      device_memcpy(Device{}, out.data(), comm.device(), d, sizeof(float) * 4);
      for (float x : out) EXPECT_EQ(x, 1.0f + 2.0f) << impl << " did not wait for the write queued before it";
    }
    device_free(comm.device(), d);
    cudaStreamDestroy(s);
  });
}

// A collective on host buffers in a StreamOrder, from a thread without a current stream: NCCL is only queued on the
// caller's stream, behind slow work, so the copies to and from the GPU must run there too. On the legacy default
// stream the input's copy would race NCCL's read and the result's copy would read the GPU buffer before NCCL wrote it.
TEST(CudaThreads, HostBuffersComeBackFilledFromACollectiveOnTheCallersStream) {
  on_two_gpu_ranks([](Communicator& comm) {
    const Stream s(comm.device(), true);
    for (const char* impl : {"nccl", "ring"})
      for (bool in_place : {true, false}) {
        hold_stream(s.native(), "test: slow work on the caller's stream");
        std::vector<double> send = {double(comm.rank() + 1), -1.0}, recv = {0.0, 0.0};
        Communicator::StreamOrder order(comm, s.native());
        comm.allreduce(send.data(), in_place ? send.data() : recv.data(), 2, DType::f64, ReduceOp::sum,
                       &find_algorithm(impl));
        const std::vector<double>& out = in_place ? send : recv;
        EXPECT_EQ(out, (std::vector<double>{3.0, -2.0})) << impl << (in_place ? " in place" : " out of place");
      }
    s.synchronize();
  });
}

// One that brings nothing back to this rank (a reduce's non-root) still returns only once NCCL is done with the GPU
// copy of its send buffer: the next call, ordered on another stream, writes its own into the same scratch.
TEST(CudaThreads, HostBufferCollectiveReturningNothingEndsBeforeItsScratchIsReused) {
  on_two_gpu_ranks([](Communicator& comm) {
    const Stream first(comm.device(), true), second(comm.device(), true);
    const Algorithm* nccl = &find_algorithm("nccl");
    hold_stream(first.native(), "test: slow work on the reduce's stream");
    double mine = comm.rank() + 1, reduced = 0, both = 10 * (comm.rank() + 1);
    {
      Communicator::StreamOrder order(comm, first.native());
      comm.reduce(&mine, &reduced, 1, DType::f64, ReduceOp::sum, 0, nccl);
    }
    {
      Communicator::StreamOrder order(comm, second.native());
      comm.allreduce(&both, &both, 1, DType::f64, ReduceOp::sum, nccl);
    }
    EXPECT_EQ(both, 30.0);
    if (comm.rank() == 0) EXPECT_EQ(reduced, 3.0);
    first.synchronize();
  });
}

// wait_stream returns once the work queued on the stream is done, whether the communicator has NCCL's (which it
// asks, within the timeout) or not (a hand-written step's end): a training step's host wait.
TEST(CudaThreads, WaitStreamReturnsOnceTheStreamsWorkIsDone) {
  for (bool nccl : {true, false}) {
    if (!nccl) setenv("PARBENCH_NCCL", "off", 1);
    on_two_gpu_ranks([nccl](Communicator& comm) {
      EXPECT_EQ(comm.nccl_comm() != nullptr, nccl) << comm.nccl_unavailable();
      const Stream s(comm.device(), true);
      const auto native = static_cast<cudaStream_t>(s.native());
      hold_stream(s.native(), "test: slow work on the step's stream");
      comm.wait_stream(s.native());
      EXPECT_EQ(cudaStreamQuery(native), cudaSuccess) << (nccl ? "with" : "without") << " NCCL";
    });
    unsetenv("PARBENCH_NCCL");
  }
}

// A thread with a current stream (a rank's compute stream, non-blocking) never uses the legacy default stream: the
// synchronous copies and fills, and a collective on host memory called without a stream, run on that stream behind
// what the thread queued there and are done on return. On the legacy stream the first copy would not wait for the
// slow write. A thread without a current stream keeps the legacy stream.
TEST(CudaThreads, SynchronousWorkRunsOnTheThreadsCurrentStream) {
  on_two_gpu_ranks([](Communicator& comm) {
    const Device gpu = comm.device();
    void* gone = nullptr;
    {
      const Stream s(gpu, true);
      gone = s.native();
      EXPECT_EQ(stream_device_index(s.native()), gpu.index);
      EXPECT_EQ(stream_device_index(nullptr), -1);
      auto* d = static_cast<float*>(device_malloc(gpu, 4 * sizeof(float)));
      const float value = float(comm.rank() + 1);
      std::vector<float> out(4, 0.0f), twice(8, 0.0f), zeros(4, -1.0f);
      double sum = comm.rank() + 1;
      const gpu_emu::ApiCounts c = counted([&] {
        CurrentStream on_s(s.native());
        EXPECT_EQ(synchronous_stream(gpu), s.native());
        EXPECT_EQ(synchronous_stream(Device{DeviceKind::cuda, gpu.index + 2}), nullptr) << "not a stream of that GPU";
        const auto native = static_cast<cudaStream_t>(s.native());
        gpu_emu::enqueue(gpu_emu::resolve_stream(native), "test: a slow write on the current stream", [d, value] {
          std::this_thread::sleep_for(std::chrono::milliseconds(60));
          for (int i = 0; i < 4; ++i) d[i] = value;
        });
        device_memcpy(Device{}, out.data(), gpu, d, sizeof(float) * 4);
        device_memcpy_2d(Device{}, twice.data(), 2 * sizeof(float), gpu, d, sizeof(float), sizeof(float), 4);
        device_memset(gpu, d, 0, sizeof(float) * 4);
        device_memcpy(Device{}, zeros.data(), gpu, d, sizeof(float) * 4);
        comm.allreduce(&sum, &sum, 1, DType::f64, ReduceOp::sum);
      });
      EXPECT_EQ(c[Count::legacy_stream], 0);
      for (float x : out) EXPECT_EQ(x, value) << "the copy did not wait for the write queued before it";
      for (std::size_t i = 0; i < twice.size(); ++i) EXPECT_EQ(twice[i], i % 2 == 0 ? value : 0.0f) << i;
      for (float x : zeros) EXPECT_EQ(x, 0.0f) << "the fill did not come before the copy";
      EXPECT_EQ(sum, 3.0);
      const gpu_emu::ApiCounts legacy =
          counted([&] { device_memcpy(Device{}, out.data(), gpu, d, sizeof(float) * 4); });
      EXPECT_EQ(legacy[Count::legacy_stream], 1) << "without a current stream the copy keeps the legacy stream";
      device_free(gpu, d);
    }
    EXPECT_EQ(stream_device_index(gone), -1) << "a destroyed stream is forgotten";
  });
}

// The duration of the one recorded event called `name`, in microseconds.
double traced_us(const std::string& name) {
  const nlohmann::json trace = nlohmann::json::parse(TraceRecorder::instance().to_json());
  double dur = -1;
  for (const auto& e : trace.at("traceEvents"))
    if (e.value("name", "") == name && e.value("ph", "") == "X") dur = e.at("dur").get<double>();
  EXPECT_GE(dur, 0) << "no event " << name;
  return dur;
}

// Under a TraceStream a range is timed by events on its stream: it lasts while its GPU work runs, though the host
// queued that work and went on at once and never waited for it; the times come when the trace is written.
TEST(CudaTrace, StreamRangesLastWhileTheirGpuWorkRunsWithoutHostWaits) {
  using namespace std::chrono_literals;
  make_device_current(kGpu);
  const Stream s(kGpu, true);
  auto queue_gpu_work = [&s] { hold_stream(s.native(), "test: 80 ms of GPU work", 80ms); };  // the host goes on
  TraceRecorder& rec = TraceRecorder::instance();
  rec.clear();
  rec.enable();
  {
    PB_RANGE("no stream installed", Category::compute);
    queue_gpu_work();
  }
  s.synchronize();
  {
    TraceStream on(s, "compute stream");
    const auto host_start = std::chrono::steady_clock::now();
    const HostCounts before = host_counts();
    {
      PB_RANGE("queues work", Category::compute);
      queue_gpu_work();
    }
    EXPECT_EQ(rec.pending_stream_ranges(), 1u);
    queue_gpu_work();
    {
      PB_RANGE("after queued work", Category::compute);
    }
    rec.resolve_stream_ranges();  // without waiting: the GPU is still busy, so nothing is resolved
    EXPECT_EQ(rec.pending_stream_ranges(), 2u) << "a range is resolved only once its events are done";
    EXPECT_EQ((host_counts() - before).host_waits, 0) << "the host never waits for a traced range";
    EXPECT_LT(std::chrono::steady_clock::now() - host_start, 60ms) << "the host went on while the GPU worked";
  }
  rec.disable();
  EXPECT_LT(traced_us("no stream installed"), 60e3) << "a host range ends before its GPU work does";
  EXPECT_GE(traced_us("queues work"), 80e3) << "the range must last until its GPU work has run";
  EXPECT_LT(traced_us("after queued work"), 60e3) << "work queued before a range is not inside it";
  EXPECT_EQ(rec.pending_stream_ranges(), 0u);
  rec.clear();
}

// While the GPU is busy no range's events are done; the queue of unresolved ranges still stops growing at its
// bound, where the oldest range is waited for (the only wait a traced range makes).
TEST(CudaTrace, UnresolvedStreamRangesAreBounded) {
  using namespace std::chrono_literals;
  make_device_current(kGpu);
  const Stream s(kGpu, true);
  TraceRecorder& rec = TraceRecorder::instance();
  rec.clear();
  rec.enable();
  constexpr std::size_t kRanges = StreamRangeQueue::kMaxPending + 100;
  std::size_t most = 0;
  std::int64_t waits = 0;
  std::atomic<std::size_t> recorded{0};
  {
    TraceStream on(s, "compute stream");
    // Busy until the host is about to record the range that reaches the bound, however slow the host is (a
    // sanitizer build), and a while longer, so that range finds every earlier one unresolved.
    gpu_emu::enqueue(gpu_emu::resolve_stream(static_cast<cudaStream_t>(s.native())), "test: GPU work",
                     [&recorded] {
                       const auto give_up = std::chrono::steady_clock::now() + 30s;
                       const std::size_t last = StreamRangeQueue::kMaxPending - 1;
                       while (recorded < last && std::chrono::steady_clock::now() < give_up)
                         std::this_thread::sleep_for(1ms);
                       std::this_thread::sleep_for(300ms);
                     });
    const HostCounts before = host_counts();
    for (std::size_t i = 0; i < kRanges; ++i) {
      { PB_RANGE("queued", Category::compute); }
      most = std::max(most, rec.pending_stream_ranges());
      ++recorded;
    }
    waits = (host_counts() - before).host_waits;
  }
  rec.disable();
  EXPECT_LE(most, StreamRangeQueue::kMaxPending);
  EXPECT_GE(most, StreamRangeQueue::kMaxPending / 2) << "the GPU was busy: the queue must have grown";
  EXPECT_GE(waits, 1) << "at the bound the oldest range is waited for";
  s.synchronize();
  rec.resolve_stream_ranges();
  EXPECT_EQ(rec.pending_stream_ranges(), 0u);
  EXPECT_EQ(rec.event_count(), kRanges) << "no range is lost";
  rec.clear();
}

// The collectives' CUDA reduction kernel stores 16-bit floats by base/float16.h's rule, as cpu and simt do
// (ReduceKernel.SixteenBitFloatsFollowOneRuleOnCpuAndSimt): NaN canonical, ties to even, overflow to infinity.
TEST(CudaReduce, SixteenBitFloatsFollowTheOneRule) { EXPECT_EQ(float16_check::float16_mismatches(kGpu), ""); }

// A pipeline step on NCCL's stream ends with the compute stream ordered after the step's last sends: the sent
// tensors go back to the caching pool then, and what the compute stream writes into those blocks next must not
// race a send still reading them. The hazard checker sees the race whether or not the send happened to finish.
TEST(CudaTrain, PipelineStepOrdersTheComputeStreamAfterItsLastSends) {
  TrainConfig c = test::base_config();
  c.scheme = &find_scheme_kind("pp");
  c.pp = 2, c.microbatches = 2, c.global_batch = 4;
  c.schedule = ScheduleRef::parse("1f1b");
  gpu_emu::set_hazard_mode(gpu_emu::HazardMode::report);
  gpu_emu::take_hazard_reports();
  LaunchOptions o;
  o.ranks = 2;
  o.device = Device{DeviceKind::cuda, 0};
  run_ranks(o, [&](Communicator& comm) {
    TrackedAllocator alloc(comm.device());
    Stream compute(comm.device(), /*create=*/true);
    CurrentStream allocating_for(compute.native());  // as bench_train: the pool's blocks belong to the compute stream
    auto scheme = make_scheme(c, {comm, alloc, compute});
    scheme->step(0);
    // Enough blocks of a sent activation gradient's size to take every cached one back, the sent tensors among them.
    const std::size_t sent =
        std::size_t(c.global_batch / c.microbatches) * c.model.seq * c.model.hidden * sizeof(float);
    std::vector<void*> reused;
    for (int i = 0; i < 64; ++i) {
      reused.push_back(alloc.allocate(sent, MemCategory::activations));
      ASSERT_EQ(cudaMemsetAsync(reused.back(), 0, sent, static_cast<cudaStream_t>(compute.native())), cudaSuccess);
    }
    compute.synchronize();
    for (void* p : reused) alloc.deallocate(p);
  });
  const std::vector<std::string> reports = gpu_emu::take_hazard_reports();
  gpu_emu::set_hazard_mode(gpu_emu::HazardMode::abort);
  EXPECT_TRUE(reports.empty()) << reports.size() << " hazards, the first: " << reports.front();
}

}  // namespace
}  // namespace parbench
