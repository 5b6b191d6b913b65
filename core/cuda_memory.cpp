// GPU memory through the CUDA runtime (built only when CUDA is on).
#include <cuda_runtime.h>

#include <cstddef>

#include "core/error.h"

namespace parbench::detail {

void* cuda_malloc(int index, std::size_t bytes) {
  CUDA_CHECK(cudaSetDevice(index));
  void* p = nullptr;
  CUDA_CHECK(cudaMalloc(&p, bytes == 0 ? 1 : bytes));
  return p;
}

void cuda_free(int index, void* p) {
  CUDA_CHECK(cudaSetDevice(index));
  CUDA_CHECK(cudaFree(p));
}

void cuda_memcpy(void* dst, bool dst_gpu, const void* src, bool src_gpu, std::size_t bytes) {
  cudaMemcpyKind kind = dst_gpu ? (src_gpu ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
                                : (src_gpu ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
  CUDA_CHECK(cudaMemcpy(dst, src, bytes, kind));
  // A device-to-device cudaMemcpy returns before the copy is done; device_memcpy promises a finished copy (the
  // threads transport hands the source buffer back to its owner right after).
  if (kind == cudaMemcpyDeviceToDevice) CUDA_CHECK(cudaDeviceSynchronize());
}

void cuda_memset(int index, void* p, int value, std::size_t bytes) {
  CUDA_CHECK(cudaSetDevice(index));
  CUDA_CHECK(cudaMemset(p, value, bytes));
}

std::size_t cuda_memory_bytes(int index) {
  CUDA_CHECK(cudaSetDevice(index));
  std::size_t free = 0, total = 0;
  CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return total;
}

}  // namespace parbench::detail
