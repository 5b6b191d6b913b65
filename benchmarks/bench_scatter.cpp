// bench_scatter: nccl-tests-style sweep of scatter over the chosen implementations (see collective_bench/engine.h).
#include "collective_bench/engine.h"

int main(int argc, char** argv) { return parbench::collective_bench_main(parbench::Collective::scatter, argc, argv); }
