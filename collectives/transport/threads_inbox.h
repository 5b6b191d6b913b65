// The threads transport's matching: every rank has an inbox of channels (context, source rank, tag), each holding
// either sends that arrived before their receives or receives posted before their sends, both in posting order.
// Taking an entry out (to copy into or out of it) happens under the inbox's own lock; the copy itself does not.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "collectives/transport/doorbell.h"
#include "core/device.h"

namespace parbench {

// Where a send or receive is: waiting in an inbox, taken by the other side (being copied), or done.
enum class CopyState : int { waiting, copying, done };

// A send waiting in the receiver's inbox for its receive, which copies it out.
struct Envelope {
  const void* data = nullptr;
  std::size_t bytes = 0;
  Device device;
  Doorbell* sender = nullptr;    // rung once the receive has copied it; null for an eager copy
  std::unique_ptr<char[]> eager;  // the eager copy (data points here), which the receive frees with the envelope
  std::atomic<CopyState> state{CopyState::waiting};
};

// A receive waiting in its own rank's inbox for its send, which copies into it.
struct PostedReceive {
  void* buf = nullptr;
  std::size_t bytes = 0;
  Device device;
  Doorbell* receiver = nullptr;  // rung once filled
  std::size_t sent_bytes = 0;    // the matched send's size; when it differs from `bytes` nothing was copied
  std::atomic<CopyState> state{CopyState::waiting};
};

class Inbox {
 public:
  using Channel = std::tuple<std::uint64_t, int, int>;  // context, source world rank, tag
  Inbox() = default;
  Inbox(const Inbox&) = delete;
  Inbox& operator=(const Inbox&) = delete;
  ~Inbox();  // frees eager copies nobody received

  // A send arriving: the oldest receive waiting on `channel`, now the caller's to copy into (state copying); else
  // queues `send` (when not null) and returns null.
  PostedReceive* match_send(const Channel& channel, Envelope* send);
  // A receive: the oldest send waiting on `channel`, now the caller's to copy out of (state copying); else queues
  // `receive` (when not null) and returns null.
  Envelope* match_receive(const Channel& channel, PostedReceive* receive);
  // Takes back an entry still waiting (after a failure). One already taken stays with the side copying it.
  void withdraw(const Channel& channel, const Envelope* send);
  void withdraw(const Channel& channel, const PostedReceive* receive);

 private:
  struct Queues {
    std::deque<Envelope*> sends;            // arrived before their receives
    std::deque<PostedReceive*> receives;    // posted before their sends
  };
  std::mutex mu_;
  std::map<Channel, Queues> channels_;
};

}  // namespace parbench
