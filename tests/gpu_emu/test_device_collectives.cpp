// The device-side collectives (oneshot-dev, twoshot-dev, ring-dev, naive-dev, tree-dev, rd-dev, rhd-dev) on emulated
// GPUs, ranks as threads: a timed batch queues one launch per operation and never waits on the host (their allreduce,
// and every other collective each serves, out of place and in place, with the data check), the symmetric memory
// grows and keeps operations on different streams in order, a CUDA graph's launches run fresh operations, a stalled
// peer ends with a timeout naming it, two inputs taken in turn in a batch keep their own results (the same
// collective twice, or an allreduce and another), and what cannot run is refused in words.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "collectives/registry.h"
#include "collectives/bootstrap.h"
#include "collectives/communicator/communicator.h"
#include "collectives/datacheck.h"
#include "collectives/communicator/symmetric_memory.h"
#include "core/host_counts.h"
#include "core/memory.h"
#include "device/emu/gpu_emu.h"

namespace parbench {
namespace {

using gpu_emu::Count;

class DeviceCollectives : public ::testing::TestWithParam<std::string> {};

LaunchOptions on_gpus(int ranks) {
  LaunchOptions o;
  o.ranks = ranks;
  o.device = Device{DeviceKind::cuda, 0};
  o.timeout_s = 60;
  return o;
}

// Pinned host memory for the copies (pageable memory may lie just past a device allocation, which the emulator
// then takes it for), made once per rank: freeing pinned memory waits for every peer GPU's work, which may be a
// peer's collective waiting for this rank's next call (as on a GPU).
struct Pinned {
  static constexpr Device kGpu{DeviceKind::cuda, 0};
  explicit Pinned(std::size_t count) : p(static_cast<float*>(pinned_host_malloc(kGpu, count * sizeof(float)))) {}
  ~Pinned() { pinned_host_free(kGpu, p); }
  Pinned(const Pinned&) = delete;
  Pinned& operator=(const Pinned&) = delete;
  float* p;
};

// Rank r's input, (r + 1) * (i % 7 + 1) (whose sum over the ranks is exact in floats), copied into `d` on `stream`:
// a synchronous copy from pageable memory may still be landing when a kernel on a non-blocking stream starts.
void fill_input(Pinned& stage, void* d, int rank, std::size_t count, cudaStream_t stream) {
  for (std::size_t i = 0; i < count; ++i) stage.p[i] = float((rank + 1) * int(i % 7 + 1));
  ASSERT_EQ(cudaMemcpyAsync(d, stage.p, count * sizeof(float), cudaMemcpyHostToDevice, stream), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
}

// The wrong elements in device memory `d` after `times` in-place sums over `ranks` of fill_input()'s values.
std::size_t wrong_sum(Pinned& stage, const Device& gpu, const void* d, std::size_t count, int ranks, int times = 1) {
  device_memcpy(Device{}, stage.p, gpu, d, count * sizeof(float));
  float scale = float(ranks * (ranks + 1) / 2);
  for (int t = 1; t < times; ++t) scale *= float(ranks);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < count; ++i) wrong += stage.p[i] != scale * float(i % 7 + 1);
  return wrong;
}

cudaStream_t new_stream() {
  cudaStream_t s = nullptr;
  EXPECT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  return s;
}

CollArgs allreduce_args(const void* send, void* recv, std::size_t count, void* stream) {
  CollArgs a;
  a.coll = Collective::allreduce, a.send = send, a.recv = recv, a.count = count, a.stream = stream;
  return a;
}

TEST_P(DeviceCollectives, TimedBatchLaunchesOncePerOperationAndNeverWaits) {
  const Algorithm& algo = find_algorithm(GetParam());
  constexpr std::size_t kCount = 1001;  // not a multiple of the ranks
  constexpr int kOps = 10;
  std::mutex mu;
  std::vector<std::string> failures;
  run_ranks(on_gpus(3), [&](Communicator& comm) {
    make_device_current(comm.device());
    cudaStream_t s = new_stream();
    Pinned stage(kCount);
    void* send = device_malloc(comm.device(), kCount * sizeof(float));
    void* recv = device_malloc(comm.device(), kCount * sizeof(float));
    fill_input(stage, send, comm.rank(), kCount, s);
    const CollArgs a = allreduce_args(send, recv, kCount, s);
    comm.run(a, algo);  // makes the symmetric memory, waits
    const HostCounts ours = host_counts();
    const gpu_emu::ApiCounts emu = gpu_emu::thread_counts();
    comm.begin_batch();
    for (int i = 0; i < kOps; ++i) comm.run(a, algo);
    const HostCounts ours_after = host_counts();
    const gpu_emu::ApiCounts emu_after = gpu_emu::thread_counts();
    comm.end_batch();
    const std::size_t wrong = wrong_sum(stage, comm.device(), recv, kCount, comm.size());
    std::lock_guard lock(mu);
    const std::string who = "rank " + std::to_string(comm.rank()) + ": ";
    if ((ours_after - ours).host_waits != 0) failures.push_back(who + "host waits counted by parbench");
    for (Count c : {Count::host_wait, Count::stream_sync, Count::device_sync, Count::copy, Count::malloc})
      if (emu_after[c] != emu[c])
        failures.push_back(who + "the emulator counted " + std::to_string(emu_after[c] - emu[c]) + " of API count " +
                           std::to_string(int(c)));
    if (emu_after[Count::launch] - emu[Count::launch] != kOps)
      failures.push_back(who + std::to_string(emu_after[Count::launch] - emu[Count::launch]) + " launches for " +
                         std::to_string(kOps) + " operations");
    if (wrong) failures.push_back(who + std::to_string(wrong) + " wrong elements");
    device_free(comm.device(), send);
    device_free(comm.device(), recv);
    EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
  });
  for (const auto& f : failures) ADD_FAILURE() << f;
}

// Sizes that grow the buffers twice, in place, on two streams in turn: each result exact.
TEST_P(DeviceCollectives, GrowsAcrossSizes) {
  const Algorithm& algo = find_algorithm(GetParam());
  std::mutex mu;
  std::vector<std::string> failures;
  run_ranks(on_gpus(2), [&](Communicator& comm) {
    make_device_current(comm.device());
    cudaStream_t streams[2] = {new_stream(), new_stream()};
    Pinned stage(300007);
    int turn = 0;
    for (std::size_t count : {5u, 100001u, 3u, 300007u, 17u}) {
      cudaStream_t stream = streams[turn++ % 2];
      void* buf = device_malloc(comm.device(), count * sizeof(float));
      fill_input(stage, buf, comm.rank(), count, stream);
      comm.run(allreduce_args(buf, buf, count, stream), algo);
      const std::size_t wrong = wrong_sum(stage, comm.device(), buf, count, comm.size());
      device_free(comm.device(), buf);
      std::lock_guard lock(mu);
      if (wrong) failures.push_back("count " + std::to_string(count) + ": " + std::to_string(wrong) + " wrong");
    }
    for (cudaStream_t s : streams) EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
  });
  for (const auto& f : failures) ADD_FAILURE() << f;
}

// In place, in a batch (no host waits between), on two streams in turn: an operation must not start while the
// previous one, on the other stream, still uses the buffers (or its input, the previous result).
TEST_P(DeviceCollectives, BatchOnTwoStreamsStaysInOrder) {
  const Algorithm& algo = find_algorithm(GetParam());
  constexpr std::size_t kCount = 40000;
  constexpr int kOps = 6;
  std::mutex mu;
  std::vector<std::string> failures;
  run_ranks(on_gpus(2), [&](Communicator& comm) {
    make_device_current(comm.device());
    cudaStream_t streams[2] = {new_stream(), new_stream()};
    Pinned stage(kCount);
    void* buf = device_malloc(comm.device(), kCount * sizeof(float));
    comm.run(allreduce_args(buf, buf, kCount, streams[1]), algo);  // makes the buffers
    fill_input(stage, buf, comm.rank(), kCount, streams[0]);
    comm.begin_batch();
    for (int i = 0; i < kOps; ++i) comm.run(allreduce_args(buf, buf, kCount, streams[i % 2]), algo);
    comm.end_batch();
    const std::size_t wrong = wrong_sum(stage, comm.device(), buf, kCount, comm.size(), kOps);
    device_free(comm.device(), buf);
    for (cudaStream_t s : streams) EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
    std::lock_guard lock(mu);
    if (wrong) failures.push_back("rank " + std::to_string(comm.rank()) + ": " + std::to_string(wrong) + " wrong");
  });
  for (const auto& f : failures) ADD_FAILURE() << f;
}

// Two allreduces captured into a CUDA graph, launched four times with new input before each: every launch's result
// is exact. Rank 1 launches late each time, so a replay that reused the capture's flag values would let rank 0 read
// rank 1's buffer before rank 1 wrote it (still the previous launch's input: a wrong sum).
TEST_P(DeviceCollectives, GraphLaunchesTakeFreshFlagValues) {
  const Algorithm& algo = find_algorithm(GetParam());
  constexpr std::size_t kCount = 3000;
  constexpr int kLaunches = 4;
  std::mutex mu;
  std::vector<std::string> failures;
  run_ranks(on_gpus(2), [&](Communicator& comm) {
    make_device_current(comm.device());
    cudaStream_t s = new_stream();
    Pinned stage(kCount);
    void* send = device_malloc(comm.device(), kCount * sizeof(float));
    void* recv = device_malloc(comm.device(), kCount * sizeof(float));
    const CollArgs a = allreduce_args(send, recv, kCount, s);
    comm.run(a, algo);  // makes the symmetric memory: a capture forbids allocations
    comm.begin_batch();
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    EXPECT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    comm.run(a, algo);
    comm.run(a, algo);
    EXPECT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
    comm.end_batch();
    EXPECT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    std::vector<std::string> mine;
    for (int launch = 1; launch <= kLaunches; ++launch) {
      for (std::size_t i = 0; i < kCount; ++i) stage.p[i] = float((comm.rank() + 1) * launch * int(i % 7 + 1));
      EXPECT_EQ(cudaMemcpyAsync(send, stage.p, kCount * sizeof(float), cudaMemcpyHostToDevice, s), cudaSuccess);
      EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);
      if (comm.rank() == 1) std::this_thread::sleep_for(std::chrono::milliseconds(30));
      EXPECT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
      EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);
      device_memcpy(Device{}, stage.p, comm.device(), recv, kCount * sizeof(float));
      std::size_t wrong = 0;
      for (std::size_t i = 0; i < kCount; ++i) wrong += stage.p[i] != float(3 * launch * int(i % 7 + 1));
      if (wrong) mine.push_back("launch " + std::to_string(launch) + ": " + std::to_string(wrong) + " wrong");
    }
    comm.symmetric_memory().check(comm);  // no peer gave up waiting
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    device_free(comm.device(), send);
    device_free(comm.device(), recv);
    EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
    std::lock_guard lock(mu);
    for (const auto& m : mine) failures.push_back("rank " + std::to_string(comm.rank()) + ": " + m);
  });
  for (const auto& f : failures) ADD_FAILURE() << f;
}

