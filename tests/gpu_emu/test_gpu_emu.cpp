// The emulated GPU against CUDA's documented semantics: devices, capacity, stream ordering (legacy, blocking,
// non-blocking), events, cudaFree's implicit synchronisation, checked memory kinds and kernel arguments, sticky
// faults, cuBLAS and cuBLASLt, and the API counters. Gates (operations that wait for the test) make the ordering observable.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <future>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "device/emu/emu.h"
#include "tests/simt/selftest_kernels.h"

namespace parbench::gpu_emu {
namespace {

using namespace std::chrono_literals;

// An operation on `stream` that holds the stream until open() is called.
struct Gate {
  std::promise<void> p;
  std::shared_future<void> f = p.get_future().share();
  explicit Gate(cudaStream_t stream) {
    auto fut = f;
    enqueue(resolve_stream(stream), "test gate", [fut] { fut.wait(); });
  }
  void open() { p.set_value(); }
};

// True when `call` is still blocked after 50 ms; joins it after `then` (which should release it).
template <class F, class G>
bool blocks(F call, G then) {
  auto done = std::async(std::launch::async, call);
  const bool blocked = done.wait_for(50ms) == std::future_status::timeout;
  then();
  done.get();
  return blocked;
}

std::string error_text(cudaError_t e) { return cudaGetErrorString(e); }

TEST(GpuEmuDevices, CountCurrentDevicePerThreadAndProperties) {
  int n = 0;
  ASSERT_EQ(cudaGetDeviceCount(&n), cudaSuccess);
  EXPECT_EQ(n, 4);
  ASSERT_EQ(cudaSetDevice(2), cudaSuccess);
  int d = -1;
  std::thread([&] { cudaGetDevice(&d); }).join();
  EXPECT_EQ(d, 0) << "a new host thread starts on device 0";
  cudaGetDevice(&d);
  EXPECT_EQ(d, 2);
  EXPECT_EQ(cudaSetDevice(4), cudaErrorInvalidDevice);
  EXPECT_NE(error_text(cudaErrorInvalidDevice).find("PARBENCH_EMU_GPUS"), std::string::npos);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "cudaGetLastError resets a non-sticky error";
  cudaDeviceProp p{};
  ASSERT_EQ(cudaGetDeviceProperties(&p, 1), cudaSuccess);
  EXPECT_NE(std::string(p.name).find("emulated"), std::string::npos);
  EXPECT_EQ(p.sharedMemPerBlockOptin, 227u * 1024);
  cudaSetDevice(0);
}

TEST(GpuEmuMemory, CapacityAndMemGetInfo) {
  cudaSetDevice(1);
  std::size_t free0 = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free0, &total), cudaSuccess);
  EXPECT_EQ(total, std::size_t(64) << 20);  // PARBENCH_EMU_GPU_MEMORY=64M in ctest
  void* a = nullptr;
  ASSERT_EQ(cudaMalloc(&a, 40 << 20), cudaSuccess);
  std::size_t free1 = 0;
  cudaMemGetInfo(&free1, &total);
  EXPECT_EQ(free0 - free1, std::size_t(40) << 20);
  void* b = nullptr;
  EXPECT_EQ(cudaMalloc(&b, 40 << 20), cudaErrorMemoryAllocation);
  EXPECT_EQ(b, nullptr);
  EXPECT_EQ(cudaGetLastError(), cudaErrorMemoryAllocation);
  EXPECT_EQ(cudaFree(a), cudaSuccess);
  EXPECT_EQ(cudaFree(a), cudaErrorInvalidValue) << "double free";
  EXPECT_NE(error_text(cudaErrorInvalidValue).find("already freed"), std::string::npos);
  cudaGetLastError();
  cudaSetDevice(0);
}

