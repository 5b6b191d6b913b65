// Schedule simulator and checker.
#include "parallel/schedule/play.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <tuple>

#include "base/error.h"

namespace parbench {

namespace {

std::string describe(int stage, const PipeAction& a) {
  std::string s = "stage " + std::to_string(stage) + " " + std::string(pipe_op_name(a.op)) +
                  " mb=" + std::to_string(a.microbatch) + " chunk=" + std::to_string(a.chunk);
  if (a.peer >= 0) s += " peer=" + std::to_string(a.peer);
  return s;
}

double cost_of(PipeOp op, const PipeCosts& c) {
  switch (op) {
    case PipeOp::forward: return c.forward;
    case PipeOp::backward: return c.backward;
    case PipeOp::backward_input: return c.backward_input;
    case PipeOp::backward_weight: return c.backward_weight;
    default: return 0;
  }
}

// Times keyed by (kind, microbatch, virtual stage) in flat arrays: the player looks one up for every action, and
// 4096-GPU pipelines have hundreds of thousands of actions. Keys out of range are never present.
class TimeTable {
 public:
  TimeTable(int kinds, int microbatches, int virtual_stages)
      : m_(microbatches), vs_(virtual_stages), time_(std::size_t(kinds) * m_ * vs_, 0), set_(time_.size(), 0) {}
  bool find(int kind, int mb, int vs, double* at) const {
    const long i = index(kind, mb, vs);
    if (i < 0 || !set_[std::size_t(i)]) return false;
    if (at) *at = time_[std::size_t(i)];
    return true;
  }
  // False when the key was present already.
  bool insert(int kind, int mb, int vs, double t) {
    const long i = index(kind, mb, vs);
    if (i < 0) return true;
    if (set_[std::size_t(i)]) return false;
    set_[std::size_t(i)] = 1, time_[std::size_t(i)] = t;
    return true;
  }
  void assign(int kind, int mb, int vs, double t) {
    const long i = index(kind, mb, vs);
    if (i >= 0) set_[std::size_t(i)] = 1, time_[std::size_t(i)] = t;
  }

 private:
  long index(int kind, int mb, int vs) const {
    if (mb < 0 || mb >= m_ || vs < 0 || vs >= vs_) return -1;
    return (long(kind) * m_ + mb) * vs_ + vs;
  }
  int m_, vs_;
  std::vector<double> time_;
  std::vector<char> set_;
};

}  // namespace

double PipeSimulation::mean_bubble() const {
  return bubble.empty() ? 0 : std::accumulate(bubble.begin(), bubble.end(), 0.0) / double(bubble.size());
}

namespace {

void check_stage_units(const PipeSchedule& s, const PipeCosts& costs) {
  if (costs.stage_units.empty()) return;
  PB_CHECK(int(costs.stage_units.size()) == s.stages, "bound units for " + std::to_string(costs.stage_units.size()) +
                                                          " stages, the schedule has " + std::to_string(s.stages));
  const int units = costs.bound_units();
  for (const auto& list : costs.stage_units)
    for (int u : list)
      PB_CHECK(u >= 0 && u < units, "a rank bound to unit " + std::to_string(u) + " of " + std::to_string(units));
}

void check_per_action_costs(const PipeSchedule& s, const PipeCosts& costs) {
  if (costs.per_action.empty()) return;
  const int p = s.stages;
  PB_CHECK(int(costs.per_action.size()) == p, "per-action costs for " + std::to_string(costs.per_action.size()) +
                                                  " stages, the schedule has " + std::to_string(p));
  for (int st = 0; st < p; ++st) {
    const auto n = std::size_t(std::count_if(s.actions[st].begin(), s.actions[st].end(),
                                             [](const PipeAction& a) { return is_compute(a.op); }));
    PB_CHECK(costs.per_action[st].size() == n, "stage " + std::to_string(st) + " has " + std::to_string(n) +
                                                   " compute actions but " +
                                                   std::to_string(costs.per_action[st].size()) + " costs");
  }
}

// Plays a schedule: each stage runs its list in order; a receive waits for its send, a compute action for its
// inputs; a dependency that can never be met (it comes later on the same stage) is an error, and so is a round
// in which no stage can move (deadlock).
class Player {
 public:
  Player(const PipeSchedule& s, const PipeCosts& costs)
      : s_(s), costs_(costs), p_(s.stages), last_(s.virtual_stages() - 1), next_(p_, 0), clock_(p_, 0),
        comm_free_(p_, 0), in_flight_(p_, 0), computed_(p_, 0), sent_(2, s.microbatches, s.virtual_stages()),
        received_(2, s.microbatches, s.virtual_stages()), done_(4, s.microbatches, s.virtual_stages()) {
    PB_CHECK(int(s.actions.size()) == p_, "schedule has " + std::to_string(s.actions.size()) +
                                              " stage lists for " + std::to_string(p_) + " stages");
    check_per_action_costs(s, costs);
    check_stage_units(s, costs);
    sim_.busy.assign(p_, 0);
    sim_.peak_in_flight.assign(p_, 0);
    sim_.timeline.resize(p_);
  }

