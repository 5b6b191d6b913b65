// Our allreduce kernels on NCCL's device API (2.28+), the -D 1 and -D 2 of the collective benches (see
// nccl_dev_kernels.h). Each block opens an LSA barrier session of its own (barrier index = block index), waits for
// every peer at entry (their inputs are in their windows), reduces its rank's share of the elements and stores the
// result into every rank's output window, then waits for every peer again, so that no rank reuses its windows
// while a peer still reads or writes them.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <nccl.h>
#include <nccl_device.h>

#include "base/dtype.h"
#include "base/error.h"
#include "collectives/device_side/nccl_dev_kernels.h"

namespace parbench {
// A named namespace (not an anonymous one), so that the kernels' names are the same in every build
// (collectives/device_side/nccl_dev_sass_expectations.txt lists them).
namespace nccl_dev {

constexpr int kThreads = 512;

// What a type sums in: integers in 64 bits (then wrapped to the type, as NCCL's integer sums wrap), floats in
// float (half and bfloat16 inputs of the data check are small integers, exact in every order) or double.
template <class T> struct Acc { using type = T; };
template <> struct Acc<__half> { using type = float; };
template <> struct Acc<__nv_bfloat16> { using type = float; };
template <> struct Acc<signed char> { using type = long long; };
template <> struct Acc<unsigned char> { using type = long long; };
template <> struct Acc<int> { using type = long long; };

template <class T> __device__ typename Acc<T>::type widen(T v) { return typename Acc<T>::type(v); }
template <> __device__ float widen(__half v) { return __half2float(v); }
template <> __device__ float widen(__nv_bfloat16 v) { return __bfloat162float(v); }
template <class T> __device__ T narrow(typename Acc<T>::type v) { return T(v); }
template <> __device__ __half narrow<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __nv_bfloat16 narrow<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

// This rank's share of `count` elements: [begin, end), contiguous, the shares of all ranks covering them once.
struct Share {
  std::size_t begin, end;
};
__device__ Share my_share(std::size_t count, int rank, int ranks) {
  const std::size_t base = count / std::size_t(ranks), rem = count % std::size_t(ranks), r = std::size_t(rank);
  const std::size_t begin = r * base + (r < rem ? r : rem);
  return {begin, begin + base + (r < rem ? 1 : 0)};
}

// -D 1: every element of the share loaded from every peer's input window (rank order) and the sum stored into
// every peer's output window, by load/store access (LSA) over NVLink or PCIe P2P.
template <class T>
__global__ void __launch_bounds__(kThreads) lsa_allreduce_kernel(ncclWindow_t send, std::size_t send_offset,
                                                                 ncclWindow_t recv, std::size_t recv_offset,
                                                                 std::size_t count, ncclDevComm dev) {
  ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), dev, ncclTeamLsa(dev), dev.lsaBarrier, blockIdx.x};
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
  const int ranks = dev.lsaSize;
  const Share s = my_share(count, dev.lsaRank, ranks);
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = s.begin + std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < s.end; i += stride) {
    typename Acc<T>::type sum = 0;
    for (int p = 0; p < ranks; ++p) sum += widen(static_cast<const T*>(ncclGetLsaPointer(send, send_offset, p))[i]);
    const T v = narrow<T>(sum);
    for (int p = 0; p < ranks; ++p) static_cast<T*>(ncclGetLsaPointer(recv, recv_offset, p))[i] = v;
  }
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
}

