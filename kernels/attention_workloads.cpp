// The attention ops' workloads of the op table (kernels/op_table.h), run by the kernel tests and bench_kernels:
// multi-head (KV = NH), grouped-query (KV = NH/2) and multi-query (KV = 1) rows of the plain and flash pairs, and the
// flash pair at the tensor-core kernels' head sizes. inp is (B, T, (NH + 2 KV) hs): K/V are counted once per kv
// head in the bytes.
#include <algorithm>
#include <utility>
#include <vector>

#include "kernels/op_table.h"
#include "kernels/ops.h"

namespace parbench::optable {

namespace {

// A shape with its kv heads.
struct AttnCase {
  OpShape s;
  int KV;
  int hs() const { return s.C / s.NH; }
  // inp's last dimension: NH query heads, KV key heads, KV value heads.
  int width() const { return s.C + 2 * KV * hs(); }
};

AttnCase multi_head(const OpShape& s) { return {s, s.NH}; }
// Groups of two query heads per kv head; an odd NH is doubled first (heads of half the channels) where C allows,
// so that the rows have more than one kv head and more than one query head per kv head.
AttnCase grouped(const OpShape& s) {
  OpShape g = s;
  if (g.NH % 2 != 0 && g.C % (2 * g.NH) == 0) g.NH *= 2;
  return {g, g.NH % 2 == 0 ? g.NH / 2 : g.NH};
}
AttnCase multi_query(const OpShape& s) { return {s, 1}; }

// Causal attention work: QK^T and PV over the lower triangle, per query head.
double attn_flops(const OpShape& s) { return 2.0 * 2.0 * s.B * s.NH * (s.T * (s.T + 1.0) / 2) * (s.C / s.NH); }
// Bytes of `inp_reads` passes over inp plus `c_rows` tensors of (B, T, C).
double attn_bytes(const AttnCase& a, double inp_reads, double c_rows, DType t) {
  return (inp_reads * a.width() + c_rows * a.s.C) * double(a.s.B) * a.s.T * elem_bytes(t);
}

Work plain_forward(OpCase& c, const AttnCase& a) {
  const OpShape s = a.s;
  DType t = c.dtype();
  Arg inp = c.in(t, {s.B, s.T, a.width()}, -1, 1), out = c.out(t, {s.B, s.T, s.C}),
      att = c.out(c.acc(), {s.B, s.NH, s.T, s.T});
  double scores = double(s.B) * s.NH * s.T * s.T * 4;
  auto call = [=](int i, const Stream& st) mutable { ops::attention_forward(out[i], att[i], inp[i], s.NH, st); };
  return Work{call, {out, att}, attn_flops(s), attn_bytes(a, 1, 1, t) + 3 * scores}.named(
      {{"inp", inp}, {"out", out}, {"att", att}});
}

Work plain_backward(OpCase& c, const AttnCase& a) {
  const OpShape s = a.s;
  DType t = c.dtype();
  Arg inp = c.in(t, {s.B, s.T, a.width()}, -1, 1), out = c.out(t, {s.B, s.T, s.C}),
      att = c.out(c.acc(), {s.B, s.NH, s.T, s.T});
  Arg dout = c.in(t, {s.B, s.T, s.C}), dinp = c.out(t, {s.B, s.T, a.width()}),
      scratch = c.out(c.acc(), {s.B, s.NH, s.T, s.T});
  // The forward runs once per side (in the check or the warm-up).
  std::vector<char> forward_done(std::size_t(c.sides()), 0);
  double scores = double(s.B) * s.NH * s.T * s.T * 4;
  auto call = [=](int i, const Stream& st) mutable {
    if (!forward_done[std::size_t(i)]) ops::attention_forward(out[i], att[i], inp[i], s.NH, st);
    forward_done[std::size_t(i)] = true;
    ops::attention_backward(dinp[i], scratch[i], dout[i], inp[i], att[i], s.NH, st);
  };
  return Work{call, {dinp}, 2 * attn_flops(s), attn_bytes(a, 2, 1, t) + 5 * scores}.named(
      {{"inp", inp}, {"dout", dout}, {"dinp", dinp}});
}

Work flash_forward(OpCase& c, const AttnCase& a) {
  const OpShape s = a.s;
  DType t = c.dtype();
  Arg inp = c.in(t, {s.B, s.T, a.width()}, -1, 1), out = c.out(t, {s.B, s.T, s.C}),
      lse = c.out(c.acc(), {s.B, s.NH, s.T});
  auto call = [=](int i, const Stream& st) mutable { ops::flash_attention_forward(out[i], lse[i], inp[i], s.NH, st); };
  return Work{call, {out, lse}, attn_flops(s), attn_bytes(a, 1, 1, t)}.named(
      {{"inp", inp}, {"out", out}, {"lse", lse}});
}

Work flash_backward(OpCase& c, const AttnCase& a) {
  const OpShape s = a.s;
  DType t = c.dtype();
  Arg inp = c.in(t, {s.B, s.T, a.width()}, -1, 1), out = c.out(t, {s.B, s.T, s.C}),
      lse = c.out(c.acc(), {s.B, s.NH, s.T});
  Arg dout = c.in(t, {s.B, s.T, s.C}), dinp = c.out(t, {s.B, s.T, a.width()}), scratch = c.out(c.acc(), {s.B, s.NH, s.T});
  std::vector<char> forward_done(std::size_t(c.sides()), 0);
  auto call = [=](int i, const Stream& st) mutable {
    if (!forward_done[std::size_t(i)]) ops::flash_attention_forward(out[i], lse[i], inp[i], s.NH, st);
    forward_done[std::size_t(i)] = true;
    ops::flash_attention_backward(dinp[i], scratch[i], dout[i], inp[i], out[i], lse[i], s.NH, st);
  };
  return Work{call, {dinp}, 3.5 * attn_flops(s), attn_bytes(a, 4, 0, t)}.named(
      {{"inp", inp}, {"dout", dout}, {"dinp", dinp}});
}

// The flash pair at the head sizes of the tensor-core kernels: the shape's C split into heads of 64 channels, and
// again into heads of 128 (at least `min_heads` heads each), both run by one call and both checked.
struct WideHeads {
  OpShape s64, s128;
};
WideHeads wide_heads(const OpShape& s, int min_heads) {
  OpShape a = s, b = s;
  a.NH = std::max(min_heads, s.C / 64);
  a.C = 64 * a.NH;
  b.NH = std::max(min_heads, s.C / 128);
  b.C = 128 * b.NH;
  return {a, b};
}
// The named tensors of both halves, told apart by "hs64/" and "hs128/".
std::vector<NamedArg> prefixed(const Work& a, const Work& b) {
  std::vector<NamedArg> out;
  for (const NamedArg& x : a.args) out.push_back({"hs64/" + x.name, x.arg});
  for (const NamedArg& x : b.args) out.push_back({"hs128/" + x.name, x.arg});
  return out;
}
// Both halves in one call; `checked_per_half` outputs of each are compared. The callers make a before b (their
// inputs are drawn in that order).
Work both_halves(Work a, Work b, std::size_t checked_per_half) {
  auto call = [fa = a.call, fb = b.call](int i, const Stream& st) {
    fa(i, st);
    fb(i, st);
  };
  std::vector<Arg> checked(a.checked.begin(), a.checked.begin() + std::ptrdiff_t(checked_per_half));
  checked.insert(checked.end(), b.checked.begin(), b.checked.begin() + std::ptrdiff_t(checked_per_half));
  return Work{call, checked, a.flops + b.flops, a.bytes + b.bytes}.named(prefixed(a, b));
}
// Grouped-query halves: an even number of query heads (at least 4), two per kv head.
AttnCase grouped_wide(OpShape s) {
  const int hs = s.C / s.NH;
  s.NH += s.NH % 2;
  s.C = s.NH * hs;
  return {s, s.NH / 2};
}

}  // namespace

Work attention_forward_workload(OpCase& c, const OpShape& s) { return plain_forward(c, multi_head(s)); }
Work attention_backward_workload(OpCase& c, const OpShape& s) { return plain_backward(c, multi_head(s)); }
Work attention_forward_gqa_workload(OpCase& c, const OpShape& s) { return plain_forward(c, grouped(s)); }
Work attention_backward_gqa_workload(OpCase& c, const OpShape& s) { return plain_backward(c, grouped(s)); }
Work attention_forward_mqa_workload(OpCase& c, const OpShape& s) { return plain_forward(c, multi_query(s)); }
Work attention_backward_mqa_workload(OpCase& c, const OpShape& s) { return plain_backward(c, multi_query(s)); }
Work flash_attention_forward_workload(OpCase& c, const OpShape& s) { return flash_forward(c, multi_head(s)); }
Work flash_attention_backward_workload(OpCase& c, const OpShape& s) { return flash_backward(c, multi_head(s)); }
Work flash_attention_forward_gqa_workload(OpCase& c, const OpShape& s) { return flash_forward(c, grouped(s)); }
Work flash_attention_backward_gqa_workload(OpCase& c, const OpShape& s) { return flash_backward(c, grouped(s)); }
Work flash_attention_forward_mqa_workload(OpCase& c, const OpShape& s) { return flash_forward(c, multi_query(s)); }
Work flash_attention_backward_mqa_workload(OpCase& c, const OpShape& s) { return flash_backward(c, multi_query(s)); }

Work flash_attention_fwd_hs64_128_workload(OpCase& c, const OpShape& s) {
  const WideHeads w = wide_heads(s, 1);
  Work a = flash_forward(c, multi_head(w.s64)), b = flash_forward(c, multi_head(w.s128));
  return both_halves(std::move(a), std::move(b), 2);
}
Work flash_attention_bwd_hs64_128_workload(OpCase& c, const OpShape& s) {
  const WideHeads w = wide_heads(s, 1);
  Work a = flash_backward(c, multi_head(w.s64)), b = flash_backward(c, multi_head(w.s128));
  return both_halves(std::move(a), std::move(b), 1);
}
Work flash_attention_fwd_hs64_128_gqa_workload(OpCase& c, const OpShape& s) {
  const WideHeads w = wide_heads(s, 4);
  Work a = flash_forward(c, grouped_wide(w.s64)), b = flash_forward(c, grouped_wide(w.s128));
  return both_halves(std::move(a), std::move(b), 2);
}
Work flash_attention_bwd_hs64_128_gqa_workload(OpCase& c, const OpShape& s) {
  const WideHeads w = wide_heads(s, 4);
  Work a = flash_backward(c, grouped_wide(w.s64)), b = flash_backward(c, grouped_wide(w.s128));
  return both_halves(std::move(a), std::move(b), 1);
}

}  // namespace parbench::optable
