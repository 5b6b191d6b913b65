// The emulated CUDA runtime: settings, errors (per-thread last error, sticky faults), devices and peer access,
// streams. Events live in events.cpp, copies and fills in copies.cpp, allocation in gpu_memory.cpp, the stream
// workers in streams.cpp, kernel launches in launch.cpp.
#include <cuda_profiler_api.h>
#include <cxxabi.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <set>

#include "device/emu/emu.h"
#include "device/emu/internal_streams.h"
#include "device/emu/settings.h"

namespace parbench::gpu_emu {

// ---- settings
void bad_setting(const char* name, const char* value, const char* accepted) {
  std::fprintf(stderr, "parbench-emu: %s='%s' is not valid; accepted: %s\n", name, value, accepted);
  std::exit(2);
}

namespace {
std::size_t parse_bytes(const char* name, const char* v) {
  char* end = nullptr;
  const unsigned long long n = std::strtoull(v, &end, 10);
  std::size_t mul = 1;
  if (*end == 'K') mul = 1ull << 10, ++end;
  else if (*end == 'M') mul = 1ull << 20, ++end;
  else if (*end == 'G') mul = 1ull << 30, ++end;
  if (end == v || *end || n == 0 || v[0] == '-') bad_setting(name, v, "a byte count > 0 with an optional K, M or G suffix");
  return std::size_t(n) * mul;
}

// CUDA_VISIBLE_DEVICES: distinct indices of the node's `gpus` GPUs.
std::vector<int> parse_visible(const char* v, int gpus) {
  const char* accepted = "a comma-separated list of distinct GPU indices below PARBENCH_EMU_GPUS";
  std::vector<int> visible;
  const std::string list = v;
  for (std::size_t at = 0; at <= list.size() && !list.empty();) {
    const std::size_t comma = std::min(list.find(',', at), list.size());
    const std::string item = list.substr(at, comma - at);
    char* end = nullptr;
    const long g = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end || g < 0 || g >= gpus || std::find(visible.begin(), visible.end(), int(g)) != visible.end())
      bad_setting("CUDA_VISIBLE_DEVICES", v, accepted);
    visible.push_back(int(g));
    at = comma + 1;
  }
  if (visible.empty()) bad_setting("CUDA_VISIBLE_DEVICES", v, "at least one GPU (the emulation has no GPU-less mode)");
  return visible;
}

// PARBENCH_EMU_LEGACY_STREAM, PARBENCH_EMU_KERNEL_DELAY_US and PARBENCH_EMU_HAZARDS.
void read_stream_settings(Settings& x) {
  if (const char* v = std::getenv("PARBENCH_EMU_HAZARDS"); v && *v) {
    if (std::strcmp(v, "abort") == 0) x.hazards = HazardMode::abort;
    else if (std::strcmp(v, "report") == 0) x.hazards = HazardMode::report;
    else if (std::strcmp(v, "off") == 0) x.hazards = HazardMode::off;
    else bad_setting("PARBENCH_EMU_HAZARDS", v, "abort, report or off");
  }
  if (const char* v = std::getenv("PARBENCH_EMU_LEGACY_STREAM"); v && *v) {
    if (std::strcmp(v, "allow") != 0 && std::strcmp(v, "error") != 0)
      bad_setting("PARBENCH_EMU_LEGACY_STREAM", v, "allow or error");
    x.legacy_stream_error = v[0] == 'e';
  }
  if (const char* v = std::getenv("PARBENCH_EMU_KERNEL_DELAY_US"); v && *v) {
    char* end = nullptr;
    const unsigned long long us = std::strtoull(v, &end, 10);
    if (v[0] < '0' || v[0] > '9' || *end || us > 1000000)
      bad_setting("PARBENCH_EMU_KERNEL_DELAY_US", v, "an integer number of microseconds from 0 to 1000000");
    x.kernel_delay_us = unsigned(us);
  }
}
}  // namespace

const Settings& settings() {
  static const Settings s = [] {
    Settings x;
    if (const char* v = std::getenv("PARBENCH_EMU_GPUS"); v && *v) {
      char* end = nullptr;
      const long n = std::strtol(v, &end, 10);
      if (end == v || *end || n < 1 || n > 64) bad_setting("PARBENCH_EMU_GPUS", v, "an integer from 1 to 64");
      x.gpus = int(n);
    }
    for (int g = 0; g < x.gpus; ++g) x.physical.push_back(g);
    if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES"); v) {  // a comma list of the node's GPU indices
      x.physical = parse_visible(v, x.gpus);
      x.gpus = int(x.physical.size());
    }
    if (const char* v = std::getenv("PARBENCH_EMU_GPU_MEMORY"); v && *v) x.memory_bytes = parse_bytes("PARBENCH_EMU_GPU_MEMORY", v);
    if (const char* v = std::getenv("PARBENCH_EMU_STRICT"); v && *v) {
      if (std::strcmp(v, "1") != 0 && std::strcmp(v, "0") != 0) bad_setting("PARBENCH_EMU_STRICT", v, "0 or 1");
      x.strict = v[0] == '1';
    }
    read_stream_settings(x);
    return x;
  }();
  return s;
}