// Rank 1 made the symmetric memory with rank 0, then never comes to the second call: rank 0's kernel gives up after
// the timeout and the host names the call and rank 1.
TEST_P(DeviceCollectives, StalledPeerEndsInATimeoutNamingIt) {
  const Algorithm& algo = find_algorithm(GetParam());
  std::string message;
  run_ranks(on_gpus(2), [&](Communicator& comm) {
    make_device_current(comm.device());
    cudaStream_t s = new_stream();
    void* buf = device_malloc(comm.device(), 64 * sizeof(float));
    comm.run(allreduce_args(buf, buf, 64, s), algo);
    if (comm.rank() == 0) {
      comm.set_timeout(0.5);  // only now: the first call may be slow in a sanitizer build
      try {
        comm.run(allreduce_args(buf, buf, 64, s), algo);
      } catch (const CollectiveTimeoutError& e) {
        message = e.what();
      }
    }
    device_free(comm.device(), buf);
    EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
  });
  EXPECT_NE(message.find("rank 0: allreduce/" + GetParam() + " of 256 bytes"), std::string::npos) << message;
  EXPECT_NE(message.find("within the timeout of 0.5 s"), std::string::npos) << message;
  EXPECT_NE(message.find("rank 1 did not arrive"), std::string::npos) << message;
}

