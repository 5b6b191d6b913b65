// bench_harness_overhead: what the collective benches' harness adds to a library call. Under mpirun it times,
// side by side in one job and in alternating rounds, a bare loop of MPI_Allreduce, a bare loop of
// MPI_Iallreduce + MPI_Wait, the old harness form (MPI_Iallreduce polled with MPI_Testall against a deadline),
// and the harness itself (timing.h) running the `mpi` and `mpi-nb` implementations. It prints each form's median
// time per operation (mean over ranks) and its ratio to the bare loop of the same form. README shows a run.
#include <mpi.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "collective_bench/timing.h"
#include "base/clock.h"
#include "core/stats.h"
#include "collectives/registry.h"
#include "collectives/bootstrap.h"
#include "collectives/datacheck.h"
#include "collectives/transport/transport_mpi.h"
#include "app/program.h"
#include "benchmarks/harness_overhead_options.h"
#include "app/sizes.h"

namespace parbench {
namespace {

using Config = harness_overhead::Options;


// One bare loop form: `iters` operations timed back to back after a barrier; returns seconds per operation.
using Loop = std::function<double(int iters)>;

double bare(MPI_Comm mc, int iters, const std::function<void()>& op) {
  for (int i = 0; i < 2; ++i) op();
  MPI_Barrier(mc);
  const auto t0 = Clock::now();
  for (int i = 0; i < iters; ++i) op();
  return seconds_since(t0) / iters;
}

void run(Communicator& comm, const Config& cfg, const std::vector<std::uint64_t>& sizes) {
  MPI_Comm mc = mpi_comm_of(comm.transport());
  const bool out = comm.rank() == 0;
  if (out)
    std::printf("# %d ranks, %d alternating rounds; time per operation (mean over ranks): the rounds' median and "
                "best; busbw of the median; harness vs the bare loop of its form, median and best\n"
                "%10s  %-36s  %10s  %10s  %8s  %s\n", comm.size(), cfg.rounds, "bytes", "form", "median_us",
                "best_us", "busbw", "vs bare (median, best)");
  for (std::uint64_t bytes : sizes) {
    const int count = int(bytes / sizeof(float));
    std::vector<float> send(static_cast<std::size_t>(count), 1.0f), recv(static_cast<std::size_t>(count));
    auto blocking = [&] { MPI_Allreduce(send.data(), recv.data(), count, MPI_FLOAT, MPI_SUM, mc); };
    auto nb = [&] {
      MPI_Request r;
      MPI_Iallreduce(send.data(), recv.data(), count, MPI_FLOAT, MPI_SUM, mc, &r);
      MPI_Wait(&r, MPI_STATUS_IGNORE);
    };
    auto polled = [&] {
      MPI_Request r;
      MPI_Iallreduce(send.data(), recv.data(), count, MPI_FLOAT, MPI_SUM, mc, &r);
      mpi_wait_all(&r, 1, comm.deadline() + std::chrono::seconds(300), "bare polled");
    };
    CollectiveBuffers buf(comm, Collective::allreduce, std::size_t(count), DType::f32, ReduceOp::sum, 0, false);
    buf.fill(1);
    auto harness = [&](const char* impl) {
      return [&comm, &buf, impl](int iters) {
        TimingConfig tc;
        tc.iters = iters;
        tc.warmup = 2;
        return time_collective(comm, find_algorithm(impl), buf.args(), tc).time;
      };
    };
    const std::vector<std::pair<std::string, Loop>> forms = {
        {"bare MPI_Allreduce loop", [&](int n) { return bare(mc, n, blocking); }},
        {"harness, --impl mpi", harness("mpi")},
        {"bare MPI_Iallreduce+MPI_Wait loop", [&](int n) { return bare(mc, n, nb); }},
        {"harness, --impl mpi-nb", harness("mpi-nb")},
        {"bare Iallreduce polled (old harness)", [&](int n) { return bare(mc, n, polled); }},
    };
    // Iterations: enough for the budget, the same on every rank (rank 0's probe decides).
    double probe = forms[0].second(3);
    MPI_Bcast(&probe, 1, MPI_DOUBLE, 0, mc);
    const int iters = std::clamp(int(cfg.budget / std::max(probe, 1e-7)), 5, 200000);
    std::map<std::string, std::vector<double>> samples;
    for (int round = 0; round < cfg.rounds; ++round)
      for (const auto& [name, loop] : forms) {
        double mine = loop(iters), mean = 0;
        MPI_Allreduce(&mine, &mean, 1, MPI_DOUBLE, MPI_SUM, mc);
        samples[name].push_back(mean / comm.size());
      }
    if (!out) continue;
    double base = 0, base_min = 0;
    for (std::size_t i = 0; i < forms.size(); ++i) {
      const std::vector<double>& v = samples[forms[i].first];
      const double t = median(v), best = *std::min_element(v.begin(), v.end());
      if (i % 2 == 0 && i < 4) base = t, base_min = best;  // the bare forms head their pairs
      const double busbw = double(bytes) / t / 1e9 * busbw_factor(Collective::allreduce, comm.size());
      char ratio[48] = "";
      if (i % 2 == 1)
        std::snprintf(ratio, sizeof ratio, "%+6.1f %%  %+6.1f %%", (t / base - 1) * 100, (best / base_min - 1) * 100);
      std::printf("%10llu  %-36s  %10.3f  %10.3f  %8.3f  %s\n", (unsigned long long)bytes, forms[i].first.c_str(),
                  t * 1e6, best * 1e6, busbw, ratio);
    }
  }
}

}  // namespace
}  // namespace parbench

int main(int argc, char** argv) {
  using namespace parbench;
  Config cfg;
  return run_program(
      {"bench_harness_overhead: the collective harness's cost beside bare MPI loops (run under mpirun)",
       "bench_harness_overhead"},
      [&](CLI::App& app) { harness_overhead::add_options(app, cfg); }, argc, argv, [&](const CLI::App&) {
    const std::vector<std::uint64_t> sizes = harness_overhead::checked_sizes(cfg);  // before the launch check
    if (!launched_by_mpirun()) throw UsageError("run under mpirun (it compares MPI's own calls), e.g. mpirun -np 2");
    LaunchOptions lo;
    lo.timeout_s = 300;
    run_ranks(lo, [&](Communicator& comm) { run(comm, cfg, sizes); });
    return 0;
  });
}