int device_count() { return settings().gpus; }
int physical_gpu(int device) { return settings().physical.at(std::size_t(device)); }

// ---- errors
namespace {
thread_local cudaError_t t_last = cudaSuccess;
thread_local std::map<int, std::string> t_detail;  // the latest detail of each code on this thread
thread_local std::string t_message;                 // what cudaGetErrorString returned last

struct Sticky {
  std::mutex m;
  std::map<int, std::pair<cudaError_t, std::string>> by_device;
};
Sticky& sticky_state() {
  static Sticky* s = new Sticky;
  return *s;
}

const char* base_message(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidPitchValue: return "invalid pitch argument";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    case cudaErrorPeerAccessAlreadyEnabled: return "peer access is already enabled";
    case cudaErrorPeerAccessNotEnabled: return "peer access has not been enabled";
    case cudaErrorNotSupported: return "operation not supported";
    case cudaErrorDeviceUninitialized: return "invalid device context";
    case cudaErrorMapBufferObjectFailed: return "mapping of buffer object failed";
    case cudaErrorIllegalState: return "the operation cannot be performed in the present state";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureMerge: return "operation would result in a merge of separate capture sequences";
    case cudaErrorStreamCaptureIsolation: return "dependency created on uncaptured work in another stream";
    case cudaErrorStreamCaptureImplicit: return "operation would make the legacy stream depend on a capturing blocking stream";
    case cudaErrorCapturedEvent: return "operation not permitted on an event last recorded in a capturing stream";
    case cudaErrorStreamCaptureWrongThread: return "attempt to terminate a thread-local capture sequence from another thread";
    default: return "unknown error";
  }
}
}  // namespace

cudaError_t fail(cudaError_t e, const std::string& detail) {
  t_last = e;
  t_detail[int(e)] = detail;
  return e;
}

void set_sticky(int device, cudaError_t e, const std::string& detail) {
  Sticky& s = sticky_state();
  std::lock_guard<std::mutex> l(s.m);
  s.by_device.try_emplace(device, e, detail);  // the first fault is the one to report
}

cudaError_t sticky(int device) {
  Sticky& s = sticky_state();
  std::lock_guard<std::mutex> l(s.m);
  auto it = s.by_device.find(device);
  return it == s.by_device.end() ? cudaSuccess : it->second.first;
}

namespace {
std::string resolve_call_site(const void* ret) {
  Dl_info info{};
  if (!::dladdr(ret, &info) || !info.dli_sname) {
    // No exported symbol (a static function, a program linked without -rdynamic): the file and the offset
    // addr2line takes, since the address itself changes from run to run.
    char buf[64];
    if (!info.dli_fname || !info.dli_fbase) {
      std::snprintf(buf, sizeof buf, "%p", ret);
      return buf;
    }
    std::snprintf(buf, sizeof buf, "+0x%tx", static_cast<const char*>(ret) - static_cast<const char*>(info.dli_fbase));
    return info.dli_fname + std::string(buf);
  }
  int status = 0;
  char* demangled = abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status);
  std::string name = status == 0 && demangled ? demangled : info.dli_sname;
  std::free(demangled);
  if (name.size() > 120) name = name.substr(0, 117) + "...";
  return name;
}
}  // namespace

// Every copy, fill and allocation names its caller; a program makes them from a few sites thousands of times, and
// dladdr with the demangling took a few percent of an emulated run: each site is resolved once.
std::string call_site(const void* ret) {
  static std::mutex m;
  static auto* names = new std::unordered_map<const void*, std::string>;
  std::lock_guard<std::mutex> l(m);
  auto it = names->find(ret);
  if (it == names->end()) it = names->emplace(ret, resolve_call_site(ret)).first;
  return it->second;
}

// ---- devices and peers
namespace {
thread_local int t_device = 0;
struct Peers {
  std::mutex m;
  std::set<std::pair<int, int>> enabled;  // (from, to): kernels on `from` may touch memory of `to`
};
Peers& peers() {
  static Peers* p = new Peers;
  return *p;
}
bool valid_device(int d) { return d >= 0 && d < device_count(); }
}  // namespace

