// The emulated cuBLASLt: what parbench's cuBLASLt baseline calls. Handles bound to the GPU current at
// cublasLtCreate; matmul descriptors with the transposes, the epilogues DEFAULT, BIAS, GELU and GELU_BIAS and the
// bias pointer and type; column-major layouts of one matrix; a heuristic query that answers one algorithm (needing
// no workspace) for any matmul the emulator runs; cublasLtMatmul with D = C (the in-place form) on the given
// stream, through the emulated GEMM (gemm_ref.h) with its argument checks. Anything else is refused with
// CUBLAS_STATUS_NOT_SUPPORTED and a line naming it.
#include <cublasLt.h>

#include <cstring>
#include <string>

#include "device/emu/emu.h"
#include "device/emu/gemm_ref.h"

struct cublasLtContext {
  std::uint32_t magic = 0x4c54424c;  // "LTBL"
  int device = 0;
};

namespace {

using namespace parbench::gpu_emu;

// What the opaque descriptors hold here, copied into their data words.
struct LtMatmulDesc {
  cublasComputeType_t compute;
  cudaDataType_t scale;
  cublasOperation_t ta = CUBLAS_OP_N, tb = CUBLAS_OP_N;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void* bias = nullptr;
  cudaDataType_t bias_t = CUDA_R_32F;
  bool bias_t_set = false;
};
struct LtLayout {
  cudaDataType type;
  std::uint64_t rows, cols;
  std::int64_t ld;
  std::int32_t order = CUBLASLT_ORDER_COL, batch = 1;
};
static_assert(sizeof(LtMatmulDesc) <= sizeof(cublasLtMatmulDescOpaque_t));
static_assert(sizeof(LtLayout) <= sizeof(cublasLtMatrixLayoutOpaque_t));

template <class T, class O>
T read_opaque(const O* o) {
  T t;
  std::memcpy(&t, o->data, sizeof(T));
  return t;
}
template <class T, class O>
void write_opaque(O* o, const T& t) {
  std::memcpy(o->data, &t, sizeof(T));
}

// An attribute's value from the caller's buffer, which must be exactly its size.
template <class T>
bool take(const void* buf, std::size_t size, T& out) {
  if (!buf || size != sizeof(T)) return false;
  std::memcpy(&out, buf, sizeof(T));
  return true;
}

bool lt_live(cublasLtHandle_t h) { return h && h->magic == 0x4c54424c; }

cublasStatus_t set_desc(LtMatmulDesc& d, cublasLtMatmulDescAttributes_t attr, const void* buf, std::size_t size) {
  const char* api = "cublasLtMatmulDescSetAttribute";
  bool ok = false;
  switch (attr) {
    case CUBLASLT_MATMUL_DESC_TRANSA: ok = take(buf, size, d.ta); break;
    case CUBLASLT_MATMUL_DESC_TRANSB: ok = take(buf, size, d.tb); break;
    case CUBLASLT_MATMUL_DESC_EPILOGUE: ok = take(buf, size, d.epilogue); break;
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER: ok = take(buf, size, d.bias); break;
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: ok = d.bias_t_set = take(buf, size, d.bias_t); break;
    default:
      return gemm_refuse(CUBLAS_STATUS_NOT_SUPPORTED, api, "emulated: attribute " + std::to_string(int(attr)) +
                                                               " (transposes, epilogue, bias pointer and type only)");
  }
  return ok ? CUBLAS_STATUS_SUCCESS
            : gemm_refuse(CUBLAS_STATUS_INVALID_VALUE, api, "attribute " + std::to_string(int(attr)) +
                                                                ": null buffer or a size not the attribute's");
}

GemmRefusal layout_problem(const char* name, const LtLayout& l) {
  if (l.order != CUBLASLT_ORDER_COL || l.batch != 1)
    return {CUBLAS_STATUS_NOT_SUPPORTED, std::string("emulated: layout ") + name + " must be column-major, batch 1"};
  return {};
}

// The GEMM of a cublasLtMatmul call: m x n = D's rows x columns, k from A, checked against B's and C's layouts.
GemmRefusal make_gemm(const LtMatmulDesc& d, const LtLayout& a, const LtLayout& b, const LtLayout& c, EmuGemm& g) {
  for (auto [name, l] : {std::pair{"A", &a}, {"B", &b}, {"C", &c}})
    if (GemmRefusal r = layout_problem(name, *l)) return r;
  const std::uint64_t k = d.ta == CUBLAS_OP_N ? a.cols : a.rows, am = d.ta == CUBLAS_OP_N ? a.rows : a.cols;
  const std::uint64_t bk = d.tb == CUBLAS_OP_N ? b.rows : b.cols, bn = d.tb == CUBLAS_OP_N ? b.cols : b.rows;
  if (am != c.rows || bk != k || bn != c.cols)
    return {CUBLAS_STATUS_INVALID_VALUE, "op(A) " + std::to_string(am) + "x" + std::to_string(k) + ", op(B) " +
                                             std::to_string(bk) + "x" + std::to_string(bn) + " and C " +
                                             std::to_string(c.rows) + "x" + std::to_string(c.cols) + " do not chain"};
  g = EmuGemm{d.ta, d.tb, int(c.rows), int(c.cols), int(k), 0.f, 0.f, nullptr, nullptr, nullptr, a.type, b.type,
              c.type, int(a.ld), int(b.ld), int(c.ld)};
  const bool bias = d.epilogue == CUBLASLT_EPILOGUE_BIAS || d.epilogue == CUBLASLT_EPILOGUE_GELU_BIAS;
  g.gelu = d.epilogue == CUBLASLT_EPILOGUE_GELU || d.epilogue == CUBLASLT_EPILOGUE_GELU_BIAS;
  if (!bias && !g.gelu && d.epilogue != CUBLASLT_EPILOGUE_DEFAULT)
    return {CUBLAS_STATUS_NOT_SUPPORTED, "emulated: epilogue " + std::to_string(int(d.epilogue)) +
                                             " (DEFAULT, BIAS, GELU and GELU_BIAS only)"};
  if (bias && !d.bias) return {CUBLAS_STATUS_INVALID_VALUE, "a BIAS epilogue without CUBLASLT_MATMUL_DESC_BIAS_POINTER"};
  if (bias) g.bias = d.bias, g.bias_t = d.bias_t_set ? d.bias_t : c.type;  // the default: D's type
  if (d.scale != CUDA_R_32F) return {CUBLAS_STATUS_NOT_SUPPORTED, "emulated: scale type CUDA_R_32F only"};
  GemmRefusal r = gemm_shape_problem(g);
  return r ? r : gemm_type_problem(g, d.compute);
}

}  // namespace

