// Ranges timed by events on a stream (TraceStream): their track, times, nesting, ranks, the free list of events,
// the bound on unresolved ranges, and on a GPU (the emulated one included) that the host never waits for them.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "base/error.h"
#include "core/device.h"
#include "core/host_counts.h"
#include "core/memory.h"
#include "profiles/range.h"
#include "profiles/stream_ranges.h"
#include "trace_test_util.h"

using namespace parbench;
using nlohmann::json;
using pbtest::end_ns;
using pbtest::start_ns;

namespace {

void pause_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

class TraceStreams : public pbtest::RecorderTest {};

json only(const json& trace, const std::string& name) {
  std::vector<json> found;
  for (const auto& e : pbtest::complete_events(trace))
    if (e.at("name") == name) found.push_back(e);
  EXPECT_EQ(found.size(), 1u) << "events named " << name;
  return found.empty() ? json::object() : found[0];
}

// The track name of an X event, from the thread_name metadata of its pid and tid.
std::string track_of(const json& trace, const json& e) {
  for (const auto& m : trace.at("traceEvents"))
    if (m.at("ph") == "M" && m.at("name") == "thread_name" && m.at("pid") == e.at("pid") && m.at("tid") == e.at("tid"))
      return m.at("args").at("name");
  return "";
}

constexpr long long kMs = 1'000'000;
constexpr long long kLoadSlackNs = 250 * kMs;  // scheduling slack on a loaded 2-core machine

}  // namespace

// On a host device an event is a host timestamp, so the times are known; the path is the GPU's.
TEST_F(TraceStreams, RangesGoOnTheStreamTrackWithEventTimes) {
  const Stream host(Device{});
  TraceTrack track(2, "compute");
  {
    PB_RANGE("host parent", Category::compute);
    TraceStream on(host, "compute stream");
    {
      PB_RANGE("outer", Category::compute, {.layer = 4});
      pause_ms(20);
      {
        PB_RANGE("inner", Category::communication, {.bytes = 64});
        pause_ms(10);
      }
    }
  }
  EXPECT_EQ(rec().pending_stream_ranges(), 2u) << "stream ranges wait in the queue until resolved";
  EXPECT_EQ(rec().event_count(), 1u);
  const json t = written();
  EXPECT_EQ(rec().pending_stream_ranges(), 0u);
  const json parent = only(t, "host parent"), outer = only(t, "outer"), inner = only(t, "inner");
  EXPECT_EQ(track_of(t, parent), "compute");
  EXPECT_EQ(track_of(t, outer), "compute stream");
  EXPECT_EQ(track_of(t, inner), "compute stream");
  for (const json* e : {&parent, &outer, &inner}) EXPECT_EQ((*e)["pid"], 2 + kTraceIdOffset) << e->dump();
  EXPECT_EQ(outer["args"], json({{"layer", 4}}));
  EXPECT_EQ(inner["cat"], "communication");
  EXPECT_GE(end_ns(outer) - start_ns(outer), 30 * kMs);
  EXPECT_LT(end_ns(outer) - start_ns(outer), 30 * kMs + kLoadSlackNs);
  EXPECT_GE(end_ns(inner) - start_ns(inner), 10 * kMs);
  EXPECT_GE(start_ns(inner), start_ns(outer) + 20 * kMs);
  EXPECT_LE(end_ns(inner), end_ns(outer));
  // Both clocks are one: the stream ranges lie inside the host range that holds them.
  EXPECT_GE(start_ns(outer), start_ns(parent));
  EXPECT_LE(end_ns(outer), end_ns(parent));
  EXPECT_TRUE(pbtest::properly_nested(t));
  EXPECT_TRUE(pbtest::emitted_in_order(t));
}

// A collective's closure names its rank with a TraceTrack inside the guard (as DDP's does): the rank is the
// thread's at the range's start, the row the stream's.
TEST_F(TraceStreams, RankComesFromTheThreadTrackFromTheStream) {
  const Stream comm_stream(Device{});
  std::thread rank1([&] {
    TraceStream on(comm_stream, "comm stream");
    TraceTrack track(1, "comm");
    PB_RANGE("allreduce bucket", Category::communication, {.chunk = 3});
  });
  rank1.join();
  {
    TraceStream on(comm_stream, "comm stream");  // no TraceTrack: the default rank
    PB_RANGE("default rank", Category::communication);
  }
  const json t = written();
  const json bucket = only(t, "allreduce bucket"), dflt = only(t, "default rank");
  EXPECT_EQ(bucket["pid"], 1 + kTraceIdOffset);
  EXPECT_EQ(track_of(t, bucket), "comm stream");
  EXPECT_EQ(dflt["pid"], 0 + kTraceIdOffset);
  EXPECT_EQ(track_of(t, dflt), "comm stream");
  EXPECT_EQ(bucket["tid"], dflt["tid"]) << "a track name has one id on every rank";
}

