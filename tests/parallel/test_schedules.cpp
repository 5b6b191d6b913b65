// Pipeline schedules without a model: generated lists pass the checker, simulated bubbles match the closed forms,
// in-flight peaks match 1F1B's bound, and broken lists are caught.
#include <gtest/gtest.h>

#include <algorithm>

#include <cstdio>
#include <fstream>
#include <unistd.h>

#include "base/error.h"
#include "parallel/schedule/play.h"

using namespace parbench;

namespace {
bool allowed(const std::string& name, int p, int m, int v) {
  try {
    find_schedule_kind(name).validate(p, m, v);
    return true;
  } catch (const UsageError&) {
    return false;
  }
}
}  // namespace

TEST(Schedules, AllGeneratedListsPassTheChecker) {
  int checked = 0;
  for (const auto& kind : schedule_kinds())
    for (int p = 1; p <= 8; ++p)
      for (int m = 1; m <= 16; ++m)
        for (int v = 1; v <= 4; ++v) {
          std::string name(kind.name);
          if (!allowed(name, p, m, v)) continue;
          PipeSchedule s = make_schedule(name, p, m, v);
          auto problems = check_schedule(s);
          ASSERT_TRUE(problems.empty()) << name << " p=" << p << " m=" << m << " v=" << v << ": " << problems[0];
          ++checked;
        }
  EXPECT_GT(checked, 8 * 16 + 8 * 16 / 2);
}

TEST(Schedules, UnitCostBubbleEqualsClosedForm) {
  PipeCosts unit;  // F = 1, B = 2 (input + weight)
  int compared = 0;
  for (const auto& kind : schedule_kinds())
    for (int p = 1; p <= 8; ++p)
      for (int m = 1; m <= 16; ++m)
        for (int v = 1; v <= 4; ++v) {
          const std::string name(kind.name);
          if (!allowed(name, p, m, v)) continue;
          auto sim = simulate_schedule(make_schedule(name, p, m, v), unit);
          double expected = kind.bubble(p, m, v);
          ++compared;
          for (int st = 0; st < p; ++st)
            ASSERT_NEAR(sim.bubble[st], expected, 1e-12) << name << " p=" << p << " m=" << m << " v=" << v
                                                         << " stage " << st;
        }
  EXPECT_GT(compared, 8 * 16 * 3);  // every kind took part, not only the ones with few constraints
}

// A replay with each action's unit cost listed per action is the uniform-cost simulation, for every schedule.
TEST(Schedules, ReplayOfUnitCostsIsTheUnitSimulation) {
  PipeCosts unit;
  for (const auto& kind : schedule_kinds())
    for (int p = 1; p <= 4; ++p)
      for (int m = 1; m <= 8; ++m) {
        const std::string name(kind.name);
        const int v = kind.multi_chunk ? 2 : 1;
        if (!allowed(name, p, m, v)) continue;
        PipeSchedule s = make_schedule(name, p, m, v);
        std::vector<std::vector<double>> costs(static_cast<std::size_t>(p));
        for (int st = 0; st < p; ++st)
          for (const PipeAction& a : s.actions[std::size_t(st)]) {
            if (a.op == PipeOp::forward) costs[std::size_t(st)].push_back(unit.forward);
            if (a.op == PipeOp::backward) costs[std::size_t(st)].push_back(unit.backward);
            if (a.op == PipeOp::backward_input) costs[std::size_t(st)].push_back(unit.backward_input);
            if (a.op == PipeOp::backward_weight) costs[std::size_t(st)].push_back(unit.backward_weight);
          }
        PipeSimulation replay = replay_schedule(s, costs), sim = simulate_schedule(s, unit);
        EXPECT_DOUBLE_EQ(replay.makespan, sim.makespan) << name << " p=" << p << " m=" << m;
        EXPECT_EQ(replay.bubble, sim.bubble) << name << " p=" << p << " m=" << m;
      }
}

