// Every hand-written algorithm x every collective it supports x ops x dtypes x in/out-of-place, on 1..8 ranks
// as threads (cpu device), with counts not divisible by the rank count: zero wrong elements.
#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <random>

#include "collectives/registry.h"
#include "collectives/bootstrap.h"
#include "sweep.h"

namespace parbench {
namespace {

struct Case {
  std::string algo;
  int ranks;
};

class Algorithms : public ::testing::TestWithParam<Case> {};

TEST_P(Algorithms, AllCollectivesExact) {
  const Case& p = GetParam();
  testing::SweepConfig cfg;
  cfg.seed = std::random_device{}();
  std::mutex mu;
  std::vector<std::string> failures;
  int calls = 0;
  LaunchOptions o;
  o.ranks = p.ranks;
  o.timeout_s = 30;
  std::string refusal;  // why the algorithm runs no collective at all on this device (the device-side ones)
  run_ranks(o, [&](Communicator& comm) {
    const Algorithm& algo = find_algorithm(p.algo);
    bool refuses_all = true;
    for (Collective c : all_collectives()) refuses_all = refuses_all && !algo.unsupported(c, comm).empty();
    if (refuses_all) {
      std::lock_guard lock(mu);
      refusal = algo.unsupported(Collective::allreduce, comm);
      return;
    }
    int mine = 0;
    auto f = testing::sweep(comm, find_algorithm(p.algo), cfg, &mine);
    std::lock_guard lock(mu);
    failures.insert(failures.end(), f.begin(), f.end());
    if (comm.rank() == 0) calls = mine;
  });
  if (!refusal.empty()) GTEST_SKIP() << p.algo << " runs nothing here: " << refusal;
  EXPECT_GT(calls, 0) << p.algo << " ran nothing";
  for (const auto& f : failures) ADD_FAILURE() << f;
}

std::vector<Case> cases() {
  std::vector<Case> v;
  for (const auto& a : handwritten_algorithm_names())
    for (int n = 1; n <= 8; ++n) v.push_back({a, n});
  return v;
}

INSTANTIATE_TEST_SUITE_P(Threads, Algorithms, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           std::string name = i.param.algo + "_" + std::to_string(i.param.ranks) + "ranks";
                           std::replace(name.begin(), name.end(), '-', '_');  // gtest names: letters, digits, _
                           return name;
                         });

}  // namespace
}  // namespace parbench
