// Dispatch of every op to the reference (cpu), the simt-compiled kernels or the nvcc-compiled kernels,
// after checking devices, dtypes and shapes.
#include "kernels/ops.h"

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <utility>

#include "core/error.h"
#include "kernels/launchers.h"
#include "kernels/ref/ref.h"

namespace parbench::ops {
namespace {

// One op call's checks; every message starts with the op's name.
struct Op {
  const char* name;
  const Stream& s;

  [[noreturn]] void fail(const std::string& what) const { throw Error(std::string(name) + ": " + what); }
  void device(const Tensor& t, const char* tn) const {
    if (!t.defined()) fail(std::string(tn) + " is not allocated");
    if (!(t.device() == s.device()))
      fail(std::string(tn) + " is on " + device_name(t.device()) + " but the stream is on " + device_name(s.device()));
  }
  void dtype(const Tensor& t, const char* tn, DType want) const {
    device(t, tn);
    if (t.dtype() != want)
      fail(std::string(tn) + " has dtype " + std::string(dtype_name(t.dtype())) + ", expected " +
           std::string(dtype_name(want)));
  }
  void shape(const Tensor& t, const char* tn, const Shape& want) const {
    if (t.shape() != want) fail(std::string(tn) + " has shape " + shape_string(t.shape()) + ", expected " + shape_string(want));
  }
  void numel(const Tensor& t, const char* tn, std::int64_t n) const {
    if (t.numel() != n)
      fail(std::string(tn) + " has " + std::to_string(t.numel()) + " elements " + shape_string(t.shape()) +
           ", expected " + std::to_string(n));
  }
  // Storage dtype of the op's main tensor: f32 or bf16 everywhere, f64 on cpu.
  DType storage(const Tensor& t, const char* tn) const {
    device(t, tn);
    DType d = t.dtype();
    if (d == DType::f32 || d == DType::bf16 || (d == DType::f64 && s.device().kind == DeviceKind::cpu)) return d;
    fail(std::string(tn) + " has dtype " + std::string(dtype_name(d)) + "; supported: f32, bf16" +
         (s.device().kind == DeviceKind::cpu ? ", f64" : " (f64 on cpu only)"));
  }
  std::int64_t last_dim(const Tensor& t, const char* tn) const {
    if (t.rank() < 1) fail(std::string(tn) + " needs at least one dimension");
    return t.dim(-1);
  }
  [[noreturn]] void no_backend(const char* what) const {
    fail(std::string("this build has no ") + what + " kernels (" +
         (std::string(what) == "simt" ? "the simt emulator is missing" : "CUDA is off") + ")");
  }
};

// Calls f(T{}) with the storage type of `d`.
template <class F>
void with_storage(DType d, F&& f) {
  switch (d) {
    case DType::f32: return f(float{});
    case DType::bf16: return f(bf16{});
    default: return f(double{});  // Op::storage() allowed f64 only on cpu
  }
}

template <class T>
using Acc = ref::acc_t<T>;
DType acc_dtype(DType storage) { return storage == DType::f64 ? DType::f64 : DType::f32; }

}  // namespace

// Runs REF on cpu, KERN (the launcher call, with `stream` in scope) on simt or cuda. The kernels exist
// for float and bf16 only; the double branch is discarded at compile time.
#if defined(PARBENCH_KERNELS_HAVE_SIMT)
#define PB_SIMT_BRANCH(T, KERN)                        \
  if constexpr (!std::is_same_v<T, double>) {          \
    namespace K = ::parbench::simt_kernels;            \
    KERN;                                              \
  }
#else
#define PB_SIMT_BRANCH(T, KERN) op.no_backend("simt");
#endif
#if defined(PARBENCH_HAVE_CUDA)
#define PB_CUDA_BRANCH(T, KERN)                        \
  if constexpr (!std::is_same_v<T, double>) {          \
    namespace K = ::parbench::cuda_kernels;            \
    KERN;                                              \
  }
#else
#define PB_CUDA_BRANCH(T, KERN) op.no_backend("cuda");
#endif
#define PB_DISPATCH(T, REF, KERN)                          \
  do {                                                     \
    [[maybe_unused]] void* stream = op.s.native();         \
    switch (op.s.device().kind) {                          \
      case DeviceKind::cpu: {                              \
        REF;                                               \
        break;                                             \
      }                                                    \
      case DeviceKind::simt: {                             \
        PB_SIMT_BRANCH(T, KERN)                            \
        break;                                             \
      }                                                    \
      case DeviceKind::cuda: {                             \
        PB_CUDA_BRANCH(T, KERN)                            \
        break;                                             \
      }                                                    \
    }                                                      \
  } while (0)

bool kernels_available(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::cpu: return true;
    case DeviceKind::simt:
#if defined(PARBENCH_KERNELS_HAVE_SIMT)
      return true;
#else
      return false;
#endif
    case DeviceKind::cuda:
#if defined(PARBENCH_HAVE_CUDA)
      return true;
#else
      return false;
#endif
  }
  return false;
}

