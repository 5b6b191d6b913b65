// simt host runtime: settings from the environment, launch checks, the pool of OS threads that run
// blocks, and the CUDA runtime calls (host memory, synchronous streams, host-timed events).
#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <numeric>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/error.h"
#include "device/simt/block.h"
#include "device/simt/fiber.h"
#include "device/simt/pool.h"
#include "device/simt/simt_runtime.h"

namespace parbench::simt {

namespace {

constexpr std::size_t kMinStack = 16 * 1024, kMaxStack = 64u * 1024 * 1024, kDefaultStack = 256 * 1024;

int parse_threads(std::string_view text) {
  int n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || n < 1 || n > 256)
    throw UsageError("PARBENCH_SIMT_THREADS='" + std::string(text) +
                     "' is not a thread count; use an integer from 1 to 256");
  return n;
}

}  // namespace
namespace detail {
std::atomic<void (*)()> g_block_thread_hook{nullptr};
}
namespace {

// The one process-wide simt context.
struct Runtime {
  std::mutex m;
  Schedule schedule;
  std::size_t stack = kDefaultStack;
  int threads = 1;
  std::unordered_map<const void*, int> max_shared;  // cudaFuncSetAttribute per kernel
  detail::Pool pool;      // helpers of every launch
  detail::Pool resident;  // more threads for co-resident launches whose blocks spin

  Runtime() {
    if (auto s = schedule_from_env()) schedule = *s;
    if (const char* v = std::getenv("PARBENCH_SIMT_STACK"); v && *v) stack = parse_stack_size(v);
    threads = int(std::min(8u, std::max(1u, std::thread::hardware_concurrency())));
    if (const char* v = std::getenv("PARBENCH_SIMT_THREADS"); v && *v) threads = parse_threads(v);
  }
};
Runtime& runtime() {
  static Runtime r;  // a bad environment value throws here, and again on the next use
  return r;
}

std::string triple(const dim3& d) {
  return "(" + std::to_string(d.x) + "," + std::to_string(d.y) + "," + std::to_string(d.z) + ")";
}

void validate(const detail::LaunchSpec& s, std::size_t shared_limit) {
  const std::string what = "simt launch of " + std::string(s.name) + " at " + s.file + ":" + std::to_string(s.line) +
                           " with grid " + triple(s.grid) + ", block " + triple(s.block) + " and " +
                           std::to_string(s.shared_bytes) + " bytes of dynamic shared memory: ";
  auto fail = [&](const std::string& why) { throw Error(what + why); };
  if (s.block.x == 0 || s.block.y == 0 || s.block.z == 0) fail("a block dimension is 0");
  if (s.block.x > kMaxBlockDimXY) fail("blockDim.x " + std::to_string(s.block.x) + " exceeds 1024");
  if (s.block.y > kMaxBlockDimXY) fail("blockDim.y " + std::to_string(s.block.y) + " exceeds 1024");
  if (s.block.z > kMaxBlockDimZ) fail("blockDim.z " + std::to_string(s.block.z) + " exceeds 64");
  const std::uint64_t threads = std::uint64_t(s.block.x) * s.block.y * s.block.z;
  if (threads > kMaxThreadsPerBlock)
    fail(std::to_string(threads) + " threads per block exceed the limit of 1024");
  if (s.grid.x == 0 || s.grid.y == 0 || s.grid.z == 0) fail("a grid dimension is 0");
  if (s.grid.x > kMaxGridDimX) fail("gridDim.x " + std::to_string(s.grid.x) + " exceeds 2147483647");
  if (s.grid.y > kMaxGridDimYZ) fail("gridDim.y " + std::to_string(s.grid.y) + " exceeds 65535");
  if (s.grid.z > kMaxGridDimYZ) fail("gridDim.z " + std::to_string(s.grid.z) + " exceeds 65535");
  if (s.shared_bytes > shared_limit)
    fail("the dynamic shared memory exceeds the kernel's limit of " + std::to_string(shared_limit) + " bytes" +
         (shared_limit == kDefaultDynamicShared
              ? " (the 48 KiB default; raise it up to 232448 bytes = 227 KiB with cudaFuncSetAttribute(kernel, "
                "cudaFuncAttributeMaxDynamicSharedMemorySize, bytes))"
              : " set with cudaFuncSetAttribute"));
}

}  // namespace

