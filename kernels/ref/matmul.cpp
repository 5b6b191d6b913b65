// Reference matmul with bias: out = inp weight^T + bias, and its backward.
#include <vector>

#include "kernels/ref/ref.h"

namespace parbench::ref {

template <class T>
void matmul_forward(T* out, const T* inp, const T* weight, const T* bias, int BT, int C, int OC) {
  using A = acc_t<T>;
  for (int m = 0; m < BT; ++m)
    for (int o = 0; o < OC; ++o) {
      A sum = bias ? load(bias[o]) : A(0);
      for (int c = 0; c < C; ++c) sum += load(inp[std::int64_t(m) * C + c]) * load(weight[std::int64_t(o) * C + c]);
      out[std::int64_t(m) * OC + o] = store<T>(sum);
    }
}

template <class T>
void matmul_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight, int BT, int C, int OC,
                     bool accumulate) {
  using A = acc_t<T>;
  if (dinp)
    for (int m = 0; m < BT; ++m)
      for (int c = 0; c < C; ++c) {
        A sum = accumulate ? load(dinp[std::int64_t(m) * C + c]) : A(0);
        for (int o = 0; o < OC; ++o) sum += load(dout[std::int64_t(m) * OC + o]) * load(weight[std::int64_t(o) * C + c]);
        dinp[std::int64_t(m) * C + c] = store<T>(sum);
      }
  if (dweight)
    for (int o = 0; o < OC; ++o)
      for (int c = 0; c < C; ++c) {
        A sum = accumulate ? load(dweight[std::int64_t(o) * C + c]) : A(0);
        for (int m = 0; m < BT; ++m) sum += load(dout[std::int64_t(m) * OC + o]) * load(inp[std::int64_t(m) * C + c]);
        dweight[std::int64_t(o) * C + c] = store<T>(sum);
      }
  if (dbias)
    for (int o = 0; o < OC; ++o) {
      A sum = accumulate ? load(dbias[o]) : A(0);
      for (int m = 0; m < BT; ++m) sum += load(dout[std::int64_t(m) * OC + o]);
      dbias[o] = store<T>(sum);
    }
}

#define PB_INSTANTIATE(T)                                                                     \
  template void matmul_forward<T>(T*, const T*, const T*, const T*, int, int, int);          \
  template void matmul_backward<T>(T*, T*, T*, const T*, const T*, const T*, int, int, int, bool);
PB_INSTANTIATE(float)
PB_INSTANTIATE(bf16)
PB_INSTANTIATE(double)

}  // namespace parbench::ref
