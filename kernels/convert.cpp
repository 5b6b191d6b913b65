// Storage conversion between fp32 and bf16 (round to nearest even into bf16): the host half of convert.cu
// (reference, checks and dispatch).

#include "kernels/dispatch.h"
#include "kernels/op_table.h"
#include "kernels/ops.h"

PB_OP_SIGNATURES(
template <class To, class From> void convert(To* out, const From* inp, std::int64_t n, void* stream);
)

namespace parbench::ref {

template <class To, class From>
void convert(To* out, const From* inp, std::int64_t n, void*) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = store<To>(acc_t<To>(load(inp[i])));
}

}  // namespace parbench::ref

namespace parbench::ops {

using namespace detail;  // Op, OpScratch, Acc and the other helpers of kernels/dispatch.h

void convert(Tensor& out, const Tensor& inp, const Stream& s) {
  Op op{"convert", s};
  op.device(out, "out");
  op.device(inp, "inp");
  op.numel(out, "out", inp.numel());
  bool to_bf16 = out.dtype() == DType::bf16 && inp.dtype() == DType::f32;
  bool to_f32 = out.dtype() == DType::f32 && inp.dtype() == DType::bf16;
  if (!to_bf16 && !to_f32)
    op.fail("converts f32 -> bf16 or bf16 -> f32, not " + std::string(dtype_name(inp.dtype())) + " -> " +
            std::string(dtype_name(out.dtype())));
  if (to_bf16)
    PB_RUN(op, float, convert, out.ptr<bf16>(), inp.ptr<float>(), inp.numel());
  else
    PB_RUN(op, float, convert, out.ptr<float>(), inp.ptr<bf16>(), inp.numel());
}

}  // namespace parbench::ops

// The workload of the op table (kernels/op_table.h), run by the kernel tests and bench_kernels: f32 -> bf16 -> f32,
// whatever the table's dtype.
namespace parbench::optable {

Work convert_f32_bf16_roundtrip_workload(OpCase& c, const OpShape& s) {
  std::int64_t n = std::int64_t(s.B) * s.T * s.C;
  Arg x = c.in(DType::f32, {n}), h = c.out(DType::bf16, {n}), back = c.out(DType::f32, {n});
  auto call = [=](int i, const Stream& st) mutable {
    if (x[i].dtype() == DType::f64) {  // a float64 side rounds each value through bf16 directly
      for (std::int64_t e = 0; e < n; ++e) {
        float v = float(load_as_double(x[i].data(), DType::f64, std::size_t(e)));
        store_from_double(back[i].data(), DType::f64, std::size_t(e), bf16_to_float(float_to_bf16(v)));
      }
      return;
    }
    ops::convert(h[i], x[i], st);
    ops::convert(back[i], h[i], st);
  };
  return Work{call, {back}, 0.0, 12.0 * n, 1e-30};
}

}  // namespace parbench::optable
