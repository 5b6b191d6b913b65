// Host side of device memory; the GPU side lives in cuda_memory.cpp (built only with CUDA).
#include "core/memory.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <utility>

#include "base/error.h"
#include "core/host_counts.h"
#include "core/stream.h"

namespace parbench {

namespace detail {
void* cuda_malloc(int index, std::size_t bytes);
void cuda_free(int index, void* p);
void cuda_set_device(int index);
bool cuda_is_device_pointer(const void* p);
void cuda_device_synchronize(int index);
void cuda_memcpy(void* dst, bool dst_gpu, const void* src, bool src_gpu, std::size_t bytes, void* stream);
void cuda_memcpy_async(void* dst, bool dst_gpu, const void* src, bool src_gpu, std::size_t bytes, void* stream);
void cuda_memcpy_2d(void* dst, std::size_t dst_pitch, bool dst_gpu, const void* src, std::size_t src_pitch,
                    bool src_gpu, std::size_t width, std::size_t rows, void* stream);
void cuda_memset(int index, void* p, int value, std::size_t bytes, void* stream);
void cuda_memset_async(void* p, int value, std::size_t bytes, void* stream);
void cuda_memcpy_2d_async(void* dst, std::size_t dst_pitch, bool dst_gpu, const void* src, std::size_t src_pitch,
                          bool src_gpu, std::size_t width, std::size_t rows, void* stream);
std::size_t cuda_memory_bytes(int index);
void* cuda_malloc_host(int index, std::size_t bytes);
void cuda_free_host(void* p);
}  // namespace detail

#ifndef PARBENCH_HAVE_CUDA
namespace detail {
// Every CUDA entry point of a build without CUDA (core/stream.cpp's too).
[[noreturn]] void no_cuda() { throw Error("this build has no CUDA support; use --device cpu or simt"); }
void* cuda_malloc(int, std::size_t) { no_cuda(); }
void cuda_free(int, void*) { no_cuda(); }
void cuda_set_device(int) { no_cuda(); }
bool cuda_is_device_pointer(const void*) { no_cuda(); }
void cuda_device_synchronize(int) { no_cuda(); }
void cuda_memcpy(void*, bool, const void*, bool, std::size_t, void*) { no_cuda(); }
void cuda_memcpy_async(void*, bool, const void*, bool, std::size_t, void*) { no_cuda(); }
void cuda_memcpy_2d(void*, std::size_t, bool, const void*, std::size_t, bool, std::size_t, std::size_t, void*) {
  no_cuda();
}
void cuda_memset(int, void*, int, std::size_t, void*) { no_cuda(); }
void cuda_memset_async(void*, int, std::size_t, void*) { no_cuda(); }
void cuda_memcpy_2d_async(void*, std::size_t, bool, const void*, std::size_t, bool, std::size_t, std::size_t, void*) {
  no_cuda();
}
std::size_t cuda_memory_bytes(int) { no_cuda(); }
void* cuda_malloc_host(int, std::size_t) { no_cuda(); }
void cuda_free_host(void*) {}
}  // namespace detail
#endif

constexpr std::size_t kHostAlignment = 256;  // matches cudaMalloc's, so vector loads behave alike

// Frees run in destructors, also after a sticky CUDA error that every later call repeats: say it once.
static void report_free_failure(const std::exception& e) noexcept {
  static std::atomic<bool> said{false};
  if (!said.exchange(true)) std::fprintf(stderr, "parbench: freeing GPU or pinned memory failed: %s\n", e.what());
}

void* device_malloc(const Device& d, std::size_t bytes) {
  if (!d.on_host()) return detail::cuda_malloc(d.index, bytes);
  std::size_t rounded = (bytes + kHostAlignment - 1) / kHostAlignment * kHostAlignment;
  void* p = std::aligned_alloc(kHostAlignment, rounded == 0 ? kHostAlignment : rounded);
  if (!p) throw Error("out of host memory allocating " + std::to_string(bytes) + " bytes");
  return p;
}

void device_free(const Device& d, void* p) noexcept {
  if (!p) return;
  if (d.on_host()) return std::free(p);
  try {
    detail::cuda_free(d.index, p);
  } catch (const std::exception& e) {
    report_free_failure(e);
  }
}

// Stream-aware pool: its GPU side is in cuda_memory.cpp.
namespace detail {
void cuda_record_stream(int index, void* p, void* stream);
#ifndef PARBENCH_HAVE_CUDA
void cuda_record_stream(int, void*, void*) { no_cuda(); }
#endif
}  // namespace detail

void device_record_stream(const Device& d, void* p, void* native_stream) {
  if (!d.on_host()) detail::cuda_record_stream(d.index, p, native_stream);
}

void* pinned_host_malloc(const Device& partner, std::size_t bytes) {
  if (partner.on_host()) return device_malloc(Device{}, bytes);
  return detail::cuda_malloc_host(partner.index, bytes);
}

void pinned_host_free(const Device& partner, void* p) noexcept {
  if (!p) return;
  if (partner.on_host()) return device_free(Device{}, p);
  try {
    detail::cuda_free_host(p);
  } catch (const std::exception& e) {
    report_free_failure(e);
  }
}

HostStaging& HostStaging::operator=(HostStaging&& o) noexcept {
  std::swap(partner_, o.partner_);
  std::swap(data_, o.data_);
  std::swap(capacity_, o.capacity_);
  return *this;
}

char* HostStaging::get(std::size_t bytes) {
  if (bytes <= capacity_ && data_) return data_;
  const std::size_t grown = std::max(bytes, 2 * capacity_);  // doubling: a sweep of growing sizes reallocates log times
  pinned_host_free(partner_, data_);
  data_ = nullptr;
  capacity_ = 0;
  data_ = static_cast<char*>(pinned_host_malloc(partner_, std::max<std::size_t>(grown, 256)));
  capacity_ = std::max<std::size_t>(grown, 256);
  return data_;
}

bool is_device_memory(const Device& d, const void* p) { return d.on_host() || detail::cuda_is_device_pointer(p); }

void device_synchronize(const Device& d) {
  if (d.on_host()) return;
  count_host_wait();
  detail::cuda_device_synchronize(d.index);
}

void make_device_current(const Device& d) {
  if (!d.on_host()) detail::cuda_set_device(d.index);
}

void device_memcpy(const Device& dst_dev, void* dst, const Device& src_dev, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  if (dst_dev.on_host() && src_dev.on_host()) {
    std::memmove(dst, src, bytes);
    return;
  }
  count_host_wait();  // a synchronous copy: done on return
  detail::cuda_memcpy(dst, !dst_dev.on_host(), src, !src_dev.on_host(), bytes, synchronous_stream(dst_dev, src_dev));
}

void device_memcpy_async(const Device& dst_dev, void* dst, const Device& src_dev, const void* src, std::size_t bytes,
                         const Stream& s) {
  if (bytes == 0) return;
  if (dst_dev.on_host() && src_dev.on_host()) {
    std::memmove(dst, src, bytes);
    return;
  }
  detail::cuda_memcpy_async(dst, !dst_dev.on_host(), src, !src_dev.on_host(), bytes, s.native());
}

namespace {
void host_memcpy_2d(void* dst, std::size_t dst_pitch, const void* src, std::size_t src_pitch, std::size_t width,
                    std::size_t rows) {
  for (std::size_t i = 0; i < rows; ++i)
    std::memcpy(static_cast<char*>(dst) + i * dst_pitch, static_cast<const char*>(src) + i * src_pitch, width);
}
}  // namespace

void device_memcpy_2d(const Device& dst_dev, void* dst, std::size_t dst_pitch, const Device& src_dev, const void* src,
                      std::size_t src_pitch, std::size_t width, std::size_t rows) {
  if (width == 0 || rows == 0) return;
  if (dst_dev.on_host() && src_dev.on_host()) return host_memcpy_2d(dst, dst_pitch, src, src_pitch, width, rows);
  count_host_wait();
  detail::cuda_memcpy_2d(dst, dst_pitch, !dst_dev.on_host(), src, src_pitch, !src_dev.on_host(), width, rows,
                         synchronous_stream(dst_dev, src_dev));
}

void device_memset(const Device& d, void* p, int value, std::size_t bytes) {
  if (d.on_host()) {
    std::memset(p, value, bytes);
    return;
  }
  void* stream = synchronous_stream(d);
  if (stream) count_host_wait();  // on a stream of the thread's it is done on return
  detail::cuda_memset(d.index, p, value, bytes, stream);
}

void device_memcpy_2d_async(const Device& dst_dev, void* dst, std::size_t dst_pitch, const Device& src_dev,
                            const void* src, std::size_t src_pitch, std::size_t width, std::size_t rows,
                            const Stream& s) {
  if (width == 0 || rows == 0) return;
  if (dst_dev.on_host() && src_dev.on_host()) return host_memcpy_2d(dst, dst_pitch, src, src_pitch, width, rows);
  detail::cuda_memcpy_2d_async(dst, dst_pitch, !dst_dev.on_host(), src, src_pitch, !src_dev.on_host(), width, rows,
                               s.native());
}

void device_memset_async(const Device& d, void* p, int value, std::size_t bytes, const Stream& s) {
  if (d.on_host()) {
    std::memset(p, value, bytes);
    return;
  }
  if (bytes) detail::cuda_memset_async(p, value, bytes, s.native());
}

std::size_t device_memory_bytes(const Device& d) {
  if (!d.on_host()) return detail::cuda_memory_bytes(d.index);
  return std::size_t(::sysconf(_SC_PHYS_PAGES)) * std::size_t(::sysconf(_SC_PAGESIZE));
}

void check_memory_fits(const std::string& what, std::uint64_t need, const Device& d, std::uint64_t max_memory,
                       int sharing, const std::string& advice) {
  const std::uint64_t device = device_memory_bytes(d) / std::uint64_t(std::max(sharing, 1));
  const bool by_option = max_memory > 0 && max_memory < device;
  const std::uint64_t limit = by_option ? max_memory : device;
  if (need <= limit) return;
  auto mib = [](std::uint64_t b) {
    char text[48];
    std::snprintf(text, sizeof text, "%.1f MiB", double(b) / (1 << 20));
    return std::string(text);
  };
  const std::string source = by_option ? "--max-memory"
                             : sharing > 1 ? device_name(d) + "'s memory shared by " + std::to_string(sharing) + " ranks"
                                           : device_name(d) + "'s memory";
  throw UsageError(what + " needs " + std::to_string(need) + " bytes (" + mib(need) + ") per rank, more than the "
                   "limit of " + std::to_string(limit) + " bytes (" + mib(limit) + ": " + source + "); " + advice);
}

}  // namespace parbench
