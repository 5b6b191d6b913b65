// The Chrome-trace recorder: two threads acting as two ranks, nesting, durations, metadata, args,
// categories, explicit-time events, default tracks, concurrency and atomic file writing.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <thread>

#include "base/error.h"
#include "profiles/range.h"
#include "trace_test_util.h"

using namespace parbench;
using nlohmann::json;
using pbtest::end_ns;
using pbtest::start_ns;

namespace {

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

class Trace : public pbtest::RecorderTest {};

// The metadata value ("name" or "sort_index") of a process/thread metadata event, or null.
json metadata(const json& trace, const std::string& what, int pid, int tid = -1) {
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") != "M" || e.at("name") != what || e.at("pid") != pid) continue;
    if (tid >= 0 && e.at("tid") != tid) continue;
    return e.at("args");
  }
  return nullptr;
}

std::vector<json> named(const json& trace, const std::string& name) {
  std::vector<json> out;
  for (const auto& e : pbtest::complete_events(trace))
    if (e.at("name") == name) out.push_back(e);
  return out;
}

json one(const json& trace, const std::string& name) {
  auto v = named(trace, name);
  EXPECT_EQ(v.size(), 1u) << "events named " << name;
  return v.empty() ? json::object() : v[0];
}

void idle_function() { PB_FUNCTION_RANGE(Category::idle); }

// The JSON pid of a rank (see kTraceIdOffset).
int pid(int rank) { return rank + kTraceIdOffset; }

constexpr long long kSlackNs = 250'000'000;  // scheduling slack on a loaded 2-core machine

}  // namespace