// GPipe, 2 stages, 2 microbatches, stage 0's second forward slow (3). Stage 0: F0 [0,1] F1 [1,4]; stage 1: F0
// [1,2] F1 [4,5] B0 [5,7] B1 [7,9]; stage 0: B0 [7,9] B1 [9,11]. Makespan 11, busy 8 and 6.
TEST(Schedules, ReplayOfMeasuredTimesByHand) {
  PipeSchedule s = make_schedule("gpipe", 2, 2);
  PipeSimulation r = replay_schedule(s, {{1, 3, 2, 2}, {1, 1, 2, 2}});
  EXPECT_DOUBLE_EQ(r.makespan, 11);
  EXPECT_DOUBLE_EQ(r.busy[0], 8);
  EXPECT_DOUBLE_EQ(r.busy[1], 6);
  EXPECT_DOUBLE_EQ(r.bubble[0], 3.0 / 11);
  EXPECT_DOUBLE_EQ(r.bubble[1], 5.0 / 11);
  try {
    replay_schedule(s, {{1, 3, 2}, {1, 1, 2, 2}});
    FAIL() << "three costs for four compute actions were accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("stage 0 has 4 compute actions but 3 costs"), std::string::npos) << e.what();
  }
  EXPECT_THROW(replay_schedule(s, {{1, 3, 2, 2}}), Error);
}

TEST(Schedules, ZeroBubbleBeatsOneFOneB) {
  PipeCosts unit;  // F = BI = W = 1, full B = 2
  for (int p = 2; p <= 8; ++p)
    for (int m = p; m <= 16; ++m) {
      double zb = simulate_schedule(make_schedule("zb-h1", p, m), unit).mean_bubble();
      double ofob = simulate_schedule(make_schedule("1f1b", p, m), unit).mean_bubble();
      ASSERT_LT(zb, ofob) << "p=" << p << " m=" << m;
    }
  // With equal F, BI and W only a third of 1F1B's idle time is left: (p-1)/(3m+p-1).
  for (int p = 1; p <= 8; ++p)
    for (int m = p; m <= 16; ++m) {
      auto sim = simulate_schedule(make_schedule("zb-h1", p, m), unit);
      for (int st = 0; st < p; ++st) ASSERT_NEAR(sim.bubble[st], find_schedule_kind("zb-h1").bubble(p, m, 1), 1e-12);
    }
}

// Ranks bound to units share their own unit only. GPipe, 2 stages, 2 microbatches, F = 1, B = 2: each stage on a
// unit of its own plays as unshared (9); both bound to one of 2 units play as on one unit (fully serial, 12). 1F1B,
// 4 stages, 4 microbatches, on 2 units bound 0, 1, 0, 1 (as bench_train --pin binds ranks): 32, where the shared
// play takes 27 (a bound stage cannot use the other unit while it idles). From t = 2 stages 0 and 2 halve unit 0
// (their forwards end at 4, stage 1's at 3), from 4 both units are halved (all four forwards end at 6), stage 3's
// first backward runs alone 6-8, stage 2's 8-10, and so on. A unit outside the rounded count is refused.
TEST(Schedules, BoundComputeUnits) {
  PipeCosts bound;
  bound.compute_units = 2;
  bound.stage_units = {{0}, {1}};
  EXPECT_NEAR(simulate_schedule(make_schedule("gpipe", 2, 2), bound).makespan, 9, 1e-9);
  EXPECT_NEAR(simulate_schedule(make_schedule("gpipe", 2, 2)).makespan, 9, 1e-9);
  bound.stage_units = {{0}, {0}};
  EXPECT_NEAR(simulate_schedule(make_schedule("gpipe", 2, 2), bound).makespan, 12, 1e-9);
  bound.stage_units = {{0}, {1}, {0}, {1}};
  const PipeSimulation alternating = simulate_schedule(make_schedule("1f1b", 4, 4), bound);
  EXPECT_NEAR(alternating.makespan, 32, 1e-9);
  const auto& stage2 = alternating.timeline[2];
  const auto first_forward = std::find_if(stage2.begin(), stage2.end(),
                                          [](const TimedAction& a) { return a.action.op == PipeOp::forward; });
  ASSERT_NE(first_forward, stage2.end());
  EXPECT_NEAR(first_forward->start, 2, 1e-9);
  EXPECT_NEAR(first_forward->end, 4, 1e-9);  // at half speed: stage 0 shares unit 0
  bound.stage_units = {{0}, {1}, {2}, {1}};
  EXPECT_THROW(simulate_schedule(make_schedule("1f1b", 4, 4), bound), Error);
}

