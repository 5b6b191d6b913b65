// The replay of a schedule's exchanges under NCCL's matching rules.
#include "parallel/pipeline_stream_order.h"

#include <map>
#include <tuple>
#include <vector>

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

}  // namespace parbench
