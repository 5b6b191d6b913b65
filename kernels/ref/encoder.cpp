// Reference token + position embedding, forward and backward, for the full table and a vocabulary shard.
#include <climits>

#include "kernels/ref/ref.h"

namespace parbench::ref {
namespace {
// Row of the shard holding `token`, or -1 when another shard holds it.
std::int64_t table_row(std::int32_t token, std::int64_t vocab_begin, int Vs) {
  std::int64_t r = std::int64_t(token) - vocab_begin;
  return r >= 0 && r < Vs ? r : -1;
}
}  // namespace

template <class T>
void encoder_forward_shard(T* out, const std::int32_t* inp, const T* wte, const T* wpe, int B, int T_, int C, int Vs,
                           std::int64_t vocab_begin) {
  using A = acc_t<T>;
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T_; ++t) {
      std::int64_t r = table_row(inp[b * T_ + t], vocab_begin, Vs);
      T* o = out + (std::int64_t(b) * T_ + t) * C;
      for (int c = 0; c < C; ++c) {
        A v = r >= 0 ? load(wte[r * C + c]) : A(0);
        if (wpe) v += load(wpe[std::int64_t(t) * C + c]);
        o[c] = store<T>(v);
      }
    }
}

template <class T>
void encoder_backward_shard(T* dwte, T* dwpe, const T* dout, const std::int32_t* inp, int B, int T_, int C, int Vs,
                            std::int64_t vocab_begin) {
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T_; ++t) {
      const T* d = dout + (std::int64_t(b) * T_ + t) * C;
      std::int64_t r = table_row(inp[b * T_ + t], vocab_begin, Vs);
      for (int c = 0; c < C; ++c) {
        if (r >= 0) dwte[r * C + c] = store<T>(load(dwte[r * C + c]) + load(d[c]));
        if (dwpe) dwpe[std::int64_t(t) * C + c] = store<T>(load(dwpe[std::int64_t(t) * C + c]) + load(d[c]));
      }
    }
}

// The full table is the shard that starts at 0 and holds every valid token (the dispatch checked them).
template <class T>
void encoder_forward(T* out, const std::int32_t* inp, const T* wte, const T* wpe, int B, int T_, int C) {
  encoder_forward_shard(out, inp, wte, wpe, B, T_, C, INT_MAX, 0);
}

template <class T>
void encoder_backward(T* dwte, T* dwpe, const T* dout, const std::int32_t* inp, int B, int T_, int C) {
  encoder_backward_shard(dwte, dwpe, dout, inp, B, T_, C, INT_MAX, 0);
}

#define PB_INSTANTIATE(T)                                                                                      \
  template void encoder_forward<T>(T*, const std::int32_t*, const T*, const T*, int, int, int);               \
  template void encoder_backward<T>(T*, T*, const T*, const std::int32_t*, int, int, int);                    \
  template void encoder_forward_shard<T>(T*, const std::int32_t*, const T*, const T*, int, int, int, int,     \
                                         std::int64_t);                                                        \
  template void encoder_backward_shard<T>(T*, T*, const T*, const std::int32_t*, int, int, int, int, std::int64_t);
PB_INSTANTIATE(float)
PB_INSTANTIATE(bf16)
PB_INSTANTIATE(double)

}  // namespace parbench::ref