// Stages sharing compute units (processor sharing), by hand. 1F1B, 4 stages, 4 microbatches, F = 1, B = 2 on 2
// units: 27 (perfect packing would take the 48 units of work / 2 = 24, but fill and drain leave a unit idle; own
// units: 21). GPipe on 2 stages with 1 unit: fully serial, the 12 of work. One stage of 4 ranks on 2 units: twice
// its time. Enough units for every rank: the unshared play, action for action.
TEST(Schedules, SharedComputeUnits) {
  PipeCosts shared;
  shared.compute_units = 2;
  EXPECT_NEAR(simulate_schedule(make_schedule("1f1b", 4, 4), shared).makespan, 27, 1e-9);
  EXPECT_NEAR(simulate_schedule(make_schedule("1f1b", 4, 4)).makespan, 21, 1e-9);
  shared.compute_units = 1;
  EXPECT_NEAR(simulate_schedule(make_schedule("gpipe", 2, 2), shared).makespan, 12, 1e-9);
  shared.compute_units = 2, shared.ranks_per_stage = 4;
  EXPECT_NEAR(simulate_schedule(make_schedule("1f1b", 1, 3), shared).makespan, 2 * 9, 1e-9);
  shared.compute_units = 8, shared.ranks_per_stage = 1, shared.transfer = 0.25;
  PipeCosts own;
  own.transfer = 0.25;
  for (const char* name : {"1f1b", "gpipe", "zb-h1"}) {
    const PipeSimulation a = simulate_schedule(make_schedule(name, 4, 6), shared);
    const PipeSimulation b = simulate_schedule(make_schedule(name, 4, 6), own);
    EXPECT_NEAR(a.makespan, b.makespan, 1e-9) << name;
    for (int st = 0; st < 4; ++st) {
      ASSERT_EQ(a.timeline[st].size(), b.timeline[st].size()) << name;
      for (std::size_t k = 0; k < a.timeline[st].size(); ++k)
        EXPECT_NEAR(a.timeline[st][k].end, b.timeline[st][k].end, 1e-9) << name << " stage " << st << " action " << k;
    }
  }
}

TEST(Schedules, InFlightPeaks) {
  for (int p = 1; p <= 8; ++p)
    for (int m = p; m <= 16; ++m) {
      auto ofob = simulate_schedule(make_schedule("1f1b", p, m));
      auto gpipe = simulate_schedule(make_schedule("gpipe", p, m));
      auto zb = simulate_schedule(make_schedule("zb-h1", p, m));
      for (int s = 0; s < p; ++s) {
        ASSERT_EQ(ofob.peak_in_flight[s], std::min(m, p - s)) << "p=" << p << " m=" << m << " s=" << s;
        ASSERT_EQ(gpipe.peak_in_flight[s], m);
        ASSERT_LE(zb.peak_in_flight[s], std::min(m, p));  // 1F1B's peak (its first stage's)
      }
    }
}

TEST(Schedules, CheckerCatchesBrokenLists) {
  PipeSchedule s = make_schedule("1f1b", 3, 4);
  {
    PipeSchedule dropped = s;  // a forward missing
    auto& list = dropped.actions[1];
    list.erase(std::find_if(list.begin(), list.end(), [](auto& a) { return a.op == PipeOp::forward; }));
    auto problems = check_schedule(dropped);
    ASSERT_FALSE(problems.empty());
    EXPECT_NE(problems[0].find("stage 1 mb=0 chunk=0: 0 forwards"), std::string::npos) << problems[0];
  }
  {
    PipeSchedule swapped = s;  // the last stage runs backward 0 before forward 0: dependency broken
    auto& list = swapped.actions[2];
    auto f = std::find(list.begin(), list.end(), PipeAction{PipeOp::forward, 0, 0});
    auto b = std::find(list.begin(), list.end(), PipeAction{PipeOp::backward, 0, 0});
    std::iter_swap(f, b);
    auto problems = check_schedule(swapped);
    ASSERT_EQ(problems.size(), 1u);
    EXPECT_NE(problems[0].find("stage 2 B mb=0 chunk=0: runs before its own forward"), std::string::npos);
  }
  {
    // Stage 0 waits for gradient 0 before sending activation 1, which stage 1 receives before it can go on
    // to gradient 0: a cycle of blocking receives.
    PipeSchedule deadlock = s;
    auto& list = deadlock.actions[0];
    auto recv = std::find(list.begin(), list.end(), PipeAction{PipeOp::recv_gradient, 0, 0, 1});
    PipeAction moved = *recv;
    list.erase(recv);
    list.insert(std::find(list.begin(), list.end(), PipeAction{PipeOp::send_activation, 0, 0, 1}) + 1, moved);
    auto problems = check_schedule(deadlock);
    ASSERT_EQ(problems.size(), 1u);
    EXPECT_NE(problems[0].find("deadlocks"), std::string::npos) << problems[0];
    EXPECT_NE(problems[0].find("stage 0 recv_grad mb=0"), std::string::npos) << problems[0];
    EXPECT_NE(problems[0].find("stage 1 recv_act mb=1"), std::string::npos) << problems[0];
  }
  {
    PipeSchedule extra = s;  // a send without its receive
    extra.actions[0].push_back({PipeOp::send_activation, 3, 0, 1});
    auto problems = check_schedule(extra);
    ASSERT_FALSE(problems.empty());
    EXPECT_NE(problems[0].find("2 sends, 1 receives"), std::string::npos) << problems[0];
  }
  {
    // Stage 1 receives activations 0 and 1 in the other order: with ordered channels it would wait for 1 while
    // 0 is in front of it.
    PipeSchedule reordered = s;
    auto& list = reordered.actions[1];
    auto r0 = std::find(list.begin(), list.end(), PipeAction{PipeOp::recv_activation, 0, 0, 0});
    auto r1 = std::find(list.begin(), list.end(), PipeAction{PipeOp::recv_activation, 1, 0, 0});
    std::swap(r0->microbatch, r1->microbatch);
    std::iter_swap(std::find(list.begin(), list.end(), PipeAction{PipeOp::forward, 0, 0}),
                   std::find(list.begin(), list.end(), PipeAction{PipeOp::forward, 1, 0}));
    auto problems = check_schedule(reordered);
    ASSERT_FALSE(problems.empty());
    EXPECT_NE(problems.back().find("stage 1 receives the messages of stage 0 in another order"), std::string::npos)
        << problems.back();
  }
}