  PipeSimulation play() {
    if (costs_.compute_units > 0) return play_shared();
    std::size_t remaining = action_count();
    while (remaining > 0) {
      bool progressed = false;
      for (int st = 0; st < p_; ++st)
        for (double start = 0; next_[st] < s_.actions[st].size() && ready(st, s_.actions[st][next_[st]], start);) {
          run(st, s_.actions[st][next_[st]], start);
          --remaining;
          progressed = true;
        }
      if (!progressed) throw Error(deadlock_message());
    }
    return finished_simulation();
  }

 private:
  static constexpr double kNone = -1;  // the work left of a stage running no action
  std::size_t action_count() const {
    std::size_t n = 0;
    for (const auto& list : s_.actions) n += list.size();
    return n;
  }

  PipeSimulation finished_simulation() {
    for (int st = 0; st < p_; ++st) sim_.makespan = std::max(sim_.makespan, clock_[st]);
    for (int st = 0; st < p_; ++st) sim_.bubble.push_back(sim_.makespan > 0 ? 1 - sim_.busy[st] / sim_.makespan : 0);
    return sim_;
  }

  // The play with shared compute units, in time order: at each moment every stage starts what it can (sends and
  // receives at once, a compute action onto the shared units), then time moves to the next end of a running action
  // or the next known start (a transfer's arrival), the running actions progressing at their share meanwhile.
  PipeSimulation play_shared() {
    std::size_t remaining = action_count();
    std::vector<double> left(std::size_t(p_), kNone), began(std::size_t(p_), 0);  // a running action's work left
    double now = 0;
    while (remaining > 0) {
      double next = std::numeric_limits<double>::infinity();
      for (bool started = true; started;) {
        started = false;
        for (int st = 0; st < p_; ++st) {
          if (left[st] != kNone || next_[st] >= s_.actions[st].size()) continue;
          const PipeAction& a = s_.actions[st][next_[st]];
          double start = 0;
          if (!ready(st, a, start)) continue;
          if (start > now) {
            next = std::min(next, start);
            continue;
          }
          started = true;
          if (!is_compute(a.op)) {
            run(st, a, now);
            --remaining;
          } else {
            left[st] = action_cost(st, a), began[st] = now;
          }
        }
      }
      const auto running = double(std::count_if(left.begin(), left.end(), [&](double w) { return w != kNone; }));
      if (running == 0 && !std::isfinite(next)) {
        if (remaining == 0) break;
        throw Error(deadlock_message());
      }
      const std::vector<double> rate = shares(left, running);
      for (int st = 0; st < p_; ++st)
        if (left[st] != kNone) next = std::min(next, now + left[st] / rate[st]);
      for (int st = 0; st < p_; ++st) {
        if (left[st] == kNone) continue;
        left[st] = std::max(0.0, left[st] - (next - now) * rate[st]);
        if (left[st] > 1e-12 * std::max(1.0, next)) continue;
        record(st, s_.actions[st][next_[st]], began[st], next);
        left[st] = kNone;
        --remaining;
      }
      now = next;
    }
    return finished_simulation();
  }

  // The speed of each stage's running action (`left` not kNone), `running` of them: the units' share among all the
  // running stages' ranks, or with bound ranks each unit's among the ranks bound to it, a stage at its slowest
  // rank's share.
  std::vector<double> shares(const std::vector<double>& left, double running) const {
    std::vector<double> rate(std::size_t(p_), 1.0);
    if (costs_.stage_units.empty()) {
      const double r = running == 0 ? 1 : std::min(1.0, costs_.compute_units / (running * costs_.ranks_per_stage));
      std::fill(rate.begin(), rate.end(), r);
      return rate;
    }
    const int units = costs_.bound_units();
    const double per_unit = costs_.compute_units / units;
    std::vector<double> load(std::size_t(units), 0);  // running ranks bound to each unit
    for (int st = 0; st < p_; ++st)
      for (int u : costs_.stage_units[std::size_t(st)])
        if (left[st] != kNone) load[std::size_t(u)] += 1;
    for (int st = 0; st < p_; ++st)
      for (int u : costs_.stage_units[std::size_t(st)])
        if (load[std::size_t(u)] > 0) rate[st] = std::min(rate[st], std::min(1.0, per_unit / load[std::size_t(u)]));
    return rate;
  }

