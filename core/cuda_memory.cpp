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

void cuda_set_device(int index) { CUDA_CHECK(cudaSetDevice(index)); }

void cuda_device_synchronize(int index) {
  CUDA_CHECK(cudaSetDevice(index));
  CUDA_CHECK(cudaDeviceSynchronize());
}

bool cuda_is_device_pointer(const void* p) {
  cudaPointerAttributes a{};
  CUDA_CHECK(cudaPointerGetAttributes(&a, p));  // plain host memory: cudaMemoryTypeUnregistered, no error
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

void cuda_free(int index, void* p) {
  CUDA_CHECK(cudaSetDevice(index));
  CUDA_CHECK(cudaFree(p));
}

namespace {
cudaMemcpyKind copy_kind(bool dst_gpu, bool src_gpu) {
  return dst_gpu ? (src_gpu ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
                 : (src_gpu ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
}
}  // namespace

void cuda_memcpy_2d(void* dst, std::size_t dst_pitch, bool dst_gpu, const void* src, std::size_t src_pitch,
                    bool src_gpu, std::size_t width, std::size_t rows) {
  const cudaMemcpyKind kind = copy_kind(dst_gpu, src_gpu);
  CUDA_CHECK(cudaMemcpy2D(dst, dst_pitch, src, src_pitch, width, rows, kind));
  if (kind == cudaMemcpyDeviceToDevice) CUDA_CHECK(cudaDeviceSynchronize());  // as in cuda_memcpy
}

void cuda_memcpy(void* dst, bool dst_gpu, const void* src, bool src_gpu, std::size_t bytes) {
  const cudaMemcpyKind kind = copy_kind(dst_gpu, src_gpu);
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
