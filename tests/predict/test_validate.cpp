// The published-table reader and the leave-one-table-out predictions (predict/validate.h): bad rows are refused
// naming the file, line and value; undoing a modelling choice changes exactly what that choice models.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "base/error.h"
#include "predict/costs.h"
#include "predict/validate.h"

using namespace parbench;
using namespace parbench::predict;

namespace {

const char* kPublishedHeader =
    "table,row,system,hidden,heads,layers,seq,vocab,tp,pp,v,gpus,global_batch,micro_batch,sp,recompute,measure,"
    "published,shaped_by\n";

std::string write_published(const std::string& body) {
  const std::string path = testing::TempDir() + "published_" + std::to_string(std::rand()) + ".csv";
  std::ofstream(path) << kPublishedHeader << body;
  return path;
}

std::string published_error(const std::string& path) {
  try {
    read_published(path);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(PredictValidate, BadRowsAreRefusedNamingLineAndValue) {
  const std::string ok = "t,r,dgx-a100,6144,64,48,2048,51200,8,1,1,8,4,4,1,selective,step_s,1.1,blocking_p2p\n";
  const std::vector<PublishedRow> rows = read_published(write_published(ok));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].shaped_by, std::set<std::string>{"blocking_p2p"});
  EXPECT_TRUE(rows[0].layout.sequence_parallel);
  EXPECT_TRUE(rows[0].layout.blocking_p2p);
  std::string p = write_published(ok + "t,r,dgx-a100,6144,64,48,2048,51200,8,1,1,8,4,4,0,none,step_s,1,magic\n");
  EXPECT_NE(published_error(p).find(":3: modelling choice 'magic' is unknown; accepted: blocking_p2p"), std::string::npos)
      << published_error(p);
  p = write_published("t,r,dgx-a100,6144,64,48,2048,51200,8,1,1,16,8,4,0,none,step_s,1,-\n");  // dp 2: fine
  EXPECT_EQ(published_error(p), "no error");
  p = write_published("t,r,dgx-a100,6144,64,48,2048,51200,3,1,1,3,4,4,0,none,step_s,1,-\n");  // 64 heads, tp 3
  EXPECT_NE(published_error(p).find(":2: "), std::string::npos) << published_error(p);
  p = write_published("t,r,dgx-a100,6144,64,48,2048,51200,8,1,1,8,4,4,0,none,step_s,0,-\n");
  EXPECT_NE(published_error(p).find(":2: published must be > 0"), std::string::npos) << published_error(p);
  EXPECT_NE(published_error("/nonexistent.csv").find("cannot read /nonexistent.csv"), std::string::npos);
}

// Undoing sp_backward_regather removes exactly the two backward all-gathers of a sequence-parallel layer; undoing
// processing_no_overlap makes every op the slower of compute and memory instead of their sum.
TEST(PredictValidate, UndoingAChoiceRemovesWhatItModels) {
  const std::string body =
      "t,b,dgx-a100,6144,64,48,2048,51200,8,1,1,8,4,4,1,none,layer_backward_ms,11.8,sp_backward_regather\n"
      "t,f,dgx-a100,6144,64,48,2048,51200,8,1,1,8,4,4,1,none,layer_forward_ms,7.2,processing_no_overlap\n";
  const std::vector<PublishedRow> rows = read_published(write_published(body));
  const SystemModel sys = builtin_system("dgx-a100");
  Layout l = rows[0].layout;
  const PassCosts with = block_costs(l, sys);
  l.sp_backward_regather = false;
  const PassCosts without = block_costs(l, sys);
  EXPECT_GT(with.backward_tp, without.backward_tp);
  EXPECT_NEAR(predict_published(rows[0], {}) - predict_published(rows[0], {"sp_backward_regather"}),
              1e3 * (with.backward_tp - without.backward_tp), 1e-9);
  EXPECT_LT(predict_published(rows[1], {"processing_no_overlap"}), predict_published(rows[1], {}));
  const RowResult r = evaluate(rows[1]);
  EXPECT_LT(r.low, r.predicted);
  EXPECT_GT(r.high, r.predicted);
  EXPECT_NEAR(r.error, (r.predicted - 7.2) / 7.2, 1e-12);
  EXPECT_EQ(r.held_out, predict_published(rows[1], {"processing_no_overlap"}));
}