  bool finished(PipeOp op, int mb, int vs, double* at) const {
    return done_.find(int(op), mb, vs, at);
  }
  // Time at which the input gradient of (mb, vs) exists on its producing virtual stage vs+1.
  bool grad_ready(int mb, int vs, double* at) const {
    return finished(PipeOp::backward, mb, vs + 1, at) || finished(PipeOp::backward_input, mb, vs + 1, at);
  }

  // Whether action `a`, next on stage `st`, can start now (false: blocked on a receive), and when.
  bool ready(int st, const PipeAction& a, double& start) const {
    const int vs = s_.virtual_stage(st, a.chunk);
    start = clock_[st];
    double t = 0;
    switch (a.op) {
      case PipeOp::recv_activation:
      case PipeOp::recv_gradient: {
        double at = 0;
        if (!sent_.find(a.op == PipeOp::recv_gradient, a.microbatch, vs, &at)) return false;
        start = std::max(start, at);
        return true;
      }
      case PipeOp::send_activation:
      case PipeOp::send_gradient: return true;
      case PipeOp::forward:
        if (vs == 0) return true;
        if ((vs - 1) % p_ != st) {
          if (!received_.find(0, a.microbatch, vs, nullptr))
            throw Error(describe(st, a) + ": runs before receiving its input activation");
          return true;
        }
        if (!finished(PipeOp::forward, a.microbatch, vs - 1, &t))
          throw Error(describe(st, a) + ": its input forward (virtual stage " + std::to_string(vs - 1) +
                      ") has not run earlier on this stage");
        start = std::max(start, t);
        return true;
      case PipeOp::backward:
      case PipeOp::backward_input: return backward_ready(st, a, vs, start);
      case PipeOp::backward_weight:
        if (!finished(PipeOp::backward_input, a.microbatch, vs, &t))
          throw Error(describe(st, a) + ": runs before its input-gradient pass BI");
        return true;
    }
    return true;
  }

  bool backward_ready(int st, const PipeAction& a, int vs, double& start) const {
    double t = 0;
    if (!finished(PipeOp::forward, a.microbatch, vs, &t)) throw Error(describe(st, a) + ": runs before its own forward");
    if (vs == last_) return true;
    if ((vs + 1) % p_ != st) {
      if (!received_.find(1, a.microbatch, vs, nullptr))
        throw Error(describe(st, a) + ": runs before receiving its output gradient");
      return true;
    }
    if (!grad_ready(a.microbatch, vs, &t))
      throw Error(describe(st, a) + ": the gradient from virtual stage " + std::to_string(vs + 1) +
                  " has not been computed earlier on this stage");
    start = std::max(start, t);
    return true;
  }

  // The cost of action `a`, next on stage `st` (a compute action's takes the next per-action cost when given).
  double action_cost(int st, const PipeAction& a) {
    return costs_.per_action.empty() || !is_compute(a.op) ? cost_of(a.op, costs_)
                                                          : costs_.per_action[st][computed_[st]++];
  }

  void run(int st, const PipeAction& a, double start) { record(st, a, start, start + action_cost(st, a)); }

  // Action `a`, next on stage `st`, ran from `start` to `end`: its results, the stage's clock and its list position.
  void record(int st, const PipeAction& a, double start, double end) {
    const int vs = s_.virtual_stage(st, a.chunk);
    switch (a.op) {
      case PipeOp::recv_activation:
      case PipeOp::recv_gradient: received_.assign(a.op == PipeOp::recv_gradient, a.microbatch, vs, end); break;
      case PipeOp::send_activation:
      case PipeOp::send_gradient: {
        const bool activation = a.op == PipeOp::send_activation;
        const double arrival = post(st, end);
        sent_.assign(activation ? 0 : 1, a.microbatch, activation ? vs + 1 : vs - 1, arrival);
        if (costs_.blocking_sends) end = arrival;
        break;
      }
      default:
        if (!done_.insert(int(a.op), a.microbatch, vs, end)) throw Error(describe(st, a) + ": runs twice");
        sim_.busy[st] += end - start;
    }
    if (a.op == PipeOp::forward) sim_.peak_in_flight[st] = std::max(sim_.peak_in_flight[st], ++in_flight_[st]);
    if (a.op == PipeOp::backward || a.op == PipeOp::backward_weight) --in_flight_[st];
    sim_.timeline[st].push_back({a, start, end});
    clock_[st] = end;
    ++next_[st];
  }

