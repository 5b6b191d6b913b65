// nccl-lsa and nccl-multimem: allreduce as our own kernels on NCCL's device API (nccl_dev_kernels.cu) over the
// benchmark's buffers registered as NCCL symmetric windows, what nccl-tests' -D 1 and -D 2 run for its nccl rows
// (-D needs -R 2 there too). One kernel per operation, queued on the caller's stream like NCCL's own calls.
// Built where NCCL's device API exists (2.28+); they run on real GPUs only, with every rank load/store reachable
// (one NVLink or P2P domain), and nccl-multimem on NVLink SHARP (multimem) hardware.
#include "base/error.h"
#include "collectives/communicator/communicator.h"
#include "collectives/device_side/nccl_registration.h"

#ifdef PARBENCH_NCCL_DEVICE_API
#include "collectives/device_side/nccl_dev_kernels.h"
#endif

namespace parbench {
namespace {

class NcclDevice final : public Algorithm {
 public:
  explicit NcclDevice(int variant)
      : variant_(variant), who_("--impl " + std::string(nccl_device_impl_name(variant))) {}
  std::string_view name() const override { return nccl_device_impl_name(variant_); }
  bool queues_on_callers_stream() const override { return true; }
  std::string capture_refusal(Collective) const override { return {}; }  // one kernel on the caller's stream

  // nccl-tests' rules, as the collective benches check their -D (the buffers' windows are checked per call).
  std::string unsupported(Collective c, const Communicator& comm) const override {
    if (std::string why = nccl_device_refusal({.variant = variant_, .coll = c, .device = comm.device()}, who_);
        !why.empty())
      return why;
    if (!comm.nccl_comm()) return comm.nccl_unavailable();
    return {};
  }

  void run(Communicator& c, const CollArgs& a) const override {
    if (a.count == 0) return;
    const std::string me(name());
    const NcclDeviceUse use{.variant = variant_, .ops = {&a.op, 1}, .dtypes = {&a.dtype, 1}, .device = c.device()};
    if (std::string why = nccl_device_refusal(use, who_); !why.empty()) throw UsageError(why);
    const NcclWindowRef send = nccl_window_of(a.send), recv = nccl_window_of(a.recv);
    if (!send.window || !recv.window || !send.dev_comm || send.dev_comm != recv.dev_comm)
      throw UsageError(me + " runs on buffers registered as NCCL symmetric windows with a device communicator: "
                            "the collective benches' -D " + std::to_string(variant_) + " -R 2");
#ifdef PARBENCH_NCCL_DEVICE_API
    nccl_dev_allreduce(variant_, send.window, send.offset, recv.window, recv.offset, send.dev_comm, a.count,
                       int(a.dtype), kNcclDeviceBlocks, a.stream);
    if (!c.batching() && !c.ordered_on())  // as the nccl implementation: a batch or a stream order waits once
      nccl_stream_wait(c.nccl_comm(), a.stream, c.deadline(),
                       "rank " + std::to_string(c.rank()) + " waited for " + me + "'s allreduce kernel");
#else
    (void)c;
    throw Error(me + ": " + nccl_device_api_refusal());
#endif
  }

 private:
  int variant_;      // nccl-tests' -D: 1 LSA, 2 multimem
  std::string who_;  // how the user names it, for the refusals
};

}  // namespace

std::unique_ptr<Algorithm> make_nccl_lsa_algorithm() { return std::make_unique<NcclDevice>(1); }
std::unique_ptr<Algorithm> make_nccl_multimem_algorithm() { return std::make_unique<NcclDevice>(2); }

}  // namespace parbench
