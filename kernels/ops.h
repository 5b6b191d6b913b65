// The ops on tensors that models call by name: the device comes from the tensors and the stream (cpu -> the
// reference, simt -> simt_kernels, cuda -> cuda_kernels); each op's checks and dispatch live in its host file,
// kernels/<op>.cpp. Shapes in llm.c notation. Storage dtype f32 or bf16 (and f64 on cpu, for gradient checks);
// statistics (mean, rstd, att, lse, losses, norms, the vocabulary-parallel row statistics) and optimizer moments
// are f32 (f64 when the storage is f64). Shape, dtype and device mismatches throw parbench::Error naming the op and
// the tensor.
#pragma once
#include <cstdint>
#include <string_view>

#include "core/stream.h"
#include "core/tensor.h"
#include "kernels/op_params.h"

namespace parbench::ops {

// out (B,T,C) = wte (V,C)[inp (B,T) i32] + wpe (maxT,C)[t]
void encoder_forward(Tensor& out, const Tensor& inp, const Tensor& wte, const Tensor& wpe, const Stream& s);
// dwte, dwpe += (accumulate)
void encoder_backward(Tensor& dwte, Tensor& dwpe, const Tensor& dout, const Tensor& inp, const Stream& s);

// Vocabulary-parallel embedding (tensor parallelism): wte (Vs,C) holds rows [vocab_begin, vocab_begin + Vs) of the
// full table; tokens outside that range contribute zero. wpe (maxT,C) is added when not null.
// out (B,T,C) = wte[inp - vocab_begin] (or 0) + wpe[t]
void encoder_forward_shard(Tensor& out, const Tensor& inp, const Tensor& wte, const Tensor* wpe,
                           std::int64_t vocab_begin, const Stream& s);
// dwte += rows of dout for tokens in range; dwpe (nullable) += dout summed over the batch (accumulate, like
// encoder_backward).
void encoder_backward_shard(Tensor& dwte, Tensor* dwpe, const Tensor& dout, const Tensor& inp,
                            std::int64_t vocab_begin, const Stream& s);

// Matmul algorithms: the numbered kernel versions and the vendor baselines (cuda only): cuBLAS (GEMM, then our
// bias kernel) and cuBLASLt (one call, the bias, and GELU where asked, in its epilogue).
enum class MatmulAlgo { automatic = 0, naive = 1, tiled = 2, regtile = 3, wmma = 4, mma = 5, cublas = 6, cublaslt = 7 };
std::string_view matmul_algo_name(MatmulAlgo a);
// out (...,OC) = inp (...,C) weight (OC,C)^T + bias (OC); bias may be null. The cpu runs the reference
// whatever the algorithm.
void matmul_forward(Tensor& out, const Tensor& inp, const Tensor& weight, const Tensor* bias, const Stream& s,
                    MatmulAlgo algo = MatmulAlgo::automatic);
// out (...,OC) = gelu(inp (...,C) weight (OC,C)^T + bias (OC)), the model's fc + GELU: cuBLASLt in one call
// (CUBLASLT_EPILOGUE_GELU_BIAS), every other algorithm as matmul_forward into `pre` (same shape as out, its
// contents afterwards unspecified) and gelu_forward from it.
void matmul_bias_gelu_forward(Tensor& out, Tensor& pre, const Tensor& inp, const Tensor& weight, const Tensor& bias,
                              const Stream& s, MatmulAlgo algo = MatmulAlgo::automatic);
// dinp (...,C), dweight (OC,C), dbias (OC), each may be null; accumulate adds into them. `algo` for dinp and dweight:
// automatic the device's default (mma for bf16 on cuda), mma the version-5 kernel, cublas two cuBLAS GEMMs (cuda
// only), cublaslt refused, any other the shared-memory tiled kernel. dbias is always our column sum.
void matmul_backward(Tensor* dinp, Tensor* dweight, Tensor* dbias, const Tensor& dout, const Tensor& inp,
                     const Tensor& weight, bool accumulate, const Stream& s,
                     MatmulAlgo algo = MatmulAlgo::automatic);

void gelu_forward(Tensor& out, const Tensor& inp, const Stream& s);
// dinp = gelu'(inp) * dout; dinp may be dout itself.
void gelu_backward(Tensor& dinp, const Tensor& inp, const Tensor& dout, const Stream& s);
// out (...,C) = gelu(inp + bias (C))
void bias_gelu_forward(Tensor& out, const Tensor& inp, const Tensor& bias, const Stream& s);
// dinp = gelu'(inp + bias) * dout; dbias (nullable) += its column sums.
void bias_gelu_backward(Tensor& dinp, Tensor* dbias, const Tensor& inp, const Tensor& bias, const Tensor& dout,
                        const Stream& s);

// SwiGLU, Llama's MLP activation with the gate and up projections fused in one matmul: inp (...,2F) holds per
// token gate = inp[..., :F] then up = inp[..., F:]; out (...,F) = silu(gate) * up, silu(g) = g / (1 + exp(-g)).
void swiglu_forward(Tensor& out, const Tensor& inp, const Stream& s);
// dinp (...,2F) = the gradient of gate and up from dout (...,F) (overwritten, like gelu_backward; dinp may not alias).
void swiglu_backward(Tensor& dinp, const Tensor& inp, const Tensor& dout, const Stream& s);

// out (...,C); mean, rstd (...) saved for the backward.
void layernorm_forward(Tensor& out, Tensor& mean, Tensor& rstd, const Tensor& inp, const Tensor& weight,
                       const Tensor& bias, const Stream& s);
// dinp, dweight, dbias += (the residual stream and the parameter gradients accumulate).
void layernorm_backward(Tensor& dinp, Tensor& dweight, Tensor& dbias, const Tensor& dout, const Tensor& inp,
                        const Tensor& weight, const Tensor& mean, const Tensor& rstd, const Stream& s);

// RMSNorm: out (...,C) = inp * rstd * weight (C), rstd (...) = 1 / sqrt(mean(inp^2) + eps) over C, saved for the
// backward; eps finite and > 0 (1e-5 by default).
void rmsnorm_forward(Tensor& out, Tensor& rstd, const Tensor& inp, const Tensor& weight, const Stream& s,
                     float eps = 1e-5f);
// dinp, dweight += (as layernorm_backward).
void rmsnorm_backward(Tensor& dinp, Tensor& dweight, const Tensor& dout, const Tensor& inp, const Tensor& weight,
                      const Tensor& rstd, const Stream& s);
// The residual add fused into the RMSNorm after it (a Llama block's h = x + r; y = rmsnorm(h)): h (...,C) = inp +
// residual, out = rmsnorm(h) with weight and eps; h and rstd (...) saved for the backward.
void rmsnorm_residual_forward(Tensor& out, Tensor& h, Tensor& rstd, const Tensor& inp, const Tensor& residual,
                              const Tensor& weight, const Stream& s, float eps = 1e-5f);
// g = dh (the residual stream's gradient of h) + rmsnorm's gradient of h from dout; dinp += g, dresidual += g,
// dweight += (as rmsnorm_backward).
void rmsnorm_residual_backward(Tensor& dinp, Tensor& dresidual, Tensor& dweight, const Tensor& dh, const Tensor& dout,
                               const Tensor& h, const Tensor& weight, const Tensor& rstd, const Stream& s);

// Rotary position embedding (RoPE) in Llama's rotate-half layout (as Hugging Face's Llama implements it): a head x
// of D channels (D even) at position p = t + offset pairs channel i with i + D/2 for i < D/2 and rotates the pair by
// angle = p * theta^(-2i/D): out[i] = x[i] cos - x[i + D/2] sin, out[i + D/2] = x[i + D/2] cos + x[i] sin.
// rope_table computes cos_sin (T, D/2, 2) = the cos and sin of every (position, pair) once, for every layer and
// head: f32 (f64 on cpu, for f64 storage); theta >= 1 (the base: 10000, Llama 3's 500000), offset the first
// position (a sequence shard's or a continued sequence's), positions below 2^24. Accurate to a few 1e-7 at any
// position (kernels/rope.cu says how, in float).
void rope_table(Tensor& cos_sin, int T, int D, double theta, std::int64_t offset, const Stream& s);
// out (B,T,H,D) = inp rotated by row t of cos_sin (at least T rows) at position t, for any number of heads H (q's NH,
// k's kv heads); out may be inp (in place). Only heads [0, rotated_heads) turn (all with -1), the others are copied:
// a packed q|k|v (B,T,NH+2KV,D) turns its q and k heads with rotated_heads = NH + KV.
void rope_forward(Tensor& out, const Tensor& inp, const Tensor& cos_sin, const Stream& s, int rotated_heads = -1);
// dinp += dout rotated by minus the angle (the rotation's transpose), accumulating like the other backward ops; heads
// from rotated_heads on add dout as it is.
void rope_backward(Tensor& dinp, const Tensor& dout, const Tensor& cos_sin, const Stream& s, int rotated_heads = -1);

void residual_forward(Tensor& out, const Tensor& a, const Tensor& b, const Stream& s);
// da += dout, db += dout
void residual_backward(Tensor& da, Tensor& db, const Tensor& dout, const Stream& s);

// Causal attention with grouped-query heads: inp (B,T,(NH + 2 KV) hs) holds per token the NH query heads, then KV
// key heads, then KV value heads, hs channels each; out (B,T,C) fixes hs = C/NH and KV = (inp's last dim - C) /
// (2 hs), which must divide NH (KV = NH: multi-head, inp (B,T,3C) = q|k|v; KV = 1: multi-query). Query head h uses
// kv head h / (NH / KV), read in place (K/V are never repeated). Plain: att (B,NH,T,T) probabilities saved; the
// backward overwrites dinp (inp's shape; a kv head's dk, dv summed over its query heads, in a fixed order) and uses
// scratch (B,NH,T,T), f32.
void attention_forward(Tensor& out, Tensor& att, const Tensor& inp, int NH, const Stream& s);
void attention_backward(Tensor& dinp, Tensor& scratch, const Tensor& dout, const Tensor& inp, const Tensor& att,
                        int NH, const Stream& s);
// Flash-style, the same heads: lse (B,NH,T) saved; the backward also needs out and a (B,NH,T) f32 scratch.
void flash_attention_forward(Tensor& out, Tensor& lse, const Tensor& inp, int NH, const Stream& s);
void flash_attention_backward(Tensor& dinp, Tensor& scratch, const Tensor& dout, const Tensor& inp, const Tensor& out,
                              const Tensor& lse, int NH, const Stream& s);

// losses (...) = cross-entropy of logits (...,V) against targets (...) i32; dlogits (nullable, may be
// logits itself) = (softmax - onehot) * dloss.
void crossentropy_forward_backward(Tensor& losses, Tensor* dlogits, const Tensor& logits, const Tensor& targets,
                                   float dloss, const Stream& s);

// Vocabulary-parallel cross-entropy: logits (..., Vs) are columns [vocab_begin, vocab_begin + Vs) of the full
// (..., V) logits; targets (...) i32 are global token ids. The caller combines the per-row statistics over the tp
// ranks between the calls (allreduce max of row_max, allreduce sum of sumexp and target_logit), so the full
// logits are never gathered. Statistics tensors (...) are f32 (f64 when logits are f64).
// row_max = max over the local columns
void crossentropy_shard_max(Tensor& row_max, const Tensor& logits, const Stream& s);
// sumexp = sum over local columns of exp(logit - row_max); target_logit = logit of the target when it lies in
// this shard, else 0
void crossentropy_shard_sums(Tensor& sumexp, Tensor& target_logit, const Tensor& logits, const Tensor& targets,
                             const Tensor& row_max, std::int64_t vocab_begin, const Stream& s);
// losses (...) = log(sumexp) + row_max - target_logit; dlogits (nullable, may be logits itself) =
// (exp(logit - row_max) / sumexp - onehot(target in this shard)) * dloss
void crossentropy_shard_finish(Tensor& losses, Tensor* dlogits, const Tensor& logits, const Tensor& targets,
                               const Tensor& row_max, const Tensor& sumexp, const Tensor& target_logit,
                               std::int64_t vocab_begin, float dloss, const Stream& s);

// m, v: f32 moments of params' shape; step counts from 1.
void adamw_update(Tensor& params, const Tensor& grads, Tensor& m, Tensor& v, const AdamWConfig& cfg, int step,
                  const Stream& s);
// AdamW on the fp32 master copy of the parameters, fused: reads grads (the params' dtype), updates master, m and v
// (f32) and writes params = master rounded to their dtype, in one pass over all of them (one launch).
void adamw_update_master(Tensor& params, const Tensor& grads, Tensor& master, Tensor& m, Tensor& v,
                         const AdamWConfig& cfg, int step, const Stream& s);
void sgd_update(Tensor& params, const Tensor& grads, float lr, float weight_decay, const Stream& s);
// out (1 element, f32) = sum of squares of x, or += with accumulate (to sum over many tensors).
void norm_squared(Tensor& out, const Tensor& x, bool accumulate, const Stream& s);
// x *= max_norm / norm when norm = sqrt(norm_sq) > max_norm; norm_sq stays on the device.
void clip_by_norm(Tensor& x, const Tensor& norm_sq, float max_norm, const Stream& s);

// loss (1 element) = mean((pred - target)^2); dpred = 2 (pred - target) / n * dloss.
void mse_forward(Tensor& loss, const Tensor& pred, const Tensor& target, const Stream& s);
void mse_backward(Tensor& dpred, const Tensor& pred, const Tensor& target, float dloss, const Stream& s);

// f32 <-> bf16 (same shape).
void convert(Tensor& out, const Tensor& inp, const Stream& s);

// Whether this build can run ops on the device kind (simt needs the emulator, cuda needs nvcc).
bool kernels_available(DeviceKind kind);

}  // namespace parbench::ops
