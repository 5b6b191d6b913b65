// GPU memory through the CUDA runtime (built only when CUDA is on).
#include <cuda_runtime.h>

#include <array>
#include <cstddef>
#include <cstdlib>
#include <mutex>
#include <string>

#include "core/caching_pool.h"
#include "core/host_counts.h"
#include "core/current_stream.h"
#include "base/error.h"

namespace parbench::detail {

namespace {

constexpr int kMaxDevices = 64;

// PARBENCH_CUDA_POOL=off hands every release straight to cudaFree: slower, but a checker (the emulated GPU,
// compute-sanitizer) then sees a use after release as a use of freed memory.
bool pool_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("PARBENCH_CUDA_POOL");
    if (!v || std::string(v) == "on") return true;
    if (std::string(v) == "off") return false;
    throw UsageError("PARBENCH_CUDA_POOL='" + std::string(v) + "' is not 'on' or 'off'");
  }();
  return on;
}

void* raw_cuda_malloc(int index, std::size_t bytes) {
  count_device_malloc();
  CUDA_CHECK(cudaSetDevice(index));
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, bytes);
  if (e == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();  // not sticky: clear it, the pool frees its cache and tries again
    return nullptr;
  }
  CUDA_CHECK(e);
  return p;
}

void raw_cuda_free(int index, void* p) {
  CUDA_CHECK(cudaSetDevice(index));
  CUDA_CHECK(cudaFree(p));
}

// The pool's events on GPU `index`. A record on the null stream means that GPU's legacy default stream, so the
// device is made current first, as for the raw allocator.
CachingPool::EventOps cuda_event_ops(int index) {
  CachingPool::EventOps ops;
  ops.create = [index] {
    CUDA_CHECK(cudaSetDevice(index));
    cudaEvent_t e = nullptr;
    CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    return static_cast<void*>(e);
  };
  ops.record = [index](void* e, void* stream) {
    CUDA_CHECK(cudaSetDevice(index));
    CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(e), static_cast<cudaStream_t>(stream)));
  };
  ops.query = [](void* e) {
    const cudaError_t r = cudaEventQuery(static_cast<cudaEvent_t>(e));
    if (r == cudaErrorNotReady) {
      (void)cudaGetLastError();  // not an error: clear it so the next checked call does not report it
      return false;
    }
    CUDA_CHECK(r);
    return true;
  };
  ops.synchronize = [](void* e) { CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(e))); };
  ops.destroy = [](void* e) { CUDA_CHECK(cudaEventDestroy(static_cast<cudaEvent_t>(e))); };
  return ops;
}

// One pool per GPU, created on first use and never destroyed: its blocks die with the process, which avoids
// calling cudaFree after the CUDA runtime has begun to shut down.
CachingPool& pool(int index) {
  PB_CHECK(index >= 0 && index < kMaxDevices, "GPU index out of range");
  static std::array<CachingPool*, kMaxDevices> pools{};
  static std::mutex mu;
  std::lock_guard lock(mu);
  CachingPool*& p = pools[std::size_t(index)];
  if (!p)
    p = new CachingPool([index](std::size_t bytes) { return raw_cuda_malloc(index, bytes); },
                        [index](void* block) { raw_cuda_free(index, block); }, cuda_event_ops(index));
  return *p;
}

}  // namespace

void* cuda_malloc(int index, std::size_t bytes) {
  if (pool_enabled()) return pool(index).allocate(bytes, current_stream());
  void* p = raw_cuda_malloc(index, bytes == 0 ? 1 : bytes);
  if (!p) throw Error("out of GPU memory on device " + std::to_string(index) + " allocating " + std::to_string(bytes) + " bytes");
  return p;
}

void cuda_free(int index, void* p) {
  if (pool_enabled()) return pool(index).deallocate(p);
  raw_cuda_free(index, p);
}

