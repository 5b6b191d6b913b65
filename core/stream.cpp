// Host (cpu/simt) behaviour of streams and events; the cuda side is in cuda_stream.cpp.
#include "core/stream.h"

#include <algorithm>
#include <mutex>
#include <utility>
#include <vector>

#include "base/error.h"
#include "core/current_stream.h"
#include "core/host_counts.h"

namespace parbench {

namespace detail {
void* cuda_stream_create(int index);
void cuda_stream_destroy(void* s);
void cuda_stream_sync(int index, void* s);
void* cuda_event_create(int index);
void cuda_event_destroy(void* e);
void cuda_event_record(void* e, void* s);
void cuda_event_sync(void* e);
void cuda_stream_wait_event(void* s, void* e);
float cuda_event_elapsed_ms(void* start, void* end);
bool cuda_event_query(void* e);
}  // namespace detail

#ifndef PARBENCH_HAVE_CUDA
namespace detail {
[[noreturn]] void no_cuda();  // core/memory.cpp
void* cuda_stream_create(int) { no_cuda(); }
void cuda_stream_destroy(void*) {}
void cuda_stream_sync(int, void*) { no_cuda(); }
void* cuda_event_create(int) { no_cuda(); }
void cuda_event_destroy(void*) {}
void cuda_event_record(void*, void*) { no_cuda(); }
void cuda_event_sync(void*) { no_cuda(); }
void cuda_stream_wait_event(void*, void*) { no_cuda(); }
float cuda_event_elapsed_ms(void*, void*) { no_cuda(); }
bool cuda_event_query(void*) { no_cuda(); }
}  // namespace detail
#endif

namespace {
// The streams Stream made and their GPUs: a cudaStream_t does not tell its device (cudaStreamGetDevice is recent).
struct StreamDevices {
  std::mutex mu;
  std::vector<std::pair<void*, int>> live;
};
StreamDevices& stream_devices() {
  static StreamDevices* d = new StreamDevices;  // never destroyed: streams may outlive static destruction
  return *d;
}
}  // namespace

int stream_device_index(void* native) {
  if (!native) return -1;
  StreamDevices& d = stream_devices();
  std::lock_guard lock(d.mu);
  for (const auto& [handle, index] : d.live)
    if (handle == native) return index;
  return -1;
}

void* synchronous_stream(const Device& d, const Device& other) {
  void* current = current_stream();
  if (!current || (d.on_host() && other.on_host())) return nullptr;
  const int index = stream_device_index(current);
  const bool ours = (!d.on_host() && index == d.index) || (!other.on_host() && index == other.index);
  return ours ? current : nullptr;
}

Stream::Stream(Device device, bool create) : device_(device) {
  if (!device.on_host() && create) {
    handle_ = detail::cuda_stream_create(device.index);
    owned_ = true;
    StreamDevices& d = stream_devices();
    std::lock_guard lock(d.mu);
    d.live.emplace_back(handle_, device.index);
  }
}

Stream::~Stream() {
  if (!owned_) return;
  {
    StreamDevices& d = stream_devices();
    std::lock_guard lock(d.mu);
    std::erase_if(d.live, [this](const auto& entry) { return entry.first == handle_; });
  }
  detail::cuda_stream_destroy(handle_);
}

Stream::Stream(Stream&& o) noexcept : device_(o.device_), handle_(o.handle_), owned_(o.owned_) { o.owned_ = false; }

Stream& Stream::operator=(Stream&& o) noexcept {
  std::swap(device_, o.device_);
  std::swap(handle_, o.handle_);
  std::swap(owned_, o.owned_);
  return *this;
}

void Stream::synchronize() const { synchronize_stream(device_, handle_); }

void synchronize_stream(const Device& device, void* native) {
  if (device.on_host()) return;
  count_host_wait();
  detail::cuda_stream_sync(device.index, native);
}

Event::Event(Device device) : device_(device) {
  if (!device.on_host()) handle_ = detail::cuda_event_create(device.index);
}

Event::~Event() {
  if (handle_) detail::cuda_event_destroy(handle_);
}

void Event::record(const Stream& s) {
  recorded_ = true;
  if (handle_) return detail::cuda_event_record(handle_, s.native());
  host_time_ = std::chrono::steady_clock::now();
}

void Event::synchronize() const {
  if (!handle_) return;
  count_host_wait();
  detail::cuda_event_sync(handle_);
}

bool Event::done() const { return !handle_ || detail::cuda_event_query(handle_); }

void Event::wait_on(const Stream& s) const {
  if (handle_) detail::cuda_stream_wait_event(s.native(), handle_);
}

double Event::elapsed_ms(const Event& start, const Event& end) {
  PB_CHECK(start.recorded_ && end.recorded_, "elapsed_ms on an event that was never recorded");
  if (start.handle_ && end.handle_) return detail::cuda_event_elapsed_ms(start.handle_, end.handle_);
  return std::chrono::duration<double, std::milli>(end.host_time_ - start.host_time_).count();
}

}  // namespace parbench
