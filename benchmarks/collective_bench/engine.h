// The shared engine of bench_allreduce and its siblings: nccl-tests' options and table, one block per --impl,
// data check, CSV/JSON rows. Each bench_<collective>.cpp is a main() that calls collective_bench_main.
#pragma once
#include "collectives/table/types.h"

namespace parbench {

int collective_bench_main(Collective c, int argc, char** argv);

}  // namespace parbench
