// The emulator's stream settings end to end, one case per run (ctest sets the environment, CMakeLists.txt):
// PARBENCH_EMU_LEGACY_STREAM=error stops at the first use of a legacy default stream, and PARBENCH_EMU_KERNEL_DELAY_US
// slows kernels and GEMMs (not copies) so that a second stream's work is seen running meanwhile.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/simt/selftest_kernels.h"

namespace {

namespace kernels = parbench::cuda_kernels;

int failures = 0;
void check(bool ok, const std::string& what) {
  if (ok) return;
  std::printf("FAIL: %s\n", what.c_str());
  ++failures;
}
void ok(cudaError_t e, const char* what) { check(e == cudaSuccess, std::string(what) + ": " + cudaGetErrorString(e)); }

// One GEMM of 8x8 matrices on `h`'s stream (device memory at `m`, 3 * 64 floats).
void gemm(cublasHandle_t h, float* m) {
  const float one = 1, zero = 0;
  check(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 8, 8, 8, &one, m, CUDA_R_32F, 8, m + 64, CUDA_R_32F, 8, &zero,
                     m + 128, CUDA_R_32F, 8, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS,
        "cublasGemmEx");
}

// The work each legacy-stream case does, on `s` (nullptr: the legacy default stream). With PARBENCH_EMU_LEGACY_STREAM
// =error the program stops inside the call the case names; on a created stream everything runs.
struct Work {
  cudaStream_t s;
  float* dev = nullptr;
  int* out = nullptr;
  cudaEvent_t ev{};
  cublasHandle_t blas{};
  ncclComm_t comm{};
  Work(cudaStream_t stream) : s(stream) {
    ok(cudaMalloc(&dev, 256 * sizeof(float)), "cudaMalloc");
    ok(cudaMalloc(&out, 32 * sizeof(int)), "cudaMalloc");
    ok(cudaEventCreate(&ev), "cudaEventCreate");
    check(cublasCreate(&blas) == CUBLAS_STATUS_SUCCESS, "cublasCreate");
    int device = 0;
    cudaGetDevice(&device);
    check(ncclCommInitAll(&comm, 1, &device) == ncclSuccess, "ncclCommInitAll");
  }
  void copy() {
    std::vector<float> host(256, 1.f);
    if (s) ok(cudaMemcpyAsync(dev, host.data(), 1024, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
    else ok(cudaMemcpy(dev, host.data(), 1024, cudaMemcpyHostToDevice), "cudaMemcpy");
  }
  void memset_async() { ok(cudaMemsetAsync(dev, 0, 1024, s), "cudaMemsetAsync"); }
  void launch() { kernels::barrier_loop(out, 1, 32, 0, s); }
  void event_record() { ok(cudaEventRecord(ev, s), "cudaEventRecord"); }
  void wait_event() { ok(cudaStreamWaitEvent(s, ev, 0), "cudaStreamWaitEvent"); }
  void stream_sync() { ok(cudaStreamSynchronize(s), "cudaStreamSynchronize"); }
  void cublas() {
    if (s) check(cublasSetStream(blas, s) == CUBLAS_STATUS_SUCCESS, "cublasSetStream");
    gemm(blas, dev);
  }
  void nccl() { check(ncclAllReduce(dev, dev, 64, ncclFloat32, ncclSum, comm, s) == ncclSuccess, "ncclAllReduce"); }
};

int legacy_case(const std::string& name, int device) {
  const std::map<std::string, std::function<void(Work&)>> cases = {
      {"memcpy", &Work::copy},           {"memset_async", &Work::memset_async}, {"launch", &Work::launch},
      {"event_record", &Work::event_record}, {"wait_event", &Work::wait_event}, {"stream_sync", &Work::stream_sync},
      {"cublas", &Work::cublas},         {"nccl", &Work::nccl}};
  ok(cudaSetDevice(device), "cudaSetDevice");
  cudaStream_t stream = nullptr;
  ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  if (name == "non_blocking") {  // every case's work on a created stream: nothing stops
    Work w(stream);
    w.event_record();  // first, so that the wait has an event to wait for
    for (const auto& [n, f] : cases) f(w);
    ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    std::printf("%s: no legacy stream use\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
  }
  auto it = cases.find(name);
  if (it == cases.end()) return std::printf("unknown case %s\n", name.c_str()), 2;
  Work w(nullptr);
  ok(cudaEventRecord(w.ev, stream), "cudaEventRecord");
  it->second(w);
  std::printf("%s on the legacy stream returned: not caught\n", name.c_str());
  return 1;
}

// K empty kernels and a GEMM on a compute stream, each PARBENCH_EMU_KERNEL_DELAY_US long; once the first kernel
// is done, 30 copies, memsets and event records each on a communication stream, which would take longer than the
// compute if they were slowed too. The communication stream must finish while the compute still runs.
int overlap(long delay_us) {
  constexpr int K = 20, kOther = 30;
  check(delay_us >= 10000, "PARBENCH_EMU_KERNEL_DELAY_US must be at least 10000 for this case");
  cudaStream_t compute, comm;
  ok(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  ok(cudaStreamCreateWithFlags(&comm, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  int* out = nullptr;
  float *m = nullptr, *a = nullptr, *b = nullptr;
  ok(cudaMalloc(&out, 32 * sizeof(int)), "cudaMalloc");
  ok(cudaMalloc(&m, 192 * sizeof(float)), "cudaMalloc");
  ok(cudaMalloc(&a, 4096), "cudaMalloc");
  ok(cudaMalloc(&b, 4096), "cudaMalloc");
  ok(cudaMemsetAsync(m, 0, 192 * sizeof(float), compute), "cudaMemsetAsync");
  cublasHandle_t h;
  check(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS && cublasSetStream(h, compute) == CUBLAS_STATUS_SUCCESS, "cuBLAS");
  cudaEvent_t c0, c1, m1, mark;
  for (cudaEvent_t* e : {&c0, &c1, &m1, &mark}) ok(cudaEventCreate(e), "cudaEventCreate");
  kernels::barrier_loop(out, 1, 32, 0, compute);
  ok(cudaEventRecord(c0, compute), "cudaEventRecord");
  for (int i = 1; i < K; ++i) kernels::barrier_loop(out, 1, 32, 0, compute);
  gemm(h, m);
  ok(cudaEventRecord(c1, compute), "cudaEventRecord");
  ok(cudaStreamWaitEvent(comm, c0, 0), "cudaStreamWaitEvent");  // the communication starts after the first kernel
  for (int i = 0; i < kOther; ++i) {
    ok(cudaMemsetAsync(a, i, 4096, comm), "cudaMemsetAsync");
    ok(cudaMemcpyAsync(b, a, 4096, cudaMemcpyDeviceToDevice, comm), "cudaMemcpyAsync");
    ok(cudaEventRecord(mark, comm), "cudaEventRecord");
  }
  ok(cudaEventRecord(m1, comm), "cudaEventRecord");
  ok(cudaEventSynchronize(m1), "cudaEventSynchronize");
  const cudaError_t compute_state = cudaEventQuery(c1);
  check(compute_state == cudaErrorNotReady, "the compute stream had finished when the communication stream did (" +
                                                std::string(cudaGetErrorName(compute_state)) + ")");
  ok(cudaEventSynchronize(c1), "cudaEventSynchronize");
  float compute_ms = 0, comm_ms = 0;
  ok(cudaEventElapsedTime(&compute_ms, c0, c1), "cudaEventElapsedTime");
  ok(cudaEventElapsedTime(&comm_ms, c0, m1), "cudaEventElapsedTime");
  const double floor_ms = K * delay_us / 1000.0;  // K - 1 kernels and the GEMM after c0
  check(compute_ms >= floor_ms, "the compute took " + std::to_string(compute_ms) + " ms, less than K * delay " +
                                    std::to_string(floor_ms) + " ms");
  unsigned char last = 0;
  ok(cudaMemcpyAsync(&last, reinterpret_cast<unsigned char*>(b) + 4095, 1, cudaMemcpyDeviceToHost, comm), "cudaMemcpyAsync");
  check(last == kOther - 1, "the last copy's data");
  std::printf("%s: compute %.1f ms (%d kernels and a GEMM, %ld us each, after the first); the other stream's %d "
              "copies, memsets and event records done %.1f ms after the first kernel\n",
              failures ? "FAILED" : "ok", compute_ms, K - 1, delay_us, kOther, comm_ms);
  return failures ? 1 : 0;
}

// Reads the PARBENCH_EMU_STREAM_LOG of an overlap run: its kernels and GEMM on one stream, each at least
// `delay_us` long, and the 30 copies of another stream inside the span from the first kernel's start to the GEMM's
// end (the last copy, a read-back after the compute, outside).
int check_log(const char* path, long delay_us) {
  std::ifstream in(path);
  const nlohmann::json log = nlohmann::json::parse(in);
  check(log.at("dropped") == 0, "no op dropped");
  double compute_begin = 1e300, compute_end = 0;
  std::int64_t compute_stream = -1;
  int kernels_seen = 0, copies_inside = 0, copies = 0;
  for (const auto& op : log.at("ops")) {
    const std::string what = op.at("what");
    check(!op.at("legacy").get<bool>(), "an op on a legacy stream: " + what);
    if (what.rfind("kernel ", 0) != 0 && what.rfind("cublasGemmEx", 0) != 0) continue;
    const double start = op.at("start_us"), end = op.at("end_us");
    check(end - start >= double(delay_us), what + " lasted " + std::to_string(end - start) + " us");
    if (compute_stream < 0) compute_stream = op.at("stream");
    check(op.at("stream") == compute_stream, "every kernel on the compute stream");
    compute_begin = std::min(compute_begin, start), compute_end = std::max(compute_end, end);
    ++kernels_seen;
  }
  for (const auto& op : log.at("ops")) {
    if (op.at("what").get<std::string>().rfind("cudaMemcpyAsync", 0) != 0 || op.at("stream") == compute_stream) continue;
    ++copies;
    copies_inside += op.at("start_us") >= compute_begin && op.at("end_us") <= compute_end;
  }
  check(kernels_seen == 21, std::to_string(kernels_seen) + " kernels and GEMMs logged, 21 made");
  check(copies >= 30 && copies_inside == 30,
        std::to_string(copies_inside) + " of " + std::to_string(copies) + " copies ran while the compute ran");
  std::printf("%s: %zu ops logged; %d kernels and GEMMs on stream %lld over %.1f ms, %d copies of another stream "
              "inside that span\n",
              failures ? "FAILED" : "ok", log.at("ops").size(), kernels_seen, static_cast<long long>(compute_stream),
              (compute_end - compute_begin) / 1000, copies_inside);
  return failures ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "";
  if (what == "overlap") {
    const char* v = std::getenv("PARBENCH_EMU_KERNEL_DELAY_US");
    return overlap(v ? std::atol(v) : 0);
  }
  if (what == "check_log" && argc == 4) return check_log(argv[2], std::atol(argv[3]));
  if (!what.empty()) return legacy_case(what, argc > 2 ? std::atoi(argv[2]) : 0);
  std::printf("usage: %s overlap | check_log FILE DELAY_US | CASE [GPU]\n", argv[0]);
  return 2;
}
