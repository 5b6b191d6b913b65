// Streams and events. On cuda they wrap cudaStream_t / cudaEvent_t; on cpu and simt work runs
// in order at once, so a stream is a no-op and an event is a host timestamp.
#pragma once
#include <chrono>
#include <cstddef>

#include "core/device.h"

namespace parbench {

class Stream {
 public:
  explicit Stream(Device device, bool create = false);  // create=false: the device's default stream
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  Stream(Stream&& o) noexcept;
  Stream& operator=(Stream&& o) noexcept;

  const Device& device() const { return device_; }
  void* native() const { return handle_; }  // cudaStream_t on cuda, nullptr elsewhere
  void synchronize() const;

 private:
  Device device_;
  void* handle_ = nullptr;
  bool owned_ = false;
};

// Waits for the work queued on `native` (a cudaStream_t of `device`; null: its default stream); nothing on the host
// devices, where work runs at once.
void synchronize_stream(const Device& device, void* native);

// The GPU index of a stream made by Stream(device, true) and not yet destroyed; -1 for any other handle (null, the
// legacy default stream).
int stream_device_index(void* native);
// Where synchronous work of the calling thread on GPU `d`, or between GPUs `d` and `other`, runs (device_memcpy,
// device_memset, a collective called without a stream): the thread's current stream (core/current_stream.h) when
// it is a stream of one of them, so that the work follows what the thread queued there and never touches the
// legacy default stream; otherwise null, the legacy default stream, where programs without streams of their own
// queue their work. Null on host devices.
void* synchronous_stream(const Device& d, const Device& other = Device{});

class Event {
 public:
  explicit Event(Device device);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  void record(const Stream& s);
  void synchronize() const;
  bool done() const;  // whether the work before the last record has run (cudaEventQuery); true on host devices
  void wait_on(const Stream& s) const;  // make `s` wait for this event (cudaStreamWaitEvent)
  // Milliseconds from `start` to `end`, both recorded.
  static double elapsed_ms(const Event& start, const Event& end);

 private:
  Device device_;
  void* handle_ = nullptr;
  std::chrono::steady_clock::time_point host_time_{};
  bool recorded_ = false;
};

}  // namespace parbench