TEST(GpuEmuCopies, KindsAreCheckedAndRoundTripIsExact) {
  std::vector<float> host(1000), back(1000, 0.f);
  std::mt19937 rng(7);
  for (float& x : host) x = std::uniform_real_distribution<float>(-1, 1)(rng);
  float* dev = nullptr;
  ASSERT_EQ(cudaMalloc(&dev, 4000), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(host.data(), dev, 4000, cudaMemcpyHostToDevice), cudaErrorInvalidValue) << "wrong kind";
  EXPECT_NE(error_text(cudaErrorInvalidValue).find("cudaMemcpyHostToDevice"), std::string::npos);
  EXPECT_EQ(cudaMemcpy(dev, host.data(), 4004, cudaMemcpyHostToDevice), cudaErrorInvalidValue) << "past the end";
  EXPECT_NE(error_text(cudaErrorInvalidValue).find("past the end"), std::string::npos);
  cudaGetLastError();
  ASSERT_EQ(cudaMemcpy(dev, host.data(), 4000, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(back.data(), dev, 4000, cudaMemcpyDefault), cudaSuccess);
  EXPECT_EQ(std::memcmp(host.data(), back.data(), 4000), 0);
  ASSERT_EQ(cudaFree(dev), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(back.data(), dev, 4000, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
  EXPECT_NE(error_text(cudaErrorInvalidValue).find("freed memory"), std::string::npos);
  cudaGetLastError();
}

TEST(GpuEmuStreams, LegacyStreamWaitsForBlockingStreamsNotForNonBlockingOnes) {
  cudaStream_t blocking, non_blocking;
  ASSERT_EQ(cudaStreamCreate(&blocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&non_blocking, cudaStreamNonBlocking), cudaSuccess);
  int* dev = nullptr;
  int host = 0;
  ASSERT_EQ(cudaMalloc(&dev, sizeof(int)), cudaSuccess);
  {
    Gate g(blocking);
    EXPECT_TRUE(blocks([&] { cudaMemcpy(&host, dev, sizeof(int), cudaMemcpyDeviceToHost); }, [&] { g.open(); }));
  }
  {
    Gate g(non_blocking);
    EXPECT_FALSE(blocks([&] { cudaMemcpy(&host, dev, sizeof(int), cudaMemcpyDeviceToHost); }, [] {}));
    EXPECT_EQ(cudaStreamQuery(non_blocking), cudaErrorNotReady);
    g.open();
    EXPECT_EQ(cudaStreamSynchronize(non_blocking), cudaSuccess);
    EXPECT_EQ(cudaStreamQuery(non_blocking), cudaSuccess);
  }
  cudaFree(dev);
  cudaStreamDestroy(blocking);
  cudaStreamDestroy(non_blocking);
}

TEST(GpuEmuStreams, EventsOrderStreamsAcrossDevicesAndTimeTheEmulatedWork) {
  cudaSetDevice(0);
  cudaStream_t s0;
  cudaStreamCreate(&s0);
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaSetDevice(1);
  cudaStream_t s1;
  cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
  cudaSetDevice(0);
  ASSERT_EQ(cudaEventRecord(start, s0), cudaSuccess);
  Gate g(s0);
  ASSERT_EQ(cudaEventRecord(stop, s0), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(s1, stop, 0), cudaSuccess) << "a stream may wait for another GPU's event";
  EXPECT_EQ(cudaEventQuery(stop), cudaErrorNotReady);
  float ms = 0;
  EXPECT_EQ(cudaEventElapsedTime(&ms, start, stop), cudaErrorNotReady);
  EXPECT_TRUE(blocks([&] { cudaStreamSynchronize(s1); }, [&] {
    std::this_thread::sleep_for(20ms);
    g.open();
  }));
  ASSERT_EQ(cudaEventSynchronize(stop), cudaSuccess);
  ASSERT_EQ(cudaEventElapsedTime(&ms, start, stop), cudaSuccess);
  EXPECT_GE(ms, 50.f) << "the gate held the stream for at least 50 ms";
  cudaSetDevice(1);
  EXPECT_EQ(cudaEventRecord(start, s1), cudaErrorInvalidResourceHandle) << "event of GPU 0 on a stream of GPU 1";
  cudaGetLastError();
  cudaSetDevice(0);
  cudaStreamDestroy(s0);
  cudaStreamDestroy(s1);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
}

TEST(GpuEmuMemory, CudaFreeWaitsForTheDeviceAndItsPeers) {
  cudaSetDevice(2);
  cudaStream_t s2;
  cudaStreamCreate(&s2);
  cudaSetDevice(1);
  void* p = nullptr;
  ASSERT_EQ(cudaMalloc(&p, 256), cudaSuccess);
  {
    Gate g(s2);  // GPU 2 busy, no peer access with GPU 1: freeing on GPU 1 does not wait for it
    EXPECT_FALSE(blocks([&] { cudaSetDevice(1), cudaFree(p); }, [] {}));
    g.open();
  }
  ASSERT_EQ(cudaMalloc(&p, 256), cudaSuccess);
  ASSERT_EQ(cudaDeviceEnablePeerAccess(2, 0), cudaSuccess);
  EXPECT_EQ(cudaDeviceEnablePeerAccess(2, 0), cudaErrorPeerAccessAlreadyEnabled);
  cudaGetLastError();
  {
    Gate g(s2);  // now the peer's work holds cudaFree back
    EXPECT_TRUE(blocks([&] { cudaSetDevice(1), cudaFree(p); }, [&] { g.open(); }));
  }
  cudaDeviceDisablePeerAccess(2);
  cudaStreamDestroy(s2);
  cudaSetDevice(0);
}

TEST(GpuEmuLaunch, KernelRunsOnItsStreamAfterEarlierWork) {
  const int n = 4096, block = 256;
  std::vector<int> in(n), out(n / block, -1);
  for (int i = 0; i < n; ++i) in[i] = i % 97;
  int *d_in, *d_out;
  cudaMalloc(&d_in, n * sizeof(int));
  cudaMalloc(&d_out, out.size() * sizeof(int));
  cudaStream_t s;
  cudaStreamCreate(&s);
  ASSERT_EQ(cudaMemcpyAsync(d_in, in.data(), n * sizeof(int), cudaMemcpyHostToDevice, s), cudaSuccess);
  cuda_kernels::block_sum(d_out, d_in, n, block, s);
  ASSERT_EQ(cudaMemcpyAsync(out.data(), d_out, out.size() * sizeof(int), cudaMemcpyDeviceToHost, s), cudaSuccess);
  for (std::size_t b = 0; b < out.size(); ++b) {
    int want = 0;
    for (int i = 0; i < block; ++i) want += in[b * block + i];
    EXPECT_EQ(out[b], want) << "block " << b;
  }
  cudaStreamDestroy(s);
  cudaFree(d_in);
  cudaFree(d_out);
}

TEST(GpuEmuLaunch, BadStreamDeviceAndBadPointersAreReportedWithTheAllocation) {
  cudaSetDevice(3);  // this test leaves GPU 3 with a sticky fault
  cudaStream_t s3;
  cudaStreamCreate(&s3);
  cudaSetDevice(0);
  int* d0 = nullptr;
  cudaMalloc(&d0, 1024);
  try {
    cuda_kernels::block_sum(d0, d0, 256, 256, s3);
    FAIL() << "a launch into GPU 3's stream with GPU 0 current must fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("while GPU 0 is current"), std::string::npos) << e.what();
  }
  cudaSetDevice(3);
  std::vector<int> pageable(256, 1);
  int* d3 = nullptr;
  cudaMalloc(&d3, 1024);
  try {
    cuda_kernels::block_sum(d3, pageable.data(), 256, 256, s3);
    FAIL() << "a kernel argument in pageable host memory must fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pointer argument 1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("pageable host memory"), std::string::npos) << e.what();
  }
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorIllegalAddress) << "the fault is sticky";
  void* more = nullptr;
  EXPECT_EQ(cudaMalloc(&more, 16), cudaErrorIllegalAddress);
  try {
    cuda_kernels::block_sum(d3, d0, 256, 256, s3);  // GPU 0 memory from GPU 3 without peer access
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("illegal memory access"), std::string::npos) << e.what();
  }
  cudaSetDevice(0);
  cudaFree(d0);
}

TEST(GpuEmuCublas, GemmExMatchesColumnMajorReferenceForEveryOp) {
  const int m = 5, n = 7, k = 3;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  cublasHandle_t h;
  ASSERT_EQ(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
  cudaStream_t s;
  cudaStreamCreate(&s);
  ASSERT_EQ(cublasSetStream(h, s), CUBLAS_STATUS_SUCCESS);
  for (auto ta : {CUBLAS_OP_N, CUBLAS_OP_T})
    for (auto tb : {CUBLAS_OP_N, CUBLAS_OP_T}) {
      const int lda = (ta == CUBLAS_OP_N ? m : k) + 2, ldb = (tb == CUBLAS_OP_N ? k : n) + 1, ldc = m + 3;
      std::vector<float> A(std::size_t(lda) * (ta == CUBLAS_OP_N ? k : m)), B(std::size_t(ldb) * (tb == CUBLAS_OP_N ? n : k)),
          C(std::size_t(ldc) * n);
      for (auto* v : {&A, &B, &C})
        for (float& x : *v) x = u(rng);
      float *dA, *dB, *dC;
      cudaMalloc(&dA, A.size() * 4), cudaMalloc(&dB, B.size() * 4), cudaMalloc(&dC, C.size() * 4);
      cudaMemcpy(dA, A.data(), A.size() * 4, cudaMemcpyHostToDevice);
      cudaMemcpy(dB, B.data(), B.size() * 4, cudaMemcpyHostToDevice);
      cudaMemcpy(dC, C.data(), C.size() * 4, cudaMemcpyHostToDevice);
      const float alpha = 0.5f, beta = 2.f;
      ASSERT_EQ(cublasGemmEx(h, ta, tb, m, n, k, &alpha, dA, CUDA_R_32F, lda, dB, CUDA_R_32F, ldb, &beta, dC,
                             CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                CUBLAS_STATUS_SUCCESS);
      std::vector<float> got(C.size());
      cudaMemcpyAsync(got.data(), dC, C.size() * 4, cudaMemcpyDeviceToHost, s);
      cudaStreamSynchronize(s);
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < m; ++i) {
          double acc = 0;
          for (int l = 0; l < k; ++l)
            acc += double(ta == CUBLAS_OP_N ? A[l * lda + i] : A[i * lda + l]) *
                   double(tb == CUBLAS_OP_N ? B[j * ldb + l] : B[l * ldb + j]);
          EXPECT_NEAR(got[j * ldc + i], alpha * acc + beta * C[j * ldc + i], 1e-5) << i << "," << j;
        }
      EXPECT_EQ(got[m], C[m]) << "rows past m in the leading dimension stay untouched";
      EXPECT_EQ(cublasGemmEx(h, ta, tb, m, n, k, &alpha, dA, CUDA_R_32F, (ta == CUBLAS_OP_N ? m : k) - 1, dB,
                             CUDA_R_32F, ldb, &beta, dC, CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                CUBLAS_STATUS_INVALID_VALUE)
          << "lda below the stored rows of A";
      cudaFree(dA), cudaFree(dB), cudaFree(dC);
    }
  cudaSetDevice(1);
  const float one = 1, zero = 0;
  float* dx = nullptr;
  cudaMalloc(&dx, 64);
  EXPECT_EQ(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, dx, CUDA_R_32F, 2, dx, CUDA_R_32F, 2, &zero, dx,
                         CUDA_R_32F, 2, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_EXECUTION_FAILED)
      << "a handle of GPU 0 used while GPU 1 is current";
  cudaFree(dx);
  cudaSetDevice(0);
  cublasDestroy(h);
  cudaStreamDestroy(s);
}

// cublasLtMatmul as parbench calls it: A (k x m) transposed, B (k x n), D = C in place, with the epilogues
// DEFAULT, BIAS, GELU and GELU_BIAS against a float64 reference (bias before GELU, GELU's tanh form); and the
// refusals: an epilogue not emulated, layouts that do not chain, a BIAS epilogue without its pointer.
TEST(GpuEmuCublasLt, MatmulEpiloguesMatchTheReference) {
  const int m = 6, n = 5, k = 4;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> A(std::size_t(k) * m), B(std::size_t(k) * n), bias(m);
  for (auto* v : {&A, &B, &bias})
    for (float& x : *v) x = u(rng);
  float *dA, *dB, *dD, *dbias;
  cudaMalloc(&dA, A.size() * 4), cudaMalloc(&dB, B.size() * 4), cudaMalloc(&dD, std::size_t(m) * n * 4);
  cudaMalloc(&dbias, bias.size() * 4);
  cudaMemcpy(dA, A.data(), A.size() * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(dB, B.data(), B.size() * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(dbias, bias.data(), bias.size() * 4, cudaMemcpyHostToDevice);
  cudaStream_t s;
  cudaStreamCreate(&s);
  cublasLtHandle_t h;
  ASSERT_EQ(cublasLtCreate(&h), CUBLAS_STATUS_SUCCESS);
  cublasLtMatrixLayout_t la, lb, ld, bad;
  cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, k, m, k);
  cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, k, n, k);
  cublasLtMatrixLayoutCreate(&ld, CUDA_R_32F, m, n, m);
  cublasLtMatrixLayoutCreate(&bad, CUDA_R_32F, k + 1, n, k + 1);
  const float alpha = 1.f, beta = 0.f;
  auto run = [&](cublasLtEpilogue_t epi, bool with_bias, cublasLtMatrixLayout_t b_layout) {
    cublasLtMatmulDesc_t d;
    cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    const cublasOperation_t t = CUBLAS_OP_T;
    EXPECT_EQ(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi),
              CUBLAS_STATUS_SUCCESS);
    if (with_bias) {
      EXPECT_EQ(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &dbias, sizeof dbias),
                CUBLAS_STATUS_SUCCESS);
    }
    cublasStatus_t st = cublasLtMatmul(h, d, &alpha, dA, la, dB, b_layout, &beta, dD, ld, dD, ld, nullptr, nullptr,
                                       0, s);
    cublasLtMatmulDescDestroy(d);
    return st;
  };
  for (auto epi : {CUBLASLT_EPILOGUE_DEFAULT, CUBLASLT_EPILOGUE_BIAS, CUBLASLT_EPILOGUE_GELU,
                   CUBLASLT_EPILOGUE_GELU_BIAS}) {
    const bool has_bias = epi == CUBLASLT_EPILOGUE_BIAS || epi == CUBLASLT_EPILOGUE_GELU_BIAS;
    const bool has_gelu = epi == CUBLASLT_EPILOGUE_GELU || epi == CUBLASLT_EPILOGUE_GELU_BIAS;
    std::vector<float> poison(std::size_t(m) * n, std::nanf("")), got(poison.size());
    cudaMemcpy(dD, poison.data(), poison.size() * 4, cudaMemcpyHostToDevice);
    ASSERT_EQ(run(epi, has_bias, lb), CUBLAS_STATUS_SUCCESS) << "epilogue " << int(epi);
    cudaMemcpyAsync(got.data(), dD, got.size() * 4, cudaMemcpyDeviceToHost, s);
    cudaStreamSynchronize(s);
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) {
        double v = has_bias ? bias[i] : 0.0;
        for (int l = 0; l < k; ++l) v += double(A[i * k + l]) * double(B[j * k + l]);
        if (has_gelu) v = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
        EXPECT_NEAR(got[j * m + i], v, 1e-5) << "epilogue " << int(epi) << " at " << i << "," << j;
      }
  }
  {  // the heuristic answers one algorithm for a matmul it runs, none for layouts that do not chain
    cublasLtMatmulDesc_t d;
    cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    const cublasOperation_t t = CUBLAS_OP_T;
    cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t);
    cublasLtMatmulPreference_t pref;
    ASSERT_EQ(cublasLtMatmulPreferenceCreate(&pref), CUBLAS_STATUS_SUCCESS);
    const std::uint64_t ws = 0;
    EXPECT_EQ(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws),
              CUBLAS_STATUS_SUCCESS);
    cublasLtMatmulHeuristicResult_t found{};
    int count = -1;
    EXPECT_EQ(cublasLtMatmulAlgoGetHeuristic(h, d, la, lb, ld, ld, pref, 1, &found, &count), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(count, 1);
    EXPECT_EQ(found.state, CUBLAS_STATUS_SUCCESS);
    EXPECT_NE(cublasLtMatmulAlgoGetHeuristic(h, d, la, bad, ld, ld, pref, 1, &found, &count), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(count, 0);
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatmulDescDestroy(d);
  }
  EXPECT_EQ(run(CUBLASLT_EPILOGUE_RELU, false, lb), CUBLAS_STATUS_NOT_SUPPORTED) << "an epilogue not emulated";
  EXPECT_EQ(run(CUBLASLT_EPILOGUE_DEFAULT, false, bad), CUBLAS_STATUS_INVALID_VALUE) << "B's k is not A's";
  EXPECT_EQ(run(CUBLASLT_EPILOGUE_BIAS, false, lb), CUBLAS_STATUS_INVALID_VALUE) << "BIAS without its pointer";
  cudaSetDevice(1);  // the handle's GPU must be current, as for cuBLAS (the checks they share)
  EXPECT_EQ(run(CUBLASLT_EPILOGUE_DEFAULT, false, lb), CUBLAS_STATUS_EXECUTION_FAILED)
      << "a handle of GPU 0 used while GPU 1 is current";
  cudaSetDevice(0);
  for (auto* l : {la, lb, ld, bad}) cublasLtMatrixLayoutDestroy(l);
  cublasLtDestroy(h);
  cudaStreamDestroy(s);
  cudaFree(dA), cudaFree(dB), cudaFree(dD), cudaFree(dbias);
}

