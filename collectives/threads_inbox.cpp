// Inbox matching for the threads transport.
#include "collectives/threads_inbox.h"

#include <algorithm>

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

PostedReceive* Inbox::match_send(const Channel& channel, Envelope* send) {
  std::lock_guard lock(mu_);
  Queues& q = channels_[channel];
  if (PostedReceive* r = take_front(q.receives)) return r;
  if (send) q.sends.push_back(send);
  return nullptr;
}

Envelope* Inbox::match_receive(const Channel& channel, PostedReceive* receive) {
  std::lock_guard lock(mu_);
  Queues& q = channels_[channel];
  if (Envelope* e = take_front(q.sends)) return e;
  if (receive) q.receives.push_back(receive);
  return nullptr;
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
