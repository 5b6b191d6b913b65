// --nccl-algo and --nccl-proto: besides the nccl block (NCCL's tuner choosing), one block per algorithm and
// protocol asked for, "nccl/Ring/LL", run on a communicator split off under NCCL_ALGO and NCCL_PROTO set to the
// choice (NCCL reads them when a communicator is made). A choice NCCL rejects for the collective is reported as not
// run with NCCL's own message; the collectives nccl runs as ncclSend/ncclRecv have no algorithm to choose.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "collectives/communicator/communicator.h"
#include "options.h"

namespace parbench {

struct NcclChoice {
  std::string algo, proto;  // NCCL's spelling ("Ring", "LL128"); "" leaves the variable to NCCL
  std::string label() const;  // "nccl/Ring/LL", "auto" for an unset half
};

// Every algorithm with every protocol (the one list alone: each of its names); empty without the options.
std::vector<NcclChoice> nccl_choices(const BenchOptions& o);
// UsageError when the options are given but no nccl row is asked for (--impl without nccl).
void check_nccl_choice_options(const BenchOptions& o, const BenchPlan& p);

// The communicator of one choice's block: split off `comm` with the variables set in every process (and put back
// after), then one small call of the collective to learn whether NCCL runs it so. Collective over `world`.
class NcclChoiceComm {
 public:
  NcclChoiceComm(Communicator& world, Communicator& comm, Collective c, const Algorithm& nccl,
                 const NcclChoice& choice);
  // Why the block does not run ("" when it does): NCCL's message on world rank 0, the same rule elsewhere.
  const std::string& refusal() const { return refusal_; }
  Communicator& comm() { return *sub_; }

 private:
  std::optional<Communicator> sub_;
  std::string refusal_;
};

}  // namespace parbench
