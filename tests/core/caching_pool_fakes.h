// Fakes for the caching pool's tests: host memory with a byte budget as the raw allocator, and streams whose
// events complete when the test says the work queued on them is done.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/caching_pool.h"

namespace parbench::pool_fakes {

// Host memory with a byte budget, counting calls; nullptr once the budget is spent (as cudaMalloc fails).
struct FakeRaw {
  explicit FakeRaw(std::size_t bytes) : capacity(bytes) {}
  std::size_t capacity;
  std::size_t used = 0;
  int allocs = 0, frees = 0;
  std::map<void*, std::size_t> live;
  std::function<void(void*)> on_free;  // told before a block goes back

  CachingPool make(CachingPool::EventOps events = {}) {
    return CachingPool(
        [this](std::size_t bytes) -> void* {
          if (used + bytes > capacity) return nullptr;
          void* p = std::malloc(bytes);
          live[p] = bytes;
          used += bytes;
          ++allocs;
          return p;
        },
        [this](void* p) {
          auto it = live.find(p);
          ASSERT_NE(it, live.end()) << "raw free of a block the raw allocator never gave";
          if (on_free) on_free(p);
          used -= it->second;
          live.erase(it);
          std::free(p);
          ++frees;
        },
        std::move(events));
  }
};

// Streams are small integers cast to handles. Work "queued" on a stream (queue) is done once the test completes
// the stream; an event marks how much work its stream had when it was recorded.
struct FakeStreams {
  struct EventState {
    void* stream = nullptr;
    std::uint64_t mark = 0;
    bool live = true, recorded = false;
  };
  std::map<void*, std::uint64_t> queued, completed;
  std::vector<EventState> events;  // an event's handle is its index + 1
  int creates = 0, records = 0, syncs = 0, destroys = 0;

  static void* stream(int i) { return reinterpret_cast<void*>(std::uintptr_t(i) * 16); }
  void queue(void* s) { ++queued[s]; }
  void complete(void* s) { completed[s] = queued[s]; }
  bool done(void* s, std::uint64_t mark) { return completed[s] >= mark; }
  EventState& at(void* e) {
    const std::size_t i = reinterpret_cast<std::uintptr_t>(e) - 1;
    EXPECT_LT(i, events.size()) << "not an event handle";
    EXPECT_TRUE(events[i].live) << "use of a destroyed event";
    return events[i];
  }
  std::size_t live_events() const {
    std::size_t n = 0;
    for (const EventState& e : events) n += e.live;
    return n;
  }

  CachingPool::EventOps ops() {
    CachingPool::EventOps o;
    o.create = [this] {
      events.emplace_back();
      ++creates;
      return reinterpret_cast<void*>(std::uintptr_t(events.size()));
    };
    o.record = [this](void* e, void* s) {
      EventState& ev = at(e);
      ev.stream = s;
      ev.mark = queued[s];
      ev.recorded = true;
      ++records;
    };
    o.query = [this](void* e) {
      EventState& ev = at(e);
      EXPECT_TRUE(ev.recorded) << "query of an event never recorded";
      return done(ev.stream, ev.mark);
    };
    o.synchronize = [this](void* e) {
      EventState& ev = at(e);
      completed[ev.stream] = std::max(completed[ev.stream], ev.mark);  // waiting lets the stream run that far
      ++syncs;
    };
    o.destroy = [this](void* e) {
      at(e).live = false;
      ++destroys;
    };
    return o;
  }
};

inline std::string pointer_text(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}

}  // namespace parbench::pool_fakes