// -D 2's loads and stores: multimem.ld_reduce sums an element over every rank's window in the NVLink switch, and
// multimem.st writes one value into every rank's window. Both exist from sm_90 on: an older architecture's compile
// of them traps instead (ncclDevCommCreate refuses multimem on GPUs without NVLink SHARP, so it never runs there).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define PB_MULTIMEM_ASM(...) __trap()
#else
#define PB_MULTIMEM_ASM(...) asm volatile(__VA_ARGS__)
#endif
__device__ float mm_load_sum(const float* p) {
  float v = 0;
  PB_MULTIMEM_ASM("multimem.ld_reduce.relaxed.sys.global.add.f32 %0, [%1];" : "=f"(v) : "l"(p) : "memory");
  return v;
}
__device__ double mm_load_sum(const double* p) {
  double v = 0;
  PB_MULTIMEM_ASM("multimem.ld_reduce.relaxed.sys.global.add.f64 %0, [%1];" : "=d"(v) : "l"(p) : "memory");
  return v;
}
__device__ int mm_load_sum(const int* p) {
  int v = 0;
  PB_MULTIMEM_ASM("multimem.ld_reduce.relaxed.sys.global.add.s32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ void mm_store(float* p, float v) {
  PB_MULTIMEM_ASM("multimem.st.relaxed.sys.global.f32 [%0], %1;" ::"l"(p), "f"(v) : "memory");
}
__device__ void mm_store(double* p, double v) {
  PB_MULTIMEM_ASM("multimem.st.relaxed.sys.global.f64 [%0], %1;" ::"l"(p), "d"(v) : "memory");
}
__device__ void mm_store(int* p, int v) {
  PB_MULTIMEM_ASM("multimem.st.relaxed.sys.global.s32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

#undef PB_MULTIMEM_ASM

// -D 2: the share's elements summed by multimem loads and written to every rank by multimem stores.
template <class T>
__global__ void __launch_bounds__(kThreads) multimem_allreduce_kernel(ncclWindow_t send, std::size_t send_offset,
                                                                      ncclWindow_t recv, std::size_t recv_offset,
                                                                      std::size_t count, ncclDevComm dev) {
  ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), dev, ncclTeamTagLsa(), blockIdx.x, true};
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
  const Share s = my_share(count, dev.lsaRank, dev.lsaSize);
  const T* in = static_cast<const T*>(ncclGetLsaMultimemPointer(send, send_offset, dev));
  T* out = static_cast<T*>(ncclGetLsaMultimemPointer(recv, recv_offset, dev));
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = s.begin + std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < s.end; i += stride)
    mm_store(out + i, mm_load_sum(in + i));
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
}

using Kernel = void (*)(ncclWindow_t, std::size_t, ncclWindow_t, std::size_t, std::size_t, ncclDevComm);

Kernel lsa_kernel(DType t) {
  switch (t) {
    case DType::f64: return lsa_allreduce_kernel<double>;
    case DType::f32: return lsa_allreduce_kernel<float>;
    case DType::f16: return lsa_allreduce_kernel<__half>;
    case DType::bf16: return lsa_allreduce_kernel<__nv_bfloat16>;
    case DType::i32: return lsa_allreduce_kernel<int>;
    case DType::i8: return lsa_allreduce_kernel<signed char>;
    case DType::u8: return lsa_allreduce_kernel<unsigned char>;
  }
  return nullptr;
}

Kernel multimem_kernel(DType t) {
  switch (t) {
    case DType::f64: return multimem_allreduce_kernel<double>;
    case DType::f32: return multimem_allreduce_kernel<float>;
    case DType::i32: return multimem_allreduce_kernel<int>;
    default: return nullptr;  // refused before any launch (NcclDevice::type_refusal)
  }
}

}  // namespace nccl_dev

using nccl_dev::Kernel;
using nccl_dev::kThreads;

void* nccl_dev_comm_create(void* comm, bool multimem, int blocks) {
  ncclDevCommRequirements reqs = {};
  reqs.lsaBarrierCount = blocks;
  reqs.lsaMultimem = multimem;
  auto* dev = new ncclDevComm{};
  const ncclResult_t r = ncclDevCommCreate(static_cast<ncclComm_t>(comm), &reqs, dev);
  if (r != ncclSuccess) {
    delete dev;
    throw Error(std::string("ncclDevCommCreate") + (multimem ? " with multimem (NVLink SHARP)" : "") + ": " +
                ncclGetErrorString(r));
  }
  return dev;
}

void nccl_dev_comm_destroy(void* comm, void* dev_comm) noexcept {
  auto* dev = static_cast<ncclDevComm*>(dev_comm);
  ncclDevCommDestroy(static_cast<ncclComm_t>(comm), dev);
  delete dev;
}

void nccl_dev_allreduce(int variant, void* send_window, std::size_t send_offset, void* recv_window,
                        std::size_t recv_offset, const void* dev_comm, std::size_t count, int dtype, int blocks,
                        void* stream) {
  if (count == 0) return;
  const DType t = static_cast<DType>(dtype);
  const Kernel k = variant == 2 ? nccl_dev::multimem_kernel(t) : nccl_dev::lsa_kernel(t);
  if (!k) throw Error("the NCCL device-API kernel -D " + std::to_string(variant) + " has no " +
                      std::string(dtype_name(t)) + " sum");
  const ncclDevComm& dev = *static_cast<const ncclDevComm*>(dev_comm);
  k<<<blocks, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(static_cast<ncclWindow_t>(send_window), send_offset,
                                                                static_cast<ncclWindow_t>(recv_window), recv_offset,
                                                                count, dev);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace parbench
