// The trace recorder: thread-local track selection, event storage, Chrome JSON writer.
#include "profiles/trace.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "base/error.h"
#include "profiles/nvtx_emit.h"
#include "profiles/stream_ranges.h"

namespace parbench {

// constinit: ranges in static initializers of other translation units must find it ready.
constinit TraceRecorder TraceRecorder::instance_;

namespace {

// The calling OS thread's track, set by TraceTrack; -1 = not set.
thread_local int t_rank = -1;
thread_local int t_tid = -1;
// The "thread N" track a thread without TraceTrack gets, given out once per thread.
thread_local int t_default_tid = -1;

std::int64_t steady_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void append_escaped(std::string& out, std::string_view s) {
  out += '"';
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char u[8];
          std::snprintf(u, sizeof u, "\\u%04x", c);
          out += u;
        } else {
          out += ch;
        }
    }
  }
  out += '"';
}

// Microseconds with nanosecond resolution: exact for times taken from the steady clock.
void append_us(std::string& out, double us) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, us, std::chars_format::fixed, 3);
  out.append(buf, r.ptr);
}

void append_int(std::string& out, std::int64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void append_metadata(std::string& out, const char* what, int pid, int tid, const char* key,
                     const std::string* str, int num) {
  out += "{\"name\":\"";
  out += what;
  out += "\",\"ph\":\"M\",\"pid\":";
  append_int(out, pid);
  out += ",\"tid\":";
  append_int(out, tid);
  out += ",\"args\":{\"";
  out += key;
  out += "\":";
  if (str)
    append_escaped(out, *str);
  else
    append_int(out, num);
  out += "}},\n";
}

std::string errno_text(int err) { return std::strerror(err); }

}  // namespace

std::int64_t TraceRecorder::epoch_ns() noexcept {
  std::int64_t e = epoch_ns_.load(std::memory_order_acquire);
  if (e != 0) return e;
  std::int64_t now = std::max<std::int64_t>(steady_ns(), 1);
  if (epoch_ns_.compare_exchange_strong(e, now)) return now;
  return e;  // another thread set it first
}

std::int64_t TraceRecorder::now_ns() noexcept {
  const std::int64_t origin = epoch_ns();
  return steady_ns() - origin;
}

double TraceRecorder::now_us() noexcept { return static_cast<double>(now_ns()) / 1e3; }

void TraceRecorder::enable() noexcept {
  epoch_ns();
  mode_.fetch_or(kTrace);
}

void TraceRecorder::disable() noexcept { mode_.fetch_and(~kTrace); }

void TraceRecorder::clear() {
  StreamRangeQueue::instance().clear();
  std::lock_guard<std::mutex> lock(mu_);
  events_.clear();
  events_.shrink_to_fit();
}

unsigned TraceRecorder::probe_nvtx() noexcept {
  // kNvtx is set before the probe bit is cleared, so no thread sees "probed, no NVTX" wrongly.
  if (detail::nvtx_tool_requested()) mode_.fetch_or(kNvtx);
  return mode_.fetch_and(~kNvtxProbe) & ~kNvtxProbe;
}

bool TraceRecorder::nvtx_active() noexcept {
  unsigned m = mode();
  if (m & kNvtxProbe) m = probe_nvtx();
  return (m & kNvtx) != 0;
}

void TraceRecorder::set_default_rank(int rank) {
  PB_CHECK(rank >= 0, "trace rank must be >= 0, got " + std::to_string(rank));
  default_rank_.store(rank);
}

int TraceRecorder::track_id(std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  for (std::size_t i = 0; i < track_names_.size(); ++i)
    if (track_names_[i] == name) return static_cast<int>(i);
  track_names_.emplace_back(name);
  return static_cast<int>(track_names_.size() - 1);
}

void TraceRecorder::current_track(int* rank, int* tid) {
  *rank = current_rank();
  if (t_tid >= 0) {
    *tid = t_tid;
    return;
  }
  if (t_default_tid < 0)
    t_default_tid = track_id("thread " + std::to_string(next_thread_.fetch_add(1)));
  *tid = t_default_tid;
}

int TraceRecorder::current_rank() const noexcept {
  return t_rank >= 0 ? t_rank : default_rank_.load(std::memory_order_relaxed);
}

void TraceRecorder::resolve_stream_ranges(bool wait) { StreamRangeQueue::instance().resolve(wait); }

std::size_t TraceRecorder::pending_stream_ranges() const { return StreamRangeQueue::instance().pending(); }

void TraceRecorder::add(Event&& e) {
  std::lock_guard<std::mutex> lock(mu_);
  events_.push_back(std::move(e));
}

std::size_t TraceRecorder::event_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_.size();
}

void TraceRecorder::record_complete(std::string_view name, Category cat, double start_us,
                                    double dur_us, const RangeArgs& args, const TrackRef* track) {
  if (!enabled()) return;
  PB_CHECK(std::isfinite(start_us) && std::isfinite(dur_us) && dur_us >= 0,
           "trace event '" + std::string(name) + "': start " + std::to_string(start_us) +
               " us, duration " + std::to_string(dur_us) +
               " us; expected finite times and a duration >= 0");
  Event e{std::string(name), cat, 0, 0, start_us, dur_us, args};
  if (track) {
    PB_CHECK(track->rank >= 0, "trace rank must be >= 0, got " + std::to_string(track->rank));
    PB_CHECK(!track->name.empty(), "trace track name must not be empty");
    e.pid = track->rank;
    e.tid = track_id(track->name);
  } else {
    current_track(&e.pid, &e.tid);
  }
  add(std::move(e));
}

