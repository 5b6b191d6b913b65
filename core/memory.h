// Raw memory per device: allocate, free, copy and fill. Host memory on cpu and simt, GPU memory on cuda.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "core/device.h"

namespace parbench {

class Stream;

void* device_malloc(const Device& d, std::size_t bytes);
// Never throws: it runs in destructors, also while unwinding from a CUDA error (which every later CUDA call
// repeats); a failure is reported once on stderr and the memory is left to the process's end.
void device_free(const Device& d, void* p) noexcept;
// `p` (from device_malloc on `d`, which gives it to the stream current then: core/current_stream.h) is used on
// `native_stream` (a cudaStream_t of `d`) too: after device_free the pool reuses it only once the work queued there
// up to the free is done. Throws Error for a pointer the pool did not hand out. Nothing on host devices or with
// PARBENCH_CUDA_POOL=off (cudaFree waits for the device).
void device_record_stream(const Device& d, void* p, void* native_stream);
// Host memory for copies with `partner`: page-locked (cudaMallocHost) when it is a GPU, so copies are direct DMA
// instead of going through the driver's bounce buffer; plain host memory otherwise. For buffers that stage device
// data through the host (MPI without CUDA support, ZeRO offload).
void* pinned_host_malloc(const Device& partner, std::size_t bytes);
void pinned_host_free(const Device& partner, void* p) noexcept;

// A reusable pinned staging buffer (pinned_host_malloc) that grows to the largest request and is never cleared,
// so staging a message costs a copy, not an allocation and a zero fill of the message's size.
class HostStaging {
 public:
  explicit HostStaging(Device partner) : partner_(partner) {}
  ~HostStaging() { pinned_host_free(partner_, data_); }
  HostStaging(const HostStaging&) = delete;
  HostStaging& operator=(const HostStaging&) = delete;
  HostStaging(HostStaging&& o) noexcept { *this = std::move(o); }
  HostStaging& operator=(HostStaging&& o) noexcept;
  // At least `bytes` bytes, contents unspecified; a request larger than the buffer replaces it, so a pointer from
  // an earlier call is valid until the next call.
  char* get(std::size_t bytes);
  std::size_t capacity() const { return capacity_; }

 private:
  Device partner_;
  char* data_ = nullptr;
  std::size_t capacity_ = 0;
};

// Whether `p` points into memory of GPU device `d` (cudaPointerGetAttributes); always true for host devices,
// whose memory is host memory.
bool is_device_memory(const Device& d, const void* p);
// Waits until all work queued on GPU `d` is done (cudaDeviceSynchronize); nothing for host devices.
void device_synchronize(const Device& d);
// Makes `d` the calling thread's current GPU (cudaSetDevice); nothing for host devices. New threads that launch
// work for a rank (a communication thread) call it first, since a thread starts on GPU 0.
void make_device_current(const Device& d);
// Copies between any two devices (host<->host, host<->GPU, GPU<->GPU); synchronous: done on return. It runs on
// synchronous_stream (core/stream.h): the calling thread's current stream when that is a stream of one of the GPUs,
// after the work the thread queued there (the stream is synchronised); otherwise on the legacy default stream.
// Work of other streams is not waited for: a caller reading what another stream wrote waits for it first.
void device_memcpy(const Device& dst_dev, void* dst, const Device& src_dev, const void* src, std::size_t bytes);
// Queued on stream `s` (cudaMemcpyAsync), ordered with the work there; done once `s` is synchronised. Host
// memory must be pinned for the copy to be asynchronous (pageable host memory makes it wait, as in CUDA). On host
// devices a plain copy, done on return.
void device_memcpy_async(const Device& dst_dev, void* dst, const Device& src_dev, const void* src, std::size_t bytes,
                         const Stream& s);
// `rows` rows of `width` bytes, row i from src + i * src_pitch to dst + i * dst_pitch (one cudaMemcpy2D on a
// GPU); synchronous and on the same stream as device_memcpy. Regions must not overlap.
void device_memcpy_2d(const Device& dst_dev, void* dst, std::size_t dst_pitch, const Device& src_dev, const void* src,
                      std::size_t src_pitch, std::size_t width, std::size_t rows);
// The same queued on stream `s` (cudaMemcpy2DAsync) after its earlier work; on host devices done at once.
void device_memcpy_2d_async(const Device& dst_dev, void* dst, std::size_t dst_pitch, const Device& src_dev,
                            const void* src, std::size_t src_pitch, std::size_t width, std::size_t rows,
                            const Stream& s);
// On the stream device_memcpy would use; done on return (that stream synchronised).
void device_memset(const Device& d, void* p, int value, std::size_t bytes);
// Queued on stream `s` (cudaMemsetAsync) after its earlier work; on host devices done at once.
void device_memset_async(const Device& d, void* p, int value, std::size_t bytes, const Stream& s);
// Total memory of the device: physical memory for cpu and simt, the GPU's memory for cuda.
std::size_t device_memory_bytes(const Device& d);

// Refuses, before anything is allocated, a request of `need` bytes per rank beyond the limit: the device's memory
// divided by the `sharing` ranks that use it (host devices in threads mode), or `max_memory` (--max-memory, 0:
// none) when smaller. Throws UsageError "<what> needs N bytes (X MiB) per rank, more than the limit of L bytes
// (Y MiB: <source>); <advice>".
void check_memory_fits(const std::string& what, std::uint64_t need, const Device& d, std::uint64_t max_memory,
                       int sharing, const std::string& advice);

}  // namespace parbench