int current_device() { return t_device; }

bool peer_enabled(int from, int to) {
  Peers& p = peers();
  std::lock_guard<std::mutex> l(p.m);
  return p.enabled.count({from, to}) != 0;
}

cudaError_t bad_stream(const char* api) {
  return fail(cudaErrorInvalidResourceHandle, std::string(api) + ": not a live stream of this process");
}

}  // namespace parbench::gpu_emu

using namespace parbench::gpu_emu;

extern "C" {

// ---- errors
cudaError_t cudaGetLastError() {
  const cudaError_t s = sticky(current_device());
  if (s != cudaSuccess) return s;
  const cudaError_t e = t_last;
  t_last = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError() {
  const cudaError_t s = sticky(current_device());
  return s != cudaSuccess ? s : t_last;
}
const char* cudaGetErrorString(cudaError_t e) {
  t_message = base_message(e);
  {
    Sticky& s = sticky_state();
    std::lock_guard<std::mutex> l(s.m);
    for (const auto& [dev, st] : s.by_device)
      if (st.first == e) return (t_message += " (emulated GPU " + std::to_string(dev) + ": " + st.second + ")").c_str();
  }
  if (auto it = t_detail.find(int(e)); it != t_detail.end()) t_message += " (emulated GPU: " + it->second + ")";
  return t_message.c_str();
}
const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    case cudaErrorIllegalAddress: return "cudaErrorIllegalAddress";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    case cudaErrorDeviceUninitialized: return "cudaErrorDeviceUninitialized";
    case cudaErrorMapBufferObjectFailed: return "cudaErrorMapBufferObjectFailed";
    case cudaErrorIllegalState: return "cudaErrorIllegalState";
    case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
    case cudaErrorStreamCaptureMerge: return "cudaErrorStreamCaptureMerge";
    case cudaErrorStreamCaptureIsolation: return "cudaErrorStreamCaptureIsolation";
    case cudaErrorStreamCaptureImplicit: return "cudaErrorStreamCaptureImplicit";
    case cudaErrorCapturedEvent: return "cudaErrorCapturedEvent";
    case cudaErrorStreamCaptureWrongThread: return "cudaErrorStreamCaptureWrongThread";
    default: return "cudaErrorUnknown";
  }
}

// ---- versions and devices
cudaError_t cudaDriverGetVersion(int* v) {
  if (!v) return fail(cudaErrorInvalidValue, "cudaDriverGetVersion with a null pointer");
  *v = CUDART_VERSION;
  return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int* v) { return cudaDriverGetVersion(v); }

