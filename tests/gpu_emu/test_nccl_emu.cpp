// The emulated NCCL against NCCL's documented behaviour, ranks as threads on emulated GPUs: every collective
// and datatype, ncclAvg as NCCL computes it, in-place forms, groups of send/recv, a send nobody receives (hangs
// until aborted), mismatched calls across ranks, split, duplicate GPUs and bad arguments.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <nccl.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "base/dtype.h"
#include "device/emu/nccl_reduce.h"

namespace {

using namespace std::chrono_literals;

// Runs body(rank, comm, stream) on `n` threads, rank r on GPU r, with communicators from ncclCommInitRank.
void with_ranks(int n, const std::function<void(int, ncclComm_t, cudaStream_t)>& body) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      cudaSetDevice(r);
      ncclComm_t comm = nullptr;
      ASSERT_EQ(ncclCommInitRank(&comm, n, id, r), ncclSuccess) << ncclGetLastError(nullptr);
      cudaStream_t s;
      cudaStreamCreate(&s);
      body(r, comm, s);
      cudaStreamSynchronize(s);
      cudaStreamDestroy(s);
      ncclCommDestroy(comm);
    });
  for (auto& t : threads) t.join();
}

template <class T>
T* to_device(const std::vector<T>& host) {
  void* p = nullptr;
  cudaMalloc(&p, host.size() * sizeof(T) + 1);
  cudaMemcpy(p, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice);
  return static_cast<T*>(p);
}
template <class T>
std::vector<T> to_host(const T* dev, std::size_t n, cudaStream_t s) {
  std::vector<T> out(n);
  cudaStreamSynchronize(s);
  cudaMemcpy(out.data(), dev, n * sizeof(T), cudaMemcpyDeviceToHost);
  return out;
}

TEST(NcclEmu, AllReduceEveryOpOnInt32IsExact) {
  const int n = 3;
  const std::size_t count = 100;
  for (ncclRedOp_t op : {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg}) {
    with_ranks(n, [&](int r, ncclComm_t comm, cudaStream_t s) {
      std::vector<std::int32_t> in(count);
      for (std::size_t i = 0; i < count; ++i) in[i] = std::int32_t(i % 7) + r * 3 - 2;
      auto* d = to_device(in);
      ASSERT_EQ(ncclAllReduce(d, d, count, ncclInt32, op, comm, s), ncclSuccess);  // in place
      auto out = to_host(d, count, s);
      for (std::size_t i = 0; i < count; ++i) {
        const std::int32_t a = std::int32_t(i % 7) - 2, b = a + 3, c = a + 6;
        std::int32_t want = op == ncclSum ? a + b + c : op == ncclProd ? a * b * c
                            : op == ncclMax ? c : op == ncclMin ? a : (a + b + c) / 3;  // integers: sum, then divide
        ASSERT_EQ(out[i], want) << "op " << int(op) << " element " << i;
      }
      cudaFree(d);
    });
  }
}

