// The emulated cuBLAS: handles bound to the GPU current at cublasCreate, running on the handle's stream, and
// the GEMMs parbench calls with cuBLAS's column-major semantics and argument checks (CUBLAS_STATUS_INVALID_VALUE
// for a bad size or leading dimension). Each refusal also prints why, since cuBLAS statuses carry no message.
#include <cublas_v2.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#include "device/emu/emu.h"

struct cublasContext {
  std::uint32_t magic = 0x43424c53;  // "CBLS"
  int device = 0;
  cudaStream_t stream = nullptr;
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
  cublasPointerMode_t pointer_mode = CUBLAS_POINTER_MODE_HOST;
};

namespace {

using namespace parbench::gpu_emu;

cublasStatus_t refuse(cublasStatus_t st, const char* api, const std::string& why) {
  std::fprintf(stderr, "parbench-emu: %s: %s\n", api, why.c_str());
  return st;
}

bool live(cublasHandle_t h) { return h && h->magic == 0x43424c53; }

float bf16_to_float(std::uint16_t b) {
  const std::uint32_t bits = std::uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
std::uint16_t float_to_bf16(float f) {  // round to nearest even, NaN kept quiet
  std::uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if (std::isnan(f)) return std::uint16_t((bits >> 16) | 0x40);
  bits += 0x7fff + ((bits >> 16) & 1);
  return std::uint16_t(bits >> 16);
}
float to_tf32(float f) {  // the tensor cores' TF32 inputs: 10 mantissa bits, round to nearest
  std::uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if (!std::isfinite(f)) return f;
  bits += 0x1000;
  bits &= 0xffffe000u;
  std::memcpy(&f, &bits, 4);
  return f;
}

float load(const void* p, cudaDataType t, std::size_t i) {
  return t == CUDA_R_32F ? static_cast<const float*>(p)[i] : bf16_to_float(static_cast<const std::uint16_t*>(p)[i]);
}
void store(void* p, cudaDataType t, std::size_t i, float v) {
  if (t == CUDA_R_32F) static_cast<float*>(p)[i] = v;
  else static_cast<std::uint16_t*>(p)[i] = float_to_bf16(v);
}
std::size_t type_size(cudaDataType t) { return t == CUDA_R_32F ? 4 : 2; }

struct Gemm {
  cublasOperation_t ta, tb;
  int m, n, k;
  float alpha, beta;
  const void* A;
  const void* B;
  void* C;
  cudaDataType at, bt, ct;
  int lda, ldb, ldc;
  bool tf32;

  // C(i,j) = alpha sum_l op(A)(i,l) op(B)(l,j) + beta C(i,j), column-major; beta 0 ignores C's old value.
  void run() const {
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
        store(C, ct, c, v);
      }
  }
};

// Why a call may not run: a status and its reason, or success.
struct Refusal {
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
  std::string why;
  explicit operator bool() const { return status != CUBLAS_STATUS_SUCCESS; }
};

std::string max1(int v) { return std::to_string(std::max(1, v)); }

Refusal shape_problem(const Gemm& g) {
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

bool all_f32(const Gemm& g) { return g.at == CUDA_R_32F && g.bt == CUDA_R_32F && g.ct == CUDA_R_32F; }

Refusal type_problem(const Gemm& g, cublasComputeType_t compute) {
  const bool bf16 = g.at == CUDA_R_16BF && g.bt == CUDA_R_16BF && (g.ct == CUDA_R_16BF || g.ct == CUDA_R_32F);
  const bool compute32 = compute == CUBLAS_COMPUTE_32F || compute == CUBLAS_COMPUTE_32F_FAST_TF32 ||
                         compute == CUBLAS_COMPUTE_32F_PEDANTIC;
  if ((all_f32(g) || bf16) && compute32) return {};
  return {CUBLAS_STATUS_NOT_SUPPORTED, "emulated: fp32 or bf16 inputs with an fp32 compute type (A/B/C types " +
                                           std::to_string(g.at) + "/" + std::to_string(g.bt) + "/" +
                                           std::to_string(g.ct) + ", compute " + std::to_string(compute) + ")"};
}

Refusal handle_problem(cublasHandle_t h, const void* alpha, const void* beta) {
  if (!alpha || !beta) return {CUBLAS_STATUS_INVALID_VALUE, "alpha or beta is null"};
  if (h->pointer_mode != CUBLAS_POINTER_MODE_HOST)
    return {CUBLAS_STATUS_NOT_SUPPORTED, "emulated: alpha and beta in host memory only"};
  if (current_device() != h->device)
    return {CUBLAS_STATUS_EXECUTION_FAILED, "the handle was created on GPU " + std::to_string(h->device) +
                                                " but GPU " + std::to_string(current_device()) +
                                                " is current (one handle per GPU, used with that GPU current)"};
  return {};
}

// A, B (unless k is 0) and C must be device memory of the handle's GPU covering what the call reads and writes.
Refusal operand_problem(int device, const Gemm& g) {
  const std::size_t a_rows = g.ta == CUBLAS_OP_N ? g.m : g.k, b_rows = g.tb == CUBLAS_OP_N ? g.k : g.n;
  const std::size_t a_cols = g.ta == CUBLAS_OP_N ? g.k : g.m, b_cols = g.tb == CUBLAS_OP_N ? g.n : g.k;
  struct Arg {
    const char* name;
    const void* p;
    std::size_t bytes;
  } args[] = {{"A", g.A, (std::size_t(g.lda) * (a_cols - 1) + a_rows) * type_size(g.at)},
              {"B", g.B, (std::size_t(g.ldb) * (b_cols - 1) + b_rows) * type_size(g.bt)},
              {"C", g.C, (std::size_t(g.ldc) * (g.n - 1) + g.m) * type_size(g.ct)}};
  for (const Arg& x : args) {
    if (g.k == 0 && x.name[0] != 'C') continue;
    if (!x.p) return {CUBLAS_STATUS_INVALID_VALUE, std::string(x.name) + " is null"};
    if (std::string why = device_access_problem(device, x.p, x.bytes); !why.empty())
      return {CUBLAS_STATUS_EXECUTION_FAILED, std::string("matrix ") + x.name + " is " + why};
  }
  return {};
}

cublasStatus_t gemm(const char* api, const std::string& site, cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                    const void* alpha, const void* A, cudaDataType at, int lda, const void* B, cudaDataType bt, int ldb,
                    const void* beta, void* C, cudaDataType ct, int ldc, cublasComputeType_t compute) {
  count(Count::library_call);
  if (!live(h)) return refuse(CUBLAS_STATUS_NOT_INITIALIZED, api, "not a live cuBLAS handle");
  Gemm g{ta, tb, m, n, k, 0.f, 0.f, A, B, C, at, bt, ct, lda, ldb, ldc, false};
  Refusal r = shape_problem(g);
  if (!r) r = type_problem(g, compute);
  if (!r) r = handle_problem(h, alpha, beta);
  if (r) return refuse(r.status, api, r.why);
  if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
  g.alpha = *static_cast<const float*>(alpha);
  g.beta = *static_cast<const float*>(beta);
  if (Refusal bad = operand_problem(h->device, g)) return refuse(bad.status, api, bad.why);
  StreamState* s = work_stream(h->stream, api, site);
  if (!s || stream_device(s) != h->device)
    return refuse(CUBLAS_STATUS_EXECUTION_FAILED, api, "the handle's stream is not a live stream of its GPU");
  g.tf32 = compute == CUBLAS_COMPUTE_32F_FAST_TF32 ||
           (all_f32(g) && (h->math & CUBLAS_TF32_TENSOR_OP_MATH) && compute != CUBLAS_COMPUTE_32F_PEDANTIC);
  enqueue(s, std::string(api) + " " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k),
          kernel_work([g] { g.run(); }));
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

extern "C" {

cublasStatus_t cublasCreate_v2(cublasHandle_t* h) {
  if (!h) return refuse(CUBLAS_STATUS_INVALID_VALUE, "cublasCreate", "null handle pointer");
  *h = new cublasContext;  // deleted by cublasDestroy
  (*h)->device = current_device();
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy_v2(cublasHandle_t h) {
  if (!live(h)) return refuse(CUBLAS_STATUS_NOT_INITIALIZED, "cublasDestroy", "not a live cuBLAS handle");
  h->magic = 0;
  delete h;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream_v2(cublasHandle_t h, cudaStream_t s) {
  if (!live(h)) return refuse(CUBLAS_STATUS_NOT_INITIALIZED, "cublasSetStream", "not a live cuBLAS handle");
  if (!resolve_stream(s)) return refuse(CUBLAS_STATUS_INVALID_VALUE, "cublasSetStream", "not a live stream");
  h->stream = s;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGetStream_v2(cublasHandle_t h, cudaStream_t* s) {
  if (!live(h) || !s) return CUBLAS_STATUS_NOT_INITIALIZED;
  *s = h->stream;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t mode) {
  if (!live(h)) return refuse(CUBLAS_STATUS_NOT_INITIALIZED, "cublasSetMathMode", "not a live cuBLAS handle");
  h->math = mode;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGetMathMode(cublasHandle_t h, cublasMath_t* mode) {
  if (!live(h) || !mode) return CUBLAS_STATUS_NOT_INITIALIZED;
  *mode = h->math;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t h, cublasPointerMode_t mode) {
  if (!live(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
  h->pointer_mode = mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                            const void* alpha, const void* A, cudaDataType at, int lda, const void* B, cudaDataType bt,
                            int ldb, const void* beta, void* C, cudaDataType ct, int ldc,
                            cublasComputeType_t compute, cublasGemmAlgo_t) {
  return gemm("cublasGemmEx", PB_EMU_SITE(), h, ta, tb, m, n, k, alpha, A, at, lda, B, bt, ldb, beta, C, ct, ldc, compute);
}

cublasStatus_t cublasSgemm_v2(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                              const float* alpha, const float* A, int lda, const float* B, int ldb, const float* beta,
                              float* C, int ldc) {
  return gemm("cublasSgemm", PB_EMU_SITE(), h, ta, tb, m, n, k, alpha, A, CUDA_R_32F, lda, B, CUDA_R_32F, ldb, beta, C, CUDA_R_32F,
              ldc, CUBLAS_COMPUTE_32F);
}

}  // extern "C"