TEST_F(TraceStreams, GuardsNestAndRestore) {
  const Stream a(Device{}), b(Device{});
  EXPECT_EQ(TraceStream::current(), nullptr);
  {
    TraceStream on_a(a, "compute stream");
    EXPECT_EQ(&TraceStream::current()->stream(), &a);
    {
      TraceStream on_b(b, "comm stream");
      EXPECT_EQ(&TraceStream::current()->stream(), &b);
      PB_RANGE("on b", Category::communication);
    }
    EXPECT_EQ(&TraceStream::current()->stream(), &a);
    PB_RANGE("on a", Category::compute);
  }
  EXPECT_EQ(TraceStream::current(), nullptr);
  EXPECT_THROW(TraceStream(a, ""), Error);
  const json t = written();
  EXPECT_EQ(track_of(t, only(t, "on b")), "comm stream");
  EXPECT_EQ(track_of(t, only(t, "on a")), "compute stream");
}

// A steady loop creates no events once its first round has filled the free list, and resolving as it goes keeps
// the queue short.
TEST_F(TraceStreams, EventsAreReusedAndTheQueueStaysBounded) {
  const Stream host(Device{});
  TraceStream on(host, "compute stream");
  StreamRangeQueue& queue = StreamRangeQueue::instance();
  auto round = [] {
    for (int i = 0; i < 20; ++i) {
      PB_RANGE("step", Category::compute, {.microbatch = i});
      PB_RANGE("kernel", Category::compute);
    }
    TraceRecorder::instance().resolve_stream_ranges();
  };
  round();
  EXPECT_EQ(rec().pending_stream_ranges(), 0u) << "a host device's events are done at once";
  const std::size_t created = queue.events_created();
  round();
  round();
  EXPECT_EQ(queue.events_created(), created) << "steady rounds must reuse their events";

  std::size_t most = 0;
  for (std::size_t i = 0; i < 3 * StreamRangeQueue::kFirstResolve; ++i) {
    { PB_RANGE("unresolved", Category::compute); }
    most = std::max(most, rec().pending_stream_ranges());
  }
  EXPECT_LT(most, StreamRangeQueue::kFirstResolve) << "done ranges are resolved as the queue grows";
  EXPECT_LE(queue.events_created(), created + 2 * StreamRangeQueue::kFirstResolve);
  EXPECT_EQ(rec().event_count() + rec().pending_stream_ranges(), 3 * 40 + 3 * StreamRangeQueue::kFirstResolve);
  rec().clear();
  EXPECT_EQ(rec().pending_stream_ranges(), 0u);
}

TEST_F(TraceStreams, DisabledRecorderQueuesNothing) {
  rec().disable();
  const Stream host(Device{});
  TraceStream on(host, "compute stream");
  { PB_RANGE("not recorded", Category::compute); }
  EXPECT_EQ(rec().pending_stream_ranges(), 0u);
  EXPECT_EQ(rec().event_count(), 0u);
}

// On a GPU (the emulated GPU build's included) the ranges record events and the host never waits for them: the
// times come when the trace is written. Work queued on the stream before a range is not inside it.
TEST_F(TraceStreams, OnAGpuTheHostDoesNotWait) {
  if (!probe_cuda().usable) GTEST_SKIP() << "no usable GPU";
  const Device gpu{DeviceKind::cuda, 0};
  make_device_current(gpu);
  const Stream s(gpu, true);
  constexpr std::size_t kBytes = 1 << 20;
  void* buf = device_malloc(gpu, kBytes);
  HostCounts during;
  {
    TraceStream on(s, "compute stream");  // ties the GPU's clock to the trace's, before the counted part
    const HostCounts before = host_counts();
    for (int i = 0; i < 4; ++i) {
      PB_RANGE("fill", Category::compute, {.chunk = i});
      device_memset_async(gpu, buf, i, kBytes, s);
    }
    during = host_counts() - before;
  }
  EXPECT_EQ(during.host_waits, 0) << "a traced range must not wait for its stream";
  const json t = written();
  std::vector<json> fills;
  for (const auto& e : pbtest::complete_events(t))
    if (e.at("name") == "fill") fills.push_back(e);
  ASSERT_EQ(fills.size(), 4u);
  for (std::size_t i = 0; i < fills.size(); ++i) {
    EXPECT_EQ(track_of(t, fills[i]), "compute stream");
    EXPECT_EQ(fills[i]["args"]["chunk"], int(i)) << "in stream order";
    if (i > 0) {
      EXPECT_GE(start_ns(fills[i]), end_ns(fills[i - 1])) << "one stream runs one range at a time";
    }
  }
  s.synchronize();
  device_free(gpu, buf);
}