// NCCL_ALGO and NCCL_PROTO are read when a communicator is made: a collective they leave without an algorithm is
// refused at its call naming the function and the variables; send/recv and other collectives run.
TEST(NcclEmu, AlgoAndProtoVariablesChooseAtInitAndRefuseWhatTheyExclude) {
  struct Case {
    const char *algo, *proto;
    bool allreduce, allgather;
  };
  const Case cases[] = {{"tree", nullptr, true, false}, {"RING", "LL128", true, true}, {"^ring", nullptr, true, false},
                        {"nvls,pat", nullptr, false, false}, {nullptr, "^LL,LL128,Simple", false, false},
                        {"tree,ring", "simple", true, true}};
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.algo ? c.algo : "-") + " / " + (c.proto ? c.proto : "-"));
    if (c.algo) setenv("NCCL_ALGO", c.algo, 1);
    if (c.proto) setenv("NCCL_PROTO", c.proto, 1);
    ncclComm_t comms[2];
    const int devs[2] = {0, 1};
    ASSERT_EQ(ncclCommInitAll(comms, 2, devs), ncclSuccess);
    unsetenv("NCCL_ALGO");
    unsetenv("NCCL_PROTO");  // made: changing the variables now changes nothing
    std::vector<std::string> errors(2);
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r)
      threads.emplace_back([&, r] {
        cudaSetDevice(r);
        cudaStream_t s;
        cudaStreamCreate(&s);
        auto* d = to_device(std::vector<float>(8, 1.0f));
        EXPECT_EQ(ncclAllReduce(d, d, 4, ncclFloat32, ncclSum, comms[r], s) == ncclSuccess, c.allreduce);
        const ncclResult_t g = ncclAllGather(d + 4 * r, d, 4, ncclFloat32, comms[r], s);  // in place
        EXPECT_EQ(g == ncclSuccess, c.allgather);
        if (g != ncclSuccess) errors[std::size_t(r)] = ncclGetLastError(comms[r]);
        EXPECT_EQ(g == ncclSuccess ? ncclSuccess : ncclInvalidUsage, g);
        cudaStreamSynchronize(s);
        cudaFree(d);
        cudaStreamDestroy(s);
      });
    for (auto& t : threads) t.join();
    if (!c.allgather) {
      EXPECT_NE(errors[0].find("no algorithm/protocol available for function AllGather with datatype float32"),
                std::string::npos) << errors[0];
    }
    for (ncclComm_t comm : comms) ncclCommDestroy(comm);
  }
}

TEST(NcclEmu, FloatAvgIsASumOfInputsPremultipliedByOneOverN) {
  // NCCL's ncclAvg on floating types: each input times float(1/n), then summed. For three ranks holding 7.0 the
  // result is not 7 (what sum-then-divide gives) but 7.00000048.
  const float x = 7.0f * (1.0f / 3.0f);
  const float want = (x + x) + x;
  ASSERT_EQ(want, 7.00000048f) << "the example must show the difference";
  with_ranks(3, [&](int, ncclComm_t comm, cudaStream_t s) {
    auto* d = to_device(std::vector<float>(8, 7.0f));
    ASSERT_EQ(ncclAllReduce(d, d, 8, ncclFloat32, ncclAvg, comm, s), ncclSuccess);
    for (float x : to_host(d, 8, s)) EXPECT_EQ(x, want);
    cudaFree(d);
  });
}

TEST(NcclEmu, SixteenBitTypesRoundEveryStep) {
  // bf16 sum of 256 + 1 + 1 in rank order: 257 is not a bf16, so each step rounds back to 256.
  with_ranks(3, [&](int r, ncclComm_t comm, cudaStream_t s) {
    std::vector<parbench::bf16> in(4, parbench::float_to_bf16(r == 0 ? 256.0f : 1.0f));
    auto* d = to_device(in);
    ASSERT_EQ(ncclAllReduce(d, d, 4, ncclBfloat16, ncclSum, comm, s), ncclSuccess);
    for (auto x : to_host(d, 4, s)) EXPECT_EQ(parbench::bf16_to_float(x), 256.0f);
    cudaFree(d);
  });
  with_ranks(2, [&](int r, ncclComm_t comm, cudaStream_t s) {
    std::vector<parbench::f16> in(4, parbench::float_to_f16(r == 0 ? 1.5f : 2.25f));
    auto* d = to_device(in);
    ASSERT_EQ(ncclAllReduce(d, d, 4, ncclFloat16, ncclMax, comm, s), ncclSuccess);
    for (auto x : to_host(d, 4, s)) EXPECT_EQ(parbench::f16_to_float(x), 2.25f);
    cudaFree(d);
  });
}

