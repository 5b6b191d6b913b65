// Rotary position embedding (RoPE), Llama's rotate-half layout: the host half of rope.cu (reference, checks and
// dispatch). A head x of D channels (D even) at position p = t + offset: for i < D/2, angle = p * theta^(-2i/D),
// out[i] = x[i] cos - x[i + D/2] sin, out[i + D/2] = x[i + D/2] cos + x[i] sin.
#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>

#include "kernels/dispatch.h"
#include "kernels/op_table.h"
#include "kernels/ops.h"

PB_OP_SIGNATURES(
// cos_sin (T, D/2, 2) = cos and sin of (offset + t) * theta^(-2i/D) (the kernels' table is float).
template <class T>
void rope_table(T* cos_sin, int T_, int D, double theta, std::int64_t offset, void* stream);
// out (B,T,H,D) = inp with each pair (i, i + D/2) of heads [0, R) rotated by its position's angle, heads [R, H)
// copied; out may be inp.
template <class T>
void rope_forward(T* out, const T* inp, const acc_t<T>* cos_sin, int B, int T_, int H, int R, int D, void* stream);
// dinp += dout with each pair of heads [0, R) rotated by minus the angle (the forward's transpose), the rest as is.
template <class T>
void rope_backward(T* dinp, const T* dout, const acc_t<T>* cos_sin, int B, int T_, int H, int R, int D,
                   void* stream);
)

namespace parbench::ref {

namespace {

// out = the rotation of inp's heads [0, R) by cos_sin's angles (the others unturned); with `backward`, out += the
// rotation by minus them.
template <class T>
void rope_rotate_rows(T* out, const T* inp, const acc_t<T>* cos_sin, int B, int T_, int H, int R, int D,
                      bool backward) {
  using A = acc_t<T>;
  const int half = D / 2;
  const std::int64_t rows = std::int64_t(B) * T_ * H;
  for (std::int64_t row = 0; row < rows; ++row) {
    const std::int64_t t = (row / H) % T_;
    const bool turned = row % H < R;
    for (int i = 0; i < half; ++i) {
      const acc_t<T>* cs = cos_sin + 2 * (t * half + i);
      const A c = turned ? cs[0] : A(1), s = !turned ? A(0) : backward ? -cs[1] : cs[1];
      const std::int64_t a = row * D + i, b = a + half;
      const A x0 = load(inp[a]), x1 = load(inp[b]);
      A y0 = x0 * c - x1 * s, y1 = x1 * c + x0 * s;
      if (backward) {
        y0 += load(out[a]);
        y1 += load(out[b]);
      }
      out[a] = store<T>(y0);
      out[b] = store<T>(y1);
    }
  }
}

}  // namespace

// The angle in double whatever the table's type: p * inv_freq is within 1e-16 relative of the exact angle.
template <class T>
void rope_table(T* cos_sin, int T_, int D, double theta, std::int64_t offset, void*) {
  const int half = D / 2;
  for (int i = 0; i < half; ++i) {
    const double inv_freq = std::pow(theta, -2.0 * i / D);
    for (int t = 0; t < T_; ++t) {
      const double angle = double(offset + t) * inv_freq;
      cos_sin[2 * (std::int64_t(t) * half + i)] = T(std::cos(angle));
      cos_sin[2 * (std::int64_t(t) * half + i) + 1] = T(std::sin(angle));
    }
  }
}

template <class T>
void rope_forward(T* out, const T* inp, const acc_t<T>* cos_sin, int B, int T_, int H, int R, int D, void*) {
  rope_rotate_rows<T>(out, inp, cos_sin, B, T_, H, R, D, false);
}

template <class T>
void rope_backward(T* dinp, const T* dout, const acc_t<T>* cos_sin, int B, int T_, int H, int R, int D, void*) {
  rope_rotate_rows<T>(dinp, dout, cos_sin, B, T_, H, R, D, true);
}

}  // namespace parbench::ref

