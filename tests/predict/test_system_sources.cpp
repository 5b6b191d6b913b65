// The built-in systems' measured curves and the JSON forms of a network level's efficiency: a flat number (the older
// form) or a curve by the collective's bytes, points with or without a spread, and the low/high systems the spread
// gives.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "predict/collective_model.h"
#include "predict/predict.h"
#include "predict/system.h"

using namespace parbench;
using namespace parbench::predict;

namespace {

std::string system_error(const nlohmann::json& j) {
  try {
    system_from_json(j, "sys.json");
  } catch (const UsageError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

// DGX A100's NVLink takes the all_reduce_perf busbw / 300 GB/s of the collective's size: 100 MB at the 64 MiB point,
// 8 MB below the smallest measured size at the 32 MiB one; beta is 1 / (gbps x that).
TEST(PredictSources, NetworkEfficiencyFollowsTheCollectiveSize) {
  const SystemModel sys = builtin_system("dgx-a100");
  EXPECT_NEAR(link_of(sys.levels[0], 100e6).beta, 1 / (300e9 * 0.69), 1e-20);
  EXPECT_NEAR(link_of(sys.levels[0], 8e6).beta, 1 / (300e9 * 0.568), 1e-20);
  EXPECT_NEAR(link_of(sys.levels[0], 2e9).beta, 1 / (300e9 * 0.774), 1e-20);
  EXPECT_NEAR(link_of(sys.levels[1], 300e6).beta, 1 / (25e9 * 0.866), 1e-20);
  // A bigger collective is never slower per byte on the measured curve.
  double last = 0;
  for (double bytes : {1e6, 4e7, 8e7, 3e8, 2e9}) {
    const double eff = sys.levels[0].efficiency.at(bytes);
    EXPECT_GE(eff, last) << bytes;
    last = eff;
  }
}

// The spread moves every point up (fast end) or down (slow end), within (0, 1]; a curve without spread stays.
TEST(PredictSources, ShiftedSystemMovesEachPointByItsSpread) {
  const SystemModel sys = builtin_system("dgx-a100");
  const SystemModel fast = shifted_system(sys, +1), slow = shifted_system(sys, -1);
  EXPECT_NEAR(fast.gpu.matrix_efficiency.at(200), 0.83 + 0.04, 1e-12);
  EXPECT_NEAR(slow.gpu.matrix_efficiency.at(200), 0.83 - 0.04, 1e-12);
  EXPECT_NEAR(slow.gpu.matrix_efficiency.at(5), 0.49 - 0.12, 1e-12);
  EXPECT_NEAR(fast.levels[0].efficiency.at(100e6), 0.69 + 0.011, 1e-12);
  EXPECT_NEAR(fast.gpu.hbm_efficiency.at(5e6), 0.47 + 0.32, 1e-12);
  EXPECT_EQ(fast.gpu.hbm_efficiency.at(5e5), sys.gpu.hbm_efficiency.at(5e5));  // assumed, no spread: unchanged
  Curve c{{{0, 0.99}}, {0.05}};
  EXPECT_EQ(c.shifted(+1).at(1), 1.0);  // capped at 1
  EXPECT_NEAR(c.spread_at(1), 0.05, 1e-12);
}

// Every built-in GPU curve carries a spread, and each efficiency lies in (0, 1]; every level has a measured
// collective latency instead of a per-step one.
TEST(PredictSources, BuiltInCurvesAreMeasuredWithASpread) {
  for (const char* name : {"dgx-a100", "dgx-h100", "h200"}) {
    const SystemModel s = builtin_system(name);
    ASSERT_EQ(s.gpu.matrix_efficiency.spread.size(), s.gpu.matrix_efficiency.points.size()) << name;
    ASSERT_EQ(s.gpu.hbm_efficiency.spread.size(), s.gpu.hbm_efficiency.points.size()) << name;
    for (const NetLevel& l : s.levels) {
      ASSERT_EQ(l.efficiency.spread.size(), l.efficiency.points.size()) << name << " " << l.name;
      for (const auto& [threshold, eff] : l.efficiency.points) EXPECT_TRUE(eff > 0 && eff <= 1) << l.name;
      EXPECT_GT(l.collective_latency_us, 10) << name << " " << l.name;
      EXPECT_EQ(l.latency_us, 0) << name << " " << l.name;
    }
  }
}

// A level's efficiency as a number (the older files) or as a curve; what the writer writes reads back the same; a
// bad curve is refused naming the field and the accepted form.
TEST(PredictSources, NetworkEfficiencyJsonFlatOrCurve) {
  const SystemModel a = builtin_system("dgx-a100");
  nlohmann::json j = system_to_json(a);
  ASSERT_TRUE(j["network"][0]["efficiency"].is_array());
  EXPECT_EQ(j["network"][0]["efficiency"][0].size(), 3u);  // [bytes, efficiency, spread]
  const SystemModel b = system_from_json(j, "x.json");
  EXPECT_EQ(system_to_json(b), j);
  EXPECT_EQ(b.levels[0].efficiency.at(100e6), 0.69);
  EXPECT_EQ(b.levels[1].collective_latency_us, 21.27);
  // The collective latency is optional (older files: 0) and refused when negative; the vector-unit fields the cost
  // model never read are unknown now.
  nlohmann::json old = j;
  old["network"][1].erase("collective_latency_us");
  EXPECT_EQ(system_from_json(old, "x.json").levels[1].collective_latency_us, 0);
  old["network"][1]["collective_latency_us"] = -1;
  EXPECT_NE(system_error(old).find("network[1].collective_latency_us' = -1 is out of range"), std::string::npos)
      << system_error(old);
  old = j;
  old["gpu"]["vector_tflops"] = 78;
  EXPECT_NE(system_error(old).find("field 'gpu.vector_tflops' is unknown"), std::string::npos) << system_error(old);
  j["network"][0]["efficiency"] = 0.6;  // the flat form
  const SystemModel flat = system_from_json(j, "x.json");
  EXPECT_EQ(flat.levels[0].efficiency.at(1), 0.6);
  EXPECT_EQ(flat.levels[0].efficiency.at(1e12), 0.6);
  EXPECT_EQ(system_to_json(flat)["network"][0]["efficiency"], 0.6);
  j["network"][0]["efficiency"] = {{0, 0.5}, {1e6, 0.7, 0.1}};  // mixed widths
  EXPECT_NE(system_error(j).find("network[0].efficiency' must be a non-empty list of [threshold >= 0"), std::string::npos)
      << system_error(j);
  j["network"][0]["efficiency"] = {{0, 0.5, -0.1}};
  EXPECT_NE(system_error(j).find("network[0].efficiency"), std::string::npos) << system_error(j);
  j["network"][0]["efficiency"] = 1.5;
  EXPECT_NE(system_error(j).find("network[0].efficiency' = 1.5 is out of range"), std::string::npos) << system_error(j);
  j = system_to_json(a);
  j["gpu"]["matrix_efficiency"] = {{0, 0.5, 0.2}, {10, 0.8, 0.05}};  // GPU curves take spreads too, any order
  EXPECT_NEAR(system_from_json(j, "x.json").gpu.matrix_efficiency.spread_at(20), 0.05, 1e-12);
}

// The range of a step: the system at the fast end of every spread predicts the low time, the slow end the high; a
// system without spreads has no range.
TEST(PredictSources, StepRangeSpansThePrediction) {
  Layout l;
  l.model.kind = ModelKind::gpt;
  l.model.layers = 8, l.model.hidden = 2048, l.model.heads = 16, l.model.seq = 2048, l.model.vocab = 51200;
  l.model.dtype = DType::bf16;
  l.gpus = 16, l.tp = 8, l.pp = 2, l.dp = 1, l.micro_batch = 1, l.global_batch = 8;
  SystemModel sys = builtin_system("dgx-a100");
  const double step = predict_step(l, sys).time.step;
  const StepRange r = predict_step_range(l, sys);
  EXPECT_LT(r.low, step);
  EXPECT_GT(r.high, step);
  EXPECT_EQ(r.low, predict_step(l, shifted_system(sys, +1)).time.step);
  for (Curve* c : {&sys.gpu.matrix_efficiency, &sys.gpu.hbm_efficiency}) c->spread.clear();
  for (NetLevel& n : sys.levels) n.efficiency.spread.clear();
  const StepRange none = predict_step_range(l, sys);
  EXPECT_EQ(none.low, predict_step(l, sys).time.step);
  EXPECT_EQ(none.high, none.low);
}