std::string_view matmul_algo_name(MatmulAlgo a) {
  switch (a) {
    case MatmulAlgo::automatic: return "auto";
    case MatmulAlgo::naive: return "v1_naive";
    case MatmulAlgo::tiled: return "v2_smem_tiled";
    case MatmulAlgo::regtile: return "v3_regtile_vec16";
    case MatmulAlgo::wmma: return "v4_wmma_bf16";
    case MatmulAlgo::cublas: return "cublas";
  }
  return "?";
}

// The embedding ops' checks: inp (B,T) token ids, `table` (V,C), `positions` (maxT >= T, C) when not null, and
// the activation `act` (B,T,C). The tokens of a full table must lie inside it; a vocabulary shard (`shard`)
// skips the others. Returns {B, T, C, V}.
static std::array<int, 4> check_encoder(const Op& op, const Tensor& inp, const Tensor& table, const char* table_name,
                                        const Tensor* positions, const char* positions_name, const Tensor& act,
                                        const char* act_name, bool shard) {
  if (inp.rank() != 2) op.fail("inp must be (B, T), got " + shape_string(inp.shape()));
  int B = int(inp.dim(0)), T_ = int(inp.dim(1));
  int C = int(op.last_dim(table, table_name));
  int V = int(table.numel() / std::max(C, 1));
  op.shape(act, act_name, {B, T_, C});
  if (positions && (positions->rank() != 2 || positions->dim(1) != C || positions->dim(0) < T_))
    op.fail(std::string(positions_name) + " has shape " + shape_string(positions->shape()) + ", expected (maxT >= " +
            std::to_string(T_) + ", " + std::to_string(C) + ")");
  if (!shard && op.s.device().on_host())  // a bad token id would read out of bounds
    for (std::int64_t i = 0; i < inp.numel(); ++i)
      if (inp.ptr<std::int32_t>()[i] < 0 || inp.ptr<std::int32_t>()[i] >= V)
        op.fail("token " + std::to_string(inp.ptr<std::int32_t>()[i]) + " outside the vocabulary [0, " +
                std::to_string(V) + ")");
  return {B, T_, C, V};
}

// A vocabulary shard's first token id; ids are i32, so it lies in [0, 2^31).
static void check_vocab_begin(const Op& op, std::int64_t vocab_begin) {
  if (vocab_begin < 0 || vocab_begin > INT32_MAX)
    op.fail("vocab_begin " + std::to_string(vocab_begin) + " outside [0, " + std::to_string(INT32_MAX) + "]");
}

void encoder_forward(Tensor& out, const Tensor& inp, const Tensor& wte, const Tensor& wpe, const Stream& s) {
  Op op{"encoder_forward", s};
  DType d = op.storage(out, "out");
  op.dtype(inp, "inp", DType::i32);
  op.dtype(wte, "wte", d);
  op.dtype(wpe, "wpe", d);
  auto [B, T_, C, V] = check_encoder(op, inp, wte, "wte", &wpe, "wpe", out, "out", false);
  with_storage(d, [&](auto z) {
    using T = decltype(z);
    PB_DISPATCH(T, ref::encoder_forward(out.ptr<T>(), inp.ptr<std::int32_t>(), wte.ptr<T>(), wpe.ptr<T>(), B, T_, C),
                K::encoder_forward(out.ptr<T>(), inp.ptr<std::int32_t>(), wte.ptr<T>(), wpe.ptr<T>(), B, T_, C, stream));
  });
}

void encoder_backward(Tensor& dwte, Tensor& dwpe, const Tensor& dout, const Tensor& inp, const Stream& s) {
  Op op{"encoder_backward", s};
  DType d = op.storage(dout, "dout");
  op.dtype(inp, "inp", DType::i32);
  op.dtype(dwte, "dwte", d);
  op.dtype(dwpe, "dwpe", d);
  auto [B, T_, C, V] = check_encoder(op, inp, dwte, "dwte", &dwpe, "dwpe", dout, "dout", false);
  with_storage(d, [&](auto z) {
    using T = decltype(z);
    PB_DISPATCH(T, ref::encoder_backward(dwte.ptr<T>(), dwpe.ptr<T>(), dout.ptr<T>(), inp.ptr<std::int32_t>(), B, T_, C),
                K::encoder_backward(dwte.ptr<T>(), dwpe.ptr<T>(), dout.ptr<T>(), inp.ptr<std::int32_t>(), B, T_, C,
                                    stream));
  });
}

void encoder_forward_shard(Tensor& out, const Tensor& inp, const Tensor& wte, const Tensor* wpe,
                           std::int64_t vocab_begin, const Stream& s) {
  Op op{"encoder_forward_shard", s};
  DType d = op.storage(out, "out");
  op.dtype(inp, "inp", DType::i32);
  op.dtype(wte, "wte", d);
  if (wpe) op.dtype(*wpe, "wpe", d);
  check_vocab_begin(op, vocab_begin);
  auto [B, T_, C, Vs] = check_encoder(op, inp, wte, "wte", wpe, "wpe", out, "out", true);
  with_storage(d, [&](auto z) {
    using T = decltype(z);
    const T* p = wpe ? wpe->ptr<T>() : nullptr;
    PB_DISPATCH(T,
                ref::encoder_forward_shard(out.ptr<T>(), inp.ptr<std::int32_t>(), wte.ptr<T>(), p, B, T_, C, Vs,
                                           vocab_begin),
                K::encoder_forward_shard(out.ptr<T>(), inp.ptr<std::int32_t>(), wte.ptr<T>(), p, B, T_, C, Vs,
                                         vocab_begin, stream));
  });
}