namespace parbench::ops {

using namespace detail;  // Op, OpScratch, Acc and the other helpers of kernels/dispatch.h

namespace {

// Positions are held exactly in float by the kernels: below 2^24.
constexpr std::int64_t kMaxRopePosition = std::int64_t(1) << 24;

void check_head_size(const Op& op, std::int64_t D, const std::string& what) {
  if (D < 2 || D % 2 != 0)
    op.fail(what + " D=" + std::to_string(D) + " is not even and >= 2: RoPE pairs channel i with i + D/2");
}

// The batch, positions, heads and head size of a rope op: x (B,T,H,D), each tensor of `like_x` of x's shape and
// the storage dtype d; cos_sin (>= T, D/2, 2) of the statistics dtype.
struct RopeDims {
  int B, T, H, R, D;
};
RopeDims rope_dims(const Op& op, DType d, const Tensor& x, const char* xn, std::initializer_list<Named> like_x,
                   const Tensor& cos_sin, int rotated_heads) {
  op.dtypes(like_x, d);
  if (x.rank() != 4) op.fail(std::string(xn) + " has shape " + shape_string(x.shape()) + ", expected (B, T, H, D)");
  for (const Named& t : like_x) op.shape(t.t, t.name, x.shape());
  const int H = int(x.dim(2));
  if (rotated_heads < -1 || rotated_heads > H)
    op.fail("rotated_heads=" + std::to_string(rotated_heads) + " is not in [0, H=" + std::to_string(H) +
            "] (or -1: all of " + xn + "'s heads)");
  const RopeDims n{int(x.dim(0)), int(x.dim(1)), H, rotated_heads < 0 ? H : rotated_heads, int(x.dim(3))};
  check_head_size(op, n.D, std::string(xn) + "'s head size");
  op.dtype(cos_sin, "cos_sin", acc_dtype(d));
  if (cos_sin.rank() != 3 || cos_sin.dim(1) != n.D / 2 || cos_sin.dim(2) != 2)
    op.fail("cos_sin has shape " + shape_string(cos_sin.shape()) + ", expected (T, D/2, 2) with D=" +
            std::to_string(n.D) + " (" + xn + "'s head size)");
  if (cos_sin.dim(0) < n.T)
    op.fail("cos_sin has " + std::to_string(cos_sin.dim(0)) + " positions, fewer than T=" + std::to_string(n.T) +
            " of " + xn);
  return n;
}

}  // namespace

void rope_table(Tensor& cos_sin, int T, int D, double theta, std::int64_t offset, const Stream& s) {
  Op op{"rope_table", s};
  const DType d = op.storage(cos_sin, "cos_sin");
  if (d == DType::bf16) op.fail("cos_sin has dtype bf16, expected f32 (or f64 on cpu)");
  check_head_size(op, D, "the head size");
  if (T < 0) op.fail("T=" + std::to_string(T) + " is negative");
  if (!(theta >= 1) || !std::isfinite(theta))
    op.fail("theta=" + std::to_string(theta) + ": the base must be finite and >= 1");
  if (offset < 0 || offset > kMaxRopePosition - T)
    op.fail("positions offset=" + std::to_string(offset) + " to offset + T - 1 (T=" + std::to_string(T) +
            ") are not all in [0, 2^24): the kernels hold a position exactly in float");
  op.shape(cos_sin, "cos_sin", {T, D / 2, 2});
  with_storage(d, [&]<class A>() {
    if constexpr (!std::is_same_v<A, bf16>) PB_RUN(op, A, rope_table, cos_sin.ptr<A>(), T, D, theta, offset);
  });
}

void rope_forward(Tensor& out, const Tensor& inp, const Tensor& cos_sin, const Stream& s, int rotated_heads) {
  Op op{"rope_forward", s};
  DType d = op.storage(out, "out");
  RopeDims n = rope_dims(op, d, inp, "inp", {{inp, "inp"}, {out, "out"}}, cos_sin, rotated_heads);
  PB_DISPATCH(op, d, rope_forward, out.ptr<T>(), inp.ptr<T>(), cos_sin.ptr<Acc<T>>(), n.B, n.T, n.H, n.R, n.D);
}

void rope_backward(Tensor& dinp, const Tensor& dout, const Tensor& cos_sin, const Stream& s, int rotated_heads) {
  Op op{"rope_backward", s};
  DType d = op.storage(dinp, "dinp");
  RopeDims n = rope_dims(op, d, dout, "dout", {{dout, "dout"}, {dinp, "dinp"}}, cos_sin, rotated_heads);
  PB_DISPATCH(op, d, rope_backward, dinp.ptr<T>(), dout.ptr<T>(), cos_sin.ptr<Acc<T>>(), n.B, n.T, n.H, n.R, n.D);
}

}  // namespace parbench::ops

