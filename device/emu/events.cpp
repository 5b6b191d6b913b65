// The emulated CUDA runtime's events: record (on a stream, or as a node of a capture that records anew at every
// launch of the graph), query, synchronize, elapsed time, and cudaStreamWaitEvent, with CUDA's rules at a
// capture's boundary.
#include <algorithm>
#include <memory>
#include <mutex>
#include <vector>

#include "device/emu/emu.h"
#include "device/emu/internal_streams.h"

using namespace parbench::gpu_emu;

namespace {

constexpr std::uint32_t kEventMagic = 0x45564e54;  // "EVNT"
struct EventState {
  std::uint32_t magic = kEventMagic;
  int device = 0;
  unsigned flags = 0;
  OpPtr marker;  // the latest cudaEventRecord's operation
  unsigned long long capture = 0;  // the capture its latest record was recorded in (0: a real record)
};

// The capture event `ev` was last recorded in, while that capture goes on; 0 otherwise.
unsigned long long live_capture(const EventState* ev) { return capture_live(ev->capture) ? ev->capture : 0; }

// cudaEventQuery/cudaEventSynchronize of an event recorded in a capture going on: CUDA's error, the capture
// invalidated.
cudaError_t captured_event(EventState* ev, const char* api) {
  const unsigned long long id = live_capture(ev);
  if (id == 0) return cudaSuccess;
  invalidate_capture(id, std::string(api) + " of an event recorded in the capture");
  return fail(cudaErrorCapturedEvent, std::string(api) + " of an event last recorded in a stream that captures: it "
                                                         "has not happened (the capture is now invalidated)");
}
std::mutex g_events_m;
std::vector<std::unique_ptr<EventState>>& events() {  // never freed: destroyed handles stay recognisable
  static auto* v = new std::vector<std::unique_ptr<EventState>>;
  return *v;
}
EventState* resolve_event(cudaEvent_t e) {
  auto* x = reinterpret_cast<EventState*>(e);
  std::lock_guard<std::mutex> l(g_events_m);
  for (const auto& ev : events())
    if (ev.get() == x) return x->magic == kEventMagic ? x : nullptr;
  return nullptr;
}

// cudaStreamWaitEvent when the stream captures (`mine`) or the event was recorded in a capture going on (`its`).
// Inside one capture the wait is the capture's own order (one stream); an event recorded outside a capture is
// waited for at each launch when flagged cudaEventWaitExternal, and refused otherwise, as CUDA does; a second
// stream joining a capture through its event is not emulated.
cudaError_t wait_event_in_capture(StreamState* st, EventState* ev, unsigned flags, unsigned long long mine,
                                  unsigned long long its) {
  if (mine != 0 && its == mine) return cudaSuccess;
  if (mine != 0 && its != 0) {
    invalidate_capture(mine, "cudaStreamWaitEvent on an event of another capture");
    return fail(cudaErrorStreamCaptureMerge, "cudaStreamWaitEvent: the event was recorded in another capture");
  }
  if (mine != 0) {
    if (!(flags & cudaEventWaitExternal)) {
      invalidate_capture(mine, "cudaStreamWaitEvent on an event recorded outside the capture");
      return fail(cudaErrorStreamCaptureIsolation, "cudaStreamWaitEvent of a capturing stream on an event recorded "
                                                   "outside the capture (cudaEventWaitExternal makes it an external wait)");
    }
    record_if_capturing(st, "wait for an external event", [ev](StreamState* t) {
      if (ev->magic == kEventMagic && ev->marker) enqueue(t, "wait for an event", nullptr, {ev->marker});
    });
    return cudaSuccess;
  }
  invalidate_capture(its, "another stream waited for one of its events");
  return fail(cudaErrorStreamCaptureUnsupported,
              "cudaStreamWaitEvent: the event was recorded in a capture going on, which would join this stream to "
              "it; the emulated GPU captures one stream per capture (the capture is now invalidated)");
}

}  // namespace