void encoder_backward_shard(Tensor& dwte, Tensor* dwpe, const Tensor& dout, const Tensor& inp,
                            std::int64_t vocab_begin, const Stream& s) {
  Op op{"encoder_backward_shard", s};
  DType d = op.storage(dout, "dout");
  op.dtype(inp, "inp", DType::i32);
  op.dtype(dwte, "dwte", d);
  if (dwpe) op.dtype(*dwpe, "dwpe", d);
  check_vocab_begin(op, vocab_begin);
  auto [B, T_, C, Vs] = check_encoder(op, inp, dwte, "dwte", dwpe, "dwpe", dout, "dout", true);
  with_storage(d, [&](auto z) {
    using T = decltype(z);
    T* dp = dwpe ? dwpe->ptr<T>() : nullptr;
    PB_DISPATCH(T,
                ref::encoder_backward_shard(dwte.ptr<T>(), dp, dout.ptr<T>(), inp.ptr<std::int32_t>(), B, T_, C, Vs,
                                            vocab_begin),
                K::encoder_backward_shard(dwte.ptr<T>(), dp, dout.ptr<T>(), inp.ptr<std::int32_t>(), B, T_, C, Vs,
                                          vocab_begin, stream));
  });
}

// The matmul ops' checks: inp (...,C) and weight (OC,C) in dtype d, and `out` (the output or its gradient) with
// BT x OC elements. Returns {BT, C, OC}.
static std::array<int, 3> check_matmul(const Op& op, DType d, const Tensor& inp, const Tensor& weight,
                                       const Tensor& out, const char* out_name) {
  op.dtype(inp, "inp", d);
  op.dtype(weight, "weight", d);
  if (weight.rank() != 2) op.fail("weight must be (OC, C), got " + shape_string(weight.shape()));
  int OC = int(weight.dim(0)), C = int(weight.dim(1));
  if (op.last_dim(inp, "inp") != C)
    op.fail("inp " + shape_string(inp.shape()) + " does not end in C=" + std::to_string(C) + " of weight");
  int BT = int(inp.numel() / std::max(C, 1));
  op.numel(out, out_name, std::int64_t(BT) * OC);
  return {BT, C, OC};
}

void matmul_forward(Tensor& out, const Tensor& inp, const Tensor& weight, const Tensor* bias, const Stream& s,
                    MatmulAlgo algo) {
  Op op{"matmul_forward", s};
  DType d = op.storage(out, "out");
  auto [BT, C, OC] = check_matmul(op, d, inp, weight, out, "out");
  if (bias) {
    op.dtype(*bias, "bias", d);
    op.numel(*bias, "bias", OC);
  }
  if (algo == MatmulAlgo::cublas && s.device().kind != DeviceKind::cuda)
    op.fail("the cublas algorithm needs the cuda device, not " + device_name(s.device()));
  with_storage(d, [&](auto z) {
    using T = decltype(z);
    const T* b = bias ? bias->ptr<T>() : nullptr;
#if defined(PARBENCH_HAVE_CUDA)
    if constexpr (!std::is_same_v<T, double>)
      if (algo == MatmulAlgo::cublas)
        return cuda_kernels::matmul_forward_cublas(out.ptr<T>(), inp.ptr<T>(), weight.ptr<T>(), b, BT, C, OC, s.native());
#endif
    int version = algo == MatmulAlgo::cublas ? 0 : int(algo);
    PB_DISPATCH(T, ref::matmul_forward(out.ptr<T>(), inp.ptr<T>(), weight.ptr<T>(), b, BT, C, OC),
                K::matmul_forward(out.ptr<T>(), inp.ptr<T>(), weight.ptr<T>(), b, BT, C, OC, version, stream));
  });
}

void matmul_backward(Tensor* dinp, Tensor* dweight, Tensor* dbias, const Tensor& dout, const Tensor& inp,
                     const Tensor& weight, bool accumulate, const Stream& s) {
  Op op{"matmul_backward", s};
  DType d = op.storage(dout, "dout");
  auto [BT, C, OC] = check_matmul(op, d, inp, weight, dout, "dout");
  if (dinp) {
    op.dtype(*dinp, "dinp", d);
    op.numel(*dinp, "dinp", inp.numel());
  }
  if (dweight) {
    op.dtype(*dweight, "dweight", d);
    op.numel(*dweight, "dweight", weight.numel());
  }
  if (dbias) {
    op.dtype(*dbias, "dbias", d);
    op.numel(*dbias, "dbias", OC);
  }
  with_storage(d, [&](auto z) {
    using T = decltype(z);
    T* di = dinp ? dinp->ptr<T>() : nullptr;
    T* dw = dweight ? dweight->ptr<T>() : nullptr;
    T* db = dbias ? dbias->ptr<T>() : nullptr;
    PB_DISPATCH(T, ref::matmul_backward(di, dw, db, dout.ptr<T>(), inp.ptr<T>(), weight.ptr<T>(), BT, C, OC, accumulate),
                K::matmul_backward(di, dw, db, dout.ptr<T>(), inp.ptr<T>(), weight.ptr<T>(), BT, C, OC, accumulate,
                                   stream));
  });
}

