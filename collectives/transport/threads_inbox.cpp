// Inbox matching for the threads transport.
#include "collectives/transport/threads_inbox.h"

#include <algorithm>

#include "base/host_order.h"

namespace parbench {

namespace {
// Pops the front entry of `queue` and marks it taken; null when empty.
template <class T>
T* take_front(std::deque<T*>& queue) {
  if (queue.empty()) return nullptr;
  T* entry = queue.front();
  queue.pop_front();
  entry->state.store(CopyState::copying, std::memory_order_relaxed);  // read under this lock by withdraw
  return entry;
}

// One side's arrival: the other side's oldest waiting entry, taken; else `mine` (when not null) waits in its queue.
template <class Theirs, class Mine>
Theirs* take_or_wait(std::deque<Theirs*>& theirs, std::deque<Mine*>& waiting, Mine* mine) {
  if (Theirs* entry = take_front(theirs)) return entry;
  if (mine) waiting.push_back(mine);
  return nullptr;
}

template <class T>
void erase_waiting(std::deque<T*>& queue, const T* entry) {
  auto it = std::find(queue.begin(), queue.end(), entry);
  if (it != queue.end()) queue.erase(it);
}
}  // namespace

Inbox::~Inbox() {
  for (auto& [channel, q] : channels_)
    for (Envelope* e : q.sends)
      if (!e->sender) delete e;
}

namespace {
// Each side hands what it has seen of the GPUs' work to the side that matches it later (base/host_order.h): the
// sender's settled buffers, the receiver's finished uses of its buffer.
template <class Match>
auto in_host_order(const void* inbox, Match match) {
  host_order::publish(inbox);
  auto entry = match();
  host_order::receive(inbox);
  return entry;
}
}  // namespace

PostedReceive* Inbox::match_send(const Channel& channel, Envelope* send) {
  return in_host_order(this, [&] {
    std::lock_guard lock(mu_);
    Queues& q = channels_[channel];
    return take_or_wait(q.receives, q.sends, send);
  });
}

Envelope* Inbox::match_receive(const Channel& channel, PostedReceive* receive) {
  return in_host_order(this, [&] {
    std::lock_guard lock(mu_);
    Queues& q = channels_[channel];
    return take_or_wait(q.sends, q.receives, receive);
  });
}

void Inbox::withdraw(const Channel& channel, const Envelope* send) {
  std::lock_guard lock(mu_);
  if (auto it = channels_.find(channel); it != channels_.end()) erase_waiting(it->second.sends, send);
}

void Inbox::withdraw(const Channel& channel, const PostedReceive* receive) {
  std::lock_guard lock(mu_);
  if (auto it = channels_.find(channel); it != channels_.end()) erase_waiting(it->second.receives, receive);
}

}  // namespace parbench
