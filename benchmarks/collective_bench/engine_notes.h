// The header's facts that need the ranks: "# Using devices" lines (gathered from every rank), the node count,
// and the notes on options that do not apply here (accepted, never an error) and on how we differ.
#pragma once
#include <string>
#include <vector>

#include "collectives/communicator/communicator.h"
#include "options.h"
#include "nccl_tests_output.h"

namespace parbench {

// Every rank's line (pid, host, device), gathered to world rank 0 (others get an empty list). Collective.
std::vector<RankInfo> gather_rank_info(Communicator& world, int group, const Device& d);
// Lines for the header (without the leading "# ").
std::vector<std::string> run_notes(const BenchOptions& o, const BenchPlan& p, const Communicator& world,
                                   const Communicator& group, int nodes, const Device& d);

}  // namespace parbench