void gelu_forward(Tensor& out, const Tensor& inp, const Stream& s) {
  Op op{"gelu_forward", s};
  DType d = op.storage(out, "out");
  op.dtype(inp, "inp", d);
  op.numel(out, "out", inp.numel());
  std::int64_t n = inp.numel();
  with_storage(d, [&](auto z) {
    using T = decltype(z);
    PB_DISPATCH(T, ref::gelu_forward(out.ptr<T>(), inp.ptr<T>(), n), K::gelu_forward(out.ptr<T>(), inp.ptr<T>(), n, stream));
  });
}

void gelu_backward(Tensor& dinp, const Tensor& inp, const Tensor& dout, const Stream& s) {
  Op op{"gelu_backward", s};
  DType d = op.storage(dinp, "dinp");
  op.dtype(inp, "inp", d);
  op.dtype(dout, "dout", d);
  op.numel(dinp, "dinp", inp.numel());
  op.numel(dout, "dout", inp.numel());
  std::int64_t n = inp.numel();
  with_storage(d, [&](auto z) {
    using T = decltype(z);
    PB_DISPATCH(T, ref::gelu_backward(dinp.ptr<T>(), inp.ptr<T>(), dout.ptr<T>(), n),
                K::gelu_backward(dinp.ptr<T>(), inp.ptr<T>(), dout.ptr<T>(), n, stream));
  });
}

void bias_gelu_forward(Tensor& out, const Tensor& inp, const Tensor& bias, const Stream& s) {
  Op op{"bias_gelu_forward", s};
  DType d = op.storage(out, "out");
  op.dtype(inp, "inp", d);
  op.dtype(bias, "bias", d);
  int C = int(op.last_dim(inp, "inp"));
  int N = int(inp.numel() / std::max(C, 1));
  op.numel(out, "out", inp.numel());
  op.numel(bias, "bias", C);
  with_storage(d, [&](auto z) {
    using T = decltype(z);
    PB_DISPATCH(T, ref::bias_gelu_forward(out.ptr<T>(), inp.ptr<T>(), bias.ptr<T>(), N, C),
                K::bias_gelu_forward(out.ptr<T>(), inp.ptr<T>(), bias.ptr<T>(), N, C, stream));
  });
}

void bias_gelu_backward(Tensor& dinp, Tensor* dbias, const Tensor& inp, const Tensor& bias, const Tensor& dout,
                        const Stream& s) {
  Op op{"bias_gelu_backward", s};
  DType d = op.storage(dinp, "dinp");
  op.dtype(inp, "inp", d);
  op.dtype(bias, "bias", d);
  op.dtype(dout, "dout", d);
  int C = int(op.last_dim(inp, "inp"));
  int N = int(inp.numel() / std::max(C, 1));
  op.numel(dinp, "dinp", inp.numel());
  op.numel(dout, "dout", inp.numel());
  op.numel(bias, "bias", C);
  if (dbias) {
    op.dtype(*dbias, "dbias", d);
    op.numel(*dbias, "dbias", C);
  }
  with_storage(d, [&](auto z) {
    using T = decltype(z);
    T* db = dbias ? dbias->ptr<T>() : nullptr;
    PB_DISPATCH(T, ref::bias_gelu_backward(dinp.ptr<T>(), db, inp.ptr<T>(), bias.ptr<T>(), dout.ptr<T>(), N, C),
                K::bias_gelu_backward(dinp.ptr<T>(), db, inp.ptr<T>(), bias.ptr<T>(), dout.ptr<T>(), N, C, stream));
  });
}

void layernorm_forward(Tensor& out, Tensor& mean, Tensor& rstd, const Tensor& inp, const Tensor& weight,
                       const Tensor& bias, const Stream& s) {
  Op op{"layernorm_forward", s};
  DType d = op.storage(out, "out");
  op.dtype(inp, "inp", d);
  op.dtype(weight, "weight", d);
  op.dtype(bias, "bias", d);
  op.dtype(mean, "mean", acc_dtype(d));
  op.dtype(rstd, "rstd", acc_dtype(d));
  int C = int(op.last_dim(inp, "inp"));
  int N = int(inp.numel() / std::max(C, 1));
  op.numel(out, "out", inp.numel());
  op.numel(weight, "weight", C);
  op.numel(bias, "bias", C);
  op.numel(mean, "mean", N);
  op.numel(rstd, "rstd", N);
  with_storage(d, [&](auto z) {
    using T = decltype(z);
    PB_DISPATCH(T,
                ref::layernorm_forward(out.ptr<T>(), mean.ptr<Acc<T>>(), rstd.ptr<Acc<T>>(), inp.ptr<T>(),
                                       weight.ptr<T>(), bias.ptr<T>(), N, C),
                K::layernorm_forward(out.ptr<T>(), mean.ptr<float>(), rstd.ptr<float>(), inp.ptr<T>(), weight.ptr<T>(),
                                     bias.ptr<T>(), N, C, stream));
  });
}