TEST_F(Trace, TwoThreadsActAsTwoRanks) {
  std::mt19937_64 rng(std::random_device{}());
  const std::int64_t layer = rng() % 96, mb = rng() % 16, stage = rng() % 8;
  const std::int64_t bytes = 1 + static_cast<std::int64_t>(rng() % (1ll << 40));

  std::thread rank0([&] {
    TraceTrack track(0, "compute");
    PB_RANGE("step", Category::compute, {.stage = stage});
    sleep_ms(5);
    {
      PB_RANGE("forward", Category::compute, {.layer = layer, .microbatch = mb});
      sleep_ms(20);
    }
    {
      PB_RANGE("backward", Category::compute, {.layer = layer});
      sleep_ms(5);
    }
  });
  std::thread rank1([&] {
    TraceTrack track(1, "compute");
    {
      TraceTrack comm(1, "comm");
      PB_RANGE("allreduce", Category::communication, {.bytes = bytes});
      sleep_ms(10);
    }
    // Back on rank 1's compute track after the inner TraceTrack ended.
    { PB_RANGE("adam", Category::optimizer); }
    { PB_RANGE("wait", Category::idle, {.chunk = 0}); }
  });
  rank0.join();
  rank1.join();
  const double t0 = rec().now_us();
  const TrackRef cuda{1, "cuda"};
  record_complete("kernel", Category::compute, t0, 123.456, {.chunk = 7}, &cuda);

  const json t = written();
  ASSERT_TRUE(t.is_object());
  EXPECT_EQ(t.at("displayTimeUnit"), "ms");
  ASSERT_TRUE(t.at("traceEvents").is_array());
  EXPECT_EQ(pbtest::complete_events(t).size(), 7u);
  EXPECT_EQ(rec().event_count(), 7u);

  const json step = one(t, "step"), fwd = one(t, "forward"), bwd = one(t, "backward");
  const json ar = one(t, "allreduce"), adam = one(t, "adam"), wait = one(t, "wait");
  const json kernel = one(t, "kernel");

  // pid = rank; tid = track id, the same id for a name on every rank.
  for (const json* e : {&step, &fwd, &bwd}) EXPECT_EQ((*e)["pid"], pid(0)) << e->dump();
  for (const json* e : {&ar, &adam, &wait, &kernel}) EXPECT_EQ((*e)["pid"], pid(1)) << e->dump();
  const int compute = step["tid"], comm = ar["tid"], cuda_tid = kernel["tid"];
  EXPECT_EQ(fwd["tid"], compute);
  EXPECT_EQ(adam["tid"], compute);
  EXPECT_EQ(wait["tid"], compute);
  EXPECT_NE(comm, compute);
  EXPECT_NE(cuda_tid, compute);
  EXPECT_NE(cuda_tid, comm);

  EXPECT_EQ(metadata(t, "process_name", pid(0)), json({{"name", "rank 0"}}));
  EXPECT_EQ(metadata(t, "process_name", pid(1)), json({{"name", "rank 1"}}));
  EXPECT_EQ(metadata(t, "process_sort_index", pid(0)), json({{"sort_index", 0}}));
  EXPECT_EQ(metadata(t, "process_sort_index", pid(1)), json({{"sort_index", 1}}));
  EXPECT_EQ(metadata(t, "thread_name", pid(0), compute), json({{"name", "compute"}}));
  EXPECT_EQ(metadata(t, "thread_name", pid(1), compute), json({{"name", "compute"}}));
  EXPECT_EQ(metadata(t, "thread_name", pid(1), comm), json({{"name", "comm"}}));
  EXPECT_EQ(metadata(t, "thread_name", pid(1), cuda_tid), json({{"name", "cuda"}}));
  EXPECT_EQ(metadata(t, "thread_name", pid(0), comm), nullptr);  // rank 0 never used "comm"
  // Perfetto hides pid 0 / tid 0 (the idle process) in places: no event may use them.
  for (const auto& e : t.at("traceEvents")) {
    EXPECT_GT(e.at("pid").get<int>(), 0) << e.dump();
    EXPECT_GT(e.at("tid").get<int>(), 0) << e.dump();
  }

  EXPECT_EQ(step["cat"], "compute");
  EXPECT_EQ(ar["cat"], "communication");
  EXPECT_EQ(adam["cat"], "optimizer");
  EXPECT_EQ(wait["cat"], "idle");
  EXPECT_EQ(step["args"], json({{"stage", stage}}));
  EXPECT_EQ(fwd["args"], json({{"layer", layer}, {"mb", mb}}));
  EXPECT_EQ(bwd["args"], json({{"layer", layer}}));
  EXPECT_EQ(ar["args"], json({{"bytes", bytes}}));
  EXPECT_EQ(adam["args"], json::object());
  EXPECT_EQ(wait["args"], json({{"chunk", 0}}));

  // Children inside the parent, siblings in order, durations at least the sleeps.
  EXPECT_GE(start_ns(fwd), start_ns(step) + 5'000'000);
  EXPECT_LE(end_ns(fwd), end_ns(step));
  EXPECT_GE(start_ns(bwd), end_ns(fwd));
  EXPECT_LE(end_ns(bwd), end_ns(step));
  EXPECT_GE(start_ns(wait), end_ns(adam));
  EXPECT_GE(pbtest::ns(fwd["dur"]), 20'000'000);
  EXPECT_LT(pbtest::ns(fwd["dur"]), 20'000'000 + kSlackNs);
  EXPECT_GE(pbtest::ns(ar["dur"]), 10'000'000);
  EXPECT_LT(pbtest::ns(ar["dur"]), 10'000'000 + kSlackNs);
  EXPECT_GE(pbtest::ns(step["dur"]), 30'000'000);
  EXPECT_LT(pbtest::ns(step["dur"]), 30'000'000 + kSlackNs);
  // Both ranks' ranges happened before t0, on the same time origin.
  EXPECT_LE(end_ns(step), pbtest::ns(json(t0)));
  EXPECT_LE(end_ns(ar), pbtest::ns(json(t0)));
  EXPECT_GE(start_ns(step), 0);

  // The explicit-time event keeps its times exactly (to the written nanosecond).
  EXPECT_NEAR(kernel["ts"].get<double>(), t0, 0.0005);
  EXPECT_DOUBLE_EQ(kernel["dur"].get<double>(), 123.456);
  EXPECT_EQ(kernel["args"], json({{"chunk", 7}}));
  EXPECT_TRUE(pbtest::properly_nested(t));
  EXPECT_TRUE(pbtest::emitted_in_order(t));
}

TEST_F(Trace, ThreadsWithoutTrackGetOwnTracksOnDefaultRank) {
  rec().set_default_rank(3);
  auto work = [] {
    PB_RANGE("outer", Category::compute);
    sleep_ms(2);
    PB_RANGE("inner", Category::compute);
    sleep_ms(2);
  };
  std::thread a(work), b(work);
  a.join();
  b.join();
  rec().set_default_rank(0);
  const json t = written();
  auto outers = named(t, "outer");
  ASSERT_EQ(outers.size(), 2u);
  EXPECT_EQ(outers[0]["pid"], pid(3));
  EXPECT_EQ(outers[1]["pid"], pid(3));
  EXPECT_NE(outers[0]["tid"], outers[1]["tid"]);  // overlapping threads never share a track
  for (const auto& o : outers) {
    json name = metadata(t, "thread_name", pid(3), o["tid"]);
    ASSERT_FALSE(name.is_null());
    EXPECT_EQ(name["name"].get<std::string>().rfind("thread ", 0), 0u) << name;
  }
  EXPECT_EQ(metadata(t, "process_name", pid(3)), json({{"name", "rank 3"}}));
  EXPECT_TRUE(pbtest::properly_nested(t));
  EXPECT_TRUE(pbtest::emitted_in_order(t));
  EXPECT_THROW(rec().set_default_rank(-1), Error);
}