extern "C" {

cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int flags) {
  StreamState* st = work_stream(s, "cudaStreamWaitEvent", PB_EMU_SITE());
  EventState* ev = resolve_event(e);
  if (!st) return bad_stream("cudaStreamWaitEvent");
  if (!ev) return fail(cudaErrorInvalidResourceHandle, "cudaStreamWaitEvent: not a live event");
  const unsigned long long mine = capture_id(st), its = live_capture(ev);
  if (mine != 0 || its != 0) return wait_event_in_capture(st, ev, flags, mine, its);
  if (ev->marker) enqueue(st, "wait for an event", nullptr, {ev->marker});
  return cudaSuccess;
}

// ---- events
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int flags) {
  if (!e) return fail(cudaErrorInvalidValue, "cudaEventCreateWithFlags with a null pointer");
  auto ev = std::make_unique<EventState>();
  ev->device = current_device();
  ev->flags = flags;
  *e = reinterpret_cast<cudaEvent_t>(ev.get());
  std::lock_guard<std::mutex> l(g_events_m);
  events().push_back(std::move(ev));
  return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t* e) { return cudaEventCreateWithFlags(e, cudaEventDefault); }
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  EventState* ev = resolve_event(e);
  if (!ev) return fail(cudaErrorInvalidResourceHandle, "cudaEventDestroy: not a live event");
  ev->magic = 0;
  ev->marker.reset();
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  EventState* ev = resolve_event(e);
  StreamState* st = work_stream(s, "cudaEventRecord", PB_EMU_SITE());
  if (!ev) return fail(cudaErrorInvalidResourceHandle, "cudaEventRecord: not a live event");
  if (!st) return bad_stream("cudaEventRecord");
  if (ev->device != st->device)
    return fail(cudaErrorInvalidResourceHandle, "cudaEventRecord of an event of GPU " + std::to_string(ev->device) +
                                                    " on a stream of GPU " + std::to_string(st->device));
  if (const unsigned long long id = capture_id(st); id != 0) {
    // A node that records the event anew at every launch of the graph.
    if (record_if_capturing(st, "event record", [ev](StreamState* t) {
          if (ev->magic == kEventMagic) ev->marker = enqueue(t, "event record", nullptr);
        }))
      ev->capture = id;
    return cudaSuccess;
  }
  ev->capture = 0;
  ev->marker = enqueue(st, "event record", nullptr);
  return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t e) {
  EventState* ev = resolve_event(e);
  if (!ev) return fail(cudaErrorInvalidResourceHandle, "cudaEventQuery: not a live event");
  if (cudaError_t c = captured_event(ev, "cudaEventQuery"); c != cudaSuccess) return c;
  return op_done(ev->marker) ? cudaSuccess : cudaErrorNotReady;
}
cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  count(Count::event_sync);
  EventState* ev = resolve_event(e);
  if (!ev) return fail(cudaErrorInvalidResourceHandle, "cudaEventSynchronize: not a live event");
  if (cudaError_t c = captured_event(ev, "cudaEventSynchronize"); c != cudaSuccess) return c;
  wait_ops({ev->marker}, "cudaEventSynchronize");
  return sticky(ev->device);
}
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  EventState* a = resolve_event(start);
  EventState* b = resolve_event(end);
  if (!ms) return fail(cudaErrorInvalidValue, "cudaEventElapsedTime with a null pointer");
  if (!a || !b) return fail(cudaErrorInvalidResourceHandle, "cudaEventElapsedTime: not a live event");
  if ((a->flags | b->flags) & cudaEventDisableTiming)
    return fail(cudaErrorInvalidResourceHandle, "cudaEventElapsedTime on an event created with cudaEventDisableTiming");
  if (a->device != b->device) return fail(cudaErrorInvalidResourceHandle, "cudaEventElapsedTime of events on two GPUs");
  if (!a->marker || !b->marker) return fail(cudaErrorInvalidResourceHandle, "cudaEventElapsedTime of an event never recorded");
  if (!op_done(a->marker) || !op_done(b->marker)) return cudaErrorNotReady;
  *ms = std::chrono::duration<float, std::milli>(finish_time(b->marker) - finish_time(a->marker)).count();
  return cudaSuccess;
}

}  // extern "C"
