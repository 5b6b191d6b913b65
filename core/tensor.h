// Tensor: a typed, shaped window on device memory. Owning tensors keep their Buffer alive;
// views (slices, reshapes, wrappers of external memory) share or borrow it.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/allocator.h"
#include "base/dtype.h"

namespace parbench {

using Shape = std::vector<std::int64_t>;
std::int64_t shape_numel(const Shape& s);
std::string shape_string(const Shape& s);  // "(2, 3, 4)"

class Tensor {
 public:
  Tensor() = default;
  // Allocates from `alloc` in `category`; the memory is uninitialized.
  Tensor(TrackedAllocator& alloc, DType dtype, Shape shape, MemCategory category);
  // A non-owning view of external memory.
  static Tensor view_of(void* data, DType dtype, Shape shape, Device device);

  void* data() const { return data_; }
  template <class T>
  T* ptr() const { return static_cast<T*>(data_); }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  std::int64_t dim(int i) const { return shape_.at(i < 0 ? shape_.size() + i : i); }
  int rank() const { return int(shape_.size()); }
  const Device& device() const { return device_; }
  std::int64_t numel() const { return shape_numel(shape_); }
  std::size_t bytes() const { return std::size_t(numel()) * dtype_size(dtype_); }
  bool owns_storage() const { return storage_ != nullptr; }
  bool defined() const { return data_ != nullptr || numel() == 0; }

  // Same memory, new shape (element count must match).
  Tensor reshape(Shape shape) const;
  // Contiguous elements [offset, offset + numel(shape)) as a tensor of `shape`; shares the storage.
  Tensor slice(std::int64_t offset, Shape shape) const;

 private:
  std::shared_ptr<Buffer> storage_;
  void* data_ = nullptr;
  DType dtype_ = DType::f32;
  Shape shape_;
  Device device_;
};

}  // namespace parbench
