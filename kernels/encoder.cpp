// Token + position embedding, forward and backward, for the full table and a vocabulary shard: the host half of
// encoder.cu (reference, checks and dispatch).
#include <algorithm>
#include <array>
#include <climits>

#include "kernels/dispatch.h"
#include "kernels/op_table.h"
#include "kernels/ops.h"

PB_OP_SIGNATURES(
// out (B,T,C) = wte[inp[b,t]] + wpe[t]; inp (B,T) token ids in [0, V).
template <class T>
void encoder_forward(T* out, const std::int32_t* inp, const T* wte, const T* wpe, int B, int T_, int C, void* stream);
// dwte (V,C) += scatter of dout by token; dwpe (T,C) += sum over b of dout.
template <class T>
void encoder_backward(T* dwte, T* dwpe, const T* dout, const std::int32_t* inp, int B, int T_, int C, void* stream);
// Vocabulary shard (tensor parallelism): wte / dwte (Vs,C) hold rows [vocab_begin, vocab_begin + Vs) of the table;
// tokens outside contribute nothing. wpe / dwpe may be null (no position embedding in this shard).
template <class T>
void encoder_forward_shard(T* out, const std::int32_t* inp, const T* wte, const T* wpe, int B, int T_, int C, int Vs,
                           std::int64_t vocab_begin, void* stream);
template <class T>
void encoder_backward_shard(T* dwte, T* dwpe, const T* dout, const std::int32_t* inp, int B, int T_, int C, int Vs,
                            std::int64_t vocab_begin, void* stream);
)

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
                           std::int64_t vocab_begin, void*) {
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
                            std::int64_t vocab_begin, void*) {
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
void encoder_forward(T* out, const std::int32_t* inp, const T* wte, const T* wpe, int B, int T_, int C, void*) {
  encoder_forward_shard(out, inp, wte, wpe, B, T_, C, INT_MAX, 0, nullptr);
}

template <class T>
void encoder_backward(T* dwte, T* dwpe, const T* dout, const std::int32_t* inp, int B, int T_, int C, void*) {
  encoder_backward_shard(dwte, dwpe, dout, inp, B, T_, C, INT_MAX, 0, nullptr);
}

}  // namespace parbench::ref