void layernorm_backward(Tensor& dinp, Tensor& dweight, Tensor& dbias, const Tensor& dout, const Tensor& inp,
                        const Tensor& weight, const Tensor& mean, const Tensor& rstd, const Stream& s) {
  Op op{"layernorm_backward", s};
  DType d = op.storage(dinp, "dinp");
  op.dtype(dweight, "dweight", d);
  op.dtype(dbias, "dbias", d);
  op.dtype(dout, "dout", d);
  op.dtype(inp, "inp", d);
  op.dtype(weight, "weight", d);
  op.dtype(mean, "mean", acc_dtype(d));
  op.dtype(rstd, "rstd", acc_dtype(d));
  int C = int(op.last_dim(inp, "inp"));
  int N = int(inp.numel() / std::max(C, 1));
  op.numel(dinp, "dinp", inp.numel());
  op.numel(dout, "dout", inp.numel());
  op.numel(weight, "weight", C);
  op.numel(dweight, "dweight", C);
  op.numel(dbias, "dbias", C);
  op.numel(mean, "mean", N);
  op.numel(rstd, "rstd", N);
  with_storage(d, [&](auto z) {
    using T = decltype(z);
    PB_DISPATCH(T,
                ref::layernorm_backward(dinp.ptr<T>(), dweight.ptr<T>(), dbias.ptr<T>(), dout.ptr<T>(), inp.ptr<T>(),
                                        weight.ptr<T>(), mean.ptr<Acc<T>>(), rstd.ptr<Acc<T>>(), N, C),
                K::layernorm_backward(dinp.ptr<T>(), dweight.ptr<T>(), dbias.ptr<T>(), dout.ptr<T>(), inp.ptr<T>(),
                                      weight.ptr<T>(), mean.ptr<float>(), rstd.ptr<float>(), N, C, stream));
  });
}

void residual_forward(Tensor& out, const Tensor& a, const Tensor& b, const Stream& s) {
  Op op{"residual_forward", s};
  DType d = op.storage(out, "out");
  op.dtype(a, "a", d);
  op.dtype(b, "b", d);
  op.numel(out, "out", a.numel());
  op.numel(b, "b", a.numel());
  std::int64_t n = a.numel();
  with_storage(d, [&](auto z) {
    using T = decltype(z);
    PB_DISPATCH(T, ref::residual_forward(out.ptr<T>(), a.ptr<T>(), b.ptr<T>(), n),
                K::residual_forward(out.ptr<T>(), a.ptr<T>(), b.ptr<T>(), n, stream));
  });
}

void residual_backward(Tensor& da, Tensor& db, const Tensor& dout, const Stream& s) {
  Op op{"residual_backward", s};
  DType d = op.storage(dout, "dout");
  op.dtype(da, "da", d);
  op.dtype(db, "db", d);
  op.numel(da, "da", dout.numel());
  op.numel(db, "db", dout.numel());
  std::int64_t n = dout.numel();
  with_storage(d, [&](auto z) {
    using T = decltype(z);
    PB_DISPATCH(T, ref::residual_backward(da.ptr<T>(), db.ptr<T>(), dout.ptr<T>(), n),
                K::residual_backward(da.ptr<T>(), db.ptr<T>(), dout.ptr<T>(), n, stream));
  });
}

namespace {
// (B, T, C) of an attention input (B,T,3C), checked against NH.
struct AttnShape {
  int B, T_, C;
};
AttnShape attention_shape(const Op& op, const Tensor& inp, int NH) {
  if (inp.rank() != 3 || inp.dim(2) % 3 != 0) op.fail("inp must be (B, T, 3C), got " + shape_string(inp.shape()));
  AttnShape a{int(inp.dim(0)), int(inp.dim(1)), int(inp.dim(2) / 3)};
  if (NH <= 0 || a.C % NH != 0)
    op.fail("NH=" + std::to_string(NH) + " does not divide C=" + std::to_string(a.C) + " into heads");
  return a;
}
}  // namespace

void attention_forward(Tensor& out, Tensor& att, const Tensor& inp, int NH, const Stream& s) {
  Op op{"attention_forward", s};
  DType d = op.storage(inp, "inp");
  auto [B, T_, C] = attention_shape(op, inp, NH);
  op.dtype(out, "out", d);
  op.dtype(att, "att", acc_dtype(d));
  op.shape(out, "out", {B, T_, C});
  op.shape(att, "att", {B, NH, T_, T_});
  with_storage(d, [&](auto z) {
    using T = decltype(z);
    PB_DISPATCH(T, ref::attention_forward(out.ptr<T>(), att.ptr<Acc<T>>(), inp.ptr<T>(), B, T_, C, NH),
                K::attention_forward(out.ptr<T>(), att.ptr<float>(), inp.ptr<T>(), B, T_, C, NH, stream));
  });
}