// `v` (a small integer) encoded as one element of type `t` at `out`.
void encode(ncclDataType_t t, int v, char* out) {
  switch (t) {
    case ncclFloat16: { auto h = parbench::float_to_f16(float(v)); std::memcpy(out, &h, 2); break; }
    case ncclBfloat16: { auto b = parbench::float_to_bf16(float(v)); std::memcpy(out, &b, 2); break; }
    case ncclFloat32: { float f = float(v); std::memcpy(out, &f, 4); break; }
    case ncclFloat64: { double f = v; std::memcpy(out, &f, 8); break; }
    default: {  // integers: the low bytes of a little-endian int64
      std::int64_t k = v;
      std::memcpy(out, &k, parbench::gpu_emu::nccl_type_size(t));
      break;
    }
  }
}

TEST(NcclEmu, EveryDatatypeSums) {
  for (ncclDataType_t t : {ncclInt8, ncclUint8, ncclInt32, ncclUint32, ncclInt64, ncclUint64, ncclFloat16,
                           ncclFloat32, ncclFloat64, ncclBfloat16}) {
    const std::size_t es = parbench::gpu_emu::nccl_type_size(t), count = 33;
    with_ranks(4, [&](int r, ncclComm_t comm, cudaStream_t s) {
      // Each element holds the small integer r + 1 in the type; the sum 10 is exact in every type.
      std::vector<char> in(count * es), ten(count * es);
      for (std::size_t i = 0; i < count; ++i) {
        encode(t, r + 1, in.data() + i * es);
        encode(t, 10, ten.data() + i * es);
      }
      auto* d = to_device(in);
      void* out = nullptr;
      cudaMalloc(&out, count * es);
      ASSERT_EQ(ncclAllReduce(d, out, count, t, ncclSum, comm, s), ncclSuccess);
      EXPECT_EQ(to_host(static_cast<char*>(out), count * es, s), ten) << parbench::gpu_emu::nccl_type_name(t);
      cudaFree(d);
      cudaFree(out);
    });
  }
}

TEST(NcclEmu, GatherScatterBroadcastReduceInPlaceForms) {
  const int n = 4;
  const std::size_t count = 5;
  with_ranks(n, [&](int r, ncclComm_t comm, cudaStream_t s) {
    // allgather in place: my block of recv is the send buffer.
    std::vector<float> all(count * n, -1.0f);
    for (std::size_t i = 0; i < count; ++i) all[std::size_t(r) * count + i] = float(r * 10 + int(i));
    auto* g = to_device(all);
    ASSERT_EQ(ncclAllGather(g + std::size_t(r) * count, g, count, ncclFloat32, comm, s), ncclSuccess);
    auto got = to_host(g, count * n, s);
    for (int q = 0; q < n; ++q)
      for (std::size_t i = 0; i < count; ++i) EXPECT_EQ(got[std::size_t(q) * count + i], float(q * 10 + int(i)));
    // reduce-scatter in place: my block of the send buffer receives the sum of everyone's block r.
    std::vector<float> blocks(count * n);
    for (std::size_t i = 0; i < blocks.size(); ++i) blocks[i] = float(i) + float(r);
    auto* rs = to_device(blocks);
    ASSERT_EQ(ncclReduceScatter(rs, rs + std::size_t(r) * count, count, ncclFloat32, ncclSum, comm, s), ncclSuccess);
    auto mine = to_host(rs + std::size_t(r) * count, count, s);
    for (std::size_t i = 0; i < count; ++i) EXPECT_EQ(mine[i], 4.0f * float(std::size_t(r) * count + i) + 6.0f);
    // broadcast from 2 and reduce to 1.
    auto* b = to_device(std::vector<float>(count, float(r)));
    ASSERT_EQ(ncclBroadcast(b, b, count, ncclFloat32, 2, comm, s), ncclSuccess);
    for (float x : to_host(b, count, s)) EXPECT_EQ(x, 2.0f);
    auto* x = to_device(std::vector<float>(count, float(r + 1)));
    auto* y = to_device(std::vector<float>(count, -7.0f));
    ASSERT_EQ(ncclReduce(x, y, count, ncclFloat32, ncclMax, 1, comm, s), ncclSuccess);
    for (float v : to_host(y, count, s)) EXPECT_EQ(v, r == 1 ? 4.0f : -7.0f);  // only the root's recv is written
    for (void* p : {(void*)g, (void*)rs, (void*)b, (void*)x, (void*)y}) cudaFree(p);
  });
}

