// GPU discovery through the CUDA runtime (built only when CUDA is on).
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

#include "core/device.h"
#include "base/error.h"

namespace parbench {

CudaProbe probe_cuda() {
  CudaProbe p;
  p.compiled = true;
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err == cudaErrorInsufficientDriver) {
    p.reason = "no NVIDIA driver is loaded on this machine";
  } else if (err == cudaErrorNoDevice || (err == cudaSuccess && count == 0)) {
    p.reason = "the driver reports no GPU";
  } else if (err != cudaSuccess) {
    p.reason = std::string("the CUDA runtime failed to initialize (") + cudaGetErrorString(err) + ")";
  } else {
    p.usable = true;
    p.count = count;
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) p.name = prop.name;
    // The emulated GPU build names its devices so; nothing else in parbench knows the difference.
    p.emulated = p.name.find("emulated") != std::string::npos;
  }
  if (err != cudaSuccess) cudaGetLastError();  // clear the sticky status so later calls start clean
  return p;
}

void cuda_profiler(bool start) {
  if (!probe_cuda().usable) return;
  CUDA_CHECK(start ? cudaProfilerStart() : cudaProfilerStop());
}

}  // namespace parbench
