// The vendor baseline for matmul_forward on cuda: cublasGemmEx at fp32 compute (fp32 or bf16 inputs),
// then the bias added by our add_bias kernel. Built only with CUDA.
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

template void matmul_forward_cublas<float>(float*, const float*, const float*, const float*, int, int, int, void*);
template void matmul_forward_cublas<bf16>(bf16*, const bf16*, const bf16*, const bf16*, int, int, int, void*);

}  // namespace parbench::cuda_kernels