TEST(GpuEmuCounters, CountsPerThreadAndPerRegion) {
  const ApiCounts before = thread_counts();
  region_push("outer");
  void* p = nullptr;
  cudaMalloc(&p, 64);
  region_push("inner");
  cudaDeviceSynchronize();
  region_pop();
  cudaFree(p);
  region_pop();
  const ApiCounts after = thread_counts();
  EXPECT_EQ(after[Count::malloc] - before[Count::malloc], 1);
  EXPECT_EQ(after[Count::free] - before[Count::free], 1);
  EXPECT_EQ(after[Count::device_sync] - before[Count::device_sync], 2) << "cudaDeviceSynchronize and cudaFree's";
  auto regions = finished_regions();
  ASSERT_GE(regions.size(), 2u);
  const RegionRecord& inner = regions[regions.size() - 2];
  const RegionRecord& outer = regions.back();
  EXPECT_EQ(inner.name, "inner");
  EXPECT_EQ(inner.counts[Count::device_sync], 1);
  EXPECT_EQ(inner.counts[Count::malloc], 0);
  EXPECT_EQ(outer.name, "outer");
  EXPECT_EQ(outer.counts[Count::malloc], 1);
  EXPECT_EQ(outer.counts[Count::host_wait], 2);
  EXPECT_LT(outer.begin, inner.begin);  // one order for pushes and pops: outer opened first, closed last
  EXPECT_LT(inner.begin, inner.end);
  EXPECT_LT(inner.end, outer.end);
}

