// What the model tests and llama_dump share: a tensor's values read back to the host as doubles.
#pragma once
#include <vector>

#include "core/memory.h"
#include "core/tensor.h"

namespace parbench::test {

inline std::vector<double> to_host(const Tensor& t) {
  std::vector<char> raw(t.bytes());
  device_memcpy(Device{}, raw.data(), t.device(), t.data(), t.bytes());
  std::vector<double> out(std::size_t(t.numel()));
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = load_as_double(raw.data(), t.dtype(), i);
  return out;
}

}  // namespace parbench::test
