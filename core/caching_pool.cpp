// Caching pool: best-fit reuse of released blocks, the raw allocator only for misses.
#include "core/caching_pool.h"

#include <string>

#include "base/error.h"

namespace parbench {

CachingPool::~CachingPool() {
  release_cached_locked();
  for (auto& [p, bytes] : in_use_) raw_free_(p);
}

void* CachingPool::allocate(std::size_t bytes) {
  const std::size_t want = (bytes == 0 ? 1 : (bytes + kGranule - 1) / kGranule) * kGranule;
  std::lock_guard lock(mutex_);
  auto fit = cached_.lower_bound(want);
  if (fit != cached_.end() && fit->first <= want + want / 4) {
    const auto [size, p] = *fit;
    cached_.erase(fit);
    in_use_.emplace(p, size);
    stats_.cached_bytes -= size;
    ++stats_.reuses;
    return p;
  }
  void* p = raw_alloc_(want);
  if (!p && !cached_.empty()) {  // exhausted: what the cache holds may be enough once returned
    release_cached_locked();
    p = raw_alloc_(want);
  }
  if (!p)
    throw Error("out of device memory allocating " + std::to_string(bytes) + " bytes (" +
                std::to_string(stats_.reserved_bytes) + " bytes already in use)");
  in_use_.emplace(p, want);
  stats_.reserved_bytes += want;
  ++stats_.raw_allocs;
  return p;
}

void CachingPool::deallocate(void* p) {
  std::lock_guard lock(mutex_);
  auto it = in_use_.find(p);
  PB_CHECK(it != in_use_.end(), "deallocate of a pointer the caching pool did not hand out");
  cached_.emplace(it->second, p);
  stats_.cached_bytes += it->second;
  in_use_.erase(it);
}

void CachingPool::release_cached() {
  std::lock_guard lock(mutex_);
  release_cached_locked();
}

void CachingPool::release_cached_locked() {
  for (auto& [size, p] : cached_) {
    raw_free_(p);
    stats_.reserved_bytes -= size;
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