TEST(NcclEmu, GroupedSendRecvRingAndAlltoall) {
  const int n = 3;
  with_ranks(n, [&](int r, ncclComm_t comm, cudaStream_t s) {
    auto* send = to_device(std::vector<int>(6, r));
    auto* recv = to_device(std::vector<int>(6, -1));
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    for (int p = 0; p < n; ++p) {  // all-to-all, 2 ints per peer
      ASSERT_EQ(ncclSend(send + 2 * p, 2, ncclInt32, p, comm, s), ncclSuccess);
      ASSERT_EQ(ncclRecv(recv + 2 * p, 2, ncclInt32, p, comm, s), ncclSuccess);
    }
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
    auto got = to_host(recv, 6, s);
    EXPECT_EQ(got, (std::vector<int>{0, 0, 1, 1, 2, 2}));
    cudaFree(send);
    cudaFree(recv);
  });
}

TEST(NcclEmu, UnreceivedSendHoldsItsStreamUntilAborted) {
  ncclUniqueId id;
  ncclGetUniqueId(&id);
  ncclComm_t comms[2];
  int devs[2] = {0, 1};
  ASSERT_EQ(ncclCommInitAll(comms, 2, devs), ncclSuccess);
  cudaSetDevice(0);
  void* buf = nullptr;
  cudaMalloc(&buf, 64);
  cudaStream_t s;
  cudaStreamCreate(&s);
  ASSERT_EQ(ncclSend(buf, 16, ncclFloat32, 1, comms[0], s), ncclSuccess);  // rank 1 never receives
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(cudaStreamQuery(s), cudaErrorNotReady) << "a send must hold its stream until received";
  ncclCommAbort(comms[0]);  // what parbench does when its timeout expires
  EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  ncclResult_t async = ncclSuccess;
  ASSERT_EQ(ncclCommGetAsyncError(comms[1], &async), ncclSuccess);
  EXPECT_NE(async, ncclSuccess) << "the peer learns that the communicator was aborted";
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("rank 0 aborted"), std::string::npos);
  ncclCommDestroy(comms[1]);
  cudaStreamDestroy(s);
  cudaFree(buf);
}

