// -D and -R, checked against the collective, the device and what this build's NCCL has, before any work
// (options.h). nccl-tests' rules: -D > 0 needs -R 2 (its kernels run on symmetric windows), sums only, and exists
// for all_reduce only; -D needs NCCL 2.28 (the device API). Where a rule fails the bench exits 2 naming why.
#include <algorithm>
#include <string>

#include "base/error.h"
#include "collectives/nccl_registration.h"
#include "options.h"

namespace parbench {
namespace {

// The implementation nccl-tests' -D N runs in place of NCCL's collective, and the -D an implementation is.
const char* device_impl_name(int d) { return d == 1 ? "nccl-lsa" : "nccl-multimem"; }
int device_impl_of(const std::string& impl) { return impl == "nccl-lsa" ? 1 : impl == "nccl-multimem" ? 2 : 0; }

// `flag`: how the user asked for device kernel `variant` (-D N, or --impl naming it).
void check_device_impl(Collective c, const BenchOptions& o, const Device& d, const BenchPlan& p, int variant,
                       const std::string& flag) {
  if (std::string why = nccl_device_api_refusal(); !why.empty())
    throw UsageError(flag + " (our allreduce kernels on NCCL's device API): " + why + "; accepted here: -D 0");
  if (c != Collective::allreduce)
    throw UsageError(flag + ": the NCCL device-API kernels exist for allreduce only (as in nccl-tests); bench_" +
                     std::string(collective_name(c)) + " accepts -D 0");
  if (o.registration != 2)
    throw UsageError(flag + " needs the buffers registered as symmetric windows: add -R 2 (as nccl-tests)");
  for (ReduceOp op : p.ops)
    if (op != ReduceOp::sum)
      throw UsageError(flag + " with -o " + std::string(reduce_op_name(op)) +
                       ": the device kernels sum only (as nccl-tests'); accepted: -o sum");
  if (variant == 2)
    for (DType t : p.dtypes)
      if (t != DType::f32 && t != DType::f64 && t != DType::i32)
        throw UsageError(flag + " with -d " + std::string(dtype_name(t)) +
                         ": the multimem kernel sums float, double and int32; use those or -D 1");
  if (d.kind != DeviceKind::cuda)
    throw UsageError(flag + " runs kernels on GPUs: --device cuda (device " + device_name(d) + ")");
}

}  // namespace

void apply_nccl_device_options(Collective c, const BenchOptions& o, const Device& d, BenchPlan& p) {
  if (o.device_api > 0) {
    check_device_impl(c, o, d, p, o.device_api, "-D " + std::to_string(o.device_api));
    // As nccl-tests, -D selects the kernel of the nccl rows (and of auto, whose first choice is nccl).
    for (std::string& impl : p.impls)
      if (impl == "nccl" || impl == "auto") impl = device_impl_name(o.device_api);
  }
  for (const std::string& impl : p.impls)  // named without -D: the same rules
    if (const int variant = device_impl_of(impl); variant > 0 && o.device_api == 0)
      check_device_impl(c, o, d, p, variant, "--impl " + impl);
  if (o.registration > 0 && d.kind == DeviceKind::cuda)
    if (std::string why = nccl_device_api_refusal(); !why.empty())
      throw UsageError("-R " + std::to_string(o.registration) + " (NCCL buffer registration): " + why +
                       "; accepted here: -R 0");
}

}  // namespace parbench