  // A send leaves on the stage's communication stream, beside its compute: after the stream's previous send and
  // the data's producer, taking `transfer`; returns when it is at the receiver.
  double post(int st, double ready) {
    const double arrival = std::max(ready, comm_free_[std::size_t(st)]) + costs_.transfer;
    comm_free_[std::size_t(st)] = arrival;
    return arrival;
  }

  std::string deadlock_message() const {
    std::string msg = "pipeline schedule '" + s_.name + "' deadlocks:";
    for (int st = 0; st < p_; ++st)
      if (next_[st] < s_.actions[st].size()) msg += "\n  " + describe(st, s_.actions[st][next_[st]]) + " waits";
    return msg;
  }

  const PipeSchedule& s_;
  const PipeCosts& costs_;
  const int p_, last_;
  PipeSimulation sim_;
  std::vector<std::size_t> next_;  // next action per stage
  std::vector<double> clock_;      // when each stage is free
  std::vector<double> comm_free_;  // when each stage's communication stream is free
  std::vector<int> in_flight_;
  std::vector<std::size_t> computed_;  // compute actions done per stage, the index into per_action
  TimeTable sent_;      // (is gradient, microbatch, receiving virtual stage) -> time available at the receiver
  TimeTable received_;  // the same keys, once received
  TimeTable done_;      // (compute op, microbatch, virtual stage) -> end time
};

}  // namespace

PipeSimulation simulate_schedule(const PipeSchedule& s, const PipeCosts& costs) { return Player(s, costs).play(); }

PipeSimulation replay_schedule(const PipeSchedule& s, const std::vector<std::vector<double>>& action_ms) {
  PipeCosts costs;
  costs.per_action = action_ms;
  return simulate_schedule(s, costs);
}

namespace {

using PassCount = std::map<std::tuple<int, PipeOp, int, int>, int>;      // (stage, op, mb, chunk) -> times
using MessageCount = std::map<std::tuple<bool, int, int, int>, int>;   // (gradient, mb, from vs, to vs) -> times

// A send or receive's peer is the stage of the neighbouring virtual stage, and never the stage itself.
void check_peer(const PipeSchedule& s, int st, const PipeAction& a, std::vector<std::string>& problems) {
  const int vs = s.virtual_stage(st, a.chunk);
  const int peer_vs = (a.op == PipeOp::send_activation || a.op == PipeOp::recv_gradient) ? vs + 1 : vs - 1;
  if (peer_vs < 0 || peer_vs >= s.virtual_stages() || a.peer != peer_vs % s.stages || a.peer == st)
    problems.push_back(describe(st, a) + ": wrong peer (virtual stage " + std::to_string(peer_vs) + ")");
}

// Counts every action's pass and message; actions out of range and wrong peers are problems.
void count_actions(const PipeSchedule& s, PassCount& passes, MessageCount& sends, MessageCount& recvs,
                   std::vector<std::string>& problems) {
  for (int st = 0; st < s.stages; ++st)
    for (const auto& a : s.actions[st]) {
      if (a.microbatch < 0 || a.microbatch >= s.microbatches || a.chunk < 0 || a.chunk >= s.chunks) {
        problems.push_back(describe(st, a) + ": microbatch or chunk out of range");
        continue;
      }
      ++passes[{st, a.op, a.microbatch, a.chunk}];
      const int vs = s.virtual_stage(st, a.chunk);
      switch (a.op) {
        case PipeOp::send_activation: ++sends[{false, a.microbatch, vs, vs + 1}]; break;
        case PipeOp::send_gradient: ++sends[{true, a.microbatch, vs, vs - 1}]; break;
        case PipeOp::recv_activation: ++recvs[{false, a.microbatch, vs - 1, vs}]; break;
        case PipeOp::recv_gradient: ++recvs[{true, a.microbatch, vs + 1, vs}]; break;
        default: break;
      }
      if (!is_compute(a.op)) check_peer(s, st, a, problems);
    }
}

// Every (stage, chunk, microbatch) is forwarded once and backpropagated once, by B or by BI then W as the schedule
// splits its backward.
void check_passes_once(const PipeSchedule& s, const PassCount& passes, std::vector<std::string>& problems) {
  for (int st = 0; st < s.stages; ++st)
    for (int c = 0; c < s.chunks; ++c)
      for (int mb = 0; mb < s.microbatches; ++mb) {
        auto n = [&](PipeOp op) {
          auto it = passes.find({st, op, mb, c});
          return it == passes.end() ? 0 : it->second;
        };
        const std::string where =
            "stage " + std::to_string(st) + " mb=" + std::to_string(mb) + " chunk=" + std::to_string(c);
        if (n(PipeOp::forward) != 1) problems.push_back(where + ": " + std::to_string(n(PipeOp::forward)) + " forwards");
        const bool split_ok = n(PipeOp::backward_input) == 1 && n(PipeOp::backward_weight) == 1 && n(PipeOp::backward) == 0;
        const bool whole_ok = n(PipeOp::backward) == 1 && n(PipeOp::backward_input) + n(PipeOp::backward_weight) == 0;
        if (!(s.split_backward ? split_ok : whole_ok))
          problems.push_back(where + ": backward passes do not match the schedule's kind");
      }
}

// Each message is sent once and received once.
void check_messages_matched(const MessageCount& sends, const MessageCount& recvs, std::vector<std::string>& problems) {
  auto times = [](const MessageCount& m, const MessageCount::key_type& key) {
    auto it = m.find(key);
    return it == m.end() ? 0 : it->second;
  };
  for (const auto& [key, n] : sends)
    if (n != 1 || times(recvs, key) != 1)
      problems.push_back("message " + std::string(std::get<0>(key) ? "gradient" : "activation") + " mb=" +
                         std::to_string(std::get<1>(key)) + " from virtual stage " + std::to_string(std::get<2>(key)) +
                         ": " + std::to_string(n) + " sends, " + std::to_string(times(recvs, key)) + " receives");
  for (const auto& [key, n] : recvs)
    if (!sends.count(key)) problems.push_back("receive without a send: mb=" + std::to_string(std::get<1>(key)));
}

// Messages between two stages are received in the order they are sent, so the schedule also runs on transports
// that match messages between a pair in order without per-message tags.
void check_message_order(const PipeSchedule& s, std::vector<std::string>& problems) {
  std::map<std::pair<int, int>, std::vector<std::tuple<bool, int, int>>> sent, received;  // (from, to) -> messages
  for (int st = 0; st < s.stages; ++st)
    for (const auto& a : s.actions[st]) {
      const int vs = s.virtual_stage(st, a.chunk);
      if (a.op == PipeOp::send_activation) sent[{st, a.peer}].push_back({false, a.microbatch, vs + 1});
      if (a.op == PipeOp::send_gradient) sent[{st, a.peer}].push_back({true, a.microbatch, vs - 1});
      if (a.op == PipeOp::recv_activation) received[{a.peer, st}].push_back({false, a.microbatch, vs});
      if (a.op == PipeOp::recv_gradient) received[{a.peer, st}].push_back({true, a.microbatch, vs});
    }
  for (const auto& [pair, messages] : sent)
    if (messages != received[pair])
      problems.push_back("stage " + std::to_string(pair.second) + " receives the messages of stage " +
                         std::to_string(pair.first) + " in another order than they are sent");
}

}  // namespace

std::vector<std::string> check_schedule(const PipeSchedule& s) {
  if (int(s.actions.size()) != s.stages) return {"expected " + std::to_string(s.stages) + " stage lists"};
  std::vector<std::string> problems;
  PassCount passes;
  MessageCount sends, recvs;
  count_actions(s, passes, sends, recvs, problems);
  check_passes_once(s, passes, problems);
  check_messages_matched(sends, recvs, problems);
  check_message_order(s, problems);
  if (problems.empty()) {  // the dependencies and deadlock freedom: play it
    try {
      simulate_schedule(s);
    } catch (const Error& e) {
      problems.push_back(e.what());
    }
  }
  return problems;
}

double bubble_theory(const PipeSchedule& s) {
  for (const auto& k : schedule_kinds())
    if (k.name == s.name) return k.bubble(s.stages, s.microbatches, s.chunks);
  return simulate_schedule(s).mean_bubble();
}

}  // namespace parbench