// Without the pool the free is cudaFree, which waits for the device: nothing to record.
void cuda_record_stream(int index, void* p, void* stream) {
  if (pool_enabled()) pool(index).record_stream(p, stream);
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

namespace {
cudaMemcpyKind copy_kind(bool dst_gpu, bool src_gpu) {
  return dst_gpu ? (src_gpu ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
                 : (src_gpu ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
}
}  // namespace

void cuda_memcpy_2d_async(void* dst, std::size_t dst_pitch, bool dst_gpu, const void* src, std::size_t src_pitch,
                          bool src_gpu, std::size_t width, std::size_t rows, void* stream) {
  CUDA_CHECK(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, width, rows, copy_kind(dst_gpu, src_gpu),
                               static_cast<cudaStream_t>(stream)));
}

void cuda_memcpy_2d(void* dst, std::size_t dst_pitch, bool dst_gpu, const void* src, std::size_t src_pitch,
                    bool src_gpu, std::size_t width, std::size_t rows, void* stream) {
  if (stream) {  // a stream of the calling thread: queued behind its work, then waited for
    cuda_memcpy_2d_async(dst, dst_pitch, dst_gpu, src, src_pitch, src_gpu, width, rows, stream);
    CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
    return;
  }
  const cudaMemcpyKind kind = copy_kind(dst_gpu, src_gpu);
  CUDA_CHECK(cudaMemcpy2D(dst, dst_pitch, src, src_pitch, width, rows, kind));
  if (kind == cudaMemcpyDeviceToDevice) CUDA_CHECK(cudaStreamSynchronize(nullptr));  // as in cuda_memcpy
}

void cuda_memcpy_async(void* dst, bool dst_gpu, const void* src, bool src_gpu, std::size_t bytes, void* stream) {
  CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, copy_kind(dst_gpu, src_gpu), static_cast<cudaStream_t>(stream)));
}

void cuda_memcpy(void* dst, bool dst_gpu, const void* src, bool src_gpu, std::size_t bytes, void* stream) {
  if (stream) {  // a stream of the calling thread: queued behind its work, then waited for
    cuda_memcpy_async(dst, dst_gpu, src, src_gpu, bytes, stream);
    CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
    return;
  }
  const cudaMemcpyKind kind = copy_kind(dst_gpu, src_gpu);
  CUDA_CHECK(cudaMemcpy(dst, src, bytes, kind));
  // A device-to-device cudaMemcpy returns before the copy is done; device_memcpy promises a finished copy (the
  // threads transport hands the source buffer back to its owner right after). The copy runs on the current
  // GPU's default stream, so waiting for that stream is enough: the rest of the device may go on.
  if (kind == cudaMemcpyDeviceToDevice) CUDA_CHECK(cudaStreamSynchronize(nullptr));
}


void cuda_memset_async(void* p, int value, std::size_t bytes, void* stream) {
  CUDA_CHECK(cudaMemsetAsync(p, value, bytes, static_cast<cudaStream_t>(stream)));
}

void cuda_memset(int index, void* p, int value, std::size_t bytes, void* stream) {
  if (stream) {
    cuda_memset_async(p, value, bytes, stream);
    CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
    return;
  }
  CUDA_CHECK(cudaSetDevice(index));
  CUDA_CHECK(cudaMemset(p, value, bytes));
  // cudaMemset of device memory returns before the fill is done, and a non-blocking stream's later work is not
  // ordered after the legacy stream's: waiting for the fill makes it done on return, as device_memcpy's copies are.
  CUDA_CHECK(cudaStreamSynchronize(nullptr));
}

void* cuda_malloc_host(int index, std::size_t bytes) {
  CUDA_CHECK(cudaSetDevice(index));
  void* p = nullptr;
  CUDA_CHECK(cudaMallocHost(&p, bytes == 0 ? 1 : bytes));
  return p;
}

void cuda_free_host(void* p) { CUDA_CHECK(cudaFreeHost(p)); }

std::size_t cuda_memory_bytes(int index) {
  CUDA_CHECK(cudaSetDevice(index));
  std::size_t free = 0, total = 0;
  CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return total;
}

}  // namespace parbench::detail
