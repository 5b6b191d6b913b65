// The algorithm sweep under mpirun (one process per rank, MPI transport), the mpi library implementation
// included. Registered in ctest as `mpirun -np 2` and `-np 4`; without mpirun it skips.
#include <gtest/gtest.h>

#include <random>

#include "collectives/registry.h"
#include "collectives/bootstrap.h"
#include "sweep.h"

namespace parbench {
namespace {

TEST(Mpi, EveryImplementationExact) {
  if (!launched_by_mpirun()) GTEST_SKIP() << "run under mpirun";
  testing::SweepConfig cfg;
  cfg.seed = 12345;  // every rank must use the same seed
  int calls = 0;
  LaunchOptions o;
  o.timeout_s = 60;
  run_ranks(o, [&](Communicator& comm) {
    for (const auto& name : algorithm_names()) {
      const Algorithm& a = find_algorithm(name);
      for (const auto& f : testing::sweep(comm, a, cfg, &calls)) ADD_FAILURE() << f;
    }
    // Sub-groups over MPI_Comm_split.
    Communicator half = comm.split(comm.rank() % 2, comm.rank());
    double mine = 1, sum = 0;
    half.allreduce(&mine, &sum, 1, DType::f64, ReduceOp::sum, &find_algorithm("mpi"));
    EXPECT_EQ(sum, double(half.size()));
  });
  EXPECT_GT(calls, 100);
}

}  // namespace
}  // namespace parbench
