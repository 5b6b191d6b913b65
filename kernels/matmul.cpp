// Matmul with bias, out = inp weight^T + bias, and its backward: the host half of matmul.cu (reference, checks
// and dispatch, and the cuBLAS baseline on cuda).
#include <algorithm>
#include <array>
#include <optional>
#include <type_traits>

#include "kernels/column_partials.h"
#include "kernels/dispatch.h"
#include "kernels/op_table.h"
#include "kernels/ops.h"

PB_OP_SIGNATURES(
// out (BT,OC) = inp (BT,C) weight^T (OC,C) + bias (OC); bias may be null. `version` picks the kernel (the numbers
// of ops::MatmulAlgo, 0 for the default); the reference ignores it.
template <class T>
void matmul_forward(T* out, const T* inp, const T* weight, const T* bias, int BT, int C, int OC, int version,
                    void* stream);
// dinp (BT,C), dweight (OC,C), dbias (OC): each may be null; `accumulate` adds to them instead of overwriting.
// `version` 5 runs dinp and dweight on the version-5 kernel, 0 on the default (5 for bf16 on cuda, else 2), any
// other on version 2; the reference ignores it. The kernels' dbias column sums use `scratch`,
// column_partials_numel(BT, OC, 1) floats (the reference ignores it).
template <class T>
void matmul_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight, float* scratch, int BT,
                     int C, int OC, bool accumulate, int version, void* stream);
)

#if defined(PARBENCH_HAVE_CUDA)
namespace parbench::cuda_kernels {
// The vendor baseline (matmul_cublas.cpp): cuBLAS GEMM at fp32 compute (bf16 inputs for bf16), then add_bias.
template <class T>
void matmul_forward_cublas(T* out, const T* inp, const T* weight, const T* bias, int BT, int C, int OC, void* stream);
// The fused one (matmul_cublaslt.cpp): one cublasLtMatmul whose epilogue adds the bias, then GELU if asked.
template <class T>
void matmul_forward_cublaslt(T* out, const T* inp, const T* weight, const T* bias, int BT, int C, int OC, bool gelu,
                             void* stream);
// The backward's input and weight gradients as two cuBLAS GEMMs (matmul_cublas.cpp); either may be null.
template <class T>
void matmul_backward_cublas(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight, int BT, int C, int OC,
                            bool accumulate, void* stream);
}  // namespace parbench::cuda_kernels
#endif

namespace parbench::ref {

template <class T>
void matmul_forward(T* out, const T* inp, const T* weight, const T* bias, int BT, int C, int OC, int, void*) {
  using A = acc_t<T>;
  for (int m = 0; m < BT; ++m)
    for (int o = 0; o < OC; ++o) {
      A sum = bias ? load(bias[o]) : A(0);
      for (int c = 0; c < C; ++c) sum += load(inp[std::int64_t(m) * C + c]) * load(weight[std::int64_t(o) * C + c]);
      out[std::int64_t(m) * OC + o] = store<T>(sum);
    }
}

template <class T>
void matmul_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight, float*, int BT, int C,
                     int OC, bool accumulate, int, void*) {
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

}  // namespace parbench::ref