extern "C" {

cublasStatus_t cublasLtCreate(cublasLtHandle_t* h) {
  if (!h) return gemm_refuse(CUBLAS_STATUS_INVALID_VALUE, "cublasLtCreate", "null handle pointer");
  *h = new cublasLtContext;  // deleted by cublasLtDestroy
  (*h)->device = current_device();
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtDestroy(cublasLtHandle_t h) {
  if (!lt_live(h)) return gemm_refuse(CUBLAS_STATUS_NOT_INITIALIZED, "cublasLtDestroy", "not a live cuBLASLt handle");
  h->magic = 0;
  delete h;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t compute,
                                        cudaDataType_t scale) {
  if (!desc) return gemm_refuse(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatmulDescCreate", "null descriptor pointer");
  *desc = new cublasLtMatmulDescOpaque_t{};  // deleted by cublasLtMatmulDescDestroy
  write_opaque(*desc, LtMatmulDesc{compute, scale});
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  delete desc;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                                              const void* buf, size_t size) {
  if (!desc) return gemm_refuse(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatmulDescSetAttribute", "null descriptor");
  LtMatmulDesc d = read_opaque<LtMatmulDesc>(desc);
  cublasStatus_t st = set_desc(d, attr, buf, size);
  if (st == CUBLAS_STATUS_SUCCESS) write_opaque(desc, d);
  return st;
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType type, uint64_t rows,
                                          uint64_t cols, int64_t ld) {
  if (!layout) return gemm_refuse(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatrixLayoutCreate", "null layout pointer");
  *layout = new cublasLtMatrixLayoutOpaque_t{};  // deleted by cublasLtMatrixLayoutDestroy
  write_opaque(*layout, LtLayout{type, rows, cols, ld});
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  delete layout;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  if (!pref) return gemm_refuse(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatmulPreferenceCreate", "null pointer");
  *pref = new cublasLtMatmulPreferenceOpaque_t{};  // deleted by cublasLtMatmulPreferenceDestroy
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  delete pref;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
                                                    size_t size) {
  std::uint64_t bytes = 0;
  if (!pref || attr != CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES || !take(buf, size, bytes))
    return gemm_refuse(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatmulPreferenceSetAttribute",
                       "emulated: MAX_WORKSPACE_BYTES (uint64_t) only, on a live preference");
  return CUBLAS_STATUS_SUCCESS;
}

// One algorithm, no workspace, for a matmul the emulator would run; none (and the refusal's status) otherwise.
cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t desc,
                                              cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc,
                                              cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
                                              cublasLtMatmulPreference_t pref, int requested,
                                              cublasLtMatmulHeuristicResult_t results[], int* count) {
  const char* api = "cublasLtMatmulAlgoGetHeuristic";
  if (!lt_live(h)) return gemm_refuse(CUBLAS_STATUS_NOT_INITIALIZED, api, "not a live cuBLASLt handle");
  if (!desc || !Adesc || !Bdesc || !Cdesc || !Ddesc || !pref || requested < 1 || !results || !count)
    return gemm_refuse(CUBLAS_STATUS_INVALID_VALUE, api, "a null argument or requestedAlgoCount < 1");
  *count = 0;
  EmuGemm g{};
  if (GemmRefusal r = make_gemm(read_opaque<LtMatmulDesc>(desc), read_opaque<LtLayout>(Adesc),
                                read_opaque<LtLayout>(Bdesc), read_opaque<LtLayout>(Cdesc), g))
    return gemm_refuse(r.status, api, r.why);
  results[0] = cublasLtMatmulHeuristicResult_t{};
  results[0].state = CUBLAS_STATUS_SUCCESS;
  results[0].wavesCount = 1.f;
  *count = 1;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t desc, const void* alpha, const void* A,
                              cublasLtMatrixLayout_t Adesc, const void* B, cublasLtMatrixLayout_t Bdesc,
                              const void* beta, const void* C, cublasLtMatrixLayout_t Cdesc, void* D,
                              cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t*, void*, size_t,
                              cudaStream_t stream) {
  const char* api = "cublasLtMatmul";
  count(Count::library_call);
  if (!lt_live(h)) return gemm_refuse(CUBLAS_STATUS_NOT_INITIALIZED, api, "not a live cuBLASLt handle");
  if (!desc || !Adesc || !Bdesc || !Cdesc || !Ddesc)
    return gemm_refuse(CUBLAS_STATUS_INVALID_VALUE, api, "a null descriptor or layout");
  if (C != D || std::memcmp(Cdesc->data, Ddesc->data, sizeof(LtLayout)) != 0)
    return gemm_refuse(CUBLAS_STATUS_NOT_SUPPORTED, api, "emulated: D must be C with C's layout (in place)");
  EmuGemm g{};
  if (GemmRefusal r = make_gemm(read_opaque<LtMatmulDesc>(desc), read_opaque<LtLayout>(Adesc),
                                read_opaque<LtLayout>(Bdesc), read_opaque<LtLayout>(Cdesc), g))
    return gemm_refuse(r.status, api, r.why);
  g.A = A, g.B = B, g.C = D;
  g.tf32 = read_opaque<LtMatmulDesc>(desc).compute == CUBLAS_COMPUTE_32F_FAST_TF32;
  return gemm_submit(api, PB_EMU_SITE(), h->device, stream, g, alpha, beta);
}

}  // extern "C"