// The workloads of the op table (kernels/op_table.h), run by the kernel tests and bench_kernels: q of (B,T,NH,D)
// with heads of D = C/NH channels (one fewer where that is odd), Llama 3's base theta = 500000, the table's
// positions from 8185 (past 8192 at every table shape but the gradient check's). The rotations take a table of
// T + 2 random rows (only the first T are read; any cos and sin, since the op is linear in them). Bytes count each
// kernel's reads and writes: inp and out (dout, and dinp read and written), the table's T rows once.
namespace parbench::optable {

namespace {

constexpr double kRopeTheta = 500000;
constexpr std::int64_t kRopeOffset = 8185;

int rope_head_size(const OpShape& s) { return std::max(2, s.C / s.NH / 2 * 2); }

}  // namespace

Work rope_table_workload(OpCase& c, const OpShape& s) {
  const int D = rope_head_size(s);
  Arg cs = c.out(c.acc(), {s.T, D / 2, 2});
  const double angles = double(s.T) * (D / 2);
  auto call = [=](int i, const Stream& st) mutable { ops::rope_table(cs[i], s.T, D, kRopeTheta, kRopeOffset, st); };
  // FLOPs: 10 per angle (its double-float product and reduction; the sine and cosine as one each). 2e-6: the
  // table is accurate to a few 1e-7 at these positions, where the float product p * inv_freq is off by 1e-4.
  return Work{call, {cs}, 10 * angles, 2 * angles * elem_bytes(c.acc()), 2e-6};
}

Work rope_forward_workload(OpCase& c, const OpShape& s) {
  DType t = c.dtype();
  const int D = rope_head_size(s);
  Arg inp = c.in(t, {s.B, s.T, s.NH, D}), cs = c.in(c.acc(), {s.T + 2, D / 2, 2}),
      out = c.out(t, {s.B, s.T, s.NH, D});
  const double n = double(s.B) * s.T * s.NH * D, table = double(s.T) * D * elem_bytes(c.acc());
  auto call = [=](int i, const Stream& st) mutable { ops::rope_forward(out[i], inp[i], cs[i], st); };
  return Work{call, {out}, 3 * n, 2 * n * elem_bytes(t) + table}.named(
      {{"inp", inp}, {"cos_sin", cs}, {"out", out}});
}

Work rope_backward_workload(OpCase& c, const OpShape& s) {
  DType t = c.dtype();
  const int D = rope_head_size(s);
  Arg cs = c.in(c.acc(), {s.T + 2, D / 2, 2}), dout = c.in(t, {s.B, s.T, s.NH, D}),
      dinp = c.in(t, {s.B, s.T, s.NH, D});
  const double n = double(s.B) * s.T * s.NH * D, table = double(s.T) * D * elem_bytes(c.acc());
  auto call = [=](int i, const Stream& st) mutable { ops::rope_backward(dinp[i], dout[i], cs[i], st); };
  return Work{call, {dinp}, 4 * n, 3 * n * elem_bytes(t) + table}.named(
      {{"cos_sin", cs}, {"dout", dout}, {"dinp", dinp}});
}

}  // namespace parbench::optable