TEST(Schedules, BadConfigurationsAreRefused) {
  EXPECT_THROW(make_schedule("1f1b", 4, 2), UsageError);
  EXPECT_THROW(make_schedule("interleaved", 4, 6, 2), UsageError);
  EXPECT_THROW(make_schedule("gpipe", 2, 4, 2), UsageError);
  EXPECT_THROW(make_schedule("gpipe", 0, 4), UsageError);
  try {
    make_schedule("pipedream", 2, 4);
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'pipedream'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("zb-h1"), std::string::npos);
  }
}

// The registry's multi-chunk fact agrees with what each schedule accepts: a multi-chunk schedule runs 2 chunks per
// stage, the others refuse them; interleaved is the one multi-chunk schedule.
TEST(Schedules, MultiChunkFactMatchesWhatEachScheduleAccepts) {
  std::vector<std::string> multi;
  for (const auto& kind : schedule_kinds()) {
    const std::string name(kind.name);
    EXPECT_EQ(allowed(name, 2, 4, 2), kind.multi_chunk) << name;
    EXPECT_TRUE(allowed(name, 2, 4, 1)) << name;
    if (kind.multi_chunk) multi.push_back(name);
  }
  EXPECT_EQ(multi, std::vector<std::string>{"interleaved"});
  EXPECT_EQ(multi_chunk_schedule_names(), "interleaved");
  try {
    make_schedule("1f1b", 2, 4, 3);
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()),
              "1f1b has one model chunk per stage, got --virtual-stages 3; use the interleaved schedule for v > 1");
  }
}

// Every registered name resolves to its own entry and back; a .csv name is a file, which may hold several chunks.
TEST(Schedules, EveryNameRoundTripsThroughParse) {
  for (const auto& kind : schedule_kinds()) {
    const ScheduleRef ref = ScheduleRef::parse(kind.name);
    EXPECT_EQ(ref.kind, &kind) << kind.name;
    EXPECT_EQ(ref.name(), kind.name);
    EXPECT_EQ(ref.multi_chunk(), kind.multi_chunk) << kind.name;
  }
  const ScheduleRef file = ScheduleRef::parse("dir/mine.csv");
  EXPECT_EQ(file.kind, nullptr);
  EXPECT_EQ(file.name(), "dir/mine.csv");
  EXPECT_TRUE(file.multi_chunk());
  EXPECT_TRUE(ScheduleRef{}.empty());
  EXPECT_FALSE(ScheduleRef{}.multi_chunk());
  try {
    ScheduleRef::parse("1F1B");
    FAIL() << "a misspelt schedule was accepted";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "unknown pipeline schedule '1F1B'; accepted: gpipe, 1f1b, interleaved, zb-h1, or "
                                     "a FILE.csv of compute actions");
  }
}