TEST_P(DeviceCollectives, MessageBeyondTheLimitIsRefusedOnEveryRank) {
  const Algorithm& algo = find_algorithm(GetParam());
  std::mutex mu;
  std::vector<std::string> messages;
  run_ranks(on_gpus(2), [&](Communicator& comm) {
    void* buf = device_malloc(comm.device(), 64);
    try {
      comm.run(allreduce_args(buf, buf, (std::size_t(1) << 30) / 4 + 1, nullptr), algo);
    } catch (const UsageError& e) {
      std::lock_guard lock(mu);
      messages.push_back(e.what());
    }
    device_free(comm.device(), buf);
  });
  ASSERT_EQ(messages.size(), 2u);
  for (const auto& m : messages) EXPECT_NE(m.find("exceeds the symmetric memory's limit"), std::string::npos) << m;
}

// The device-side implementations and the collectives each serves, as the registry's rows declare them (all
// others refused naming the implementation).
const std::vector<std::pair<std::string, std::vector<Collective>>>& served() {
  static const std::vector<std::pair<std::string, std::vector<Collective>>> table = [] {
    std::vector<std::pair<std::string, std::vector<Collective>>> t;
    for (const auto& row : implementation_rows())
      if (row.kind == ImplKind::device) t.emplace_back(row.name, row.collectives);
    return t;
  }();
  return table;
}

