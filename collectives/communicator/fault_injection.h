// Test-only fault injection, off unless the environment sets PARBENCH_FAULT (no option exists for it):
//
//   PARBENCH_FAULT=rank:R,after:N,kind:exit|throw|stall|kill|flip|nowait|slow[,delay_us:D]
//
// Fault points are the operations a program measures: each measured collective a bench issues (warm-up, timed and
// check calls) and each compute action of a pipeline stage. At world rank R's fault point number N + 1:
//   exit   the rank leaves: under mpirun the process exits with status 0 as a program that returned early would
//          (MPI_Finalize included); in threads mode its thread stops taking part;
//   throw  the rank throws an Error;
//   stall  the rank stops answering: under mpirun the process stops itself (SIGSTOP); in threads mode its thread
//          blocks until the others have given up;
//   kill   the process kills itself (SIGKILL; mpirun only);
//   flip   (data corruption) in each data-check call after the first N, the first non-empty message that rank R
//          receives inside the collective gets one byte flipped after it arrived, before the algorithm uses it;
//   nowait (a missing event wait) after its first N, rank R's compute stream no longer waits for the collectives
//          it overlapped with (CommQueue::join): the stream-timing fuzz of the emulated GPU must expose the race.
//   slow   (a slow rank or link) after its first N, each step of rank R's host-driven messages that sends
//          anything (Communicator::group: a collective's step, a point-to-point exchange, a barrier round) starts
//          D microseconds late (delay_us, default 1000): that rank's sends are delayed, nothing fails.
// Off, a fault point costs one load of a static flag.
#pragma once
#include <string>

namespace parbench {

class Communicator;

struct FaultPlan {
  enum class Kind { none, exit, throw_error, stall, kill, flip, nowait, slow };
  int rank = -1;
  long after = 0;
  long delay_us = 1000;  // kind slow
  Kind kind = Kind::none;
};

// PARBENCH_FAULT parsed (UsageError naming the bad part and the accepted form); parsed once, at the first call,
// which programs make before any work so that a bad value exits 2 at once.
const FaultPlan& fault_plan();
// Parses one value of PARBENCH_FAULT (the tests' entry).
FaultPlan parse_fault_plan(const std::string& text);

inline bool faults_on() {
  static const bool on = fault_plan().kind != FaultPlan::Kind::none;
  return on;
}

// Thrown by the rank thread that leaves early in threads mode (kind exit): the bootstrap ends it quietly.
struct RankLeftEarly {};

void fault_point_slow(Communicator& world);
// A measured operation of this rank is about to run. `world` gives the world rank and, in threads mode, tells a
// stalled rank when the others have given up.
inline void fault_point(Communicator& world) {
  if (faults_on()) fault_point_slow(world);
}

// Data-check calls: the flip fault arms itself for the collective about to run on this thread (counting calls),
// and Communicator::group flips one received byte while it is armed.
void arm_flip_for_next_call(int world_rank);
void disarm_flip();
bool flip_armed();  // true once per armed call: the caller flips, which disarms it
// Whether this join of rank `world_rank`'s overlapped collectives skips its wait (kind nowait).
bool drop_stream_wait(int world_rank);
// Kind slow: before a step of rank `world_rank`'s messages that has a send, sleeps the delay when it is due.
void delay_if_slow(int world_rank);
}  // namespace parbench