TEST(NcclEmu, MismatchedCollectivesFailTheCommunicatorNamingBoth) {
  std::vector<ncclResult_t> async(2, ncclSuccess);
  std::vector<std::string> why(2);
  with_ranks(2, [&](int r, ncclComm_t comm, cudaStream_t s) {
    auto* d = to_device(std::vector<float>(8, 1.0f));
    ASSERT_EQ(ncclAllReduce(d, d, r == 0 ? 4 : 8, ncclFloat32, ncclSum, comm, s), ncclSuccess);
    cudaStreamSynchronize(s);
    ncclCommGetAsyncError(comm, &async[std::size_t(r)]);
    why[std::size_t(r)] = ncclGetLastError(nullptr);
    cudaFree(d);
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_NE(async[std::size_t(r)], ncclSuccess);
    EXPECT_NE(why[std::size_t(r)].find("ncclAllReduce of 4 float32 sum"), std::string::npos) << why[std::size_t(r)];
    EXPECT_NE(why[std::size_t(r)].find("ncclAllReduce of 8 float32 sum"), std::string::npos) << why[std::size_t(r)];
  }
}

TEST(NcclEmu, SplitOrdersByKeyAndDropsNoColor) {
  with_ranks(4, [&](int r, ncclComm_t comm, cudaStream_t s) {
    ncclComm_t sub = nullptr;
    const int color = r == 3 ? NCCL_SPLIT_NOCOLOR : r % 2;  // {0, 2} and {1}; rank 3 out
    ASSERT_EQ(ncclCommSplit(comm, color, -r, &sub, nullptr), ncclSuccess);
    if (r == 3) {
      EXPECT_EQ(sub, nullptr);
      return;
    }
    int size = 0, rank = -1;
    ncclCommCount(sub, &size);
    ncclCommUserRank(sub, &rank);
    EXPECT_EQ(size, r % 2 == 0 ? 2 : 1);
    if (r == 0) {
      EXPECT_EQ(rank, 1);  // key -0 > key -2: rank 2 comes first
    }
    if (r == 2) {
      EXPECT_EQ(rank, 0);
    }
    auto* d = to_device(std::vector<int>(3, r + 1));
    ASSERT_EQ(ncclAllReduce(d, d, 3, ncclInt32, ncclSum, sub, s), ncclSuccess);
    for (int v : to_host(d, 3, s)) EXPECT_EQ(v, r % 2 == 0 ? 1 + 3 : 2);
    cudaFree(d);
    ncclCommDestroy(sub);
  });
}

TEST(NcclEmu, BadUseIsRefusedWithAReason) {
  ncclComm_t comms[2];
  int same[2] = {1, 1};
  EXPECT_EQ(ncclCommInitAll(comms, 2, same), ncclInvalidUsage);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("duplicate GPU 1"), std::string::npos);
  int devs[2] = {0, 1};
  ASSERT_EQ(ncclCommInitAll(comms, 2, devs), ncclSuccess);
  cudaSetDevice(0);
  std::vector<float> pageable(16);
  EXPECT_EQ(ncclAllReduce(pageable.data(), pageable.data(), 16, ncclFloat32, ncclSum, comms[0], nullptr),
            ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("send buffer"), std::string::npos);
  void* d = nullptr;
  cudaMalloc(&d, 64);
  EXPECT_EQ(ncclAllReduce(d, d, 32, ncclFloat32, ncclSum, comms[0], nullptr), ncclInvalidArgument)  // 128 > 64 bytes
      << "a count past the allocation's end";
  EXPECT_EQ(ncclReduce(d, d, 4, ncclFloat32, ncclSum, 5, comms[0], nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclAllReduce(d, d, 4, ncclFloat8e4m3, ncclSum, comms[0], nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage);
  cudaFree(d);
  ncclCommDestroy(comms[0]);
  ncclCommDestroy(comms[1]);
}

// ncclAllReduce on a capturing stream is recorded, not run; each launch of the graph runs a fresh collective on
// the input of that moment.
TEST(NcclEmu, CapturedAllReduceRunsAtEveryGraphLaunch) {
  const int n = 2;
  const std::size_t count = 257;
  with_ranks(n, [&](int r, ncclComm_t comm, cudaStream_t s) {
    float* send = to_device(std::vector<float>(count, 0.f));
    float* recv = to_device(std::vector<float>(count, -1.f));
    ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    ASSERT_EQ(ncclAllReduce(send, recv, count, ncclFloat32, ncclSum, comm, s), ncclSuccess);
    cudaGraph_t graph = nullptr;
    ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
    EXPECT_EQ(to_host(recv, count, s)[0], -1.f) << "rank " << r << ": captured, not run";
    cudaGraphExec_t exec = nullptr;
    ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    for (int launch = 1; launch <= 3; ++launch) {
      std::vector<float> in(count);
      for (std::size_t i = 0; i < count; ++i) in[i] = float((r + 1) * launch * int(i % 5 + 1));
      ASSERT_EQ(cudaMemcpy(send, in.data(), count * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
      ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
      const std::vector<float> out = to_host(recv, count, s);
      std::size_t wrong = 0;
      for (std::size_t i = 0; i < count; ++i) wrong += out[i] != float(3 * launch * int(i % 5 + 1));
      EXPECT_EQ(wrong, 0u) << "rank " << r << ", launch " << launch;
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaFree(send);
    cudaFree(recv);
  });
}

}  // namespace