// ---- settings
Schedule parse_schedule(std::string_view text) {
  if (text == "forward") return {ScheduleKind::forward, 0};
  if (text == "reverse") return {ScheduleKind::reverse, 0};
  if (text.substr(0, 7) == "random:" && text.size() > 7) {
    std::uint64_t seed = 0;
    auto digits = text.substr(7);
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), seed);
    if (ec == std::errc() && end == digits.data() + digits.size()) return {ScheduleKind::random, seed};
  }
  throw UsageError("simt schedule '" + std::string(text) +
                   "' is not valid; use forward, reverse or random:SEED (SEED a non-negative integer)");
}

std::string schedule_name(const Schedule& s) {
  switch (s.kind) {
    case ScheduleKind::forward: return "forward";
    case ScheduleKind::reverse: return "reverse";
    case ScheduleKind::random: return "random:" + std::to_string(s.seed);
  }
  return "?";
}

std::optional<Schedule> schedule_from_env() {
  const char* v = std::getenv("PARBENCH_SIMT_SCHEDULE");
  if (!v || !*v) return std::nullopt;
  try {
    return parse_schedule(v);
  } catch (const UsageError& e) {
    throw UsageError(std::string("PARBENCH_SIMT_SCHEDULE: ") + e.what());
  }
}

std::size_t parse_stack_size(std::string_view text) {
  std::uint64_t n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  std::string_view rest(end, std::size_t(text.data() + text.size() - end));
  std::uint64_t unit = rest.empty() ? 1 : (rest == "K" || rest == "k") ? 1024 : (rest == "M" || rest == "m") ? 1 << 20 : 0;
  if (ec != std::errc() || unit == 0 || n > kMaxStack || n * unit < kMinStack || n * unit > kMaxStack)
    throw UsageError("simt stack size '" + std::string(text) +
                     "' is not valid; use bytes with an optional K or M suffix, from 16K to 64M (e.g. 512K)");
  return std::size_t(n * unit);
}

void set_schedule(const Schedule& s) {
  Runtime& r = runtime();
  std::lock_guard<std::mutex> l(r.m);
  r.schedule = s;
}
Schedule schedule() {
  Runtime& r = runtime();
  std::lock_guard<std::mutex> l(r.m);
  return r.schedule;
}
void set_stack_size(std::size_t bytes) {
  if (bytes < kMinStack || bytes > kMaxStack)
    throw UsageError("simt stack size " + std::to_string(bytes) + " is not valid; use 16K to 64M bytes");
  Runtime& r = runtime();
  std::lock_guard<std::mutex> l(r.m);
  r.stack = bytes;
}
std::size_t stack_size() {
  Runtime& r = runtime();
  std::lock_guard<std::mutex> l(r.m);
  return r.stack;
}
void set_worker_threads(int n) {
  if (n < 1 || n > 256) throw UsageError("simt thread count " + std::to_string(n) + " is not valid; use 1 to 256");
  Runtime& r = runtime();
  std::lock_guard<std::mutex> l(r.m);
  r.threads = n;
}
int worker_threads() {
  Runtime& r = runtime();
  std::lock_guard<std::mutex> l(r.m);
  return r.threads;
}

