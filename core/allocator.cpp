// Tracked allocator accounting.
#include "core/allocator.h"

#include <cstdio>
#include <numeric>

#include "base/error.h"
#include "core/memory.h"

namespace parbench {

std::string_view mem_category_name(MemCategory c) {
  static constexpr std::string_view names[kMemCategories] = {"parameters",    "gradients",     "optimizer",
                                                             "activations",   "communication", "workspace"};
  return names[static_cast<int>(c)];
}

TrackedAllocator::TrackedAllocator(Device device, Device pinned_for) : device_(device), pinned_for_(pinned_for) {
  PB_CHECK(device.on_host(), "pinned memory is host memory: the allocator's device must be a host device");
}

TrackedAllocator::~TrackedAllocator() {
  for (auto& [p, b] : blocks_) release(p);
}

void TrackedAllocator::release(void* p) noexcept {
  if (pinned_for_) return pinned_host_free(*pinned_for_, p);
  device_free(device_, p);
}

void* TrackedAllocator::allocate(std::size_t bytes, MemCategory category) {
  void* p = pinned_for_ ? pinned_host_malloc(*pinned_for_, bytes) : device_malloc(device_, bytes);
  std::lock_guard lock(mutex_);
  blocks_.emplace(p, Block{bytes, category});
  auto c = static_cast<int>(category);
  current_[c] += bytes;
  if (current_[c] > peak_[c]) peak_[c] = current_[c];
  total_ += bytes;
  if (total_ > peak_total_) {
    peak_total_ = total_;
    split_at_peak_ = current_;
  }
  return p;
}

void TrackedAllocator::deallocate(void* p) {
  if (!p) return;
  {
    std::lock_guard lock(mutex_);
    auto it = blocks_.find(p);
    PB_CHECK(it != blocks_.end(), "deallocate of a pointer this allocator did not allocate");
    current_[static_cast<int>(it->second.category)] -= it->second.bytes;
    total_ -= it->second.bytes;
    blocks_.erase(it);
  }
  release(p);
}

std::size_t TrackedAllocator::current(MemCategory c) const {
  std::lock_guard lock(mutex_);
  return current_[static_cast<int>(c)];
}
std::size_t TrackedAllocator::peak(MemCategory c) const {
  std::lock_guard lock(mutex_);
  return peak_[static_cast<int>(c)];
}
std::size_t TrackedAllocator::current_total() const {
  std::lock_guard lock(mutex_);
  return total_;
}
std::size_t TrackedAllocator::peak_total() const {
  std::lock_guard lock(mutex_);
  return peak_total_;
}
MemSplit TrackedAllocator::split_at_peak() const {
  std::lock_guard lock(mutex_);
  return split_at_peak_;
}
std::size_t TrackedAllocator::live_allocations() const {
  std::lock_guard lock(mutex_);
  return blocks_.size();
}
void TrackedAllocator::reset_peaks() {
  std::lock_guard lock(mutex_);
  peak_ = current_;
  peak_total_ = total_;
  split_at_peak_ = current_;
}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    release();
    alloc_ = o.alloc_;
    data_ = o.data_;
    bytes_ = o.bytes_;
    o.alloc_ = nullptr;
    o.data_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

void Buffer::release() {
  if (alloc_ && data_) alloc_->deallocate(data_);
  alloc_ = nullptr;
  data_ = nullptr;
  bytes_ = 0;
}

}  // namespace parbench