TEST_F(Trace, ConcurrentRangesAreAllKeptAndNested) {
  constexpr int kThreads = 4, kOuter = 300;
  std::vector<std::thread> threads;
  for (int r = 0; r < kThreads; ++r)
    threads.emplace_back([r] {
      TraceTrack track(r, "compute");
      for (int i = 0; i < kOuter; ++i) {
        PB_RANGE("outer", Category::compute, {.microbatch = i});
        { PB_RANGE("a", Category::communication, {.bytes = i}); }
        { PB_RANGE("b", Category::optimizer); }
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(rec().event_count(), static_cast<std::size_t>(kThreads * kOuter * 3));
  const json t = written();
  EXPECT_EQ(pbtest::complete_events(t).size(), static_cast<std::size_t>(kThreads * kOuter * 3));
  EXPECT_TRUE(pbtest::properly_nested(t));
  EXPECT_TRUE(pbtest::emitted_in_order(t));
  for (int r = 0; r < kThreads; ++r)
    EXPECT_EQ(metadata(t, "process_name", pid(r)), json({{"name", "rank " + std::to_string(r)}}));
}

TEST_F(Trace, DisabledRecordsNothingAndClearEmpties) {
  { PB_RANGE("kept", Category::compute); }
  EXPECT_EQ(rec().event_count(), 1u);
  rec().disable();
  EXPECT_FALSE(rec().enabled());
  { PB_RANGE("dropped", Category::compute, {.layer = 1}); }
  record_complete("dropped", Category::idle, 1.0, 2.0);
  EXPECT_EQ(rec().event_count(), 1u);
  rec().clear();
  EXPECT_EQ(rec().event_count(), 0u);
  const json t = written();  // an empty trace is still a valid Chrome JSON object
  EXPECT_TRUE(t.at("traceEvents").empty());
  EXPECT_EQ(t.at("displayTimeUnit"), "ms");
}

TEST_F(Trace, RangeStartedBeforeDisableIsStillRecorded) {
  {
    PB_RANGE("straddles", Category::compute);
    rec().disable();
  }
  EXPECT_EQ(rec().event_count(), 1u);
}

TEST_F(Trace, NamesAreEscaped) {
  const std::string odd = "q\"uote\\slash\nnew\ttab\x01" "ctl \xc3\xa9";
  std::string owner = odd;
  {
    Range r(owner, Category::compute);
    owner.assign("changed");  // the range copied its name
  }
  idle_function();
  const json t = written();
  EXPECT_EQ(one(t, odd)["cat"], "compute");
  EXPECT_EQ(named(t, "changed").size(), 0u);
  EXPECT_EQ(one(t, "idle_function")["cat"], "idle");  // PB_FUNCTION_RANGE uses __func__
}

TEST_F(Trace, RecordCompleteRejectsBadTimes) {
  try {
    record_complete("k", Category::compute, 1.0, -2.0);
    FAIL() << "negative duration accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("duration -2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'k'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(record_complete("k", Category::compute, std::nan(""), 1.0), Error);
  const TrackRef bad{-1, "x"}, empty{0, ""};
  EXPECT_THROW(record_complete("k", Category::compute, 1.0, 1.0, {}, &bad), Error);
  EXPECT_THROW(record_complete("k", Category::compute, 1.0, 1.0, {}, &empty), Error);
  EXPECT_EQ(rec().event_count(), 0u);
  EXPECT_THROW(TraceTrack(-2, "compute"), Error);
  EXPECT_THROW(TraceTrack(0, ""), Error);
}

TEST_F(Trace, WriteIsAtomic) {
  { PB_RANGE("r", Category::compute); }
  const auto& d = dir_.path();

  // A missing folder: a clear error naming the path and the reason, and no file anywhere.
  const std::string missing = (d / "no_such_dir" / "trace.json").string();
  try {
    rec().write(missing);
    FAIL() << "write into a missing folder succeeded";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'" + missing + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("No such file or directory"), std::string::npos) << msg;
  }
  EXPECT_TRUE(dir_.entries().empty());

  // The target is a folder: rename fails, the temporary file is removed.
  std::filesystem::create_directory(d / "is_a_dir");
  EXPECT_THROW(rec().write((d / "is_a_dir").string()), Error);
  EXPECT_EQ(dir_.entries(), std::vector<std::string>{"is_a_dir"});

  // Replacing an existing file leaves exactly the new, complete file.
  { std::ofstream(d / "trace.json") << "old contents"; }
  rec().write((d / "trace.json").string());
  EXPECT_EQ(dir_.entries(), (std::vector<std::string>{"is_a_dir", "trace.json"}));
  const json t = json::parse(pbtest::read_file(d / "trace.json"));
  EXPECT_EQ(one(t, "r")["cat"], "compute");
  EXPECT_EQ(pbtest::read_file(d / "trace.json"), rec().to_json());
  EXPECT_THROW(rec().write(""), Error);
}
