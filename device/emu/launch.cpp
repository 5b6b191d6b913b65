// Kernel launches on the emulated GPU: the checks a GPU makes at launch (and the ones it makes only by faulting,
// here reported at once with the argument and the allocation), then the launch queued on its stream.
#include "device/emu/launch.h"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <exception>

#include "base/error.h"
#include "device/emu/emu.h"

namespace parbench::gpu_emu {

namespace {

// What the hazard checker takes a kernel to touch: through each pointer argument, the tensor the op declared there
// (kernels/dispatch.h), else everything from the pointer to its allocation's end; a pointer to const is read, any
// other written. Memory reached through pointers stored in device memory (the device-side collectives' peer
// tables) is ordered by the kernels' own flags and is not counted.
std::vector<MemAccess> kernel_accesses(const std::vector<PointerArg>& pointers) {
  std::vector<MemAccess> out;
  for (const PointerArg& a : pointers) {
    if (!a.p) continue;
    std::size_t bytes = declared_extent(a.p);
    if (bytes == 0) {
      const auto alloc = find_allocation(a.p);
      if (!alloc) continue;
      bytes = alloc->base + alloc->size - reinterpret_cast<std::uintptr_t>(a.p);
    }
    out.push_back({a.p, bytes, !a.read_only, "pointer argument " + std::to_string(a.index)});
  }
  return out;
}

}  // namespace

void enqueue_launch(const simt::detail::LaunchSpec& spec, const volatile void* stream, std::function<void()> run,
                    std::vector<PointerArg> pointers) {
  count(Count::launch);
  const std::string what = std::string("kernel ") + spec.name + " launched at " + spec.file + ":" + std::to_string(spec.line);
  StreamState* s = resolve_stream(static_cast<cudaStream_t>(const_cast<void*>(stream)));
  if (!s) {
    fail(cudaErrorInvalidResourceHandle, what + " into a stream that is not a live stream of this process");
    return;
  }
  if (is_legacy_stream(s))
    legacy_stream_used(stream_device(s), std::string("the launch of kernel ") + spec.name,
                       std::string(spec.file) + ":" + std::to_string(spec.line));
  const int dev = current_device();
  if (stream_device(s) != dev) {
    fail(cudaErrorInvalidResourceHandle, what + " into a stream of GPU " + std::to_string(stream_device(s)) +
                                             " while GPU " + std::to_string(dev) + " is current (cudaSetDevice)");
    return;
  }
  if (sticky(dev) != cudaSuccess) return;
  try {
    simt::detail::validate_launch(spec);
  } catch (const std::exception& e) {
    fail(cudaErrorInvalidConfiguration, e.what());
    return;
  }
  for (const PointerArg& a : pointers) {
    if (!a.p) continue;
    const std::string why = device_access_problem(dev, a.p, 0);
    if (why.empty()) continue;
    char addr[32];
    std::snprintf(addr, sizeof addr, "%p", a.p);
    const std::string msg = what + " on GPU " + std::to_string(dev) + ": pointer argument " + std::to_string(a.index) +
                            " (" + addr + ") is " + why;
    set_sticky(dev, cudaErrorIllegalAddress, msg);
    fail(cudaErrorIllegalAddress, msg);
    return;
  }
  enqueue(s, what, kernel_work(std::move(run)), {}, kernel_accesses(pointers));
}

void check_launch(const char* file, int line) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw_error(file, line, std::string("kernel launch: ") + cudaGetErrorString(e));
}

}  // namespace parbench::gpu_emu
