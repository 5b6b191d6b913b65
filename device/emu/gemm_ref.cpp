// The emulated GPU's GEMM (gemm_ref.h): the reference loop with its epilogue, the argument checks and the queueing.
#include "device/emu/gemm_ref.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "base/float16.h"
#include "device/emu/emu.h"

namespace parbench::gpu_emu {

namespace {

float to_tf32(float f) {  // the tensor cores' TF32 inputs: 10 mantissa bits, round to nearest
  std::uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if (!std::isfinite(f)) return f;
  bits += 0x1000;
  bits &= 0xffffe000u;
  std::memcpy(&f, &bits, 4);
  return f;
}
float gelu_tanh(float x) {
  const float k = 0.7978845608028654f;  // sqrt(2 / pi)
  return 0.5f * x * (1.f + std::tanh(k * (x + 0.044715f * x * x * x)));
}

float load(const void* p, cudaDataType t, std::size_t i) {
  if (t == CUDA_R_32F) return static_cast<const float*>(p)[i];
  return float16::bf16_bits_to_float(static_cast<const std::uint16_t*>(p)[i]);
}
void store(void* p, cudaDataType t, std::size_t i, float v) {
  if (t == CUDA_R_32F) static_cast<float*>(p)[i] = v;
  else static_cast<std::uint16_t*>(p)[i] = float16::float_to_bf16_bits(v);
}
std::size_t type_size(cudaDataType t) { return t == CUDA_R_32F ? 4 : 2; }
std::string max1(int v) { return std::to_string(std::max(1, v)); }

}  // namespace

// C(i,j) = epilogue(alpha sum_l op(A)(i,l) op(B)(l,j) + beta C(i,j)), column-major; beta 0 ignores C's old value.
void EmuGemm::run() const {
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      double acc = 0;
      for (int l = 0; l < k; ++l) {
        float a = load(A, at, ta == CUBLAS_OP_N ? std::size_t(l) * lda + i : std::size_t(i) * lda + l);
        float b = load(B, bt, tb == CUBLAS_OP_N ? std::size_t(j) * ldb + l : std::size_t(l) * ldb + j);
        if (tf32) a = to_tf32(a), b = to_tf32(b);
        acc += double(a) * double(b);
      }
      const std::size_t c = std::size_t(j) * ldc + i;
      float v = alpha * float(acc);
      if (beta != 0.f) v += beta * load(C, ct, c);
      if (bias) v += load(bias, bias_t, std::size_t(i));
      if (gelu) v = gelu_tanh(v);
      store(C, ct, c, v);
    }
}

cublasStatus_t gemm_refuse(cublasStatus_t st, const char* api, const std::string& why) {
  std::fprintf(stderr, "parbench-emu: %s: %s\n", api, why.c_str());
  return st;
}

GemmRefusal gemm_shape_problem(const EmuGemm& g) {
  auto is_op = [](cublasOperation_t o) { return o == CUBLAS_OP_N || o == CUBLAS_OP_T; };
  if (!is_op(g.ta) || !is_op(g.tb)) return {CUBLAS_STATUS_INVALID_VALUE, "op must be CUBLAS_OP_N or CUBLAS_OP_T"};
  if (g.m < 0 || g.n < 0 || g.k < 0)
    return {CUBLAS_STATUS_INVALID_VALUE, "m, n, k = " + std::to_string(g.m) + ", " + std::to_string(g.n) + ", " +
                                             std::to_string(g.k) + ": none may be negative"};
  const int a_rows = g.ta == CUBLAS_OP_N ? g.m : g.k, b_rows = g.tb == CUBLAS_OP_N ? g.k : g.n;
  if (g.lda < std::max(1, a_rows) || g.ldb < std::max(1, b_rows) || g.ldc < std::max(1, g.m))
    return {CUBLAS_STATUS_INVALID_VALUE, "leading dimensions lda " + std::to_string(g.lda) + " (needs >= " +
                                             max1(a_rows) + "), ldb " + std::to_string(g.ldb) + " (>= " +
                                             max1(b_rows) + "), ldc " + std::to_string(g.ldc) + " (>= " + max1(g.m) +
                                             ")"};
  return {};
}

bool gemm_all_f32(const EmuGemm& g) { return g.at == CUDA_R_32F && g.bt == CUDA_R_32F && g.ct == CUDA_R_32F; }

