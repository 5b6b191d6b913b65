// The vendor baseline for matmul_forward on cuda: cublasGemmEx at fp32 compute (fp32 or bf16 inputs),
// then the bias added by our add_bias kernel; and for the input and weight gradients of matmul_backward, the two
// GEMMs as a framework's linear layer calls them. Built only with CUDA.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <mutex>
#include <string>

#include "base/dtype.h"
#include "base/error.h"

namespace parbench::cuda_kernels {

// matmul.cu's epilogue: out (BT,OC) += bias.
template <class T>
void add_bias(T* out, const T* bias, int BT, int OC, void* stream);

namespace {

void cublas_check(cublasStatus_t st, const char* what) {
  if (st != CUBLAS_STATUS_SUCCESS) throw Error(std::string(what) + " failed with cuBLAS status " + std::to_string(int(st)));
}

// One handle per process and device-0 context: the process-wide runtime context the design allows.
cublasHandle_t handle() {
  static cublasHandle_t h = [] {
    cublasHandle_t x = nullptr;
    cublas_check(cublasCreate(&x), "cublasCreate");
    return x;
  }();
  return h;
}
std::mutex& handle_mutex() {
  static std::mutex m;
  return m;
}

}  // namespace

template <class T>
void matmul_forward_cublas(T* out, const T* inp, const T* weight, const T* bias, int BT, int C, int OC, void* stream) {
  if (BT == 0 || OC == 0) return;
  cudaDataType_t type = sizeof(T) == 2 ? CUDA_R_16BF : CUDA_R_32F;
  const float alpha = 1.f, beta = 0.f;
  {
    std::lock_guard lock(handle_mutex());
    cublas_check(cublasSetStream(handle(), static_cast<cudaStream_t>(stream)), "cublasSetStream");
    // Row-major out (BT,OC) is column-major out^T (OC,BT) = weight (OC,C) inp^T (C,BT); in column-major
    // terms weight is a (C,OC) matrix used transposed and inp a (C,BT) matrix used as is.
    cublas_check(cublasGemmEx(handle(), CUBLAS_OP_T, CUBLAS_OP_N, OC, BT, C, &alpha, weight, type, C, inp, type, C,
                              &beta, out, type, OC, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx");
  }
  if (bias) add_bias(out, bias, BT, OC, stream);
}

// Row-major X (rows, cols) is column-major X^T (cols, rows): each gradient below is written as the column-major
// product cuBLAS computes.
template <class T>
void matmul_backward_cublas(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight, int BT, int C, int OC,
                            bool accumulate, void* stream) {
  if (C == 0) return;
  cudaDataType_t type = sizeof(T) == 2 ? CUDA_R_16BF : CUDA_R_32F;
  const float alpha = 1.f, beta = accumulate ? 1.f : 0.f;
  std::lock_guard lock(handle_mutex());
  cublas_check(cublasSetStream(handle(), static_cast<cudaStream_t>(stream)), "cublasSetStream");
  // dinp (BT, C) = dout (BT, OC) weight (OC, C): column-major dinp^T (C, BT) = weight^T (C, OC) dout^T (OC, BT),
  // both operands as stored.
  if (dinp && BT > 0 && OC > 0)
    cublas_check(cublasGemmEx(handle(), CUBLAS_OP_N, CUBLAS_OP_N, C, BT, OC, &alpha, weight, type, C, dout, type, OC,
                              &beta, dinp, type, C, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx (input gradient)");
  // dweight (OC, C) = dout^T (OC, BT) inp (BT, C): column-major dweight^T (C, OC) = inp^T (C, BT) dout (BT, OC),
  // dout^T (OC, BT) as stored and used transposed.
  if (dweight && OC > 0 && BT > 0)
    cublas_check(cublasGemmEx(handle(), CUBLAS_OP_N, CUBLAS_OP_T, C, OC, BT, &alpha, inp, type, C, dout, type, OC,
                              &beta, dweight, type, C, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx (weight gradient)");
}

template void matmul_forward_cublas<float>(float*, const float*, const float*, const float*, int, int, int, void*);
template void matmul_forward_cublas<bf16>(bf16*, const bf16*, const bf16*, const bf16*, int, int, int, void*);
template void matmul_backward_cublas<float>(float*, float*, const float*, const float*, const float*, int, int, int,
                                            bool, void*);
template void matmul_backward_cublas<bf16>(bf16*, bf16*, const bf16*, const bf16*, const bf16*, int, int, int, bool,
                                           void*);

}  // namespace parbench::cuda_kernels