void attention_backward(Tensor& dinp, Tensor& scratch, const Tensor& dout, const Tensor& inp, const Tensor& att,
                        int NH, const Stream& s) {
  Op op{"attention_backward", s};
  DType d = op.storage(inp, "inp");
  auto [B, T_, C] = attention_shape(op, inp, NH);
  op.dtype(dinp, "dinp", d);
  op.dtype(dout, "dout", d);
  op.dtype(att, "att", acc_dtype(d));
  op.dtype(scratch, "scratch", acc_dtype(d));
  op.shape(dinp, "dinp", inp.shape());
  op.shape(dout, "dout", {B, T_, C});
  op.shape(att, "att", {B, NH, T_, T_});
  op.numel(scratch, "scratch", std::int64_t(B) * NH * T_ * T_);
  with_storage(d, [&](auto z) {
    using T = decltype(z);
    PB_DISPATCH(T, ref::attention_backward(dinp.ptr<T>(), dout.ptr<T>(), inp.ptr<T>(), att.ptr<Acc<T>>(), B, T_, C, NH),
                K::attention_backward(dinp.ptr<T>(), scratch.ptr<float>(), dout.ptr<T>(), inp.ptr<T>(), att.ptr<float>(),
                                      B, T_, C, NH, stream));
  });
}

void flash_attention_forward(Tensor& out, Tensor& lse, const Tensor& inp, int NH, const Stream& s) {
  Op op{"flash_attention_forward", s};
  DType d = op.storage(inp, "inp");
  auto [B, T_, C] = attention_shape(op, inp, NH);
  op.dtype(out, "out", d);
  op.dtype(lse, "lse", acc_dtype(d));
  op.shape(out, "out", {B, T_, C});
  op.shape(lse, "lse", {B, NH, T_});
  with_storage(d, [&](auto z) {
    using T = decltype(z);
    PB_DISPATCH(T, ref::flash_attention_forward(out.ptr<T>(), lse.ptr<Acc<T>>(), inp.ptr<T>(), B, T_, C, NH),
                K::flash_attention_forward(out.ptr<T>(), lse.ptr<float>(), inp.ptr<T>(), B, T_, C, NH, stream));
  });
}

void flash_attention_backward(Tensor& dinp, Tensor& scratch, const Tensor& dout, const Tensor& inp, const Tensor& out,
                              const Tensor& lse, int NH, const Stream& s) {
  Op op{"flash_attention_backward", s};
  DType d = op.storage(inp, "inp");
  auto [B, T_, C] = attention_shape(op, inp, NH);
  op.dtype(dinp, "dinp", d);
  op.dtype(dout, "dout", d);
  op.dtype(out, "out", d);
  op.dtype(lse, "lse", acc_dtype(d));
  op.dtype(scratch, "scratch", acc_dtype(d));
  op.shape(dinp, "dinp", inp.shape());
  op.shape(dout, "dout", {B, T_, C});
  op.shape(out, "out", {B, T_, C});
  op.shape(lse, "lse", {B, NH, T_});
  op.numel(scratch, "scratch", std::int64_t(B) * NH * T_);
  with_storage(d, [&](auto z) {
    using T = decltype(z);
    PB_DISPATCH(T,
                ref::flash_attention_backward(dinp.ptr<T>(), dout.ptr<T>(), inp.ptr<T>(), out.ptr<T>(),
                                              lse.ptr<Acc<T>>(), B, T_, C, NH),
                K::flash_attention_backward(dinp.ptr<T>(), scratch.ptr<float>(), dout.ptr<T>(), inp.ptr<T>(),
                                            out.ptr<T>(), lse.ptr<float>(), B, T_, C, NH, stream));
  });
}

void crossentropy_forward_backward(Tensor& losses, Tensor* dlogits, const Tensor& logits, const Tensor& targets,
                                   float dloss, const Stream& s) {
  Op op{"crossentropy_forward_backward", s};
  DType d = op.storage(logits, "logits");
  op.dtype(losses, "losses", acc_dtype(d));
  op.dtype(targets, "targets", DType::i32);
  int V = int(op.last_dim(logits, "logits"));
  int N = int(logits.numel() / std::max(V, 1));
  op.numel(losses, "losses", N);
  op.numel(targets, "targets", N);
  if (dlogits) {
    op.dtype(*dlogits, "dlogits", d);
    op.numel(*dlogits, "dlogits", logits.numel());
  }
  if (s.device().on_host())  // a bad target would read out of bounds
    for (std::int64_t i = 0; i < N; ++i)
      if (targets.ptr<std::int32_t>()[i] < 0 || targets.ptr<std::int32_t>()[i] >= V)
        op.fail("target " + std::to_string(targets.ptr<std::int32_t>()[i]) + " outside [0, " + std::to_string(V) + ")");
  with_storage(d, [&](auto z) {
    using T = decltype(z);
    T* dl = dlogits ? dlogits->ptr<T>() : nullptr;
    PB_DISPATCH(T,
                ref::crossentropy_forward_backward(losses.ptr<Acc<T>>(), dl, logits.ptr<T>(), targets.ptr<std::int32_t>(),
                                                   N, V, dloss),
                K::crossentropy_forward_backward(losses.ptr<float>(), dl, logits.ptr<T>(), targets.ptr<std::int32_t>(),
                                                 N, V, dloss, stream));
  });
}

