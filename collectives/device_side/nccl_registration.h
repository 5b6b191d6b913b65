// nccl-tests' -R and -D on the nccl rows: the benchmark's buffers taken from ncclMemAlloc and registered with
// the rank's NCCL communicator (-R 1 ncclCommRegister, -R 2 a symmetric window, ncclCommWindowRegister with
// NCCL_WIN_COLL_SYMMETRIC), and for -D the device communicator (ncclDevCommCreate) whose kernels reach the peers'
// windows. Where this build lacks NCCL's device API (2.28+) everything here refuses, naming why.
#pragma once
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "base/dtype.h"
#include "collectives/table/types.h"
#include "core/device.h"

namespace parbench {

class Communicator;

// -R and -D as the collective benches pass them to their buffers.
struct NcclBufferMode {
  int registration = 0;  // 0 none, 1 ncclCommRegister, 2 symmetric window
  int device_impl = 0;   // 0 NCCL's collective, 1 our LSA kernel, 2 our multimem kernel (window registration)
  // Multimem (NVLink SHARP) asked of the device communicator: -D 2.
  bool multimem() const { return device_impl == 2; }
};

// "" where this build has NCCL's device API; otherwise "NCCL device API not available: <why>" (emulated NCCL,
// "NCCL 2.27 found, 2.28 needed", no NCCL).
std::string nccl_device_api_refusal();

// Our kernels on NCCL's device API by nccl-tests' -D number: 1 "nccl-lsa", 2 "nccl-multimem"; and the -D of an
// implementation name (0 for any other name).
const char* nccl_device_impl_name(int variant);
int nccl_device_variant(std::string_view impl);

// A use of the -D kernel `variant`, as far as the caller knows it (empty ops or dtypes: not chosen yet).
struct NcclDeviceUse {
  int variant = 1;
  Collective coll = Collective::allreduce;
  int registration = 2;  // -R; the kernels run on symmetric windows (2)
  std::span<const ReduceOp> ops;
  std::span<const DType> dtypes;
  Device device;
};
// nccl-tests' rules for its -D kernels, for the collective benches' options and the implementations alike: ""
// where `use` keeps them, otherwise why not, starting with `who` (how the kernel was asked for: "-D 1", "--impl
// nccl-lsa"). In order: this build has NCCL's device API, allreduce only, -R 2, sums only, the multimem kernel's
// dtypes (float, double, int32), a GPU device.
std::string nccl_device_refusal(const NcclDeviceUse& use, const std::string& who);

// The thread blocks of the -D kernels, as nccl-tests' default -V (one LSA barrier each).
constexpr int kNcclDeviceBlocks = 16;

// `count` buffers of `bytes` each from ncclMemAlloc, registered with comm's NCCL communicator as `mode` says.
// Every rank must make them together with the same `bytes` (window registration and the device communicator are
// collective). Deregistered and freed (after the device is idle) on destruction. Throws Error where this build
// or the communicator cannot.
class NcclRegisteredBuffers {
 public:
  NcclRegisteredBuffers(Communicator& comm, int count, std::size_t bytes, NcclBufferMode mode);
  ~NcclRegisteredBuffers();
  NcclRegisteredBuffers(const NcclRegisteredBuffers&) = delete;
  NcclRegisteredBuffers& operator=(const NcclRegisteredBuffers&) = delete;
  void* buffer(int i) const;

  struct State;  // the allocations, their handles and the device communicator

 private:
  std::unique_ptr<State> state_;
};

// What a -D kernel needs of a pointer: the symmetric window that holds it, its byte offset there, and the
// device communicator made with that window's buffers (ncclWindow_t and ncclDevComm*); window null when `p`
// lies in no window registered here.
struct NcclWindowRef {
  void* window = nullptr;
  std::size_t offset = 0;
  const void* dev_comm = nullptr;
};
NcclWindowRef nccl_window_of(const void* p);

}  // namespace parbench
