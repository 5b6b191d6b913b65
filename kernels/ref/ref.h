// Plain C++ reference implementations of every op (the `cpu` device runs these): readable loops,
// templated on the storage type (float, bf16, double) with float accumulation (double for double).
// Shapes in llm.c notation: B batch, T sequence, C channels, NH heads, V vocabulary, OC output channels.
#pragma once
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "core/dtype.h"

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

// out (B,T,C) = wte[inp[b,t]] + wpe[t]; inp (B,T) token ids in [0, V).
template <class T> void encoder_forward(T* out, const std::int32_t* inp, const T* wte, const T* wpe, int B, int T_, int C);
// dwte (V,C) += scatter of dout by token; dwpe (T,C) += sum over b of dout.
template <class T> void encoder_backward(T* dwte, T* dwpe, const T* dout, const std::int32_t* inp, int B, int T_, int C);
// Vocabulary shard: wte / dwte (Vs,C) hold rows [vocab_begin, vocab_begin + Vs) of the table; tokens outside
// contribute nothing. wpe / dwpe may be null (no position embedding in this shard).
template <class T>
void encoder_forward_shard(T* out, const std::int32_t* inp, const T* wte, const T* wpe, int B, int T_, int C, int Vs,
                           std::int64_t vocab_begin);
template <class T>
void encoder_backward_shard(T* dwte, T* dwpe, const T* dout, const std::int32_t* inp, int B, int T_, int C, int Vs,
                            std::int64_t vocab_begin);

// out (BT,OC) = inp (BT,C) weight^T (OC,C) + bias (OC); bias may be null.
template <class T> void matmul_forward(T* out, const T* inp, const T* weight, const T* bias, int BT, int C, int OC);
// dinp (BT,C), dweight (OC,C), dbias (OC): each may be null; `accumulate` adds to them instead of overwriting.
template <class T>
void matmul_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight, int BT, int C, int OC,
                     bool accumulate);

template <class T> void gelu_forward(T* out, const T* inp, std::int64_t n);
// dinp = gelu'(inp) * dout (overwrites; dinp may alias dout).
template <class T> void gelu_backward(T* dinp, const T* inp, const T* dout, std::int64_t n);
// out (N,C) = gelu(inp + bias[c]).
template <class T> void bias_gelu_forward(T* out, const T* inp, const T* bias, int N, int C);
// dinp = gelu'(inp + bias) * dout (overwrites); dbias (C) += column sums of dinp.
template <class T> void bias_gelu_backward(T* dinp, T* dbias, const T* inp, const T* bias, const T* dout, int N, int C);

// out (N,C) = (inp - mean) * rstd * weight + bias per row; saves mean (N) and rstd (N).
template <class T>
void layernorm_forward(T* out, acc_t<T>* mean, acc_t<T>* rstd, const T* inp, const T* weight, const T* bias, int N, int C);
// dinp, dweight, dbias all accumulate (+=), as the residual stream and parameter gradients need.
template <class T>
void layernorm_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight, const acc_t<T>* mean,
                        const acc_t<T>* rstd, int N, int C);

template <class T> void residual_forward(T* out, const T* a, const T* b, std::int64_t n);
// da += dout, db += dout.
template <class T> void residual_backward(T* da, T* db, const T* dout, std::int64_t n);

// Causal multi-head attention. inp (B,T,3C) holds q, k, v; out (B,T,C); att (B,NH,T,T) saves the
// softmax probabilities (zero above the diagonal). Scores are scaled by 1/sqrt(C/NH).
template <class T> void attention_forward(T* out, acc_t<T>* att, const T* inp, int B, int T_, int C, int NH);
// dinp (B,T,3C) is overwritten.
template <class T>
void attention_backward(T* dinp, const T* dout, const T* inp, const acc_t<T>* att, int B, int T_, int C, int NH);
// The flash-style pair saves only lse (B,NH,T), the log-sum-exp of each scaled score row.
template <class T> void flash_attention_forward(T* out, acc_t<T>* lse, const T* inp, int B, int T_, int C, int NH);
template <class T>
void flash_attention_backward(T* dinp, const T* dout, const T* inp, const T* out, const acc_t<T>* lse, int B, int T_,
                              int C, int NH);

// Softmax + cross-entropy over logits (N,V) with targets (N): losses (N) = -log softmax[target];
// dlogits (nullable, may alias logits) = (softmax - onehot(target)) * dloss.
template <class T>
void crossentropy_forward_backward(acc_t<T>* losses, T* dlogits, const T* logits, const std::int32_t* targets, int N,
                                   int V, float dloss);
// Vocabulary-parallel cross-entropy: logits (N,Vs) are the columns [vocab_begin, vocab_begin + Vs) of (N,V),
// targets global ids. row_max = local row max; sumexp = sum of exp(logit - row_max) with the combined row_max,
// target_logit = the target's logit if this shard holds it, else 0; losses = log(sumexp) + row_max -
// target_logit and dlogits (nullable, may alias logits) = (softmax - onehot) * dloss with the combined statistics.
template <class T> void crossentropy_shard_max(acc_t<T>* row_max, const T* logits, int N, int Vs);
template <class T>
void crossentropy_shard_sums(acc_t<T>* sumexp, acc_t<T>* target_logit, const T* logits, const std::int32_t* targets,
                             const acc_t<T>* row_max, int N, int Vs, std::int64_t vocab_begin);
template <class T>
void crossentropy_shard_finish(acc_t<T>* losses, T* dlogits, const T* logits, const std::int32_t* targets,
                               const acc_t<T>* row_max, const acc_t<T>* sumexp, const acc_t<T>* target_logit, int N,
                               int Vs, std::int64_t vocab_begin, float dloss);

// AdamW (decoupled weight decay, bias-corrected, step counts from 1); m, v are the moment estimates.
template <class T>
void adamw_update(T* params, const T* grads, acc_t<T>* m, acc_t<T>* v, std::int64_t n, float lr, float beta1,
                  float beta2, float eps, float weight_decay, int step);
// Plain SGD with weight decay: p -= lr * (g + wd * p).
template <class T> void sgd_update(T* params, const T* grads, std::int64_t n, float lr, float weight_decay);
// out[0] (+)= sum of squares of x.
template <class T> void norm_squared(acc_t<T>* out, const T* x, std::int64_t n, bool accumulate);
// x *= max_norm / norm when norm = sqrt(norm_sq[0]) exceeds max_norm.
template <class T> void clip_by_norm(T* x, std::int64_t n, const acc_t<T>* norm_sq, float max_norm);
// loss[0] = mean((pred - target)^2); dpred = 2 (pred - target) / n * dloss.
template <class T> void mse_forward(acc_t<T>* loss, const T* pred, const T* target, std::int64_t n);
template <class T> void mse_backward(T* dpred, const T* pred, const T* target, std::int64_t n, float dloss);

// Storage conversion (round to nearest even into bf16).
template <class To, class From> void convert(To* out, const From* inp, std::int64_t n);

// Clip scale as a function: shared by the kernels' tests.
inline double clip_scale(double norm, double max_norm) { return norm > max_norm ? max_norm / norm : 1.0; }

}  // namespace parbench::ref
