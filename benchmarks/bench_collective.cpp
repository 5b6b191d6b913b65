// bench_<collective>: nccl-tests-style sweep of one collective over the chosen implementations (see
// collective_bench/engine.h); built once per collective table row, the name given by benchmarks/collectives.cmake.
#include "collective_bench/engine.h"
#include "collectives/table/collective_table.h"

int main(int argc, char** argv) {
  return parbench::collective_bench_main(parbench::parse_collective(PARBENCH_BENCH_COLLECTIVE), argc, argv);
}
