// The emulated cuBLAS: handles bound to the GPU current at cublasCreate, running on the handle's stream, and
// the GEMMs parbench calls with cuBLAS's column-major semantics and argument checks (CUBLAS_STATUS_INVALID_VALUE
// for a bad size or leading dimension; gemm_ref.h). Each refusal also prints why, since cuBLAS statuses carry no
// message.
#include <cublas_v2.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#include "device/emu/emu.h"
#include "device/emu/gemm_ref.h"

struct cublasContext {
  std::uint32_t magic = 0x43424c53;  // "CBLS"
  int device = 0;
  cudaStream_t stream = nullptr;
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
  cublasPointerMode_t pointer_mode = CUBLAS_POINTER_MODE_HOST;
};

namespace {

using namespace parbench::gpu_emu;

bool live(cublasHandle_t h) { return h && h->magic == 0x43424c53; }

cublasStatus_t gemm(const char* api, const std::string& site, cublasHandle_t h, cublasOperation_t ta,
                    cublasOperation_t tb, int m, int n, int k, const void* alpha, const void* A, cudaDataType at,
                    int lda, const void* B, cudaDataType bt, int ldb, const void* beta, void* C, cudaDataType ct,
                    int ldc, cublasComputeType_t compute) {
  count(Count::library_call);
  if (!live(h)) return gemm_refuse(CUBLAS_STATUS_NOT_INITIALIZED, api, "not a live cuBLAS handle");
  EmuGemm g{ta, tb, m, n, k, 0.f, 0.f, A, B, C, at, bt, ct, lda, ldb, ldc};
  GemmRefusal r = gemm_shape_problem(g);
  if (!r) r = gemm_type_problem(g, compute);
  if (!r && h->pointer_mode != CUBLAS_POINTER_MODE_HOST)
    r = {CUBLAS_STATUS_NOT_SUPPORTED, "emulated: alpha and beta in host memory only"};
  if (r) return gemm_refuse(r.status, api, r.why);
  g.tf32 = compute == CUBLAS_COMPUTE_32F_FAST_TF32 ||
           (gemm_all_f32(g) && (h->math & CUBLAS_TF32_TENSOR_OP_MATH) && compute != CUBLAS_COMPUTE_32F_PEDANTIC);
  return gemm_submit(api, site, h->device, h->stream, g, alpha, beta);
}

}  // namespace

extern "C" {

cublasStatus_t cublasCreate_v2(cublasHandle_t* h) {
  if (!h) return gemm_refuse(CUBLAS_STATUS_INVALID_VALUE, "cublasCreate", "null handle pointer");
  *h = new cublasContext;  // deleted by cublasDestroy
  (*h)->device = current_device();
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy_v2(cublasHandle_t h) {
  if (!live(h)) return gemm_refuse(CUBLAS_STATUS_NOT_INITIALIZED, "cublasDestroy", "not a live cuBLAS handle");
  h->magic = 0;
  delete h;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream_v2(cublasHandle_t h, cudaStream_t s) {
  if (!live(h)) return gemm_refuse(CUBLAS_STATUS_NOT_INITIALIZED, "cublasSetStream", "not a live cuBLAS handle");
  if (!resolve_stream(s)) return gemm_refuse(CUBLAS_STATUS_INVALID_VALUE, "cublasSetStream", "not a live stream");
  h->stream = s;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGetStream_v2(cublasHandle_t h, cudaStream_t* s) {
  if (!live(h) || !s) return CUBLAS_STATUS_NOT_INITIALIZED;
  *s = h->stream;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t mode) {
  if (!live(h)) return gemm_refuse(CUBLAS_STATUS_NOT_INITIALIZED, "cublasSetMathMode", "not a live cuBLAS handle");
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
