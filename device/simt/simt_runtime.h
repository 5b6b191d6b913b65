// simt emulator, part 4: host side -- settings (schedule, stack size, OS threads), the emulated
// launch behind PB_LAUNCH, and the CUDA runtime calls our launchers use (in-order, synchronous).
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include "device/simt/launch_spec.h"
#include "device/simt/simt_types.h"

namespace parbench::simt {

// ---- settings. Defaults come from the environment on first use:
//   PARBENCH_SIMT_SCHEDULE = forward | reverse | random:SEED     (default forward)
//   PARBENCH_SIMT_STACK    = bytes per CUDA thread, suffix K or M  (default 256K, at least 16K)
//   PARBENCH_SIMT_THREADS  = OS threads that run blocks, 1..256    (default min(cores, 8))
// A bad value throws parbench::UsageError naming it and the accepted form.
enum class ScheduleKind { forward, reverse, random };
struct Schedule {
  ScheduleKind kind = ScheduleKind::forward;
  std::uint64_t seed = 0;  // random only
  bool operator==(const Schedule&) const = default;
};
Schedule parse_schedule(std::string_view text);
std::string schedule_name(const Schedule& s);
std::optional<Schedule> schedule_from_env();  // nullopt when PARBENCH_SIMT_SCHEDULE is unset
std::size_t parse_stack_size(std::string_view text);

void set_schedule(const Schedule& s);
Schedule schedule();
void set_stack_size(std::size_t bytes);  // rounded up to whole pages; applies to later launches
std::size_t stack_size();
void set_worker_threads(int n);
int worker_threads();

// Launch limits (sm_80/sm_90). Dynamic shared memory above the 48 KiB default needs
// cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes), as on a GPU;
// the opt-in maximum is sm_90's 227 KiB. Static __shared__ arrays are not counted (they are
// thread_local here); nvcc --resource-usage reports them.
constexpr unsigned kMaxThreadsPerBlock = 1024;
constexpr unsigned kMaxBlockDimXY = 1024, kMaxBlockDimZ = 64;
constexpr unsigned kMaxGridDimX = 2147483647u, kMaxGridDimYZ = 65535;
constexpr std::size_t kDefaultDynamicShared = 48 * 1024;
constexpr std::size_t kMaxDynamicShared = 227 * 1024;

// ---- launches
namespace detail {
template <class... P>
class KernelLaunch {
 public:
  KernelLaunch(void (*kernel)(P...), LaunchSpec spec) : kernel_(kernel), spec_(spec) {}
  template <class... A>
  void operator()(A&&... args) const {
    static_assert(sizeof...(A) == sizeof...(P), "PB_LAUNCH: wrong number of kernel arguments");
    // Converted once like CUDA's parameter buffer; every thread then gets its own copy.
    std::tuple<std::decay_t<P>...> params(std::forward<A>(args)...);
    struct Ctx {
      void (*kernel)(P...);
      const std::tuple<std::decay_t<P>...>* params;
    } ctx{kernel_, &params};
    launch(spec_, [](void* c) {
      auto* x = static_cast<Ctx*>(c);
      std::apply(x->kernel, *x->params);
    }, &ctx);
  }

 private:
  void (*kernel_)(P...);
  LaunchSpec spec_;
};
template <class... P>
KernelLaunch<P...> make_launch(void (*kernel)(P...), const char* name, dim3 grid, dim3 block, std::size_t shared,
                               const volatile void* /*stream: launches are synchronous*/, const char* file, int line) {
  return KernelLaunch<P...>(kernel, LaunchSpec{name, grid, block, shared, reinterpret_cast<const void*>(kernel), file, line});
}
}  // namespace detail

// ---- CUDA runtime subset. Memory is host memory; every call completes before it returns, which
// is one valid execution of CUDA's in-order stream semantics.
enum cudaError {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidDeviceFunction = 98,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorNotReady = 600,
};
using cudaError_t = cudaError;
enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };
struct CUstream_st;
struct CUevent_st;
using cudaStream_t = CUstream_st*;
using cudaEvent_t = CUevent_st*;
constexpr unsigned cudaStreamNonBlocking = 1, cudaEventDefault = 0, cudaEventDisableTiming = 2;

cudaError_t cudaMalloc(void** p, std::size_t bytes);
template <class T>
cudaError_t cudaMalloc(T** p, std::size_t bytes) { return cudaMalloc(reinterpret_cast<void**>(p), bytes); }
cudaError_t cudaFree(void* p);
cudaError_t cudaMallocHost(void** p, std::size_t bytes);
template <class T>
cudaError_t cudaMallocHost(T** p, std::size_t bytes) { return cudaMallocHost(reinterpret_cast<void**>(p), bytes); }
cudaError_t cudaFreeHost(void* p);
cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind, cudaStream_t s = nullptr);
cudaError_t cudaMemset(void* p, int value, std::size_t bytes);
cudaError_t cudaMemsetAsync(void* p, int value, std::size_t bytes, cudaStream_t s = nullptr);
template <class T>
cudaError_t cudaMemcpyToSymbol(T& symbol, const void* src, std::size_t bytes, std::size_t offset = 0,
                               cudaMemcpyKind kind = cudaMemcpyHostToDevice) {
  if (offset + bytes > sizeof(T)) return cudaErrorInvalidValue;
  return cudaMemcpy(reinterpret_cast<char*>(&symbol) + offset, src, bytes, kind);
}
cudaError_t cudaStreamCreate(cudaStream_t* s);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags = 0);
cudaError_t cudaEventCreate(cudaEvent_t* e);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned flags);
cudaError_t cudaEventDestroy(cudaEvent_t e);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s = nullptr);
cudaError_t cudaEventSynchronize(cudaEvent_t e);
cudaError_t cudaEventQuery(cudaEvent_t e);
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end);
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();
const char* cudaGetErrorString(cudaError_t e);
const char* cudaGetErrorName(cudaError_t e);
cudaError_t cudaGetDevice(int* d);
cudaError_t cudaSetDevice(int d);
cudaError_t cudaGetDeviceCount(int* n);
namespace detail {
cudaError_t set_max_dynamic_shared(const void* kernel, int bytes);
}
template <class... P>
cudaError_t cudaFuncSetAttribute(void (*kernel)(P...), cudaFuncAttribute attr, int value) {
  if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize) return cudaErrorInvalidValue;
  return detail::set_max_dynamic_shared(reinterpret_cast<const void*>(kernel), value);
}

}  // namespace parbench::simt