TEST(GpuEmuCounters, LegacyStreamUsesAreCountedWhenAllowed) {
  cudaSetDevice(0);
  cudaGetLastError();  // an earlier test's fault on GPU 3 may still be this thread's last error
  int *dev = nullptr, *out = nullptr;
  float *m = nullptr, *m2 = nullptr;  // the legacy stream's matrices, and s's (nothing orders the two streams' GEMMs)
  cudaMalloc(&dev, 256 * sizeof(int));
  cudaMalloc(&out, 256 / 64 * sizeof(int));
  cudaMalloc(&m, 3 * 4 * sizeof(float));
  cudaMalloc(&m2, 3 * 4 * sizeof(float));
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cudaEvent_t e;
  cudaEventCreate(&e);
  cublasHandle_t h;
  cublasCreate(&h);
  std::vector<int> host(256, 3);
  const float one = 1, zero = 0;
  auto gemm = [&](float* x) {
    return cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, x, CUDA_R_32F, 2, x + 4, CUDA_R_32F, 2, &zero,
                        x + 8, CUDA_R_32F, 2, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  };
  const ApiCounts before = thread_counts();
  region_push("legacy uses");
  ASSERT_EQ(cudaMemcpy(dev, host.data(), 1024, cudaMemcpyHostToDevice), cudaSuccess);  // 1: synchronous, implicit
  ASSERT_EQ(cudaMemsetAsync(m, 0, 48, nullptr), cudaSuccess);                         // 2
  ASSERT_EQ(cudaMemsetAsync(m2, 0, 48, s), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(e, s), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(nullptr, e, 0), cudaSuccess);  // 3
  cuda_kernels::block_sum(out, dev, 256, 64, nullptr);          // 4
  ASSERT_EQ(cudaEventRecord(e, cudaStreamLegacy), cudaSuccess);  // 5
  ASSERT_EQ(cudaStreamWaitEvent(s, e, 0), cudaSuccess);           // s's kernel reads what the cudaMemcpy wrote
  cuda_kernels::block_sum(out, dev, 256, 64, s);
  ASSERT_EQ(gemm(m), CUBLAS_STATUS_SUCCESS);                     // 6: a handle without a stream
  ASSERT_EQ(cublasSetStream(h, s), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(gemm(m2), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cudaStreamSynchronize(nullptr), cudaSuccess);  // 7
  region_pop();
  // Not uses: queries, a created stream's synchronisation, the device's, allocation.
  cudaStreamQuery(nullptr);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  int* more = nullptr;
  cudaMalloc(&more, 16);
  cudaFree(more);
  std::vector<int> sums(4);
  ASSERT_EQ(cudaMemcpyAsync(sums.data(), out, sums.size() * sizeof(int), cudaMemcpyDeviceToHost, s), cudaSuccess);
  EXPECT_EQ(sums[3], 64 * 3);
  const ApiCounts after = thread_counts();
  EXPECT_EQ(after[Count::legacy_stream] - before[Count::legacy_stream], 7);
  const RegionRecord r = finished_regions().back();
  EXPECT_EQ(r.name, "legacy uses");
  EXPECT_EQ(r.counts[Count::legacy_stream], 7);
  int on_other_thread = -1;
  std::thread([&] {
    const auto start = thread_counts()[Count::legacy_stream];
    cudaMemset(dev, 0, 16);
    on_other_thread = int(thread_counts()[Count::legacy_stream] - start);
  }).join();
  EXPECT_EQ(on_other_thread, 1);
  EXPECT_EQ(thread_counts()[Count::legacy_stream], after[Count::legacy_stream]) << "counted on the calling thread";
  EXPECT_STREQ(count_name(Count::legacy_stream), "legacy_stream");
  cudaDeviceSynchronize();
  cublasDestroy(h);
  cudaEventDestroy(e);
  cudaStreamDestroy(s);
  cudaFree(dev), cudaFree(out), cudaFree(m), cudaFree(m2);
}

}  // namespace
}  // namespace parbench::gpu_emu
