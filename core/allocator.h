// Tracked allocator: one per device and rank, counting current and peak bytes per category.
#pragma once
#include <array>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "core/device.h"

namespace parbench {

enum class MemCategory { parameters, gradients, optimizer, activations, communication, workspace };
inline constexpr int kMemCategories = 6;
std::string_view mem_category_name(MemCategory c);

using MemSplit = std::array<std::size_t, kMemCategories>;  // bytes per category, indexed by MemCategory

class TrackedAllocator {
 public:
  explicit TrackedAllocator(Device device) : device_(device) {}
  // Host memory page-locked for copies with GPU `pinned_for` (pinned_host_malloc), e.g. ZeRO offload's host
  // optimizer state; `device` must be a host device.
  TrackedAllocator(Device device, Device pinned_for);
  ~TrackedAllocator();
  TrackedAllocator(const TrackedAllocator&) = delete;
  TrackedAllocator& operator=(const TrackedAllocator&) = delete;

  const Device& device() const { return device_; }
  void* allocate(std::size_t bytes, MemCategory category);
  void deallocate(void* p);  // throws for a pointer this allocator did not hand out

  std::size_t current(MemCategory c) const;
  std::size_t peak(MemCategory c) const;  // highest value of this category alone
  std::size_t current_total() const;
  std::size_t peak_total() const;
  MemSplit split_at_peak() const;  // per-category bytes at the moment the total peaked
  std::size_t live_allocations() const;
  // Starts a new measurement window: peaks become the current values.
  void reset_peaks();

 private:
  void release(void* p) noexcept;  // back to where allocate got it

  struct Block {
    std::size_t bytes;
    MemCategory category;
  };
  Device device_;
  std::optional<Device> pinned_for_;
  mutable std::mutex mutex_;
  std::unordered_map<void*, Block> blocks_;
  MemSplit current_{};
  MemSplit peak_{};
  MemSplit split_at_peak_{};
  std::size_t total_ = 0;
  std::size_t peak_total_ = 0;
};

// An owned allocation that returns itself to its allocator.
class Buffer {
 public:
  Buffer() = default;
  Buffer(TrackedAllocator& alloc, std::size_t bytes, MemCategory category)
      : alloc_(&alloc), data_(alloc.allocate(bytes, category)), bytes_(bytes) {}
  Buffer(Buffer&& o) noexcept { *this = std::move(o); }
  Buffer& operator=(Buffer&& o) noexcept;
  ~Buffer() { release(); }
  void release();
  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  const Device& device() const { return alloc_->device(); }

 private:
  TrackedAllocator* alloc_ = nullptr;
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace parbench