std::string TraceRecorder::to_json() const {
  StreamRangeQueue::instance().resolve(true);  // the run is over: its streams' ranges may be waited for
  std::lock_guard<std::mutex> lock(mu_);
  // Sorted per track by start, longer first on ties, so parents precede their children.
  std::vector<const Event*> order;
  order.reserve(events_.size());
  for (const Event& e : events_) order.push_back(&e);
  std::sort(order.begin(), order.end(), [](const Event* a, const Event* b) {
    if (a->pid != b->pid) return a->pid < b->pid;
    if (a->tid != b->tid) return a->tid < b->tid;
    if (a->ts_us != b->ts_us) return a->ts_us < b->ts_us;
    return a->dur_us > b->dur_us;
  });

  std::string out;
  out.reserve(256 + order.size() * 160);
  out += "{\"traceEvents\":[\n";
  int last_pid = -1, last_tid = -1;
  for (const Event* e : order) {
    const int pid = e->pid + kTraceIdOffset, tid = e->tid + kTraceIdOffset;
    if (e->pid != last_pid) {
      const std::string pname = "rank " + std::to_string(e->pid);
      append_metadata(out, "process_name", pid, tid, "name", &pname, 0);
      append_metadata(out, "process_sort_index", pid, tid, "sort_index", nullptr, e->pid);
      last_tid = -1;
    }
    if (e->pid != last_pid || e->tid != last_tid) {
      append_metadata(out, "thread_name", pid, tid, "name", &track_names_[e->tid], 0);
      append_metadata(out, "thread_sort_index", pid, tid, "sort_index", nullptr, e->tid);
    }
    last_pid = e->pid;
    last_tid = e->tid;
  }
  for (const Event* e : order) {
    out += "{\"name\":";
    append_escaped(out, e->name);
    out += ",\"cat\":\"";
    out += category_name(e->cat);
    out += "\",\"ph\":\"X\",\"ts\":";
    append_us(out, e->ts_us);
    out += ",\"dur\":";
    append_us(out, e->dur_us);
    out += ",\"pid\":";
    append_int(out, e->pid + kTraceIdOffset);
    out += ",\"tid\":";
    append_int(out, e->tid + kTraceIdOffset);
    out += ",\"args\":{";
    bool first = true;
    for_each_field(e->args, [&](std::string_view key, std::int64_t v) {
      if (!first) out += ',';
      first = false;
      out += '"';
      out += key;
      out += "\":";
      append_int(out, v);
    });
    out += "}},\n";
  }
  if (out.back() == '\n' && out[out.size() - 2] == ',') out.erase(out.size() - 2, 1);
  out += "],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":{\"producer\":\"parbench\","
         "\"clock\":\"steady\",\"time_origin_steady_ns\":";
  append_int(out, epoch_ns_.load());
  out += "}}\n";
  return out;
}

void TraceRecorder::write(const std::string& path) const {
  PB_CHECK(!path.empty(), "trace file path is empty");
  const std::string json = to_json();
  const std::string tmp = path + ".tmp" + std::to_string(::getpid()) + "." +
                          std::to_string(write_seq_.fetch_add(1));
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0)
    throw Error("cannot write trace file '" + path + "': creating '" + tmp +
                "' failed: " + errno_text(errno));
  std::size_t done = 0;
  int err = 0;
  while (done < json.size()) {
    ssize_t n = ::write(fd, json.data() + done, json.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      err = errno;
      break;
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && std::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());
    throw Error("cannot write trace file '" + path + "': " + errno_text(err));
  }
}

TraceTrack::TraceTrack(int rank, std::string_view name) : prev_rank_(t_rank), prev_tid_(t_tid) {
  PB_CHECK(rank >= 0, "trace rank must be >= 0, got " + std::to_string(rank));
  PB_CHECK(!name.empty(), "trace track name must not be empty");
  const int tid = TraceRecorder::instance().track_id(name);
  t_rank = rank;
  t_tid = tid;
}

TraceTrack::~TraceTrack() {
  t_rank = prev_rank_;
  t_tid = prev_tid_;
}

namespace {
thread_local TraceStream* t_trace_stream = nullptr;
}

TraceStream::TraceStream(const Stream& s, std::string_view track) : stream_(s), track_(track), prev_(t_trace_stream) {
  PB_CHECK(!track.empty(), "trace track name must not be empty");
  if (TraceRecorder::instance().enabled()) StreamRangeQueue::instance().anchor(s.device());
  t_trace_stream = this;
}

TraceStream::~TraceStream() { t_trace_stream = prev_; }

const TraceStream* TraceStream::current() noexcept { return t_trace_stream; }

int TraceStream::track_id() const {
  if (tid_ < 0) tid_ = TraceRecorder::instance().track_id(track_);
  return tid_;
}

}  // namespace parbench