std::vector<std::string> device_implementations() {
  std::vector<std::string> names;
  for (const auto& [name, colls] : served()) names.push_back(name);
  return names;
}

bool serves(const std::string& impl, Collective c) {
  for (const auto& [name, colls] : served())
    if (name == impl) return std::find(colls.begin(), colls.end(), c) != colls.end();
  return false;
}

TEST_P(DeviceCollectives, RefusesWhatItCannotRun) {
  const Algorithm& algo = find_algorithm(GetParam());
  std::mutex mu;
  std::vector<std::string> reasons;
  LaunchOptions cpu;
  cpu.ranks = 2;
  run_ranks(cpu, [&](Communicator& comm) {
    std::lock_guard lock(mu);
    reasons.push_back(algo.unsupported(Collective::allreduce, comm));
  });
  // PARBENCH_EMU_GPUS=4 (ctest): five rank threads put two on one GPU.
  run_ranks(on_gpus(5), [&](Communicator& comm) {
    std::lock_guard lock(mu);
    if (comm.rank() == 0) reasons.push_back(algo.unsupported(Collective::allreduce, comm));
  });
  ASSERT_EQ(reasons.size(), 3u);
  EXPECT_NE(reasons[0].find("run on GPUs (--device cuda)"), std::string::npos) << reasons[0];
  EXPECT_NE(reasons[2].find("5 ranks share 4 GPU(s)"), std::string::npos) << reasons[2];
  // On four GPUs: exactly the collectives of the table run, the others are refused naming the implementation.
  run_ranks(on_gpus(4), [&](Communicator& comm) {
    if (comm.rank() != 0) return;
    for (Collective c : all_collectives()) {
      const std::string why = algo.unsupported(c, comm);
      if (serves(GetParam(), c))
        EXPECT_EQ(why, "") << collective_name(c);
      else
        EXPECT_EQ(why.rfind(GetParam() + " implements ", 0), 0u) << collective_name(c) << ": " << why;
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Impl, DeviceCollectives,
                         ::testing::ValuesIn(device_implementations()),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           return i.param.substr(0, i.param.find('-'));
                         });

// Every other collective of every device-side implementation (their allreduce is the suite above): a timed batch
// out of place queues one launch per operation, no copy and no host wait, and its result is right; then once in
// place. Three ranks (the butterflies fold one rank in), root 1, a count that is no multiple of the ranks.
struct ImplCollective {
  std::string impl;
  Collective coll;
};
void PrintTo(const ImplCollective& p, std::ostream* os) { *os << p.impl << " " << collective_name(p.coll); }

class DeviceCollectiveKinds : public ::testing::TestWithParam<ImplCollective> {};

// The emulator's counts of this thread that must not change in a timed batch, in words.
std::vector<std::string> unexpected_counts(const gpu_emu::ApiCounts& before, const gpu_emu::ApiCounts& after,
                                           int ops) {
  std::vector<std::string> out;
  for (Count c : {Count::host_wait, Count::stream_sync, Count::device_sync, Count::copy, Count::malloc})
    if (after[c] != before[c])
      out.push_back("the emulator counted " + std::to_string(after[c] - before[c]) + " of API count " +
                    std::to_string(int(c)));
  if (after[Count::launch] - before[Count::launch] != ops)
    out.push_back(std::to_string(after[Count::launch] - before[Count::launch]) + " launches for " +
                  std::to_string(ops) + " operations");
  return out;
}

// The output's wrong elements in words ("N wrong elements, the first at I: GOT for EXPECTED"); empty when none is.
std::string wrong_elements(const CollectiveBuffers& b, std::uint64_t seed) {
  CollectiveBuffers::FirstWrong first;
  const std::size_t wrong = b.wrong(seed, &first);
  if (!wrong) return {};
  return std::to_string(wrong) + " wrong elements, the first at " + std::to_string(first.index) + ": " +
         std::to_string(first.got) + " for " + std::to_string(first.expected);
}

TEST_P(DeviceCollectiveKinds, TimedBatchOfEachCollective) {
  const Algorithm& algo = find_algorithm(GetParam().impl);
  const Collective coll = GetParam().coll;
  constexpr std::size_t kCount = 301;
  constexpr int kOps = 6;
  constexpr std::uint64_t kSeed = 11;
  std::mutex mu;
  std::vector<std::string> failures;
  run_ranks(on_gpus(3), [&](Communicator& comm) {
    make_device_current(comm.device());
    cudaStream_t s = new_stream();
    std::vector<std::string> mine;
    for (bool in_place : {false, true}) {
      CollectiveBuffers b(comm, coll, kCount, DType::f32, ReduceOp::sum, 1, in_place);
      b.fill(kSeed);
      // fill()'s copies from pageable memory land on the legacy stream, which `s` does not wait for.
      EXPECT_EQ(cudaStreamSynchronize(nullptr), cudaSuccess);
      CollArgs a = b.args();
      a.stream = s;
      comm.run(a, algo);  // makes the symmetric memory, waits
      const int ops = in_place ? 0 : kOps;  // in place, a reduction's second call would reduce its own result
      const HostCounts ours = host_counts();
      const gpu_emu::ApiCounts emu = gpu_emu::thread_counts();
      comm.begin_batch();
      for (int i = 0; i < ops; ++i) comm.run(a, algo);
      const HostCounts ours_after = host_counts();
      for (const std::string& f : unexpected_counts(emu, gpu_emu::thread_counts(), ops)) mine.push_back(f);
      comm.end_batch();
      if ((ours_after - ours).host_waits != 0) mine.push_back("host waits counted by parbench");
      if (const std::string w = wrong_elements(b, kSeed); !w.empty())
        mine.push_back((in_place ? "in place: " : "") + w);
    }
    EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
    std::lock_guard lock(mu);
    for (const std::string& f : mine) failures.push_back("rank " + std::to_string(comm.rank()) + ": " + f);
  });
  for (const auto& f : failures) ADD_FAILURE() << f;
}

// Out of place, in one batch, six operations taking two sets of buffers in turn (filled differently, each for its
// collective): every operation's result is checked. "rank R: set K: ..." for each wrong set.
std::vector<std::string> wrong_in_turn(Communicator& comm, const Algorithm& algo, const Collective (&colls)[2]) {
  constexpr std::size_t kCount = 301;
  constexpr int kOps = 6;
  constexpr std::uint64_t kSeeds[2] = {21, 22};
  make_device_current(comm.device());
  cudaStream_t s = new_stream();
  std::vector<std::string> mine;
  {
    CollectiveBuffers b0(comm, colls[0], kCount, DType::f32, ReduceOp::sum, 1, false);
    CollectiveBuffers b1(comm, colls[1], kCount, DType::f32, ReduceOp::sum, 1, false);
    CollectiveBuffers* sets[2] = {&b0, &b1};
    for (int k = 0; k < 2; ++k) sets[k]->fill(kSeeds[k]);
    EXPECT_EQ(cudaStreamSynchronize(nullptr), cudaSuccess);  // fill()'s copies land on the legacy stream
    CollArgs a[2] = {b0.args(), b1.args()};
    for (CollArgs& x : a) x.stream = s;
    for (const CollArgs& x : a) comm.run(x, algo);  // makes the symmetric memory large enough for both, waits
    comm.begin_batch();
    for (int i = 0; i < kOps; ++i) comm.run(a[i % 2], algo);
    comm.end_batch();
    for (int k = 0; k < 2; ++k) {
      if (const std::string w = wrong_elements(*sets[k], kSeeds[k]); !w.empty())
        mine.push_back("rank " + std::to_string(comm.rank()) + ": set " + std::to_string(k) + ": " + w);
    }
  }
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
  return mine;
}

void expect_right_in_turn(const std::string& impl, const Collective (&colls)[2]) {
  const Algorithm& algo = find_algorithm(impl);
  std::mutex mu;
  std::vector<std::string> failures;
  run_ranks(on_gpus(3), [&](Communicator& comm) {
    const std::vector<std::string> mine = wrong_in_turn(comm, algo, colls);
    std::lock_guard lock(mu);
    failures.insert(failures.end(), mine.begin(), mine.end());
  });
  for (const auto& f : failures) ADD_FAILURE() << f;
}

// The same collective on two inputs in turn: an operation must not start writing its rank's symmetric buffer while
// a peer still reads the previous operation's data there (the previous one's last exchange waits for that), else
// the earlier set's result has the later one's values.
TEST_P(DeviceCollectiveKinds, BatchOfTwoInputsInTurnKeepsEachResult) {
  const Collective c = GetParam().coll;
  expect_right_in_turn(GetParam().impl, {c, c});
}

// An allreduce and this collective in turn: an operation that starts by writing its buffer (a broadcast's inner
// ranks copy their parent's data there before waiting for anyone) must find the allreduce's readers done.
TEST_P(DeviceCollectiveKinds, BatchOfAnAllreduceAndThisInTurnKeepsEachResult) {
  expect_right_in_turn(GetParam().impl, {Collective::allreduce, GetParam().coll});
}

std::vector<ImplCollective> every_other_collective() {
  std::vector<ImplCollective> out;
  for (const auto& [impl, colls] : served())
    for (Collective c : colls)
      if (c != Collective::allreduce) out.push_back({impl, c});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Each, DeviceCollectiveKinds, ::testing::ValuesIn(every_other_collective()),
                         [](const ::testing::TestParamInfo<ImplCollective>& i) {
                           return i.param.impl.substr(0, i.param.impl.find('-')) + "_" +
                                  std::string(collective_name(i.param.coll));
                         });

}  // namespace
}  // namespace parbench
