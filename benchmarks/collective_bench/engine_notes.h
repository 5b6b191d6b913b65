// The header's facts that need the ranks: "# Using devices" lines (gathered from every rank), the node count,
// and the notes on options that do not apply here (accepted, never an error) and on how we differ; and -M's
// memory lines after the sweep.
#pragma once
#include <string>
#include <vector>

#include "collectives/communicator/communicator.h"
#include "collectives/datacheck.h"
#include "options.h"
#include "nccl_tests_output.h"

namespace parbench {

// The report of a sweep over `plan`'s sizes (nccl-tests prints the smallest and largest).
NcclReport make_report(const std::string& name, const BenchOptions& o, const BenchPlan& plan, int argc, char** argv);
// Every rank's line (pid, host, device), gathered to world rank 0 (others get an empty list). Collective.
std::vector<RankInfo> gather_rank_info(Communicator& world, int group, const Device& d);
// Lines for the header (without the leading "# ").
std::vector<std::string> run_notes(const BenchOptions& o, const BenchPlan& p, const Communicator& world,
                                   const Communicator& group, int nodes, const Device& d);
// A data check's failure on this rank: how many elements of round `round` were wrong and the first, on stderr (each
// rank names its own; the table counts them over all ranks).
void report_wrong(const Communicator& world, std::size_t wrong, const CollectiveBuffers::FirstWrong& first, int round);
// -M: every rank's benchmark buffers (at most twice the largest size: send and receive) and peak resident memory,
// gathered to world rank 0, which prints them when `out`. Collective.
void memory_report(Communicator& world, const BenchPlan& p, bool out);

}  // namespace parbench
