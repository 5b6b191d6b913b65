#include <gtest/gtest.h>

#include "base/error.h"
#include "parallel/pipeline_stream_order.h"
#include "parallel/schedule/play.h"

namespace parbench {

namespace {

PipeAction act(PipeOp op, int mb, int peer = -1) { return {op, mb, 0, peer}; }

// Two stages, one microbatch, the messages of stage 0's forward and stage 1's backward.
PipeSchedule two_stages(std::vector<PipeAction> first, std::vector<PipeAction> second, int microbatches = 1) {
  PipeSchedule s;
  s.name = "hand-made";
  s.stages = 2;
  s.microbatches = microbatches;
  s.actions = {std::move(first), std::move(second)};
  return s;
}

}  // namespace

TEST(PipelineStreamOrder, RegisteredSingleChunkSchedulesQualify) {
  for (const char* name : {"gpipe", "1f1b", "zb-h1"})
    for (int stages : {2, 3, 4})
      for (int micro : {stages, 2 * stages + 1})
        EXPECT_EQ(stream_order_problem(make_schedule(name, stages, micro)), "")
            << name << " at " << stages << " stages, " << micro << " microbatches";
}

TEST(PipelineStreamOrder, InterleavedRunsWithItsExchangesAtReplayTimes) {
  // Its exchanges, each one NCCL group in action order, would deadlock; moved to their replay times they complete.
  EXPECT_NE(stream_order_problem(make_schedule("interleaved", 2, 4, 2)), "");
  for (int stages : {2, 3, 4})
    for (int chunks : {2, 3})
      for (int micro : {stages, 2 * stages, 3 * stages}) {
        const PipeSchedule s = make_schedule("interleaved", stages, micro, chunks);
        const std::optional<PipeSchedule> ordered = stream_ordered_schedule(s);
        ASSERT_TRUE(ordered) << stages << " stages, " << chunks << " chunks, " << micro << " microbatches";
        EXPECT_EQ(stream_order_problem(*ordered), "");
        EXPECT_EQ(check_schedule(*ordered), std::vector<std::string>{});
        for (int st = 0; st < stages; ++st) {  // the same compute order, and every message still sent and received
          std::vector<PipeAction> before, after;
          std::size_t comm_before = 0, comm_after = 0;
          for (const PipeAction& a : s.actions[std::size_t(st)]) is_compute(a.op) ? before.push_back(a) : void(++comm_before);
          for (const PipeAction& a : ordered->actions[std::size_t(st)])
            is_compute(a.op) ? after.push_back(a) : void(++comm_after);
          EXPECT_EQ(before, after);
          EXPECT_EQ(comm_before, comm_after);
        }
      }
}

TEST(PipelineStreamOrder, SchedulesThatQualifyAsTheyAreRunUnchanged) {
  const PipeSchedule s = make_schedule("1f1b", 4, 8);
  const std::optional<PipeSchedule> ordered = stream_ordered_schedule(s);
  ASSERT_TRUE(ordered);
  EXPECT_EQ(ordered->actions, s.actions);
}

TEST(PipelineStreamOrder, ReplayTimesPlaceEachMessageBetweenItsProducerAndConsumer) {
  using enum PipeOp;
  // Stage 0 sends both activations after its second forward, and stage 1 receives the second between its
  // forwards. In the replay (F = 1, B = 2) both are sent as F1 ends, at t = 2, when stage 1's F0 starts: both
  // receives move before stage 1's F0. The gradients already sit at their times.
  const PipeSchedule s = two_stages(
      {act(forward, 0), act(forward, 1), act(send_activation, 0, 1), act(send_activation, 1, 1),
       act(recv_gradient, 0, 1), act(backward, 0), act(recv_gradient, 1, 1), act(backward, 1)},
      {act(recv_activation, 0, 0), act(forward, 0), act(recv_activation, 1, 0), act(forward, 1), act(backward, 0),
       act(send_gradient, 0, 0), act(backward, 1), act(send_gradient, 1, 0)},
      2);
  const PipeSchedule r = exchanges_at_replay_times(s);
  EXPECT_EQ(r.actions[0], s.actions[0]);
  EXPECT_EQ(r.actions[1], (std::vector<PipeAction>{act(recv_activation, 0, 0), act(recv_activation, 1, 0),
                                                   act(forward, 0), act(forward, 1), act(backward, 0),
                                                   act(send_gradient, 0, 0), act(backward, 1),
                                                   act(send_gradient, 1, 0)}));
  EXPECT_EQ(stream_order_problem(r), "");
}

TEST(PipelineStreamOrder, MessagesInACycleAreRefused) {
  using enum PipeOp;
  // Each stage receives, before its only forward, what the other sends after its own.
  const PipeSchedule s = two_stages({act(recv_gradient, 0, 1), act(forward, 0), act(send_activation, 0, 1)},
                                    {act(recv_activation, 0, 0), act(forward, 0), act(send_gradient, 0, 0)});
  EXPECT_THROW(exchanges_at_replay_times(s), Error);
}

TEST(PipelineStreamOrder, MatchingGroupsInOneExchangeQualify) {
  using enum PipeOp;
  // Stage 0 sends its activation and receives the gradient later; stage 1 mirrors it.
  EXPECT_EQ(stream_order_problem(two_stages(
                {act(forward, 0), act(send_activation, 0, 1), act(recv_gradient, 0, 1), act(backward, 0)},
                {act(recv_activation, 0, 0), act(forward, 0), act(backward, 0), act(send_gradient, 0, 0)})),
            "");
}

TEST(PipelineStreamOrder, MessagesReceivedInAnotherOrderAreRefused) {
  using enum PipeOp;
  const PipeSchedule s = two_stages(
      {act(forward, 0), act(send_activation, 0, 1), act(forward, 1), act(send_activation, 1, 1),
       act(recv_gradient, 0, 1), act(backward, 0), act(recv_gradient, 1, 1), act(backward, 1)},
      {act(recv_activation, 1, 0), act(recv_activation, 0, 0), act(forward, 0), act(forward, 1), act(backward, 0),
       act(send_gradient, 0, 0), act(backward, 1), act(send_gradient, 1, 0)},
      2);
  EXPECT_EQ(stream_order_problem(s), "stage 1 receives the messages of stage 0 in another order than they are sent");
}

TEST(PipelineStreamOrder, SendsWhoseReceivesComeAfterThePeersSendsWouldWaitForever) {
  using enum PipeOp;
  // Each stage first sends (a group of its own), and receives only in its next group: with sends that complete
  // only once received, neither first group ever completes.
  const PipeSchedule s = two_stages(
      {act(forward, 0), act(send_activation, 0, 1), act(forward, 1), act(recv_gradient, 0, 1), act(backward, 0)},
      {act(forward, 0), act(send_gradient, 0, 0), act(forward, 1), act(recv_activation, 0, 0), act(backward, 0)});
  EXPECT_EQ(stream_order_problem(s),
            "stage 0's exchange 0 would wait forever for a peer's (NCCL completes a send only once its receive is "
            "posted)");
}

}  // namespace parbench