// ---- launches
namespace detail {

cudaError_t set_max_dynamic_shared(const void* kernel, int bytes) {
  if (bytes < 0 || std::size_t(bytes) > kMaxDynamicShared) return cudaErrorInvalidValue;
  Runtime& r = runtime();
  std::lock_guard<std::mutex> l(r.m);
  r.max_shared[kernel] = bytes;
  return cudaSuccess;
}

void validate_launch(const LaunchSpec& spec) {
  Runtime& r = runtime();
  std::size_t shared_limit = kDefaultDynamicShared;
  {
    std::lock_guard<std::mutex> l(r.m);
    if (auto it = r.max_shared.find(spec.kernel); it != r.max_shared.end())
      shared_limit = std::max(shared_limit, std::size_t(it->second));
  }
  validate(spec, shared_limit);
}

void set_block_thread_hook(void (*hook)()) { g_block_thread_hook = hook; }

namespace {
// LaunchState::on_spin of a co-resident launch: a block spins; while blocks remain unstarted, one more thread.
void request_help(void* p) {
  auto* job = static_cast<Job*>(p);
  if (job->next.load() >= job->total || job->extra.fetch_add(1) >= int(job->total) - 1) return;
  runtime().resident.help(job->shared_from_this());
}
}  // namespace

void launch(const LaunchSpec& spec, void (*body)(void*), void* ctx) {
  Runtime& r = runtime();
  Schedule sched;
  std::size_t stack;
  int threads;
  {
    std::lock_guard<std::mutex> l(r.m);
    sched = r.schedule, stack = r.stack, threads = r.threads;
  }
  validate_launch(spec);
  install_guard_handler();
  auto job = std::make_shared<Job>();
  LaunchState state{&spec, body, ctx, sched, stack, co_resident(spec), nullptr, nullptr};
  if (state.resident) state.on_spin = &request_help, state.spin_ctx = job.get();
  job->launch = &state;
  job->total = std::uint64_t(spec.grid.x) * spec.grid.y * spec.grid.z;
  // Blocks start in schedule order too: forward, reverse, or a seeded permutation.
  if (sched.kind == ScheduleKind::reverse) job->mul = job->total - 1, job->add = job->total - 1;
  if (sched.kind == ScheduleKind::random && job->total > 1) {
    std::uint64_t x = sched.seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
    job->mul = x % job->total;
    while (std::gcd(job->mul, job->total) != 1) job->mul = (job->mul + 1) % job->total;
    job->add = (x >> 17) % job->total;
  }
  job->max_helpers = int(std::min<std::uint64_t>(std::uint64_t(threads), job->total)) - 1;
  if (job->max_helpers <= 0 && !state.resident) {
    for (std::uint64_t i = 0; i < job->total; ++i) run_block(state, job->block(i));
    return;
  }
  r.pool.run(job);
}

}  // namespace detail

// ---- CUDA runtime subset
namespace {
thread_local cudaError_t t_last_error = cudaSuccess;  // per host thread, as in CUDA
cudaError_t fail(cudaError_t e) {
  t_last_error = e;
  return e;
}
constexpr unsigned kStreamMagic = 0x5354524du, kEventMagic = 0x45564e54u;
// cudaMalloc's alignment, so vector loads behave as on a GPU.
constexpr std::size_t kAllocAlignment = 256;
}  // namespace

struct CUstream_st {
  unsigned magic = kStreamMagic;
};
struct CUevent_st {
  unsigned magic = kEventMagic;
  bool timing = true;
  bool recorded = false;
  std::chrono::steady_clock::time_point when{};
};

static bool bad(cudaStream_t s) { return s && s->magic != kStreamMagic; }
static bool bad(cudaEvent_t e) { return !e || e->magic != kEventMagic; }