cudaError_t cudaGetDeviceCount(int* n) {
  if (!n) return fail(cudaErrorInvalidValue, "cudaGetDeviceCount with a null pointer");
  *n = device_count();
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int* d) {
  if (!d) return fail(cudaErrorInvalidValue, "cudaGetDevice with a null pointer");
  *d = current_device();
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int d) {
  if (!valid_device(d))
    return fail(cudaErrorInvalidDevice, "cudaSetDevice(" + std::to_string(d) + "): there are " +
                                            std::to_string(device_count()) + " emulated GPUs (PARBENCH_EMU_GPUS)");
  t_device = d;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int d) {
  if (!p) return fail(cudaErrorInvalidValue, "cudaGetDeviceProperties with a null pointer");
  if (!valid_device(d)) return fail(cudaErrorInvalidDevice, "cudaGetDeviceProperties of GPU " + std::to_string(d));
  *p = cudaDeviceProp{};
  const int phys = physical_gpu(d);
  std::snprintf(p->name, sizeof p->name, "parbench emulated GPU %d (sm_90 limits, runs on the CPU)", phys);
  // The same UUID in every process for the same GPU of the node: "pbemu-gpu" and the physical index.
  std::memcpy(p->uuid.bytes, "pbemu-gpu", 9);
  p->uuid.bytes[15] = static_cast<char>(phys);
  p->totalGlobalMem = settings().memory_bytes;
  p->sharedMemPerBlock = 48 * 1024;
  p->sharedMemPerBlockOptin = 227 * 1024;
  p->sharedMemPerMultiprocessor = 228 * 1024;
  p->regsPerBlock = 65536;
  p->warpSize = 32;
  p->maxThreadsPerBlock = 1024;
  p->maxThreadsDim[0] = 1024, p->maxThreadsDim[1] = 1024, p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 2147483647, p->maxGridSize[1] = 65535, p->maxGridSize[2] = 65535;
  p->maxThreadsPerMultiProcessor = 2048;
  p->maxBlocksPerMultiProcessor = 8;
  p->multiProcessorCount = 4;  // with the two above, simt's co-residency limit (device/simt/launch_spec.h)
  p->major = 9, p->minor = 0;
  p->unifiedAddressing = 1;
  p->pciBusID = phys + 1;
  return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize() {
  count(Count::device_sync);
  if (cudaError_t e = capture_forbids("cudaDeviceSynchronize", PB_EMU_SITE()); e != cudaSuccess) return e;
  const int d = current_device();
  wait_ops(device_tail(d), "cudaDeviceSynchronize");
  host_observes_device(d);
  return sticky(d);
}
cudaError_t cudaDeviceCanAccessPeer(int* can, int d, int peer) {
  if (!can || !valid_device(d) || !valid_device(peer))
    return fail(cudaErrorInvalidDevice, "cudaDeviceCanAccessPeer(" + std::to_string(d) + ", " + std::to_string(peer) + ")");
  *can = d != peer;
  return cudaSuccess;
}
cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned int flags) {
  const int d = current_device();
  if (flags != 0) return fail(cudaErrorInvalidValue, "cudaDeviceEnablePeerAccess flags must be 0");
  if (!valid_device(peer) || peer == d)
    return fail(cudaErrorInvalidDevice, "cudaDeviceEnablePeerAccess(" + std::to_string(peer) + ") on GPU " + std::to_string(d));
  Peers& p = peers();
  std::lock_guard<std::mutex> l(p.m);
  if (!p.enabled.insert({d, peer}).second)
    return fail(cudaErrorPeerAccessAlreadyEnabled, "GPU " + std::to_string(d) + " to GPU " + std::to_string(peer));
  return cudaSuccess;
}
cudaError_t cudaDeviceDisablePeerAccess(int peer) {
  Peers& p = peers();
  std::lock_guard<std::mutex> l(p.m);
  if (p.enabled.erase({current_device(), peer}) == 0)
    return fail(cudaErrorPeerAccessNotEnabled, "GPU " + std::to_string(current_device()) + " to GPU " + std::to_string(peer));
  return cudaSuccess;
}
cudaError_t cudaProfilerStart() { return cudaSuccess; }
cudaError_t cudaProfilerStop() { return cudaSuccess; }

// ---- streams
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int flags) {
  if (!s) return fail(cudaErrorInvalidValue, "cudaStreamCreateWithFlags with a null pointer");
  if (flags & ~unsigned(cudaStreamNonBlocking)) return fail(cudaErrorInvalidValue, "unknown stream flags");
  *s = reinterpret_cast<cudaStream_t>(create_stream(current_device(), flags & cudaStreamNonBlocking));
  return cudaSuccess;
}
cudaError_t cudaStreamCreate(cudaStream_t* s) { return cudaStreamCreateWithFlags(s, cudaStreamDefault); }
cudaError_t cudaStreamCreateWithPriority(cudaStream_t* s, unsigned int flags, int) {
  return cudaStreamCreateWithFlags(s, flags);
}
cudaError_t cudaStreamDestroy(cudaStream_t s) {
  StreamState* st = s ? resolve_stream(s) : nullptr;
  if (!st || st->legacy) return bad_stream("cudaStreamDestroy");
  destroy_stream(st);
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  count(Count::stream_sync);
  StreamState* st = work_stream(s, "cudaStreamSynchronize", PB_EMU_SITE());
  if (!st) return bad_stream("cudaStreamSynchronize");
  if (cudaError_t e = refuse_on_capturing(st, "cudaStreamSynchronize"); e != cudaSuccess) return e;
  if (st->legacy)
    if (cudaError_t e = capture_forbids("cudaStreamSynchronize of the legacy stream", PB_EMU_SITE()); e != cudaSuccess)
      return e;
  wait_ops({stream_tail(st)}, "cudaStreamSynchronize");
  return sticky(st->device);
}
cudaError_t cudaStreamQuery(cudaStream_t s) {
  StreamState* st = resolve_stream(s);
  if (!st) return bad_stream("cudaStreamQuery");
  if (cudaError_t e = refuse_on_capturing(st, "cudaStreamQuery"); e != cudaSuccess) return e;
  if (cudaError_t e = sticky(st->device); e != cudaSuccess) return e;
  return op_done(stream_tail(st)) ? cudaSuccess : cudaErrorNotReady;
}

}  // extern "C"
