// The slow paths of Range: taken only when the trace recorder or an NVTX tool is active.
#include "profiles/range.h"

#include "profiles/nvtx_emit.h"
#include "profiles/stream_ranges.h"

namespace parbench {

void Range::begin(unsigned mode, std::string_view name, Category cat,
                  const RangeArgs& args) noexcept {
  TraceRecorder& rec = TraceRecorder::instance();
  if (mode & TraceRecorder::kNvtxProbe) mode = rec.probe_nvtx();
  if (mode & TraceRecorder::kNvtx) {
    char message[256];  // on the stack: no allocation on the NVTX path
    format_range_message(message, sizeof message, name, args);
    detail::nvtx_push(message, cat, args);
    active_ |= TraceRecorder::kNvtx;
  }
  if (mode & TraceRecorder::kTrace) {
    try {
      name_.assign(name);
      args_ = args;
      cat_ = cat;
      if (const TraceStream* on = TraceStream::current()) {
        // The host does not wait: the GPU work queued before this event is not inside the range, and the range
        // ends when the work queued before its end event has run.
        pid_ = rec.current_rank();
        tid_ = on->track_id();
        begin_event_ = StreamRangeQueue::instance().begin(on->stream());
        stream_ = &on->stream();
      } else {
        rec.current_track(&pid_, &tid_);
      }
      active_ |= TraceRecorder::kTrace;
      start_ns_ = rec.now_ns();  // last, so the setup above is not inside the range
    } catch (...) {
      // Out of memory while profiling: drop this event rather than fail the measured code.
    }
  }
}

void Range::end() noexcept {
  TraceRecorder& rec = TraceRecorder::instance();
  if ((active_ & TraceRecorder::kTrace) && stream_) {
    try {
      StreamRangeQueue::instance().end(*stream_, begin_event_, std::move(name_), cat_, pid_, tid_, args_);
    } catch (...) {
      // A lost event is better than an exception from a destructor.
    }
  } else if (active_ & TraceRecorder::kTrace) {
    const std::int64_t end_ns = rec.now_ns();
    try {
      rec.add(TraceRecorder::Event{std::move(name_), cat_, pid_, tid_,
                                   static_cast<double>(start_ns_) / 1e3,
                                   static_cast<double>(end_ns - start_ns_) / 1e3, args_});
    } catch (...) {
      // A lost event is better than an exception from a destructor.
    }
  }
  if (active_ & TraceRecorder::kNvtx) detail::nvtx_pop();
}

}  // namespace parbench
