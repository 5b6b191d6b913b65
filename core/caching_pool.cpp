// Caching pool: per-stream best-fit reuse of released blocks, events for blocks used on other streams, the raw
// allocator only for misses.
#include "core/caching_pool.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "base/error.h"

namespace parbench {

namespace {

std::uintptr_t stream_key(void* stream) { return reinterpret_cast<std::uintptr_t>(stream); }

std::string pointer_name(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}

[[noreturn]] void throw_unknown(const char* what, const void* p) {
  throw Error(std::string(what) + " of pointer " + pointer_name(p) +
              ", which the caching pool did not hand out or has released already");
}

}  // namespace

CachingPool::~CachingPool() {
  release_cached_locked();
  for (Pending& pend : pending_) {
    for (void* e : pend.events) events_.destroy(e);
    raw_free_(pend.p);
  }
  for (auto& [p, block] : in_use_) raw_free_(p);
  for (void* e : free_events_) events_.destroy(e);
}

void* CachingPool::allocate(std::size_t bytes, void* stream) {
  const std::size_t want = (bytes == 0 ? 1 : (bytes + kGranule - 1) / kGranule) * kGranule;
  std::lock_guard lock(mutex_);
  process_pending_locked();
  if (void* p = take_cached_locked(want, stream)) return p;
  void* p = raw_alloc_(want);
  if (!p && !cached_.empty()) {  // exhausted: what the cache holds may be enough once returned
    release_cached_locked();
    p = raw_alloc_(want);
  }
  if (!p && !pending_.empty()) {  // still exhausted: wait for the blocks other streams hold up
    wait_pending_locked();
    p = raw_alloc_(want);
  }
  if (!p)
    throw Error("out of device memory allocating " + std::to_string(bytes) + " bytes (" +
                std::to_string(stats_.reserved_bytes) + " bytes already in use)");
  in_use_.emplace(p, Block{want, stream, {}});
  stats_.reserved_bytes += want;
  ++stats_.raw_allocs;
  return p;
}

void* CachingPool::take_cached_locked(std::size_t want, void* stream) {
  auto fit = cached_.lower_bound({stream_key(stream), want});
  if (fit == cached_.end() || fit->first.first != stream_key(stream) || fit->first.second > want + want / 4)
    return nullptr;
  const std::size_t size = fit->first.second;
  void* p = fit->second;
  cached_.erase(fit);
  in_use_.emplace(p, Block{size, stream, {}});
  stats_.cached_bytes -= size;
  ++stats_.reuses;
  return p;
}

void CachingPool::cache_locked(void* p, std::size_t size, void* stream) {
  cached_.emplace(CacheKey{stream_key(stream), size}, p);
  stats_.cached_bytes += size;
}

void CachingPool::record_stream(void* p, void* stream) {
  std::lock_guard lock(mutex_);
  auto it = in_use_.find(p);
  if (it == in_use_.end()) throw_unknown("record_stream", p);
  Block& b = it->second;
  if (stream == b.stream || std::find(b.used_on.begin(), b.used_on.end(), stream) != b.used_on.end()) return;
  PB_CHECK(events_.record, "record_stream on another stream needs a caching pool with event operations");
  b.used_on.push_back(stream);
}

void CachingPool::deallocate(void* p) {
  std::lock_guard lock(mutex_);
  auto it = in_use_.find(p);
  if (it == in_use_.end()) throw_unknown("deallocate", p);
  process_pending_locked();  // first, so the events that completed serve this release
  release_locked(p, it->second);
  in_use_.erase(it);
}

// Stream order covers the block's own stream; each other stream gets an event marking its work up to now.
void CachingPool::release_locked(void* p, Block& b) {
  if (b.used_on.empty()) return cache_locked(p, b.size, b.stream);
  Pending pend{p, b.size, b.stream, {}};
  pend.events.reserve(b.used_on.size());
  try {
    for (void* s : b.used_on) {
      pend.events.push_back(take_event_locked());
      events_.record(pend.events.back(), s);
    }
  } catch (...) {  // the block stays handed out; the events go back for the next release
    free_events_.insert(free_events_.end(), pend.events.begin(), pend.events.end());
    throw;
  }
  pending_.push_back(std::move(pend));
  stats_.pending_bytes += b.size;
  ++stats_.pending_blocks;
}

void* CachingPool::take_event_locked() {
  if (!free_events_.empty()) {
    void* e = free_events_.back();
    free_events_.pop_back();
    return e;
  }
  void* e = events_.create();
  ++stats_.events_created;
  return e;
}

// Completed events go back to the free list as they are seen; a block whose events all completed is cached.
// Swap-removal keeps every entry whole if a query throws.
void CachingPool::process_pending_locked() {
  for (std::size_t i = pending_.size(); i-- > 0;) {
    Pending& pend = pending_[i];
    for (std::size_t j = pend.events.size(); j-- > 0;) {
      if (!events_.query(pend.events[j])) continue;
      free_events_.push_back(pend.events[j]);
      pend.events[j] = pend.events.back();
      pend.events.pop_back();
    }
    if (!pend.events.empty()) continue;
    stats_.pending_bytes -= pend.size;
    --stats_.pending_blocks;
    cache_locked(pend.p, pend.size, pend.stream);
    if (i + 1 != pending_.size()) pending_[i] = std::move(pending_.back());
    pending_.pop_back();
  }
}

// The one place the pool waits: the raw allocator is exhausted, and the pending blocks are all it has left.
void CachingPool::wait_pending_locked() {
  ++stats_.pending_waits;
  while (!pending_.empty()) {
    Pending& pend = pending_.back();
    while (!pend.events.empty()) {
      events_.synchronize(pend.events.back());
      free_events_.push_back(pend.events.back());
      pend.events.pop_back();
    }
    raw_free_(pend.p);
    stats_.reserved_bytes -= pend.size;
    stats_.pending_bytes -= pend.size;
    --stats_.pending_blocks;
    ++stats_.raw_frees;
    pending_.pop_back();
  }
}

void CachingPool::release_cached() {
  std::lock_guard lock(mutex_);
  process_pending_locked();
  release_cached_locked();
}

void CachingPool::release_cached_locked() {
  for (auto& [key, p] : cached_) {
    raw_free_(p);
    stats_.reserved_bytes -= key.second;
    ++stats_.raw_frees;
  }
  cached_.clear();
  stats_.cached_bytes = 0;
}

CachingPool::Stats CachingPool::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace parbench
