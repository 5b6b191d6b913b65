// --expect's figures against values worked out by hand from the alpha-beta formulas (predict/README.md) on a
// two-level system with round numbers: which model each implementation takes, the placement of ranks on nodes,
// the rows without a model and the share of the expected time.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "collective_bench/expectation.h"

namespace {

using namespace parbench;
using ::testing::HasSubstr;

// Inside a node (2 ranks): 1 us per message, 1 GB/s; across nodes: 10 us, 0.1 GB/s per rank; no fixed latency.
std::filesystem::path write_system() {
  auto path = std::filesystem::temp_directory_path() / ("pb_expect_" + std::to_string(getpid()) + ".json");
  std::ofstream(path) << R"({"name": "round", "collective_algorithms": "every",
    "gpu": {"name": "cpu", "matrix_tflops_16": 1, "matrix_tflops_32": 1, "hbm_gbps": 1, "hbm_gb": 1,
            "matrix_efficiency": [[0, 1]], "hbm_efficiency": [[0, 1]]},
    "network": [{"name": "inner", "gpus": 2, "gbps": 1, "latency_us": 1, "efficiency": [[0, 1]]},
                {"name": "outer", "gpus": 1048576, "gbps": 0.1, "latency_us": 10, "efficiency": [[0, 1]]}]})";
  return path;
}

class ExpectationTest : public ::testing::Test {
 protected:
  void TearDown() override { std::filesystem::remove(path_); }
  std::filesystem::path path_ = write_system();
  Expectation e_{path_.string()};
};

TEST(ModelledAlgorithm, ImplementationsToModels) {
  EXPECT_EQ(modelled_algorithm("ring"), "ring");
  EXPECT_EQ(modelled_algorithm("ring-dev"), "ring");
  EXPECT_EQ(modelled_algorithm("rhd-dev"), "rhd");
  EXPECT_EQ(modelled_algorithm("hier"), "hierarchical");
  EXPECT_EQ(modelled_algorithm("nccl"), "");  // the least of the models
  EXPECT_EQ(modelled_algorithm("mpi"), "");
  EXPECT_EQ(modelled_algorithm("naive"), std::nullopt);
  EXPECT_EQ(modelled_algorithm("tree"), std::nullopt);
}

// 4 ranks on one node: every step on the inner link (alpha 1e-6 s, beta 1e-9 s/B).
TEST_F(ExpectationTest, OneNodeTakesTheInnerLink) {
  EXPECT_EQ(e_.system_name(), "round");
  // ring allreduce: 2(p-1) alpha + 2(p-1)/p B beta = 6e-6 + 1.5e6 x 1e-9
  EXPECT_NEAR(*e_.seconds(Collective::allreduce, "ring", 1e6, 4, 1), 1.506e-3, 1e-12);
  // recursive doubling: log2(p) (alpha + B beta)
  EXPECT_NEAR(*e_.seconds(Collective::allreduce, "rd", 1e6, 4, 1), 2 * (1e-6 + 1e-3), 1e-12);
  // ring allgather: (p-1) alpha + (p-1)/p B beta
  EXPECT_NEAR(*e_.seconds(Collective::allgather, "ring", 1e6, 4, 1), 3e-6 + 0.75e-3, 1e-12);
  EXPECT_EQ(e_.seconds(Collective::allreduce, "hier", 1e6, 4, 1), std::nullopt);  // needs several nodes
}

// 2 nodes x 2 ranks: flat algorithms on the outer link with the node's two ranks sharing it (beta 5e-9 s/B).
TEST_F(ExpectationTest, TwoNodesShareTheOuterLink) {
  EXPECT_NEAR(*e_.seconds(Collective::allreduce, "ring", 1e6, 4, 2), 6 * 10e-6 + 1.5e6 * 5e-9, 1e-12);
  EXPECT_NEAR(*e_.seconds(Collective::allreduce, "rhd", 1e6, 4, 2), 4 * 10e-6 + 1.5e6 * 5e-9, 1e-12);
  // hierarchical: ring allreduce inside the node (2e-6 + 1e6 x 1e-9), then a ring over the 2 nodes of the
  // half each rank owns (2 x 10e-6 + 0.5e6 x 1e-8): 6.022e-3, the least of all, which a library is expected to pick
  const double hier = 2e-6 + 1e-3 + 20e-6 + 5e-3;
  EXPECT_NEAR(*e_.seconds(Collective::allreduce, "hier", 1e6, 4, 2), hier, 1e-12);
  EXPECT_NEAR(*e_.seconds(Collective::allreduce, "mpi", 1e6, 4, 2), hier, 1e-12);
  // one message between ranks on different nodes
  EXPECT_NEAR(*e_.seconds(Collective::sendrecv, "ring", 1e6, 4, 2), 10e-6 + 1e6 * 5e-9, 1e-12);
}

TEST_F(ExpectationTest, NoModelSaysWhy) {
  EXPECT_EQ(e_.seconds(Collective::allreduce, "naive", 1e6, 4, 1), std::nullopt);
  EXPECT_EQ(e_.seconds(Collective::broadcast, "ring", 1e6, 4, 1), std::nullopt);
  EXPECT_EQ(e_.seconds(Collective::allreduce, "ring", 1e6, 1, 1), std::nullopt);
  EXPECT_EQ(e_.seconds(Collective::reduce_scatter, "rd", 1e6, 4, 1), std::nullopt);
  EXPECT_EQ(e_.basis(Collective::allreduce, "naive", 4, 1), "no model of naive's algorithm");
  EXPECT_EQ(e_.basis(Collective::broadcast, "ring", 4, 1), "no model of broadcast");
  EXPECT_EQ(e_.basis(Collective::allreduce, "ring", 1, 1), "one rank");
  EXPECT_EQ(e_.basis(Collective::allreduce, "ring", 4, 1), "the alpha-beta model of ring");
  EXPECT_THAT(e_.basis(Collective::allreduce, "nccl", 4, 1), HasSubstr("the least of the alpha-beta models"));
  EXPECT_THAT(e_.basis(Collective::allreduce, "hier", 4, 1), HasSubstr("no model of hierarchical"));
}

TEST(PercentOfExpected, ExpectedOverMeasured) {
  EXPECT_DOUBLE_EQ(percent_of_expected(1.0, 2.0), 50.0);
  EXPECT_DOUBLE_EQ(percent_of_expected(3.0, 2.0), 150.0);
  EXPECT_DOUBLE_EQ(percent_of_expected(1.0, 0.0), 0.0);  // a row that did not run
}

TEST(ExpectationSystem, BadSystemNamesTheOptionAndTheValue) {
  try {
    Expectation e("/no/such/system.json");
    FAIL() << "a missing file was accepted";
  } catch (const UsageError& err) {
    EXPECT_THAT(err.what(), HasSubstr("--expect: cannot read system file /no/such/system.json"));
    EXPECT_THAT(err.what(), HasSubstr("accepted: a built-in name or FILE.json"));
  }
  try {
    Expectation e("dgx-z9000");
    FAIL() << "an unknown built-in name was accepted";
  } catch (const UsageError& err) {
    EXPECT_THAT(err.what(), HasSubstr("--expect 'dgx-z9000' is unknown; accepted: dgx-a100"));
  }
}

}  // namespace