namespace {
// The vocabulary-parallel cross-entropy ops' common checks: logits (..., Vs) in a storage dtype, targets (...)
// i32 global ids (non-negative: a negative id would silently belong to no shard), and each statistics tensor
// (...) in the statistics dtype.
struct CeShard {
  DType d;
  int N, Vs;
};
CeShard check_ce_shard(const Op& op, const Tensor& logits, const Tensor* targets, std::int64_t vocab_begin,
                       std::initializer_list<std::pair<const Tensor*, const char*>> stats) {
  DType d = op.storage(logits, "logits");
  int Vs = int(op.last_dim(logits, "logits"));
  int N = int(logits.numel() / std::max(Vs, 1));
  for (auto [t, name] : stats) {
    op.dtype(*t, name, acc_dtype(d));
    op.numel(*t, name, N);
  }
  check_vocab_begin(op, vocab_begin);
  if (targets) {
    op.dtype(*targets, "targets", DType::i32);
    op.numel(*targets, "targets", N);
    if (op.s.device().on_host())
      for (std::int64_t i = 0; i < N; ++i)
        if (targets->ptr<std::int32_t>()[i] < 0)
          op.fail("target " + std::to_string(targets->ptr<std::int32_t>()[i]) + " is negative");
  }
  return {d, N, Vs};
}
}  // namespace

void crossentropy_shard_max(Tensor& row_max, const Tensor& logits, const Stream& s) {
  Op op{"crossentropy_shard_max", s};
  auto [d, N, Vs] = check_ce_shard(op, logits, nullptr, 0, {{&row_max, "row_max"}});
  with_storage(d, [&](auto z) {
    using T = decltype(z);
    PB_DISPATCH(T, ref::crossentropy_shard_max(row_max.ptr<Acc<T>>(), logits.ptr<T>(), N, Vs),
                K::crossentropy_shard_max(row_max.ptr<float>(), logits.ptr<T>(), N, Vs, stream));
  });
}

void crossentropy_shard_sums(Tensor& sumexp, Tensor& target_logit, const Tensor& logits, const Tensor& targets,
                             const Tensor& row_max, std::int64_t vocab_begin, const Stream& s) {
  Op op{"crossentropy_shard_sums", s};
  auto [d, N, Vs] = check_ce_shard(op, logits, &targets, vocab_begin,
                                   {{&sumexp, "sumexp"}, {&target_logit, "target_logit"}, {&row_max, "row_max"}});
  with_storage(d, [&](auto z) {
    using T = decltype(z);
    PB_DISPATCH(T,
                ref::crossentropy_shard_sums(sumexp.ptr<Acc<T>>(), target_logit.ptr<Acc<T>>(), logits.ptr<T>(),
                                             targets.ptr<std::int32_t>(), row_max.ptr<Acc<T>>(), N, Vs, vocab_begin),
                K::crossentropy_shard_sums(sumexp.ptr<float>(), target_logit.ptr<float>(), logits.ptr<T>(),
                                           targets.ptr<std::int32_t>(), row_max.ptr<float>(), N, Vs, vocab_begin,
                                           stream));
  });
}

void crossentropy_shard_finish(Tensor& losses, Tensor* dlogits, const Tensor& logits, const Tensor& targets,
                               const Tensor& row_max, const Tensor& sumexp, const Tensor& target_logit,
                               std::int64_t vocab_begin, float dloss, const Stream& s) {
  Op op{"crossentropy_shard_finish", s};
  auto [d, N, Vs] = check_ce_shard(
      op, logits, &targets, vocab_begin,
      {{&losses, "losses"}, {&row_max, "row_max"}, {&sumexp, "sumexp"}, {&target_logit, "target_logit"}});
  if (dlogits) {
    op.dtype(*dlogits, "dlogits", d);
    op.numel(*dlogits, "dlogits", logits.numel());
  }
  with_storage(d, [&](auto z) {
    using T = decltype(z);
    T* dl = dlogits ? dlogits->ptr<T>() : nullptr;
    PB_DISPATCH(T,
                ref::crossentropy_shard_finish(losses.ptr<Acc<T>>(), dl, logits.ptr<T>(), targets.ptr<std::int32_t>(),
                                               row_max.ptr<Acc<T>>(), sumexp.ptr<Acc<T>>(),
                                               target_logit.ptr<Acc<T>>(), N, Vs, vocab_begin, dloss),
                K::crossentropy_shard_finish(losses.ptr<float>(), dl, logits.ptr<T>(), targets.ptr<std::int32_t>(),
                                             row_max.ptr<float>(), sumexp.ptr<float>(), target_logit.ptr<float>(), N,
                                             Vs, vocab_begin, dloss, stream));
  });
}

void adamw_update(Tensor& params, const Tensor& grads, Tensor& m, Tensor& v, const AdamWConfig& cfg, int step,
                  const Stream& s) {
  Op op{"adamw_update", s};
  DType d = op.storage(params, "params");
  op.dtype(grads, "grads", d);
  op.dtype(m, "m", acc_dtype(d));
  op.dtype(v, "v", acc_dtype(d));
  std::int64_t n = params.numel();
  op.numel(grads, "grads", n);
  op.numel(m, "m", n);
  op.numel(v, "v", n);
  if (step < 1) op.fail("step " + std::to_string(step) + " must count from 1");
  with_storage(d, [&](auto z) {
    using T = decltype(z);
    PB_DISPATCH(T,
                ref::adamw_update(params.ptr<T>(), grads.ptr<T>(), m.ptr<Acc<T>>(), v.ptr<Acc<T>>(), n, cfg.lr,
                                  cfg.beta1, cfg.beta2, cfg.eps, cfg.weight_decay, step),
                K::adamw_update(params.ptr<T>(), grads.ptr<T>(), m.ptr<float>(), v.ptr<float>(), n, cfg.lr, cfg.beta1,
                                cfg.beta2, cfg.eps, cfg.weight_decay, step, stream));
  });
}