cudaError_t cudaMalloc(void** p, std::size_t bytes) {
  if (!p) return fail(cudaErrorInvalidValue);
  const std::size_t blocks = std::max<std::size_t>((bytes + kAllocAlignment - 1) / kAllocAlignment, 1);
  const std::size_t rounded = blocks * kAllocAlignment;
  *p = std::aligned_alloc(kAllocAlignment, rounded);
  return *p ? cudaSuccess : fail(cudaErrorMemoryAllocation);
}
cudaError_t cudaFree(void* p) {
  std::free(p);
  return cudaSuccess;
}
cudaError_t cudaMallocHost(void** p, std::size_t bytes) { return cudaMalloc(p, bytes); }
cudaError_t cudaFreeHost(void* p) { return cudaFree(p); }
cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) {
  if (bytes && (!dst || !src)) return fail(cudaErrorInvalidValue);
  if (unsigned(kind) > unsigned(cudaMemcpyDefault)) return fail(cudaErrorInvalidValue);
  if (bytes) std::memmove(dst, src, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind, cudaStream_t s) {
  if (bad(s)) return fail(cudaErrorInvalidResourceHandle);
  return cudaMemcpy(dst, src, bytes, kind);
}
cudaError_t cudaMemset(void* p, int value, std::size_t bytes) {
  if (bytes && !p) return fail(cudaErrorInvalidValue);
  if (bytes) std::memset(p, value, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void* p, int value, std::size_t bytes, cudaStream_t s) {
  if (bad(s)) return fail(cudaErrorInvalidResourceHandle);
  return cudaMemset(p, value, bytes);
}
cudaError_t cudaStreamCreate(cudaStream_t* s) { return cudaStreamCreateWithFlags(s, 0); }
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned) {
  if (!s) return fail(cudaErrorInvalidValue);
  *s = new CUstream_st;
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t s) {
  if (!s || bad(s)) return fail(cudaErrorInvalidResourceHandle);
  s->magic = 0;
  delete s;
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) { return bad(s) ? fail(cudaErrorInvalidResourceHandle) : cudaSuccess; }
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned) {
  return bad(s) || bad(e) ? fail(cudaErrorInvalidResourceHandle) : cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t* e) { return cudaEventCreateWithFlags(e, cudaEventDefault); }
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned flags) {
  if (!e) return fail(cudaErrorInvalidValue);
  *e = new CUevent_st;
  (*e)->timing = !(flags & cudaEventDisableTiming);
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  if (bad(e)) return fail(cudaErrorInvalidResourceHandle);
  e->magic = 0;
  delete e;
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  if (bad(e) || bad(s)) return fail(cudaErrorInvalidResourceHandle);
  e->recorded = true;
  e->when = std::chrono::steady_clock::now();
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t e) { return bad(e) ? fail(cudaErrorInvalidResourceHandle) : cudaSuccess; }
cudaError_t cudaEventQuery(cudaEvent_t e) { return bad(e) ? fail(cudaErrorInvalidResourceHandle) : cudaSuccess; }
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (!ms) return fail(cudaErrorInvalidValue);
  if (bad(start) || bad(end) || !start->timing || !end->timing) return fail(cudaErrorInvalidResourceHandle);
  if (!start->recorded || !end->recorded) return fail(cudaErrorNotReady);
  *ms = std::chrono::duration<float, std::milli>(end->when - start->when).count();
  return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }
cudaError_t cudaGetLastError() {
  cudaError_t e = t_last_error;
  t_last_error = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError() { return t_last_error; }
const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDeviceFunction: return "cudaErrorInvalidDeviceFunction";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady: return "cudaErrorNotReady";
  }
  return "cudaErrorUnknown";
}
const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidDeviceFunction: return "invalid device function";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorNotReady: return "device not ready";
  }
  return "unknown error";
}
cudaError_t cudaGetDevice(int* d) {
  if (!d) return fail(cudaErrorInvalidValue);
  *d = 0;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int d) { return d == 0 ? cudaSuccess : fail(cudaErrorInvalidValue); }
cudaError_t cudaGetDeviceCount(int* n) {
  if (!n) return fail(cudaErrorInvalidValue);
  *n = 1;
  return cudaSuccess;
}

}  // namespace parbench::simt
