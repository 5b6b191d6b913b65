// See nccl_registration.h.
#include "collectives/device_side/nccl_registration.h"

#include <algorithm>
#include <mutex>
#include <vector>

#include "base/error.h"
#include "collectives/communicator/communicator.h"

#ifndef PARBENCH_NCCL_DEVICE_API_WHY
#define PARBENCH_NCCL_DEVICE_API_WHY "this build has no NCCL"
#endif

#ifdef PARBENCH_NCCL_DEVICE_API
#include <cuda_runtime.h>
#include <nccl.h>

#include "collectives/device_side/nccl_dev_kernels.h"
#endif

namespace parbench {

std::string nccl_device_api_refusal() {
#ifdef PARBENCH_NCCL_DEVICE_API
  return {};
#else
  return std::string("NCCL device API not available: ") + PARBENCH_NCCL_DEVICE_API_WHY;
#endif
}

const char* nccl_device_impl_name(int variant) { return variant == 1 ? "nccl-lsa" : "nccl-multimem"; }

int nccl_device_variant(std::string_view impl) {
  return impl == nccl_device_impl_name(1) ? 1 : impl == nccl_device_impl_name(2) ? 2 : 0;
}

std::string nccl_device_refusal(const NcclDeviceUse& use, const std::string& who) {
  if (std::string why = nccl_device_api_refusal(); !why.empty())
    return who + " (our allreduce kernels on NCCL's device API): " + why + "; accepted here: -D 0";
  if (use.coll != Collective::allreduce)
    return who + ": the NCCL device-API kernels exist for allreduce only (as in nccl-tests); bench_" +
           std::string(collective_name(use.coll)) + " accepts -D 0";
  if (use.registration != 2)
    return who + " needs the buffers registered as symmetric windows: add -R 2 (as nccl-tests)";
  for (ReduceOp op : use.ops)
    if (op != ReduceOp::sum)
      return who + " with -o " + std::string(reduce_op_name(op)) +
             ": the device kernels sum only (as nccl-tests'); accepted: -o sum";
  if (use.variant == 2)
    for (DType t : use.dtypes)
      if (t != DType::f32 && t != DType::f64 && t != DType::i32)
        return who + " with -d " + std::string(dtype_name(t)) +
               ": the multimem kernel sums float, double and int32; use those or -D 1";
  if (use.device.kind != DeviceKind::cuda)
    return who + " runs kernels on GPUs: --device cuda (device " + device_name(use.device) + ")";
  return {};
}

namespace {

// The symmetric windows registered in this process (every rank thread's), for the kernels' look-ups.
struct RegisteredWindow {
  const char* base;
  std::size_t bytes;
  void* window;
  const void* dev_comm;
};
std::mutex registered_windows_mu;
std::vector<RegisteredWindow> registered_windows;

}  // namespace

NcclWindowRef nccl_window_of(const void* p) {
  const char* at = static_cast<const char*>(p);
  std::lock_guard lock(registered_windows_mu);
  for (const RegisteredWindow& w : registered_windows)
    if (at >= w.base && at < w.base + w.bytes) return {w.window, std::size_t(at - w.base), w.dev_comm};
  return {};
}

struct NcclRegisteredBuffers::State {
  void* comm = nullptr;  // ncclComm_t, not owned
  int device = 0;
  int registration = 0;
  std::size_t bytes = 0;
  std::vector<void*> buffers;  // from ncclMemAlloc
  std::vector<void*> handles;  // ncclCommRegister's handles or ncclWindow_t, one per buffer
  void* dev_comm = nullptr;    // ncclDevComm*, for -D

  void release() noexcept;
};

void* NcclRegisteredBuffers::buffer(int i) const { return state_->buffers.at(std::size_t(i)); }

#ifdef PARBENCH_NCCL_DEVICE_API

namespace {

void register_buffers(NcclRegisteredBuffers::State& s, int count) {
  for (int i = 0; i < count; ++i) {
    void* p = nullptr;
    NCCL_CHECK(ncclMemAlloc(&p, s.bytes));
    s.buffers.push_back(p);
    void* handle = nullptr;
    if (s.registration == 1) {
      NCCL_CHECK(ncclCommRegister(static_cast<ncclComm_t>(s.comm), p, s.bytes, &handle));
    } else if (s.registration == 2) {
      ncclWindow_t win = nullptr;
      NCCL_CHECK(ncclCommWindowRegister(static_cast<ncclComm_t>(s.comm), p, s.bytes, &win, NCCL_WIN_COLL_SYMMETRIC));
      handle = win;
    }
    s.handles.push_back(handle);
  }
}

}  // namespace

NcclRegisteredBuffers::NcclRegisteredBuffers(Communicator& comm, int count, std::size_t bytes, NcclBufferMode mode)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.comm = comm.nccl_comm();
  if (!s.comm) throw Error("NCCL buffer registration needs the rank's NCCL communicator: " + comm.nccl_unavailable());
  if (mode.device_impl > 0 && mode.registration != 2)
    throw Error("NCCL's device kernels (-D " + std::to_string(mode.device_impl) + ") need symmetric windows (-R 2)");
  s.device = comm.device().index;
  s.registration = mode.registration;
  // Windows are registered at the same size on every rank; whole pages keep them aligned.
  const std::size_t page = NCCL_WIN_REQUIRED_ALIGNMENT;
  s.bytes = (std::max<std::size_t>(bytes, 1) + page - 1) / page * page;
  try {
    CUDA_CHECK(cudaSetDevice(s.device));
    register_buffers(s, count);
    if (mode.device_impl > 0) s.dev_comm = nccl_dev_comm_create(s.comm, mode.multimem(), kNcclDeviceBlocks);
  } catch (...) {
    s.release();
    throw;
  }
  if (s.registration != 2) return;
  std::lock_guard lock(registered_windows_mu);
  for (std::size_t i = 0; i < s.buffers.size(); ++i)
    registered_windows.push_back({static_cast<const char*>(s.buffers[i]), s.bytes, s.handles[i], s.dev_comm});
}

void NcclRegisteredBuffers::State::release() noexcept {
  cudaSetDevice(device);
  cudaDeviceSynchronize();  // no kernel may still use the windows or the device communicator
  {
    std::lock_guard lock(registered_windows_mu);
    std::erase_if(registered_windows, [&](const RegisteredWindow& w) {
      for (void* b : buffers)
        if (w.base == b) return true;
      return false;
    });
  }
  if (dev_comm) nccl_dev_comm_destroy(comm, dev_comm);
  dev_comm = nullptr;
  auto c = static_cast<ncclComm_t>(comm);
  for (std::size_t i = 0; i < handles.size(); ++i) {
    if (registration == 1 && handles[i]) ncclCommDeregister(c, handles[i]);
    if (registration == 2 && handles[i]) ncclCommWindowDeregister(c, static_cast<ncclWindow_t>(handles[i]));
  }
  for (void* b : buffers) ncclMemFree(b);
  handles.clear();
  buffers.clear();
}

#else  // no NCCL device API in this build

NcclRegisteredBuffers::NcclRegisteredBuffers(Communicator&, int, std::size_t, NcclBufferMode)
    : state_(std::make_unique<State>()) {
  throw Error("NCCL buffer registration (-R) and device kernels (-D): " + nccl_device_api_refusal());
}

void NcclRegisteredBuffers::State::release() noexcept {}

#endif

NcclRegisteredBuffers::~NcclRegisteredBuffers() {
  if (state_) state_->release();
}

}  // namespace parbench