void sgd_update(Tensor& params, const Tensor& grads, float lr, float weight_decay, const Stream& s) {
  Op op{"sgd_update", s};
  DType d = op.storage(params, "params");
  op.dtype(grads, "grads", d);
  std::int64_t n = params.numel();
  op.numel(grads, "grads", n);
  with_storage(d, [&](auto z) {
    using T = decltype(z);
    PB_DISPATCH(T, ref::sgd_update(params.ptr<T>(), grads.ptr<T>(), n, lr, weight_decay),
                K::sgd_update(params.ptr<T>(), grads.ptr<T>(), n, lr, weight_decay, stream));
  });
}

void norm_squared(Tensor& out, const Tensor& x, bool accumulate, const Stream& s) {
  Op op{"norm_squared", s};
  DType d = op.storage(x, "x");
  op.dtype(out, "out", acc_dtype(d));
  op.numel(out, "out", 1);
  std::int64_t n = x.numel();
  with_storage(d, [&](auto z) {
    using T = decltype(z);
    PB_DISPATCH(T, ref::norm_squared(out.ptr<Acc<T>>(), x.ptr<T>(), n, accumulate),
                K::norm_squared(out.ptr<float>(), x.ptr<T>(), n, accumulate, stream));
  });
}

void clip_by_norm(Tensor& x, const Tensor& norm_sq, float max_norm, const Stream& s) {
  Op op{"clip_by_norm", s};
  DType d = op.storage(x, "x");
  op.dtype(norm_sq, "norm_sq", acc_dtype(d));
  op.numel(norm_sq, "norm_sq", 1);
  if (!(max_norm > 0)) op.fail("max_norm " + std::to_string(max_norm) + " must be positive");
  std::int64_t n = x.numel();
  with_storage(d, [&](auto z) {
    using T = decltype(z);
    PB_DISPATCH(T, ref::clip_by_norm(x.ptr<T>(), n, norm_sq.ptr<Acc<T>>(), max_norm),
                K::clip_by_norm(x.ptr<T>(), n, norm_sq.ptr<float>(), max_norm, stream));
  });
}

void mse_forward(Tensor& loss, const Tensor& pred, const Tensor& target, const Stream& s) {
  Op op{"mse_forward", s};
  DType d = op.storage(pred, "pred");
  op.dtype(target, "target", d);
  op.dtype(loss, "loss", acc_dtype(d));
  op.numel(loss, "loss", 1);
  op.numel(target, "target", pred.numel());
  std::int64_t n = pred.numel();
  with_storage(d, [&](auto z) {
    using T = decltype(z);
    PB_DISPATCH(T, ref::mse_forward(loss.ptr<Acc<T>>(), pred.ptr<T>(), target.ptr<T>(), n),
                K::mse_forward(loss.ptr<float>(), pred.ptr<T>(), target.ptr<T>(), n, stream));
  });
}

void mse_backward(Tensor& dpred, const Tensor& pred, const Tensor& target, float dloss, const Stream& s) {
  Op op{"mse_backward", s};
  DType d = op.storage(pred, "pred");
  op.dtype(target, "target", d);
  op.dtype(dpred, "dpred", d);
  op.numel(target, "target", pred.numel());
  op.numel(dpred, "dpred", pred.numel());
  std::int64_t n = pred.numel();
  with_storage(d, [&](auto z) {
    using T = decltype(z);
    PB_DISPATCH(T, ref::mse_backward(dpred.ptr<T>(), pred.ptr<T>(), target.ptr<T>(), n, dloss),
                K::mse_backward(dpred.ptr<T>(), pred.ptr<T>(), target.ptr<T>(), n, dloss, stream));
  });
}

void convert(Tensor& out, const Tensor& inp, const Stream& s) {
  Op op{"convert", s};
  op.device(out, "out");
  op.device(inp, "inp");
  op.numel(out, "out", inp.numel());
  std::int64_t n = inp.numel();
  bool to_bf16 = out.dtype() == DType::bf16 && inp.dtype() == DType::f32;
  bool to_f32 = out.dtype() == DType::f32 && inp.dtype() == DType::bf16;
  if (!to_bf16 && !to_f32)
    op.fail("converts f32 -> bf16 or bf16 -> f32, not " + std::string(dtype_name(inp.dtype())) + " -> " +
            std::string(dtype_name(out.dtype())));
  using T = float;  // the kernels' branch is not templated here
  if (to_bf16) {
    PB_DISPATCH(T, (ref::convert<bf16, float>(out.ptr<bf16>(), inp.ptr<float>(), n)),
                K::convert(out.ptr<bf16>(), inp.ptr<float>(), n, stream));
  } else {
    PB_DISPATCH(T, (ref::convert<float, bf16>(out.ptr<float>(), inp.ptr<bf16>(), n)),
                K::convert(out.ptr<float>(), inp.ptr<bf16>(), n, stream));
  }
}

}  // namespace parbench::ops
