// What the ops' plain C++ references share (each reference lives in its op's host file, kernels/<op>.cpp, and
// the `cpu` device runs it): storage loads and stores, float accumulation (double for double), GELU.
// Shapes in llm.c notation: B batch, T sequence, C channels, NH heads, V vocabulary, OC output channels.
#pragma once
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "base/dtype.h"

namespace parbench::ref {

// Accumulation (and statistics / optimizer-state) type for a storage type.
template <class T>
using acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

inline float load(float x) { return x; }
inline double load(double x) { return x; }
inline float load(bf16 x) { return bf16_to_float(x); }
template <class T>
inline T store(acc_t<T> x) {
  if constexpr (std::is_same_v<T, bf16>) return float_to_bf16(x);
  else return x;
}

// GELU, tanh form, and its derivative; shared by the references and the tests.
template <class A>
inline A gelu(A x) {
  const A k = A(0.7978845608028654), c = A(0.044715);  // sqrt(2/pi)
  return A(0.5) * x * (A(1) + std::tanh(k * (x + c * x * x * x)));
}
template <class A>
inline A gelu_grad(A x) {
  const A k = A(0.7978845608028654), c = A(0.044715);
  A u = k * (x + c * x * x * x);
  A th = std::tanh(u);
  A sech2 = A(1) - th * th;
  return A(0.5) * (A(1) + th) + A(0.5) * x * sech2 * k * (A(1) + A(3) * c * x * x);
}

// Clip scale as a function: shared by the kernels' tests.
inline double clip_scale(double norm, double max_norm) { return norm > max_norm ? max_norm / norm : 1.0; }

}  // namespace parbench::ref
