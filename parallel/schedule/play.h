// Plays a schedule with given action costs: timing of every action, busy time and bubble per stage, peak
// microbatches in flight. Also the checker, which plays it with unit costs and verifies every rule.
#pragma once
#include <string>
#include <vector>

#include "parallel/schedule/schedule.h"

namespace parbench {

struct PipeCosts {
  double forward = 1;
  double backward = 2;         // full backward (input + weight gradients)
  double backward_input = 1;
  double backward_weight = 1;
  double transfer = 0;         // a send's time on its stage's communication stream (sends of a stage queue there)
  // Sends that hold their stage until the data arrived (a blocking send, as Megatron's 2022 pipeline waited for
  // its batched send/receive before computing on), instead of leaving on the communication stream.
  bool blocking_sends = false;
  // When not empty: [stage][k] is the cost of the k-th compute action in that stage's list, replacing the four
  // uniform costs above (a replay of measured action times).
  std::vector<std::vector<double>> per_action;
  // Compute units the stages share (a CPU's cores; 0: every stage computes on its own). The compute actions running
  // at one time each progress at min(1, units / (running actions x ranks_per_stage)) of their speed, as an operating
  // system shares cores among busy threads; sends, receives and transfers take no unit.
  double compute_units = 0;
  double ranks_per_stage = 1;  // ranks (threads) that compute for one stage at once
  // When not empty (one list per stage): the unit each of the stage's ranks is bound to, 0 to U - 1 (U:
  // compute_units rounded, at least 1). A unit's share (compute_units / U) then goes to the running ranks bound to it
  // alone, and a stage progresses at its slowest rank's share: bound threads keep their core even while another
  // core idles.
  std::vector<std::vector<int>> stage_units;
  // U: the units bound ranks are numbered over.
  int bound_units() const { return compute_units < 1.5 ? 1 : int(compute_units + 0.5); }
};

struct TimedAction {
  PipeAction action;
  double start, end;
};

struct PipeSimulation {
  double makespan = 0;
  std::vector<double> busy;               // compute time per stage
  std::vector<double> bubble;             // 1 - busy / makespan per stage
  std::vector<int> peak_in_flight;        // microbatch-chunks forwarded but not yet fully backpropagated
  std::vector<std::vector<TimedAction>> timeline;
  double mean_bubble() const;
};

// Throws Error with the stage and action where the schedule deadlocks or breaks a dependency.
PipeSimulation simulate_schedule(const PipeSchedule& s, const PipeCosts& costs = {});

// The schedule replayed with measured compute-action times ([stage][k], in list order) and free communication:
// the bubble that the schedule and these times alone imply. A run's measured bubble above it is time lost to
// communication and hand-over; this bubble above the closed form is stage imbalance and time variation.
PipeSimulation replay_schedule(const PipeSchedule& s, const std::vector<std::vector<double>>& action_ms);

// Verifies: every (microbatch, chunk) forwarded once and backpropagated once (B, or BI then W) on its stage;
// chunks in range; each send has exactly one matching receive on the peer; dependencies (a forward after its
// input arrived, a backward after its own forward and the gradient from the next virtual stage); and no
// deadlock with buffered sends and blocking receives. Returns the problems found (empty: valid).
std::vector<std::string> check_schedule(const PipeSchedule& s);

// The bubble of `s` with equal stage times and free communication: the registered schedule's closed form, or,
// for a schedule read from a file, its simulation with unit costs (F = 1, B = 2, BI = W = 1).
double bubble_theory(const PipeSchedule& s);

}  // namespace parbench
