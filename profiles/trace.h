// The process-wide trace recorder (Chrome trace JSON, one track per rank and stream) and the
// per-OS-thread track selection. Ranges (profiles/range.h) feed it; programs enable and write it.
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/stream.h"
#include "profiles/category.h"

namespace parbench {

// The JSON holds "pid" = rank + kTraceIdOffset and "tid" = track id + kTraceIdOffset: Perfetto
// treats pid 0 and tid 0 as the kernel's idle process (swapper), which its UI may leave out of
// some views. Metadata names each process "rank N" (sorted by rank) and each thread by its track name,
// so the UI shows ranks, not the offset numbers.
inline constexpr int kTraceIdOffset = 1;

// A track in the trace: a rank (a trace "process") and a track name ("compute", "comm", ...: a
// trace "thread"). Track ids are given out per name, process-wide, so a name has the same tid on
// every rank.
struct TrackRef {
  int rank = 0;
  std::string_view name;
};

// The one process-wide profiling context. Ranks may be threads of this process (thread-mode
// collectives) or separate processes (mpirun); either way each OS thread says which rank and
// track it is with a TraceTrack. Thread-safe. When neither the trace nor an NVTX tool is active a
// range costs one relaxed atomic load and one branch.
class TraceRecorder {
 public:
  static TraceRecorder& instance() noexcept { return instance_; }

  // Mode bits, read by every range.
  static constexpr unsigned kTrace = 1;      // the Chrome-trace recorder is enabled
  static constexpr unsigned kNvtx = 2;       // NVTX ranges are emitted (a tool is attached)
  static constexpr unsigned kNvtxProbe = 4;  // NVTX tool presence not checked yet
  unsigned mode() const noexcept { return mode_.load(std::memory_order_relaxed); }

  // Starts recording ranges (the time origin is fixed on the first call of enable or now_us).
  void enable() noexcept;
  // Stops recording; recorded events stay until clear().
  void disable() noexcept;
  bool enabled() const noexcept { return (mode() & kTrace) != 0; }
  // Drops every recorded event (the time origin and track ids stay).
  void clear();
  // Whether ranges are sent to NVTX: compiled with NVTX and a tool named by NVTX_INJECTION64_PATH
  // (nsys and ncu set it). Checked once per process.
  bool nvtx_active() noexcept;

  // Microseconds since the recorder's time origin, from the steady clock.
  double now_us() noexcept;

  // Records a range with explicit times (e.g. from CUDA events resolved later): start_us on the
  // now_us() scale, dur_us >= 0. The track defaults to the calling thread's TraceTrack. Does
  // nothing when the recorder is disabled. Throws Error on a negative or non-finite time.
  void record_complete(std::string_view name, Category cat, double start_us, double dur_us,
                       const RangeArgs& args = {}, const TrackRef* track = nullptr);

  // The trace as a Chrome JSON object: {"traceEvents":[...],"displayTimeUnit":"ms",...}, with
  // "process_name" = "rank N" and "thread_name" = track name metadata for every track used. Ranges timed by
  // stream events are resolved first, waiting for their events.
  std::string to_json() const;
  // Writes to_json() to `path` atomically (a temporary file in the same folder, then rename).
  // Throws Error naming the path and the reason; on failure nothing is left behind.
  void write(const std::string& path) const;
  std::size_t event_count() const;

  // Rank used by threads that have no TraceTrack (set it once per process under mpirun).
  void set_default_rank(int rank);

  // Steady-clock nanoseconds since the time origin (now_us() * 1000, as an integer).
  std::int64_t now_ns() noexcept;

  // Adds the ranges timed by stream events (TraceStream) whose events are done; with `wait`, waits for the others
  // first. Cheap (event queries) when the streams are known to be done, e.g. at the end of a step; to_json() and
  // write() call it with wait = true.
  void resolve_stream_ranges(bool wait = false);
  // Ranges timed by stream events that are not resolved yet.
  std::size_t pending_stream_ranges() const;

 private:
  friend class Range;
  friend class TraceTrack;
  friend class TraceStream;
  friend class StreamRangeQueue;

  struct Event {
    std::string name;
    Category cat;
    int pid;  // rank
    int tid;  // index into track_names_
    double ts_us;
    double dur_us;
    RangeArgs args;
  };
  unsigned probe_nvtx() noexcept;           // resolves kNvtxProbe; returns the new mode
  int track_id(std::string_view name);      // the id of a track name, given out on first use
  void current_track(int* rank, int* tid);  // the calling thread's track
  int current_rank() const noexcept;        // the calling thread's rank
  void add(Event&& e);

  constexpr TraceRecorder() noexcept = default;
  ~TraceRecorder() = default;
  std::int64_t epoch_ns() noexcept;

  static TraceRecorder instance_;

  // Starts with the probe bit so the first range checks for an NVTX tool (a no-op without NVTX).
  std::atomic<unsigned> mode_{kNvtxProbe};
  std::atomic<std::int64_t> epoch_ns_{0};  // steady-clock ns of the time origin; 0 = not set
  std::atomic<int> default_rank_{0};
  std::atomic<int> next_thread_{0};        // numbers "thread N" tracks of threads without one
  mutable std::atomic<unsigned> write_seq_{0};  // distinguishes temporary files of one process
  mutable std::mutex mu_;
  std::vector<Event> events_;             // guarded by mu_
  std::vector<std::string> track_names_;  // index = tid; guarded by mu_
};

// Sets the calling OS thread's rank and track for its lifetime and restores the previous ones on
// destruction (they nest). Typical: `TraceTrack track(rank, "compute");` at the top of a rank's
// thread, and `TraceTrack track(rank, "comm");` in its communication thread.
class TraceTrack {
 public:
  TraceTrack(int rank, std::string_view name);
  ~TraceTrack();
  TraceTrack(const TraceTrack&) = delete;
  TraceTrack& operator=(const TraceTrack&) = delete;

 private:
  int prev_rank_;
  int prev_tid_;
};

// On a GPU a range's kernels run after the host code that queued them, so host timestamps would show launch
// time. A thread whose ranges queue GPU work on a stream says which one for its lifetime: while the Chrome trace
// records, each of that thread's ranges records an event on the stream at its start and one at its end, and goes on
// the track `track` ("compute stream", "comm stream") of the thread's rank instead of the thread's own track. The
// host never waits for these events: the recorder reads their times once they are done (resolve_stream_ranges, and
// at the latest when the trace is written). Ranges seen only by an NVTX tool are unchanged: nsys times the GPU
// itself. Guards nest like TraceTrack; `s` and the characters of `track` must outlive the guard. Construction while
// the recorder is enabled ties the stream's device clock to the trace's clock once per device (one wait for an idle
// stream of its own), so install the guard before the timed work.
class TraceStream {
 public:
  TraceStream(const Stream& s, std::string_view track);
  ~TraceStream();
  TraceStream(const TraceStream&) = delete;
  TraceStream& operator=(const TraceStream&) = delete;
  // The calling thread's innermost guard, or nullptr.
  static const TraceStream* current() noexcept;
  const Stream& stream() const { return stream_; }
  int track_id() const;  // the track's id, given out on first use

 private:
  const Stream& stream_;
  std::string_view track_;
  mutable int tid_ = -1;
  TraceStream* prev_;
};

// Shorthand for TraceRecorder::instance().record_complete(...).
inline void record_complete(std::string_view name, Category cat, double start_us, double dur_us,
                            const RangeArgs& args = {}, const TrackRef* track = nullptr) {
  TraceRecorder::instance().record_complete(name, cat, start_us, dur_us, args, track);
}

}  // namespace parbench
