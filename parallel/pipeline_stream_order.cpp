// The replay of a schedule's exchanges under NCCL's matching rules.
#include "parallel/pipeline_stream_order.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

#include "base/error.h"
#include "parallel/schedule/play.h"

namespace parbench {

namespace {

struct Message {
  bool send;
  int peer;
  std::tuple<bool, int, int> key;  // (gradient, microbatch, receiving virtual stage)
  std::size_t index = 0;          // position on its directed link
};

using Groups = std::vector<std::vector<Message>>;  // one stage's exchanges, in order

Message message_of(const PipeSchedule& s, int stage, const PipeAction& a) {
  const int vs = s.virtual_stage(stage, a.chunk);
  switch (a.op) {
    case PipeOp::send_activation: return {true, a.peer, {false, a.microbatch, vs + 1}};
    case PipeOp::send_gradient: return {true, a.peer, {true, a.microbatch, vs - 1}};
    case PipeOp::recv_activation: return {false, a.peer, {false, a.microbatch, vs}};
    default: return {false, a.peer, {true, a.microbatch, vs}};  // recv_gradient
  }
}

std::vector<Groups> exchanges(const PipeSchedule& s) {
  std::vector<Groups> all(std::size_t(s.stages));
  for (int st = 0; st < s.stages; ++st) {
    bool open = false;
    for (const PipeAction& a : s.actions[std::size_t(st)]) {
      if (is_compute(a.op)) {
        open = false;
        continue;
      }
      if (!open) all[std::size_t(st)].emplace_back(), open = true;
      all[std::size_t(st)].back().push_back(message_of(s, st, a));
    }
  }
  return all;
}

// Numbers each message on its directed link and checks that both ends agree on the sequence.
std::string number_links(const PipeSchedule& s, std::vector<Groups>& all) {
  std::map<std::pair<int, int>, std::vector<std::tuple<bool, int, int>>> sent, received;  // (from, to)
  for (int st = 0; st < s.stages; ++st)
    for (auto& group : all[std::size_t(st)])
      for (Message& m : group) {
        auto& seq = m.send ? sent[{st, m.peer}] : received[{m.peer, st}];
        m.index = seq.size();
        seq.push_back(m.key);
      }
  for (const auto& [link, seq] : sent)
    if (received[link] != seq)
      return "stage " + std::to_string(link.second) + " receives the messages of stage " +
             std::to_string(link.first) + " in another order than they are sent";
  return "";
}

}  // namespace

std::string stream_order_problem(const PipeSchedule& s) {
  std::vector<Groups> all = exchanges(s);
  if (std::string why = number_links(s, all); !why.empty()) return why;
  std::vector<std::size_t> at(std::size_t(s.stages), 0);  // each stage's group in progress
  // Where the counterpart of a message lies: the group index on the peer stage.
  auto group_of = [&](int stage, bool send, int from_or_to, std::size_t index) {
    const Groups& groups = all[std::size_t(stage)];
    for (std::size_t g = 0; g < groups.size(); ++g)
      for (const Message& m : groups[g])
        if (m.send == send && m.peer == from_or_to && m.index == index) return g;
    return groups.size();
  };
  for (bool progress = true; progress;) {
    progress = false;
    for (int st = 0; st < s.stages; ++st) {
      const Groups& groups = all[std::size_t(st)];
      if (at[std::size_t(st)] == groups.size()) continue;
      bool complete = true;
      for (const Message& m : groups[at[std::size_t(st)]])
        complete &= group_of(m.peer, !m.send, st, m.index) <= at[std::size_t(m.peer)];
      if (complete) ++at[std::size_t(st)], progress = true;
    }
  }
  for (int st = 0; st < s.stages; ++st)
    if (at[std::size_t(st)] < all[std::size_t(st)].size())
      return "stage " + std::to_string(st) + "'s exchange " + std::to_string(at[std::size_t(st)]) +
             " would wait forever for a peer's (NCCL completes a send only once its receive is posted)";
  return "";
}

namespace {

// One message as both its ends see it: the compute actions before its send and after its receive in the lists (the
// ones that write and read it; indices among each stage's compute actions).
struct Hop {
  int from = -1, to = -1;
  std::tuple<bool, int, int> key;
  PipeAction send{}, recv{};
  bool sent = false, received = false;
  int producer = -1;  // -1: sent before any compute action
  int consumer = -1;
};

struct Hops {
  std::vector<std::vector<PipeAction>> computes;  // [stage] -> its compute actions, in order
  std::vector<Hop> hops;
};

Hops collect_hops(const PipeSchedule& s) {
  Hops h;
  h.computes.resize(std::size_t(s.stages));
  std::map<std::tuple<int, int, std::tuple<bool, int, int>>, std::size_t> index;  // (from, to, key) -> hop
  for (int st = 0; st < s.stages; ++st) {
    auto& computes = h.computes[std::size_t(st)];
    for (const PipeAction& a : s.actions[std::size_t(st)]) {
      if (is_compute(a.op)) {
        computes.push_back(a);
        continue;
      }
      const Message m = message_of(s, st, a);
      const int from = m.send ? st : m.peer, to = m.send ? m.peer : st;
      auto [it, fresh] = index.try_emplace({from, to, m.key}, h.hops.size());
      if (fresh) h.hops.push_back({.from = from, .to = to, .key = m.key});
      Hop& hop = h.hops[it->second];
      if (m.send) hop.send = a, hop.sent = true, hop.producer = int(computes.size()) - 1;
      else hop.recv = a, hop.received = true, hop.consumer = int(computes.size());
    }
  }
  for (const Hop& hop : h.hops)
    if (!hop.sent || !hop.received)
      throw Error("schedule '" + s.name + "': a message from stage " + std::to_string(hop.from) + " to stage " +
                  std::to_string(hop.to) + " is " + (hop.sent ? "never received" : "never sent"));
  return h;
}

}  // namespace

PipeSchedule exchanges_at_replay_times(const PipeSchedule& s) {
  const Hops h = collect_hops(s);
  const PipeSimulation sim = simulate_schedule(s);  // unit costs, free communication: throws for a cycle
  std::vector<std::vector<double>> starts(std::size_t(s.stages)), ends(std::size_t(s.stages));  // compute actions
  for (std::size_t st = 0; st < starts.size(); ++st)
    for (const TimedAction& t : sim.timeline[st])
      if (is_compute(t.action.op)) starts[st].push_back(t.start), ends[st].push_back(t.end);
  // Each message at the time its producer ends, placed at both ends before the first compute action that starts no
  // earlier; ties in (time, link, message) order, the same at both ends.
  using Placed = std::tuple<double, int, int, std::tuple<bool, int, int>, PipeAction>;
  std::vector<std::vector<Placed>> comm(std::size_t(s.stages));
  for (const Hop& hop : h.hops) {
    const double when = hop.producer < 0 ? 0 : ends[std::size_t(hop.from)][std::size_t(hop.producer)];
    comm[std::size_t(hop.from)].emplace_back(when, hop.from, hop.to, hop.key, hop.send);
    comm[std::size_t(hop.to)].emplace_back(when, hop.from, hop.to, hop.key, hop.recv);
  }
  PipeSchedule out = s;
  for (std::size_t st = 0; st < comm.size(); ++st) {
    auto& placed = comm[st];
    std::sort(placed.begin(), placed.end(), [](const Placed& a, const Placed& b) {
      return std::tie(std::get<0>(a), std::get<1>(a), std::get<2>(a), std::get<3>(a)) <
             std::tie(std::get<0>(b), std::get<1>(b), std::get<2>(b), std::get<3>(b));
    });
    auto& list = out.actions[st];
    list.clear();
    std::size_t next = 0;
    for (std::size_t c = 0; c < h.computes[st].size(); ++c) {
      for (; next < placed.size() && std::get<0>(placed[next]) <= starts[st][c]; ++next)
        list.push_back(std::get<4>(placed[next]));
      list.push_back(h.computes[st][c]);
    }
    for (; next < placed.size(); ++next) list.push_back(std::get<4>(placed[next]));
  }
  return out;
}

std::optional<PipeSchedule> stream_ordered_schedule(const PipeSchedule& s) {
  if (stream_order_problem(s).empty()) return s;
  PipeSchedule replayed = exchanges_at_replay_times(s);
  if (stream_order_problem(replayed).empty()) return replayed;
  return std::nullopt;
}

}  // namespace parbench