namespace {
// A file under /tmp removed with the test.
struct TempCsv {
  std::string path = "/tmp/pb_schedule_" + std::to_string(::getpid()) + "_" +
                     ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".csv";
  explicit TempCsv(const std::string& text = "") {
    if (!text.empty()) std::ofstream(path) << text;
  }
  ~TempCsv() { std::remove(path.c_str()); }
};

std::string usage_error_of(const std::string& path, int p, int m, int v) {
  try {
    make_schedule(path, p, m, v);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "no error";
}
}  // namespace

// Every registered schedule written as compute actions and read back is the same list, sends and receives included,
// and its file's theory bubble (simulated) equals the closed form.
TEST(ScheduleFiles, EveryRegisteredScheduleRoundTrips) {
  for (const auto& kind : schedule_kinds()) {
    const std::string name(kind.name);
    const int p = 3, m = 6, v = kind.multi_chunk ? 2 : 1;
    PipeSchedule made = make_schedule(name, p, m, v);
    TempCsv file;
    write_schedule_csv(made, file.path);
    PipeSchedule read = make_schedule(file.path, p, m, v);
    EXPECT_EQ(read.actions, made.actions) << name;
    EXPECT_EQ(read.split_backward, made.split_backward) << name;
    EXPECT_NEAR(bubble_theory(read), kind.bubble(p, m, v), 1e-12) << name;
    EXPECT_EQ(bubble_theory(made), kind.bubble(p, m, v)) << name;
  }
}

// A hand-written 2-stage schedule: stage 1 runs both forwards before the backwards (GPipe on one stage, 1F1B on
// the other) and is accepted; the executor's input is the same kind of list.
TEST(ScheduleFiles, HandWrittenMixedScheduleIsAccepted) {
  TempCsv file(
      "stage,op,microbatch,chunk\n"
      "0,F,0,0\n0,F,1,0\n0,B,0,0\n0,B,1,0\n"
      "1,F,0,0\n1,B,0,0\n1,F,1,0\n1,B,1,0\n");
  PipeSchedule s = make_schedule(file.path, 2, 2, 1);
  EXPECT_TRUE(check_schedule(s).empty());
  EXPECT_EQ(s.actions[1].front(), (PipeAction{PipeOp::recv_activation, 0, 0, 0}));
  EXPECT_GT(bubble_theory(s), 0.0);
}

TEST(ScheduleFiles, BadFilesAreRefusedNamingTheProblem) {
  EXPECT_NE(usage_error_of("/nonexistent/s.csv", 2, 2, 1).find("cannot read schedule file '/nonexistent/s.csv'"),
            std::string::npos);
  {
    TempCsv f("stage,op,microbatch\n0,F,0\n");
    EXPECT_NE(usage_error_of(f.path, 1, 1, 1).find("chunk"), std::string::npos) << usage_error_of(f.path, 1, 1, 1);
  }
  {
    TempCsv f("stage,op,microbatch,chunk\n0,F,0,0\n0,send_act,0,0\n");
    const std::string e = usage_error_of(f.path, 1, 1, 1);
    EXPECT_NE(e.find(":3: op 'send_act' is not a compute action; accepted: F, B, BI or W"), std::string::npos) << e;
  }
  {
    TempCsv f("stage,op,microbatch,chunk\n0,F,-1,0\n");
    EXPECT_NE(usage_error_of(f.path, 1, 1, 1).find("microbatch -1 is outside"), std::string::npos);
  }
  {
    TempCsv f("stage,op,microbatch,chunk\n0,F,x,0\n");
    EXPECT_NE(usage_error_of(f.path, 1, 1, 1).find("schedule file"), std::string::npos);
  }
  {
    TempCsv f("stage,op,microbatch,chunk\n");
    EXPECT_NE(usage_error_of(f.path, 1, 1, 1).find("has no actions"), std::string::npos);
  }
  {  // a forward missing on stage 1 and a backward before its forward on stage 0
    TempCsv f("stage,op,microbatch,chunk\n0,B,0,0\n0,F,0,0\n1,B,0,0\n");
    const std::string e = usage_error_of(f.path, 2, 1, 1);
    EXPECT_NE(e.find("is not a valid schedule"), std::string::npos) << e;
    EXPECT_NE(e.find("stage 1 mb=0 chunk=0: 0 forwards"), std::string::npos) << e;
  }
  {  // a valid file whose dimensions differ from the run's
    TempCsv f("stage,op,microbatch,chunk\n0,F,0,0\n0,B,0,0\n");
    const std::string e = usage_error_of(f.path, 2, 1, 1);
    EXPECT_NE(e.find("has 1 stages, 1 microbatches and 1 chunks per stage, but the run has --pp 2"),
              std::string::npos) << e;
  }
}
