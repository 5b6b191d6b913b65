// bench_allreduce: nccl-tests-style sweep of allreduce over the chosen implementations (see collective_bench/engine.h).
#include "collective_bench/engine.h"

int main(int argc, char** argv) { return parbench::collective_bench_main(parbench::Collective::allreduce, argc, argv); }
