// The emulated NCCL's NCCL_ALGO and NCCL_PROTO, read when a communicator is made, as NCCL reads them: a comma list
// of names in any case, a leading '^' for all but the names listed, names it does not know enabling nothing. Which
// algorithms the emulated GPU has: ring for every collective and tree for allreduce; no NVLink SHARP (nvls,
// nvlstree), no CollNet plugin (collnetdirect, collnetchain), and every rank on one node, where NCCL does not use
// PAT (one rank per node). LL, LL128 and Simple each run ring and tree. A collective left with no algorithm and
// protocol is refused at its call (ncclInvalidUsage), as NCCL refuses it when the variables exclude every choice.
#pragma once
#include <string>

namespace parbench::gpu_emu {

struct Tuning {
  std::string algo, proto;  // the variables' values when the communicator was made ("" when unset)
  static Tuning from_environment();
};

// Why `function` ("AllReduce", "AllGather", ...) of `type` cannot run under `t` ("" when it can).
std::string tuning_refusal(const Tuning& t, const std::string& function, const std::string& type);

}  // namespace parbench::gpu_emu
