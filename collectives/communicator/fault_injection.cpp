// See fault_injection.h.
#include "collectives/communicator/fault_injection.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <sstream>
#include <thread>

#include "collectives/launch/launcher.h"
#include "collectives/communicator/communicator.h"
#include "base/error.h"

namespace parbench {
namespace {

constexpr const char* kForm =
    "the form rank:R,after:N,kind:exit|throw|stall|kill|flip|nowait|slow[,delay_us:D] (R >= 0, N >= 0, D >= 0)";

long parse_number(const std::string& key, const std::string& value, const std::string& text) {
  std::size_t used = 0;
  long v = -1;
  try {
    v = std::stol(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != value.size() || value.empty() || v < 0)
    throw UsageError("PARBENCH_FAULT='" + text + "': " + key + " '" + value + "' is not a number >= 0; use " + kForm);
  return v;
}

FaultPlan::Kind parse_kind(const std::string& value, const std::string& text) {
  using K = FaultPlan::Kind;
  if (value == "exit") return K::exit;
  if (value == "throw") return K::throw_error;
  if (value == "stall") return K::stall;
  if (value == "kill") return K::kill;
  if (value == "flip") return K::flip;
  if (value == "nowait") return K::nowait;
  if (value == "slow") return K::slow;
  throw UsageError("PARBENCH_FAULT='" + text + "': kind '" + value +
                   "' is not one of exit, throw, stall, kill, flip, nowait, slow");
}

thread_local long t_points = 0;       // fault points this rank thread passed
thread_local long t_check_calls = 0;  // data-check calls this rank thread made
thread_local long t_joins = 0;        // waits for the communication stream this rank thread queued
thread_local long t_sending_steps = 0;  // steps with a send this rank thread began
thread_local bool t_flip_armed = false;

}  // namespace

FaultPlan parse_fault_plan(const std::string& text) {
  FaultPlan p;
  bool has_rank = false, has_kind = false;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    const std::size_t colon = part.find(':');
    const std::string key = part.substr(0, colon), value = colon == std::string::npos ? "" : part.substr(colon + 1);
    if (colon == std::string::npos || (key != "rank" && key != "after" && key != "kind" && key != "delay_us"))
      throw UsageError("PARBENCH_FAULT='" + text + "': '" + part +
                       "' is not rank:R, after:N, kind:K or delay_us:D; use " + kForm);
    if (key == "rank") p.rank = int(parse_number(key, value, text)), has_rank = true;
    if (key == "after") p.after = parse_number(key, value, text);
    if (key == "delay_us") p.delay_us = parse_number(key, value, text);
    if (key == "kind") p.kind = parse_kind(value, text), has_kind = true;
  }
  if (!has_rank || !has_kind)
    throw UsageError("PARBENCH_FAULT='" + text + "' needs rank and kind; use " + kForm);
  if (p.kind == FaultPlan::Kind::kill && !launched_as_processes())
    throw UsageError("PARBENCH_FAULT='" + text + "': kind kill needs a process per rank (mpirun, torchrun, srun); "
                     "it would kill every rank of threads mode");
  return p;
}

const FaultPlan& fault_plan() {
  static const FaultPlan plan = [] {
    const char* v = std::getenv("PARBENCH_FAULT");
    return v && *v ? parse_fault_plan(v) : FaultPlan{};
  }();
  return plan;
}

void fault_point_slow(Communicator& world) {
  const FaultPlan& p = fault_plan();
  if (p.kind == FaultPlan::Kind::flip || p.kind == FaultPlan::Kind::nowait || p.kind == FaultPlan::Kind::slow ||
      world.rank() != p.rank ||
      t_points++ != p.after)
    return;
  const std::string what = "rank " + std::to_string(p.rank) + " after " + std::to_string(p.after) + " operations";
  const bool processes = launched_as_processes();
  switch (p.kind) {
    case FaultPlan::Kind::exit:
      if (processes) std::exit(0);
      throw RankLeftEarly{};
    case FaultPlan::Kind::throw_error:
      throw Error("injected fault (PARBENCH_FAULT kind throw): " + what);
    case FaultPlan::Kind::stall:
      if (processes) {
        raise(SIGSTOP);
        return;  // continued: go on late
      }
      while (!world.transport().aborted()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      throw AbortedError("rank " + std::to_string(p.rank) + " stalled (PARBENCH_FAULT kind stall) until the others gave up");
    case FaultPlan::Kind::kill:
      raise(SIGKILL);
      return;
    default:
      return;
  }
}

void arm_flip_for_next_call(int world_rank) {
  const FaultPlan& p = fault_plan();
  t_flip_armed = p.kind == FaultPlan::Kind::flip && world_rank == p.rank && t_check_calls++ >= p.after;
}

void disarm_flip() { t_flip_armed = false; }

bool flip_armed() { return t_flip_armed; }

bool drop_stream_wait(int world_rank) {
  if (!faults_on()) return false;
  const FaultPlan& p = fault_plan();
  return p.kind == FaultPlan::Kind::nowait && world_rank == p.rank && t_joins++ >= p.after;
}

void delay_if_slow(int world_rank) {
  const FaultPlan& p = fault_plan();
  if (p.kind == FaultPlan::Kind::slow && world_rank == p.rank && t_sending_steps++ >= p.after)
    std::this_thread::sleep_for(std::chrono::microseconds(p.delay_us));
}

}  // namespace parbench
