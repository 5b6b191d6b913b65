// base/float16.h's rules on a device: the collectives' combine (reduce_combine with sum) loads 16-bit values,
// adds in fp32 and stores through the device's own conversion code (cpu reference, simt kernel, CUDA kernel).
// Inputs, for f16 and bf16: every 16-bit pattern plus +0 (every NaN pattern must come back as 0x7fff, -0 + +0 as
// +0, the rest unchanged) and random pairs of patterns (the rounding of their sums, ties included). The expected
// bits are base/float16.h's, itself checked against the formats' definitions in tests/core/test_float16.cpp.
// Memory is the device's own (core/memory.h), so the same check runs on the emulated GPU.
#pragma once
#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "base/float16.h"
#include "collectives/communicator/reduce.h"
#include "core/current_stream.h"
#include "core/memory.h"

namespace parbench::float16_check {

// "" when the device gives base/float16.h's bits for every input; otherwise the first mismatches.
inline std::string float16_mismatches(const Device& device) {
  std::ostringstream out;
  int shown = 0;
  for (DType t : {DType::f16, DType::bf16}) {
    const bool f16 = t == DType::f16;
    const auto to_float = [f16](std::uint16_t b) {
      return f16 ? float16::f16_bits_to_float(b) : float16::bf16_bits_to_float(b);
    };
    const auto to_bits = [f16](float f) {
      return f16 ? float16::float_to_f16_bits(f) : float16::float_to_bf16_bits(f);
    };
    std::vector<std::uint16_t> x, y;
    for (unsigned b = 0; b < 65536; ++b) x.push_back(std::uint16_t(b)), y.push_back(0);  // + (+0)
    std::mt19937 gen(7);
    std::uniform_int_distribution<unsigned> any(0, 65535);
    for (int i = 0; i < 65536; ++i) {
      const auto a = std::uint16_t(any(gen));
      x.push_back(a);
      y.push_back(std::uint16_t((a & 0x8000u) | (any(gen) & 0x7fffu) >> (i % 3)));  // similar and smaller magnitudes
    }
    const std::size_t n = x.size(), bytes = n * 2;
    make_device_current(device);
    void* dx = device_malloc(device, bytes);
    void* dy = device_malloc(device, bytes);
    void* dout = device_malloc(device, bytes);
    device_memcpy(device, dx, Device{}, x.data(), bytes);
    device_memcpy(device, dy, Device{}, y.data(), bytes);
    reduce_combine(device, dout, dx, dy, n, t, ReduceOp::sum, current_stream());  // where the copies run
    std::vector<std::uint16_t> got(n);
    device_memcpy(Device{}, got.data(), device, dout, bytes);
    for (void* p : {dx, dy, dout}) device_free(device, p);
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint16_t want = to_bits(to_float(x[i]) + to_float(y[i]));
      if (got[i] != want && shown++ < 8)
        out << (f16 ? "f16" : "bf16") << " 0x" << std::hex << x[i] << " + 0x" << y[i] << ": got 0x" << got[i]
            << ", want 0x" << want << std::dec << "\n";
    }
  }
  if (shown > 8) out << "(" << shown - 8 << " more)\n";
  return out.str();
}

}  // namespace parbench::float16_check
