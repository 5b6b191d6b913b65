// -D and -R, checked against the collective, the device and what this build's NCCL has, before any work
// (options.h). nccl-tests' rules: -D > 0 needs -R 2 (its kernels run on symmetric windows), sums only, and exists
// for all_reduce only; -D needs NCCL 2.28 (the device API). Where a rule fails the bench exits 2 naming why.
// nccl-lsa and nccl-multimem named in --impl keep the registry's rule instead: where this build, the device or
// the collective rules them out they print `not run: <reason>` beside the others (Algorithm::unsupported); only
// options that contradict them (-R, -o, -d) stop the run.
#include <algorithm>
#include <string>

#include "base/error.h"
#include "collectives/device_side/nccl_registration.h"
#include "options.h"

namespace parbench {
namespace {

// `flag`: how the user asked for device kernel `variant` (-D N, or --impl naming it).
void check_device_impl(Collective c, const BenchOptions& o, const Device& d, const BenchPlan& p, int variant,
                       const std::string& flag) {
  const NcclDeviceUse use{.variant = variant, .coll = c, .registration = o.registration, .ops = p.ops,
                          .dtypes = p.dtypes, .device = d};
  if (std::string why = nccl_device_refusal(use, flag); !why.empty()) throw UsageError(why);
}

}  // namespace

void apply_nccl_device_options(Collective c, const BenchOptions& o, const Device& d, BenchPlan& p) {
  if (o.device_api > 0) {
    check_device_impl(c, o, d, p, o.device_api, "-D " + std::to_string(o.device_api));
    // As nccl-tests, -D selects the kernel of the nccl rows (and of auto, whose first choice is nccl).
    for (std::string& impl : p.impls)
      if (impl == "nccl" || impl == "auto") impl = nccl_device_impl_name(o.device_api);
  }
  for (const std::string& impl : p.impls)  // named without -D
    if (const int variant = nccl_device_variant(impl); variant > 0 && o.device_api == 0) {
      // What the options do not choose (the registration as the kernels need it, no ops or dtypes yet): a
      // refusal here is the implementation's own, reported as not run.
      const NcclDeviceUse fixed{.variant = variant, .coll = c, .ops = {}, .dtypes = {}, .device = d};
      const std::string who = "--impl " + impl;
      if (nccl_device_refusal(fixed, who).empty()) check_device_impl(c, o, d, p, variant, who);
    }
  if (o.registration > 0 && d.kind == DeviceKind::cuda)
    if (std::string why = nccl_device_api_refusal(); !why.empty())
      throw UsageError("-R " + std::to_string(o.registration) + " (NCCL buffer registration): " + why +
                       "; accepted here: -R 0");
}

}  // namespace parbench
