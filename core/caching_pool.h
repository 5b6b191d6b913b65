// A caching pool over a raw allocator (cudaMalloc/cudaFree on a GPU), so a training step that releases and
// allocates the same activations every step calls neither: cudaMalloc is slow and cudaFree waits for the whole
// device, so without a pool a step's time measures the allocator.
//
// A released block is reused at once, by the next request it fits. That is safe because parbench orders all of a
// device's work on its default stream (core/stream.h): whatever the next owner queues runs after whatever the
// last owner queued. Work on an unrelated stream would need an event before the release; parbench has none.
#pragma once
#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <unordered_map>

namespace parbench {

class CachingPool {
 public:
  using RawAlloc = std::function<void*(std::size_t)>;  // nullptr when the memory is exhausted
  using RawFree = std::function<void(void*)>;

  struct Stats {
    std::size_t reserved_bytes = 0;  // held from the raw allocator: handed out + cached
    std::size_t cached_bytes = 0;    // released and waiting for reuse
    std::size_t raw_allocs = 0, raw_frees = 0, reuses = 0;
  };

  // Requests round up to this, so sizes that differ by a few bytes share blocks.
  static constexpr std::size_t kGranule = 512;

  CachingPool(RawAlloc raw_alloc, RawFree raw_free) : raw_alloc_(std::move(raw_alloc)), raw_free_(std::move(raw_free)) {}
  ~CachingPool();  // returns every block to the raw allocator, also those still handed out
  CachingPool(const CachingPool&) = delete;
  CachingPool& operator=(const CachingPool&) = delete;

  // A block of at least `bytes`: a cached one that fits (the smallest at least as large, if it is at most a
  // quarter larger: a small tensor does not pin a large block), else a new one; when the raw allocator is exhausted the
  // cache is returned to it and the request tried once more. Throws Error naming the sizes if that fails too.
  void* allocate(std::size_t bytes);
  // Keeps the block for reuse; throws Error for a pointer this pool did not hand out.
  void deallocate(void* p);
  // Returns every cached block to the raw allocator.
  void release_cached();
  Stats stats() const;

 private:
  void release_cached_locked();

  RawAlloc raw_alloc_;
  RawFree raw_free_;
  mutable std::mutex mutex_;
  std::unordered_map<void*, std::size_t> in_use_;  // block size of every pointer handed out
  std::multimap<std::size_t, void*> cached_;       // released blocks by size
  Stats stats_;
};

}  // namespace parbench