namespace parbench::ops {

using namespace detail;  // Op, OpScratch, Acc and the other helpers of kernels/dispatch.h

// The embedding ops' checks: inp (B,T) i32 token ids, `table` (V,C), `positions` (maxT >= T, C) when not null, and
// the activation `act` (B,T,C), in storage dtype d. The tokens of a full table must lie inside it; a vocabulary
// shard (`vocab_begin` given: its first token id) skips the others. Returns {B, T, C, V}.
static std::array<int, 4> check_encoder(const Op& op, DType d, const Tensor& inp, const Tensor& table,
                                        const char* table_name, const Tensor* positions, const char* positions_name,
                                        const Tensor& act, const char* act_name,
                                        const std::int64_t* vocab_begin = nullptr) {
  if (vocab_begin) op.vocab_begin(*vocab_begin);
  op.dtype(inp, "inp", DType::i32);
  op.dtype(table, table_name, d);
  if (positions) op.dtype(*positions, positions_name, d);
  if (inp.rank() != 2) op.fail("inp must be (B, T), got " + shape_string(inp.shape()));
  int B = int(inp.dim(0)), T_ = int(inp.dim(1));
  int C = int(op.last_dim(table, table_name));
  int V = int(table.numel() / std::max(C, 1));
  op.shape(act, act_name, {B, T_, C});
  if (positions && (positions->rank() != 2 || positions->dim(1) != C || positions->dim(0) < T_))
    op.fail(std::string(positions_name) + " has shape " + shape_string(positions->shape()) + ", expected (maxT >= " +
            std::to_string(T_) + ", " + std::to_string(C) + ")");
  if (!vocab_begin && op.s.device().on_host())  // a bad token id would read out of bounds
    for (std::int64_t i = 0; i < inp.numel(); ++i)
      if (inp.ptr<std::int32_t>()[i] < 0 || inp.ptr<std::int32_t>()[i] >= V)
        op.fail("token " + std::to_string(inp.ptr<std::int32_t>()[i]) + " outside the vocabulary [0, " +
                std::to_string(V) + ")");
  return {B, T_, C, V};
}

void encoder_forward(Tensor& out, const Tensor& inp, const Tensor& wte, const Tensor& wpe, const Stream& s) {
  Op op{"encoder_forward", s};
  DType d = op.storage(out, "out");
  const auto dims = check_encoder(op, d, inp, wte, "wte", &wpe, "wpe", out, "out");
  const int B = dims[0], T_ = dims[1], C = dims[2];
  PB_DISPATCH(op, d, encoder_forward, out.ptr<T>(), inp.ptr<std::int32_t>(), wte.ptr<T>(), wpe.ptr<T>(), B, T_, C);
}

void encoder_backward(Tensor& dwte, Tensor& dwpe, const Tensor& dout, const Tensor& inp, const Stream& s) {
  Op op{"encoder_backward", s};
  DType d = op.storage(dout, "dout");
  const auto dims = check_encoder(op, d, inp, dwte, "dwte", &dwpe, "dwpe", dout, "dout");
  const int B = dims[0], T_ = dims[1], C = dims[2];
  PB_DISPATCH(op, d, encoder_backward, dwte.ptr<T>(), dwpe.ptr<T>(), dout.ptr<T>(), inp.ptr<std::int32_t>(), B, T_, C);
}

// The vocabulary shards: as above, with the table's first token id.
void encoder_forward_shard(Tensor& out, const Tensor& inp, const Tensor& wte, const Tensor* wpe,
                           std::int64_t vocab_begin, const Stream& s) {
  Op op{"encoder_forward_shard", s};
  DType d = op.storage(out, "out");
  const auto dims = check_encoder(op, d, inp, wte, "wte", wpe, "wpe", out, "out", &vocab_begin);
  const int B = dims[0], T_ = dims[1], C = dims[2], Vs = dims[3];
  PB_DISPATCH(op, d, encoder_forward_shard, out.ptr<T>(), inp.ptr<std::int32_t>(), wte.ptr<T>(), ptr_or_null<T>(wpe), B,
              T_, C, Vs, vocab_begin);
}

void encoder_backward_shard(Tensor& dwte, Tensor* dwpe, const Tensor& dout, const Tensor& inp,
                            std::int64_t vocab_begin, const Stream& s) {
  Op op{"encoder_backward_shard", s};
  DType d = op.storage(dout, "dout");
  const auto dims = check_encoder(op, d, inp, dwte, "dwte", dwpe, "dwpe", dout, "dout", &vocab_begin);
  const int B = dims[0], T_ = dims[1], C = dims[2], Vs = dims[3];
  PB_DISPATCH(op, d, encoder_backward_shard, dwte.ptr<T>(), ptr_or_null<T>(dwpe), dout.ptr<T>(),
              inp.ptr<std::int32_t>(), B, T_, C, Vs, vocab_begin);
}

}  // namespace parbench::ops

// The workloads of the op table (kernels/op_table.h), run by the kernel tests and bench_kernels.
namespace parbench::optable {

Work encoder_forward_workload(OpCase& c, const OpShape& s) {
  DType t = c.dtype();
  Arg inp = c.tokens({s.B, s.T}, s.V), wte = c.in(t, {s.V, s.C}), wpe = c.in(t, {s.T, s.C}),
      out = c.out(t, {s.B, s.T, s.C});
  double n = double(s.B) * s.T * s.C;
  auto call = [=](int i, const Stream& st) mutable { ops::encoder_forward(out[i], inp[i], wte[i], wpe[i], st); };
  return Work{call, {out}, n, 3 * n * elem_bytes(t)}.named({{"inp", inp}, {"wte", wte}, {"wpe", wpe}, {"out", out}});
}

Work encoder_backward_workload(OpCase& c, const OpShape& s) {
  DType t = c.dtype();
  Arg inp = c.tokens({s.B, s.T}, s.V), dout = c.in(t, {s.B, s.T, s.C}), dwte = c.in(t, {s.V, s.C}),
      dwpe = c.in(t, {s.T, s.C});
  double n = double(s.B) * s.T * s.C;
  auto call = [=](int i, const Stream& st) mutable { ops::encoder_backward(dwte[i], dwpe[i], dout[i], inp[i], st); };
  return Work{call, {dwte, dwpe}, 2 * n, 5 * n * elem_bytes(t)}.named(
      {{"inp", inp}, {"dout", dout}, {"dwte", dwte}, {"dwpe", dwpe}});
}

}  // namespace parbench::optable
