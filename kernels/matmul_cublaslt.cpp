// The fused vendor baseline for matmul_forward on cuda: one cublasLtMatmul at fp32 compute (fp32 or bf16 inputs)
// whose epilogue adds the bias (CUBLASLT_EPILOGUE_BIAS) and, for the fused fc + GELU, applies GELU after it
// (CUBLASLT_EPILOGUE_GELU_BIAS): the same one-pass work as our kernels' fused bias epilogue. Built only with CUDA.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "base/dtype.h"
#include "base/error.h"

namespace parbench::cuda_kernels {

namespace {

void lt_check(cublasStatus_t st, const char* what) {
  if (st != CUBLAS_STATUS_SUCCESS)
    throw Error(std::string(what) + " failed with cuBLAS status " + std::to_string(int(st)));
}

// One handle and workspace per process (device 0's context, as for cuBLAS); the workspace lets cuBLASLt pick the
// kernels that need one: 32 MiB, as cuBLAS keeps on Hopper, where the GPU has room for it.
struct LtState {
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
  std::mutex mutex;
  // Descriptors and the heuristic's algorithm by (type, BT, C, OC, epilogue): found once (an implicit heuristic
  // query in every call would add its host time to every call timed); only the bias pointer changes per call.
  struct Plan {
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a, b, d;
    cublasLtMatmulAlgo_t algo;
  };
  std::map<std::tuple<int, int, int, int, int>, Plan> plans;
};
LtState& lt_state() {
  static LtState* s = [] {
    auto* st = new LtState;  // lives as long as the process, like the cuBLAS handle
    lt_check(cublasLtCreate(&st->handle), "cublasLtCreate");
    std::size_t free_bytes = 0, total = 0;
    if (cudaMemGetInfo(&free_bytes, &total) == cudaSuccess && total >= (std::size_t(8) << 30)) {
      st->workspace_bytes = std::size_t(32) << 20;
      if (cudaMalloc(&st->workspace, st->workspace_bytes) != cudaSuccess) st->workspace = nullptr, st->workspace_bytes = 0;
    }
    return st;
  }();
  return *s;
}

// Row-major out (BT,OC) is column-major out^T (OC,BT) = weight (OC,C) inp^T (C,BT): weight is a column-major
// (C,OC) matrix used transposed, inp a (C,BT) one used as is; the bias runs along D's OC rows.
LtState::Plan make_plan(const LtState& s, cudaDataType_t type, int BT, int C, int OC, cublasLtEpilogue_t epilogue,
                        const void* bias) {
  LtState::Plan p{};
  lt_check(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  lt_check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "TRANSA");
  lt_check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "TRANSB");
  lt_check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue),
           "EPILOGUE");
  lt_check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &type, sizeof type),
           "BIAS_DATA_TYPE");
  lt_check(cublasLtMatrixLayoutCreate(&p.a, type, C, OC, C), "cublasLtMatrixLayoutCreate(A)");
  lt_check(cublasLtMatrixLayoutCreate(&p.b, type, C, BT, C), "cublasLtMatrixLayoutCreate(B)");
  lt_check(cublasLtMatrixLayoutCreate(&p.d, type, OC, BT, OC), "cublasLtMatrixLayoutCreate(D)");
  // The heuristic reads the bias pointer's alignment: the first call's (our allocations are all 256-byte aligned).
  if (bias)
    lt_check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias),
             "BIAS_POINTER");
  cublasLtMatmulPreference_t pref;
  lt_check(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  lt_check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &s.workspace_bytes,
                                                sizeof s.workspace_bytes),
           "MAX_WORKSPACE_BYTES");
  cublasLtMatmulHeuristicResult_t found{};
  int count = 0;
  lt_check(cublasLtMatmulAlgoGetHeuristic(s.handle, p.desc, p.a, p.b, p.d, p.d, pref, 1, &found, &count),
           "cublasLtMatmulAlgoGetHeuristic");
  cublasLtMatmulPreferenceDestroy(pref);
  if (count < 1)
    throw Error("cuBLASLt has no algorithm for this matmul (" + std::to_string(BT) + "x" + std::to_string(OC) + "x" +
                std::to_string(C) + ", epilogue " + std::to_string(int(epilogue)) + ")");
  p.algo = found.algo;
  return p;
}

}  // namespace

template <class T>
void matmul_forward_cublaslt(T* out, const T* inp, const T* weight, const T* bias, int BT, int C, int OC, bool gelu,
                             void* stream) {
  if (BT == 0 || OC == 0) return;
  const cudaDataType_t type = sizeof(T) == 2 ? CUDA_R_16BF : CUDA_R_32F;
  const cublasLtEpilogue_t epilogue = bias ? (gelu ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_BIAS)
                                           : (gelu ? CUBLASLT_EPILOGUE_GELU : CUBLASLT_EPILOGUE_DEFAULT);
  const float alpha = 1.f, beta = 0.f;
  LtState& s = lt_state();
  std::lock_guard lock(s.mutex);
  auto key = std::make_tuple(int(type), BT, C, OC, int(epilogue));
  auto it = s.plans.find(key);
  if (it == s.plans.end()) it = s.plans.emplace(key, make_plan(s, type, BT, C, OC, epilogue, bias)).first;
  const LtState::Plan& p = it->second;
  if (bias)
    lt_check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias),
             "BIAS_POINTER");
  lt_check(cublasLtMatmul(s.handle, p.desc, &alpha, weight, p.a, inp, p.b, &beta, out, p.d, out, p.d, &p.algo,
                          s.workspace, s.workspace_bytes, static_cast<cudaStream_t>(stream)),
           "cublasLtMatmul");
}

template void matmul_forward_cublaslt<float>(float*, const float*, const float*, const float*, int, int, int, bool,
                                             void*);
template void matmul_forward_cublaslt<bf16>(bf16*, const bf16*, const bf16*, const bf16*, int, int, int, bool, void*);

}  // namespace parbench::cuda_kernels