GemmRefusal gemm_type_problem(const EmuGemm& g, cublasComputeType_t compute) {
  const bool bf16 = g.at == CUDA_R_16BF && g.bt == CUDA_R_16BF && (g.ct == CUDA_R_16BF || g.ct == CUDA_R_32F);
  const bool compute32 = compute == CUBLAS_COMPUTE_32F || compute == CUBLAS_COMPUTE_32F_FAST_TF32 ||
                         compute == CUBLAS_COMPUTE_32F_PEDANTIC;
  const bool bias_ok = !g.bias || g.bias_t == CUDA_R_32F || g.bias_t == CUDA_R_16BF;
  if ((gemm_all_f32(g) || bf16) && compute32 && bias_ok) return {};
  return {CUBLAS_STATUS_NOT_SUPPORTED, "emulated: fp32 or bf16 inputs with an fp32 compute type (A/B/C types " +
                                           std::to_string(g.at) + "/" + std::to_string(g.bt) + "/" +
                                           std::to_string(g.ct) + ", bias " + std::to_string(g.bias_t) +
                                           ", compute " + std::to_string(compute) + ")"};
}

namespace {

struct GemmArg {
  const char* name;
  const void* p;
  std::size_t bytes;
  std::string role() const { return name[0] == 'b' ? std::string("the bias") : std::string("matrix ") + name; }
};
// The bytes of A, B, C and the bias a GEMM touches (column-major with leading dimensions, as cuBLAS lays them).
std::array<GemmArg, 4> gemm_args(const EmuGemm& g) {
  const std::size_t a_rows = g.ta == CUBLAS_OP_N ? g.m : g.k, b_rows = g.tb == CUBLAS_OP_N ? g.k : g.n;
  const std::size_t a_cols = g.ta == CUBLAS_OP_N ? g.k : g.m, b_cols = g.tb == CUBLAS_OP_N ? g.n : g.k;
  return {{{"A", g.A, (std::size_t(g.lda) * (a_cols - 1) + a_rows) * type_size(g.at)},
           {"B", g.B, (std::size_t(g.ldb) * (b_cols - 1) + b_rows) * type_size(g.bt)},
           {"C", g.C, (std::size_t(g.ldc) * (g.n - 1) + g.m) * type_size(g.ct)},
           {"bias", g.bias, std::size_t(g.m) * type_size(g.bias_t)}}};
}

// For the hazard checker: A, B and the bias read (none when k is 0), C read and written.
std::vector<MemAccess> gemm_accesses(const EmuGemm& g) {
  std::vector<MemAccess> out;
  for (const GemmArg& x : gemm_args(g)) {
    if (!x.p || (g.k == 0 && (x.name[0] == 'A' || x.name[0] == 'B'))) continue;
    out.push_back({x.p, x.bytes, x.name[0] == 'C', x.role()});
  }
  return out;
}

}  // namespace

GemmRefusal gemm_operand_problem(int device, const EmuGemm& g) {
  for (const GemmArg& x : gemm_args(g)) {
    if (g.k == 0 && (x.name[0] == 'A' || x.name[0] == 'B')) continue;
    if (!x.p && x.name[0] == 'b') continue;  // no bias: none read
    if (!x.p) return {CUBLAS_STATUS_INVALID_VALUE, std::string(x.name) + " is null"};
    if (std::string why = device_access_problem(device, x.p, x.bytes); !why.empty())
      return {CUBLAS_STATUS_EXECUTION_FAILED, x.role() + " is " + why};
  }
  return {};
}

cublasStatus_t gemm_submit(const char* api, const std::string& site, int device, cudaStream_t stream, EmuGemm g,
                           const void* alpha, const void* beta) {
  if (!alpha || !beta) return gemm_refuse(CUBLAS_STATUS_INVALID_VALUE, api, "alpha or beta is null");
  if (current_device() != device)
    return gemm_refuse(CUBLAS_STATUS_EXECUTION_FAILED, api,
                       "the handle was created on GPU " + std::to_string(device) + " but GPU " +
                           std::to_string(current_device()) +
                           " is current (one handle per GPU, used with that GPU current)");
  if (g.m == 0 || g.n == 0) return CUBLAS_STATUS_SUCCESS;
  g.alpha = *static_cast<const float*>(alpha);
  g.beta = *static_cast<const float*>(beta);
  if (GemmRefusal bad = gemm_operand_problem(device, g)) return gemm_refuse(bad.status, api, bad.why);
  StreamState* s = work_stream(stream, api, site);
  if (!s || stream_device(s) != device)
    return gemm_refuse(CUBLAS_STATUS_EXECUTION_FAILED, api, "the handle's stream is not a live stream of its GPU");
  enqueue(s, std::string(api) + " " + std::to_string(g.m) + "x" + std::to_string(g.n) + "x" + std::to_string(g.k),
          kernel_work([g] { g.run(); }), {}, gemm_accesses(g), site);
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace parbench::gpu_emu
