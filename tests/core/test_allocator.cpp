// Tracked allocator accounting: categories, peaks, frees, reset, and tensors on top of it.
#include <gtest/gtest.h>

#include "core/allocator.h"
#include "base/error.h"
#include "core/tensor.h"

using namespace parbench;

TEST(Allocator, CurrentAndPeakPerCategory) {
  TrackedAllocator a(Device{DeviceKind::cpu, 0});
  void* p1 = a.allocate(1000, MemCategory::parameters);
  void* p2 = a.allocate(300, MemCategory::activations);
  void* p3 = a.allocate(500, MemCategory::activations);
  EXPECT_EQ(a.current(MemCategory::parameters), 1000u);
  EXPECT_EQ(a.current(MemCategory::activations), 800u);
  EXPECT_EQ(a.current_total(), 1800u);
  a.deallocate(p2);
  EXPECT_EQ(a.current(MemCategory::activations), 500u);
  EXPECT_EQ(a.peak(MemCategory::activations), 800u);
  EXPECT_EQ(a.peak_total(), 1800u);
  void* p4 = a.allocate(100, MemCategory::gradients);
  EXPECT_EQ(a.peak_total(), 1800u);  // 1600 now: peak stays
  MemSplit s = a.split_at_peak();
  EXPECT_EQ(s[int(MemCategory::parameters)], 1000u);
  EXPECT_EQ(s[int(MemCategory::activations)], 800u);
  EXPECT_EQ(s[int(MemCategory::gradients)], 0u);
  a.reset_peaks();
  EXPECT_EQ(a.peak_total(), 1600u);
  EXPECT_EQ(a.peak(MemCategory::activations), 500u);
  a.deallocate(p1);
  a.deallocate(p3);
  a.deallocate(p4);
  EXPECT_EQ(a.current_total(), 0u);
  EXPECT_EQ(a.live_allocations(), 0u);
}

TEST(Allocator, ForeignPointerIsRejected) {
  TrackedAllocator a(Device{DeviceKind::cpu, 0});
  int x;
  EXPECT_THROW(a.deallocate(&x), Error);
}

TEST(Allocator, BufferAndTensorReturnMemory) {
  TrackedAllocator a(Device{DeviceKind::simt, 0});
  {
    Tensor t(a, DType::bf16, {3, 5}, MemCategory::workspace);
    EXPECT_EQ(a.current(MemCategory::workspace), 30u);
    Tensor v = t.slice(5, {2, 5});  // shares storage: nothing new allocated
    EXPECT_EQ(a.live_allocations(), 1u);
    EXPECT_EQ(static_cast<char*>(v.data()) - static_cast<char*>(t.data()), 10);
    EXPECT_THROW(t.slice(6, {2, 5}), Error);
    EXPECT_THROW(t.reshape({4, 4}), Error);
    Buffer b(a, 64, MemCategory::communication);
    Buffer moved = std::move(b);
    EXPECT_EQ(a.current(MemCategory::communication), 64u);
  }
  EXPECT_EQ(a.current_total(), 0u);
  EXPECT_EQ(a.peak(MemCategory::workspace), 30u);
}
