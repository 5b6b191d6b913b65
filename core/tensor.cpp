// Tensor construction, views and shape helpers.
#include "core/tensor.h"

#include "base/error.h"

namespace parbench {

std::int64_t shape_numel(const Shape& s) {
  std::int64_t n = 1;
  for (auto d : s) {
    PB_CHECK(d >= 0, "negative dimension in shape " + shape_string(s));
    n *= d;
  }
  return n;
}

std::string shape_string(const Shape& s) {
  std::string out = "(";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + ")";
}

Tensor::Tensor(TrackedAllocator& alloc, DType dtype, Shape shape, MemCategory category)
    : dtype_(dtype), shape_(std::move(shape)), device_(alloc.device()) {
  storage_ = std::make_shared<Buffer>(alloc, bytes(), category);
  data_ = storage_->data();
}

Tensor Tensor::view_of(void* data, DType dtype, Shape shape, Device device) {
  Tensor t;
  t.data_ = data;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.device_ = device;
  shape_numel(t.shape_);  // validates
  return t;
}

Tensor Tensor::reshape(Shape shape) const {
  PB_CHECK(shape_numel(shape) == numel(),
           "reshape " + shape_string(shape_) + " -> " + shape_string(shape) + " changes the element count");
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::slice(std::int64_t offset, Shape shape) const {
  std::int64_t n = shape_numel(shape);
  PB_CHECK(offset >= 0 && offset + n <= numel(), "slice [" + std::to_string(offset) + ", " +
                                                     std::to_string(offset + n) + ") outside a tensor of " +
                                                     std::to_string(numel()) + " elements");
  Tensor t = *this;
  t.data_ = static_cast<char*>(data_) + offset * std::int64_t(dtype_size(dtype_));
  t.shape_ = std::move(shape);
  return t;
}

}  // namespace parbench
