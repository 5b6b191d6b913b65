// The emulated GPU's GEMM, shared by its cuBLAS and cuBLASLt: column-major C = alpha op(A) op(B) + beta C with an
// optional epilogue (bias per row of C, then GELU), fp32 or bf16 storage at fp32 compute (TF32 rounding where
// asked), the argument checks both libraries make, and the queueing on a stream of the GPU.
#pragma once
#include <cublas_v2.h>

#include <string>

namespace parbench::gpu_emu {

struct EmuGemm {
  cublasOperation_t ta, tb;
  int m, n, k;
  float alpha, beta;
  const void* A;
  const void* B;
  void* C;
  cudaDataType at, bt, ct;
  int lda, ldb, ldc;
  bool tf32 = false;
  const void* bias = nullptr;  // m elements of type bias_t, added to every column before GELU
  cudaDataType bias_t = CUDA_R_32F;
  bool gelu = false;  // the tanh form, on the fp32 value before the store

  void run() const;
};

// Why a call may not run: a status and its reason, or success.
struct GemmRefusal {
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
  std::string why;
  explicit operator bool() const { return status != CUBLAS_STATUS_SUCCESS; }
};

// Prints "parbench-emu: API: why" (cuBLAS statuses carry no message) and returns the status.
cublasStatus_t gemm_refuse(cublasStatus_t st, const char* api, const std::string& why);
GemmRefusal gemm_shape_problem(const EmuGemm& g);
GemmRefusal gemm_type_problem(const EmuGemm& g, cublasComputeType_t compute);
bool gemm_all_f32(const EmuGemm& g);
// A, B (unless k is 0), C and the bias must be device memory of `device` covering what the call reads and writes.
GemmRefusal gemm_operand_problem(int device, const EmuGemm& g);
// What both libraries do with a GEMM whose sizes and types passed: alpha and beta must be non-null (host) scalars
// and the handle's GPU `device` current; an empty product ends there; then the operands are checked and g.run(),
// with alpha and beta read, is queued on `stream` (a live stream of `device`), named after the API and sizes.
// Each refusal prints why (gemm_refuse) and returns its status.
cublasStatus_t gemm_submit(const char* api, const std::string& site, int device, cudaStream_t stream, EmuGemm g,
                           const void* alpha, const void* beta);

}  // namespace parbench::gpu_emu
