// Raw memory per device: allocate, free, copy and fill. Host memory on cpu and simt, GPU memory on cuda.
#pragma once
#include <cstddef>

#include "core/device.h"

namespace parbench {

void* device_malloc(const Device& d, std::size_t bytes);
// Never throws: it runs in destructors, also while unwinding from a CUDA error (which every later CUDA call
// repeats); a failure is reported once on stderr and the memory is left to the process's end.
void device_free(const Device& d, void* p) noexcept;
// Whether `p` points into memory of GPU device `d` (cudaPointerGetAttributes); always true for host devices,
// whose memory is host memory.
bool is_device_memory(const Device& d, const void* p);
// Waits until all work queued on GPU `d` is done (cudaDeviceSynchronize); nothing for host devices.
void device_synchronize(const Device& d);
// Makes `d` the calling thread's current GPU (cudaSetDevice); nothing for host devices. New threads that launch
// work for a rank (a communication thread) call it first, since a thread starts on GPU 0.
void make_device_current(const Device& d);
// Copies between any two devices (host<->host, host<->GPU, GPU<->GPU); synchronous: it starts after the work
// already queued on the device's streams (core/stream.h makes blocking CUDA streams) and is done on return.
void device_memcpy(const Device& dst_dev, void* dst, const Device& src_dev, const void* src, std::size_t bytes);
// `rows` rows of `width` bytes, row i from src + i * src_pitch to dst + i * dst_pitch (one cudaMemcpy2D on a
// GPU); synchronous like device_memcpy. Regions must not overlap.
void device_memcpy_2d(const Device& dst_dev, void* dst, std::size_t dst_pitch, const Device& src_dev, const void* src,
                      std::size_t src_pitch, std::size_t width, std::size_t rows);
// Ordered like device_memcpy; on cuda it may still run after return, but before any later work on the device.
void device_memset(const Device& d, void* p, int value, std::size_t bytes);
// Total memory of the device: physical memory for cpu and simt, the GPU's memory for cuda.
std::size_t device_memory_bytes(const Device& d);

}  // namespace parbench
