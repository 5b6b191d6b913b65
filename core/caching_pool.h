// A caching pool over a raw allocator (cudaMalloc/cudaFree on a GPU), so a training step that releases and
// allocates the same activations every step calls neither: cudaMalloc is slow and cudaFree waits for the whole
// device, so without a pool a step's time measures the allocator.
//
// Every block belongs to the stream it was allocated on, and a released block is reused only by a request on that
// stream. Stream order makes that safe: whatever the next owner queues on the stream runs after whatever the last
// owner queued there. Work on any other stream is not ordered with it, so a block used there too (record_stream, as
// in PyTorch) is released with an event recorded on each such stream at the release, and comes back to its
// stream's cache only once all of them have completed: the pool queries events and never waits for them, except
// when the raw allocator is exhausted. Events are created through EventOps (no CUDA here; tests pass fakes) and
// reused, so a steady state creates none.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace parbench {

class CachingPool {
 public:
  using RawAlloc = std::function<void*(std::size_t)>;  // nullptr when the memory is exhausted
  using RawFree = std::function<void(void*)>;

  // The device's events, for blocks used on more than one stream; a stream or an event is an opaque handle
  // (cudaStream_t, cudaEvent_t).
  struct EventOps {
    std::function<void*()> create;                         // a new event (timing off)
    std::function<void(void* event, void* stream)> record;  // marks the work queued on `stream` so far
    std::function<bool(void* event)> query;                 // whether that work is done; never waits
    std::function<void(void* event)> synchronize;           // waits until it is done
    std::function<void(void* event)> destroy;
  };

  struct Stats {
    std::size_t reserved_bytes = 0;  // held from the raw allocator: handed out + cached + pending
    std::size_t cached_bytes = 0;    // released and reusable on their stream
    std::size_t pending_bytes = 0, pending_blocks = 0;  // released, waiting for other streams' events
    std::size_t raw_allocs = 0, raw_frees = 0, reuses = 0;
    std::size_t events_created = 0;  // event objects made (they are reused)
    std::size_t pending_waits = 0;   // times an exhausted raw allocator made the pool wait for pending blocks
  };

  // Requests round up to this, so sizes that differ by a few bytes share blocks.
  static constexpr std::size_t kGranule = 512;

  // Without `events` the pool serves a single stream per block: record_stream on another stream throws.
  CachingPool(RawAlloc raw_alloc, RawFree raw_free, EventOps events = {})
      : raw_alloc_(std::move(raw_alloc)), raw_free_(std::move(raw_free)), events_(std::move(events)) {}
  ~CachingPool();  // returns every block to the raw allocator, also those still handed out or pending
  CachingPool(const CachingPool&) = delete;
  CachingPool& operator=(const CachingPool&) = delete;

  // A block of at least `bytes` for use on `stream` (nullptr: the legacy default stream): a block cached for that
  // stream that fits (the smallest at least as large, if it is at most a quarter larger: a small tensor does not
  // pin a large block), else a new one. When the raw allocator is exhausted the cache is returned to it and the
  // request tried again; if that fails too, the pool waits for the pending blocks' events, returns those blocks
  // and tries once more. Throws Error naming the sizes if that fails too.
  void* allocate(std::size_t bytes, void* stream = nullptr);
  // `p` (handed out, not yet released) is used on `stream` too: its release waits for the work queued there up
  // to the release. Nothing for the block's own stream. Throws Error naming a pointer this pool did not hand out.
  void record_stream(void* p, void* stream);
  // Keeps the block for reuse on its stream: at once if it was used on no other stream, else once the work
  // queued on those streams up to now is done. Throws Error naming a pointer this pool did not hand out.
  void deallocate(void* p);
  // Returns every cached block to the raw allocator (pending ones stay until their events complete).
  void release_cached();
  Stats stats() const;

 private:
  struct Block {
    std::size_t size;
    void* stream;                // the stream it was allocated on
    std::vector<void*> used_on;  // other streams it was recorded on
  };
  struct Pending {
    void* p;
    std::size_t size;
    void* stream;
    std::vector<void*> events;  // not yet completed
  };
  using CacheKey = std::pair<std::uintptr_t, std::size_t>;  // stream, block size

  void* take_cached_locked(std::size_t want, void* stream);
  void cache_locked(void* p, std::size_t size, void* stream);
  void release_locked(void* p, Block& b);
  void process_pending_locked();
  void wait_pending_locked();
  void release_cached_locked();
  void* take_event_locked();

  RawAlloc raw_alloc_;
  RawFree raw_free_;
  EventOps events_;
  mutable std::mutex mutex_;
  std::unordered_map<void*, Block> in_use_;  // every pointer handed out
  std::multimap<CacheKey, void*> cached_;    // released blocks by stream, then size
  std::vector<Pending> pending_;             // released blocks waiting for events
  std::vector<void*> free_events_;           // completed events, for the next release
  Stats stats_;
};

}  // namespace parbench
