// Reference gradient norm (sum of squares) and clipping by the global norm.
#include <cmath>

#include "kernels/ref/ref.h"

namespace parbench::ref {

template <class T>
void norm_squared(acc_t<T>* out, const T* x, std::int64_t n, bool accumulate) {
  // Summed in double whatever T is: a float running sum of millions of squares loses the small terms (past
  // 2^24, adding 1 changes nothing), and the reference is what the kernels are checked against.
  double s = accumulate ? double(out[0]) : 0.0;
  for (std::int64_t i = 0; i < n; ++i) s += double(load(x[i])) * double(load(x[i]));
  out[0] = acc_t<T>(s);
}

template <class T>
void clip_by_norm(T* x, std::int64_t n, const acc_t<T>* norm_sq, float max_norm) {
  acc_t<T> scale = acc_t<T>(clip_scale(std::sqrt(double(norm_sq[0])), max_norm));
  if (scale == acc_t<T>(1)) return;
  for (std::int64_t i = 0; i < n; ++i) x[i] = store<T>(load(x[i]) * scale);
}

#define PB_INSTANTIATE(T)                                               \
  template void norm_squared<T>(acc_t<T>*, const T*, std::int64_t, bool); \
  template void clip_by_norm<T>(T*, std::int64_t, const acc_t<T>*, float);
PB_INSTANTIATE(float)
PB_INSTANTIATE(bf16)
PB_INSTANTIATE(double)

}  // namespace parbench::ref
