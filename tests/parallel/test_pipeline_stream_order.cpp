#include <gtest/gtest.h>

#include "parallel/pipeline_stream_order.h"

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

TEST(PipelineStreamOrder, InterleavedNeedsTheHostTransports) {
  // Its exchanges, each one NCCL group in action order, would deadlock (a later issue order could avoid it).
  EXPECT_NE(stream_order_problem(make_schedule("interleaved", 2, 4, 2)), "");
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