namespace parbench::ops {

using namespace detail;  // Op, OpScratch, Acc and the other helpers of kernels/dispatch.h

std::string_view matmul_algo_name(MatmulAlgo a) {
  switch (a) {
    case MatmulAlgo::automatic: return "auto";
    case MatmulAlgo::naive: return "v1_naive";
    case MatmulAlgo::tiled: return "v2_smem_tiled";
    case MatmulAlgo::regtile: return "v3_regtile_vec16";
    case MatmulAlgo::wmma: return "v4_wmma_bf16";
    case MatmulAlgo::mma: return "v5_mma_cp_async";
    case MatmulAlgo::cublas: return "cublas";
    case MatmulAlgo::cublaslt: return "cublaslt";
  }
  return "?";
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

static bool is_vendor(MatmulAlgo a) { return a == MatmulAlgo::cublas || a == MatmulAlgo::cublaslt; }
static void check_vendor_algo(const Op& op, MatmulAlgo algo, const Stream& s) {
  if (is_vendor(algo) && s.device().kind != DeviceKind::cuda)
    op.fail("the " + std::string(matmul_algo_name(algo)) + " algorithm needs the cuda device, not " +
            device_name(s.device()));
}

void matmul_forward(Tensor& out, const Tensor& inp, const Tensor& weight, const Tensor* bias, const Stream& s,
                    MatmulAlgo algo) {
  Op op{"matmul_forward", s};
  DType d = op.storage(out, "out");
  const auto dims = check_matmul(op, d, inp, weight, out, "out");
  const int BT = dims[0], C = dims[1], OC = dims[2];
  op.optional(bias, "bias", d, OC);
  check_vendor_algo(op, algo, s);
  with_storage(d, [&]<class T>() {
#if defined(PARBENCH_HAVE_CUDA)
    if constexpr (!std::is_same_v<T, double>) {
      if (algo == MatmulAlgo::cublas) {
        count_launch();
        return cuda_kernels::matmul_forward_cublas(out.ptr<T>(), inp.ptr<T>(), weight.ptr<T>(), ptr_or_null<T>(bias),
                                                   BT, C, OC, s.native());
      }
      if (algo == MatmulAlgo::cublaslt) {
        count_launch();
        return cuda_kernels::matmul_forward_cublaslt(out.ptr<T>(), inp.ptr<T>(), weight.ptr<T>(),
                                                     ptr_or_null<T>(bias), BT, C, OC, false, s.native());
      }
    }
#endif
    int version = is_vendor(algo) ? 0 : int(algo);
    PB_RUN(op, T, matmul_forward, out.ptr<T>(), inp.ptr<T>(), weight.ptr<T>(), ptr_or_null<T>(bias), BT, C, OC,
           version);
  });
}

void matmul_bias_gelu_forward(Tensor& out, Tensor& pre, const Tensor& inp, const Tensor& weight, const Tensor& bias,
                              const Stream& s, MatmulAlgo algo) {
  if (algo != MatmulAlgo::cublaslt) {
    matmul_forward(pre, inp, weight, &bias, s, algo);
    return gelu_forward(out, pre, s);
  }
  Op op{"matmul_bias_gelu_forward", s};
  DType d = op.storage(out, "out");
  const auto dims = check_matmul(op, d, inp, weight, out, "out");
  op.optional(&bias, "bias", d, dims[2]);
  check_vendor_algo(op, algo, s);
#if defined(PARBENCH_HAVE_CUDA)
  with_storage(d, [&]<class T>() {
    if constexpr (!std::is_same_v<T, double>) {
      count_launch();
      cuda_kernels::matmul_forward_cublaslt(out.ptr<T>(), inp.ptr<T>(), weight.ptr<T>(), bias.ptr<T>(), dims[0],
                                            dims[1], dims[2], true, s.native());
    }
  });
#endif
}

void matmul_backward(Tensor* dinp, Tensor* dweight, Tensor* dbias, const Tensor& dout, const Tensor& inp,
                     const Tensor& weight, bool accumulate, const Stream& s, MatmulAlgo algo) {
  Op op{"matmul_backward", s};
  DType d = op.storage(dout, "dout");
  const auto dims = check_matmul(op, d, inp, weight, dout, "dout");
  const int BT = dims[0], C = dims[1], OC = dims[2];
  op.optional(dinp, "dinp", d, inp.numel());
  op.optional(dweight, "dweight", d, weight.numel());
  op.optional(dbias, "dbias", d, OC);
  check_vendor_algo(op, algo, s);
  if (algo == MatmulAlgo::cublaslt) op.fail("the cublaslt algorithm has no backward; accepted: cublas or our kernels");
  OpScratch scratch(s, dbias ? column_partials_numel(BT, OC, 1) : 0);
  bool vendor_gemms = false;
#if defined(PARBENCH_HAVE_CUDA)
  if (algo == MatmulAlgo::cublas)
    with_storage(d, [&]<class T>() {
      if constexpr (!std::is_same_v<T, double>) {
        count_launch();
        cuda_kernels::matmul_backward_cublas(ptr_or_null<T>(dinp), ptr_or_null<T>(dweight), dout.ptr<T>(),
                                             inp.ptr<T>(), weight.ptr<T>(), BT, C, OC, accumulate, s.native());
        vendor_gemms = true;
      }
    });
#endif
  // Our kernels: every gradient asked for, or after cuBLAS's GEMMs the bias's column sum alone.
  if (vendor_gemms && !dbias) return;
  PB_DISPATCH(op, d, matmul_backward, vendor_gemms ? nullptr : ptr_or_null<T>(dinp),
              vendor_gemms ? nullptr : ptr_or_null<T>(dweight), ptr_or_null<T>(dbias), dout.ptr<T>(), inp.ptr<T>(),
              weight.ptr<T>(), scratch.data(), BT, C, OC, accumulate,
              algo == MatmulAlgo::mma ? 5 : algo == MatmulAlgo::automatic ? 0 : 2);
}

}  // namespace parbench::ops

// The workloads of the op table (kernels/op_table.h), run by the kernel tests and bench_kernels.
namespace parbench::optable {

// A linear layer (BT, C) -> (BT, OC): its forward (with a bias or without, the GEMM alone) with the version c.algo()
// on the kernels' sides (the cpu runs the reference whatever the version), or its backward: all of it (input, weight
// and bias gradients), the input gradient alone (a chain of k = OC per element) or the weight gradient alone
// (k = BT), with c.algo() as ops::matmul_backward takes it (cublas: the vendor's GEMMs).
Work linear_workload(OpCase& c, int BT, int C, int OC, LinearPart part, bool with_bias) {
  DType t = c.dtype();
  const double e = elem_bytes(t);
  Arg inp = c.in(t, {BT, C}), w = c.in(t, {OC, C}, -0.2, 0.2);
  if (part == LinearPart::forward) {
    ops::MatmulAlgo algo = c.algo();
    Arg out = c.out(t, {BT, OC});
    std::optional<Arg> bias;
    if (with_bias) bias = c.in(t, {OC});
    Work wk{[=](int i, const Stream& st) mutable {
              bool cpu = st.device().kind == DeviceKind::cpu;
              ops::matmul_forward(out[i], inp[i], w[i], bias ? &(*bias)[i] : nullptr, st,
                                  cpu ? ops::MatmulAlgo::automatic : algo);
            },
            {out},
            2.0 * BT * C * OC,
            (double(BT) * C + double(OC) * C + double(BT) * OC + (with_bias ? OC : 0)) * e};
    // The tensor-core versions round fp32 inputs to bf16.
    if ((algo == ops::MatmulAlgo::wmma || algo == ops::MatmulAlgo::mma) && t == DType::f32) wk.tol = 2e-2;
    wk.args = {{"inp", inp}, {"weight", w}, {"out", out}};
    if (bias) wk.args.push_back({"bias", *bias});
    return wk;
  }
  const bool input = part != LinearPart::weight_gradient, weight = part != LinearPart::input_gradient;
  const bool bias = part == LinearPart::backward;
  Arg dout = c.in(t, {BT, OC}, -0.2, 0.2);
  std::vector<Arg> outs;
  std::vector<NamedArg> named{{"inp", inp}, {"weight", w}, {"dout", dout}};
  Arg dinp, dw, db;
  if (input) outs.push_back(dinp = c.out(t, {BT, C})), named.push_back({"dinp", dinp});
  if (weight) outs.push_back(dw = c.out(t, {OC, C})), named.push_back({"dweight", dw});
  if (bias) outs.push_back(db = c.out(t, {OC})), named.push_back({"dbias", db});
  const ops::MatmulAlgo algo = c.algo();
  auto call = [=](int i, const Stream& st) mutable {
    bool cpu = st.device().kind == DeviceKind::cpu;
    ops::matmul_backward(input ? &dinp[i] : nullptr, weight ? &dw[i] : nullptr, bias ? &db[i] : nullptr, dout[i],
                         inp[i], w[i], false, st, cpu ? ops::MatmulAlgo::automatic : algo);
  };
  // Bytes: dout read by each part, the weight (input gradient) or the input (weight gradient) read, the result
  // written.
  double flops = 0, bytes = double(BT) * OC * e;
  if (input) flops += 2.0 * BT * C * OC, bytes += (double(OC) * C + double(BT) * C) * e;
  if (weight) flops += 2.0 * BT * C * OC, bytes += (double(BT) * C + double(OC) * C) * e;
  if (bias) flops += double(BT) * OC, bytes += OC * e;
  return Work{call, outs, flops, bytes}.named(std::move(named));
}

// The model's matmuls, (BT, C * in_mult) -> (BT, C * out_mult).
static Work matmul_forward_workload(OpCase& c, const OpShape& s, int in_mult, int out_mult) {
  return linear_workload(c, s.B * s.T, s.C * in_mult, s.C * out_mult, LinearPart::forward);
}

Work matmul_forward_qkv_workload(OpCase& c, const OpShape& s) { return matmul_forward_workload(c, s, 1, 3); }
Work matmul_forward_fc_workload(OpCase& c, const OpShape& s) { return matmul_forward_workload(c, s, 1, 4); }
Work matmul_forward_fcproj_workload(OpCase& c, const OpShape& s) { return matmul_forward_workload(c, s, 4, 1); }

// The model's fc with its GELU, (BT, C) -> (BT, 4C): cuBLASLt fuses both into its epilogue; the other versions
// run the matmul (bias in its epilogue) and gelu_forward.
Work matmul_forward_fc_gelu_workload(OpCase& c, const OpShape& s) {
  int BT = s.B * s.T, C = s.C, OC = 4 * s.C;
  DType t = c.dtype();
  ops::MatmulAlgo algo = c.algo();
  Arg inp = c.in(t, {BT, C}), w = c.in(t, {OC, C}, -0.2, 0.2), bias = c.in(t, {OC});
  Arg pre = c.out(t, {BT, OC}), out = c.out(t, {BT, OC});
  Work wk{[=](int i, const Stream& st) mutable {
            bool cpu = st.device().kind == DeviceKind::cpu;
            ops::matmul_bias_gelu_forward(out[i], pre[i], inp[i], w[i], bias[i], st,
                                          cpu ? ops::MatmulAlgo::automatic : algo);
          },
          {out},
          2.0 * BT * C * OC + 8.0 * BT * OC,  // GELU's tanh form: about 8 FLOPs an element
          (double(BT) * C + double(OC) * C + double(BT) * OC + OC) * elem_bytes(t)};
  if ((algo == ops::MatmulAlgo::wmma || algo == ops::MatmulAlgo::mma) && t == DType::f32) wk.tol = 2e-2;
  return wk;
}

// The fc's backward, (BT, C) -> (BT, 4C): all of it, or its input or weight gradient alone (the predictor's
// calibration times them apart).
Work matmul_backward_fc_workload(OpCase& c, const OpShape& s) {
  return linear_workload(c, s.B * s.T, s.C, 4 * s.C, LinearPart::backward);
}
Work matmul_backward_input_fc_workload(OpCase& c, const OpShape& s) {
  return linear_workload(c, s.B * s.T, s.C, 4 * s.C, LinearPart::input_gradient);
}
Work matmul_backward_weight_fc_workload(OpCase& c, const OpShape& s) {
  return linear_workload(c, s.B * s.T, s.C, 4 * s.C, LinearPart::weight_gradient);
}

}  // namespace parbench::optable
