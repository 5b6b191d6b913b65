// Threads transport: ranks are threads of one process. Every rank has an inbox (threads_inbox.h) and a doorbell
// (doorbell.h): a message takes only its receiver's inbox lock and wakes only the rank waiting for it. Matching,
// per channel in posting order (a group posts its receives before its sends, so a peer usually finds them):
// - a send that finds its receive posted copies straight into it (one copy) and is done;
// - a small host-memory send that finds none is copied into the inbox (eager) and is done;
// - any other send waits in the inbox for its receive, which copies it out (rendezvous).
// On GPUs every copy into a rank's buffers is made by that rank (pull only): its stream orders the copy after its
// own kernels. Waits honour the caller's deadline, and any failing rank aborts the world.
#include <algorithm>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "base/host_order.h"
#include "collectives/transport/doorbell.h"
#include "collectives/transport/threads_inbox.h"
#include "collectives/transport/transport.h"
#include "core/memory.h"
#include "core/stream.h"

namespace parbench {

class ThreadsWorld {
 public:
  struct Rank {
    Inbox inbox;
    Doorbell bell;
    std::atomic<bool> receiver_copies{false};  // pulls waiting sends itself (GPU): ring it when one arrives
    // For naming a late rank: the world rank this one waits for now (-1: none), and whether it has left.
    std::atomic<int> waiting_on{-1};
    std::atomic<bool> gone{false};
  };

  explicit ThreadsWorld(int ranks)
      : size(ranks), wait(wait_policy(ranks, usable_cores())), ranks_(std::make_unique<Rank[]>(std::size_t(ranks))) {}

  const int size;
  const WaitPolicy wait;  // how a rank waits before it sleeps
  Rank& at(int world_rank) { return ranks_[std::size_t(world_rank)]; }

  void abort(const std::string& reason) {
    {
      std::lock_guard lock(abort_mu_);
      if (aborted_.load(std::memory_order_relaxed)) return;
      abort_reason_ = reason;  // written once, before the flag that publishes it
      aborted_.store(true, std::memory_order_release);
    }
    for (int r = 0; r < size; ++r) at(r).bell.ring();
  }
  bool aborted() const { return aborted_.load(std::memory_order_acquire); }
  const std::string& abort_reason() const { return abort_reason_; }  // once aborted() is true

 private:
  std::unique_ptr<Rank[]> ranks_;
  std::mutex abort_mu_;
  std::atomic<bool> aborted_{false};
  std::string abort_reason_;
};

std::shared_ptr<ThreadsWorld> make_threads_world(int ranks) { return std::make_shared<ThreadsWorld>(ranks); }

void abort_threads_world(ThreadsWorld& world, const std::string& reason) { world.abort(reason); }

void mark_rank_gone(ThreadsWorld& world, int rank) { world.at(rank).gone.store(true, std::memory_order_release); }

namespace {

struct SendRecord {
  Envelope envelope;  // queued for a rendezvous; its state says when the send is done either way
  Inbox* inbox = nullptr;
  Inbox::Channel channel;
  int peer = 0;         // in the sender's group
  bool queued = false;  // was put in the inbox: withdraw it after a failure
};

struct ReceiveRecord {
  PostedReceive posted;  // queued when the sender copies (host); its state says when the receive is done
  Inbox::Channel channel;
  int peer = 0;  // in the receiver's group
  bool queued = false;
};

// Records reused from call to call; their addresses stay fixed while the other side holds them.
template <class T>
class RecordPool {
 public:
  T& next() {
    if (used_ == items_.size()) items_.push_back(std::make_unique<T>());
    return *items_[used_++];
  }
  void clear() { used_ = 0; }
  bool empty() const { return used_ == 0; }
  template <class F>
  bool all(F f) const {
    return std::all_of(items_.begin(), items_.begin() + std::ptrdiff_t(used_), [&](const auto& p) { return f(*p); });
  }
  template <class F>
  void each(F f) {
    for (std::size_t i = 0; i < used_; ++i) f(*items_[i]);
  }
  template <class F>
  void each(F f) const {
    for (std::size_t i = 0; i < used_; ++i) f(std::as_const(*items_[i]));
  }

 private:
  std::vector<std::unique_ptr<T>> items_;
  std::size_t used_ = 0;
};

bool is_done(const std::atomic<CopyState>& s) { return s.load(std::memory_order_acquire) == CopyState::done; }
bool is_copying(const std::atomic<CopyState>& s) { return s.load(std::memory_order_acquire) == CopyState::copying; }

// Copies a send into a receive the sender took from the inbox, then hands the receive back to its owner.
void fill(PostedReceive& r, const void* data, std::size_t bytes, const Device& device) {
  r.sent_bytes = bytes;
  if (bytes == r.bytes) device_memcpy(r.device, r.buf, device, data, bytes);
  Doorbell* owner = r.receiver;  // r may be gone once done
  host_order::publish(owner);    // the owner's wait receives it: the copy is done for its GPU work too
  r.state.store(CopyState::done, std::memory_order_release);
  owner->ring();
}

// Copies a send the receiver took from the inbox into `r`, then hands it back (or frees an eager copy).
void empty_into(Envelope* e, PostedReceive& r) {
  r.sent_bytes = e->bytes;
  if (e->bytes == r.bytes) device_memcpy(r.device, r.buf, e->device, e->data, e->bytes);
  r.state.store(CopyState::done, std::memory_order_relaxed);
  if (!e->sender) {
    delete e;
    return;
  }
  Doorbell* owner = e->sender;  // e may be gone once done
  host_order::publish(owner);
  e->state.store(CopyState::done, std::memory_order_release);
  owner->ring();
}

class ThreadsTransport final : public Transport {
 public:
  ThreadsTransport(std::shared_ptr<ThreadsWorld> world, std::uint64_t context, std::vector<int> members, int rank,
                   Device device)
      : world_(std::move(world)),
        context_(context),
        members_(std::move(members)),
        rank_(rank),
        device_(device),
        me_(world_->at(members_[std::size_t(rank_)])) {
    me_.receiver_copies.store(receiver_copies(), std::memory_order_relaxed);
  }

  std::string_view name() const override { return "threads"; }
  int rank() const override { return rank_; }
  int size() const override { return int(members_.size()); }
  bool shares_address_space() const override { return true; }
  void abort(const std::string& reason) override { world_->abort(reason); }
  bool aborted() const override { return world_->aborted(); }

  std::unique_ptr<Transport> split(int color, int /*key*/, const std::vector<int>& members,
                                   int new_rank) override {
    // Every member derives the same context from the parent's, the split's sequence number and the color.
    std::uint64_t ctx = context_ * 0x9E3779B97F4A7C15ull + (++splits_) * 0x100000001B3ull + std::uint64_t(color) + 1;
    std::vector<int> world_members;
    for (int m : members) world_members.push_back(members_[std::size_t(m)]);
    return std::make_unique<ThreadsTransport>(world_, ctx, std::move(world_members), new_rank, device_);
  }

  ~ThreadsTransport() override { abandon_sends(); }

  void abandon_sends() override {
    withdraw(posted_);
    posted_.clear();
  }

  void post_sends(std::span<const P2POp> ops) override {
    for (const P2POp& op : ops) {
      check_peer(op.peer);
      if (op.kind != P2POp::send) throw Error("post_sends: a receive among the sends");
    }
    settle_sends(ops);
    throw_if_aborted();
    // No eager copies: finish_sends promises that the peers have received the messages.
    for (const P2POp& op : ops) post_send(posted_.next(), op, false);
  }

  void finish_sends(Deadline deadline) override {
    try {
      wait([&] { return sends_done(posted_); }, deadline, [&] { return send_timeout(posted_); },
           [&] { return first_pending_send(posted_); });
    } catch (...) {
      abandon_sends();
      throw;
    }
    posted_.clear();
  }

  void group(std::span<const P2POp> ops, Deadline deadline) override {
    for (const P2POp& op : ops) check_peer(op.peer);
    settle_sends(ops);
    throw_if_aborted();
    sends_.clear();
    receives_.clear();
    try {
      for (const P2POp& op : ops)
        if (op.kind == P2POp::recv) post_receive(receives_.next(), op);
      for (const P2POp& op : ops)
        if (op.kind == P2POp::send) post_send(sends_.next(), op, true);
      wait([&] { return receives_done() && sends_done(sends_); }, deadline, [&] { return group_timeout(); },
           [&] { return first_pending_peer(); });
    } catch (...) {
      withdraw(receives_);
      withdraw(sends_);
      throw;
    }
  }

 private:
  bool receiver_copies() const { return !device_.on_host(); }
  int world_rank(int peer) const { return members_[std::size_t(peer)]; }
  std::string who() const { return "rank " + std::to_string(rank_); }

  void check_peer(int peer) const {
    if (peer < 0 || peer >= size())
      throw Error(who() + ": peer " + std::to_string(peer) + " outside the group of " + std::to_string(size()));
  }

  void throw_if_aborted() const {
    if (world_->aborted()) throw AbortedError(who() + " stopped: " + world_->abort_reason());
  }

  // A peer on another GPU copies our send buffers on its own device's stream, which is not ordered with the
  // kernels that may still be writing them here: those finish before the buffers are published. A rank's work is
  // queued on its thread's current stream, or the GPU's default stream without one: waiting for that stream (not
  // the whole device) is enough.
  void settle_sends(std::span<const P2POp> ops) const {
    if (device_.on_host()) return;
    for (const P2POp& op : ops)
      if (op.kind == P2POp::send && !op.host) return synchronize_stream(device_, synchronous_stream(device_));
  }

  void post_receive(ReceiveRecord& r, const P2POp& op) {
    r.posted.buf = op.buf;
    r.posted.bytes = op.bytes;
    r.posted.device = op.device(device_);
    r.posted.receiver = &me_.bell;
    r.posted.sent_bytes = 0;
    r.posted.state.store(CopyState::waiting, std::memory_order_relaxed);
    r.channel = {context_, world_rank(op.peer), op.tag};
    r.peer = op.peer;
    r.queued = false;
    // On a GPU the receive stays here and collects its send when it comes (receives_done).
    PostedReceive* wait_in_inbox = receiver_copies() ? nullptr : &r.posted;
    Envelope* e = me_.inbox.match_receive(r.channel, wait_in_inbox);
    if (e) empty_into(e, r.posted);
    else r.queued = wait_in_inbox != nullptr;
  }

  void post_send(SendRecord& s, const P2POp& op, bool eager_allowed) {
    const int to = world_rank(op.peer);
    ThreadsWorld::Rank& dest = world_->at(to);
    Envelope& env = s.envelope;
    env.data = op.buf;
    env.bytes = op.bytes;
    env.device = op.device(device_);
    env.sender = &me_.bell;
    env.state.store(CopyState::waiting, std::memory_order_relaxed);
    s.inbox = &dest.inbox;
    s.channel = {context_, members_[std::size_t(rank_)], op.tag};
    s.peer = op.peer;
    s.queued = false;
    const bool eager = eager_allowed && env.device.on_host() && op.bytes <= kThreadsEagerLimit;
    // An eager copy is made only when no receive is waiting, so the first look queues nothing.
    PostedReceive* r = dest.inbox.match_send(s.channel, eager ? nullptr : &env);
    if (!r && eager) {
      auto copy = std::make_unique<Envelope>();
      copy->eager = std::make_unique<char[]>(std::max<std::size_t>(op.bytes, 1));
      std::copy_n(static_cast<const char*>(op.buf), op.bytes, copy->eager.get());
      copy->data = copy->eager.get();
      copy->bytes = op.bytes;
      r = dest.inbox.match_send(s.channel, copy.get());
      if (!r) copy.release();  // the inbox owns it now, and the receive frees it
    }
    if (r) {
      fill(*r, op.buf, op.bytes, env.device);
    } else if (!eager) {
      s.queued = true;
      if (dest.receiver_copies.load(std::memory_order_relaxed)) dest.bell.ring();
      return;
    } else if (dest.receiver_copies.load(std::memory_order_relaxed)) {
      dest.bell.ring();
    }
    env.state.store(CopyState::done, std::memory_order_relaxed);
  }

  // Receives still waiting here (GPU: this rank copies) take their sends if they came; then whether all are done.
  // A size mismatch is an error as soon as it is seen.
  bool receives_done() {
    bool all = true;
    receives_.each([&](ReceiveRecord& r) {
      if (!is_done(r.posted.state) && receiver_copies())
        if (Envelope* e = me_.inbox.match_receive(r.channel, nullptr)) empty_into(e, r.posted);
      if (!is_done(r.posted.state)) {
        all = false;
      } else if (r.posted.sent_bytes != r.posted.bytes) {
        throw Error(who() + " expected " + std::to_string(r.posted.bytes) + " bytes from rank " +
                    std::to_string(r.peer) + ", which sent " + std::to_string(r.posted.sent_bytes));
      }
    });
    return all;
  }

  static bool sends_done(const RecordPool<SendRecord>& sends) {
    return sends.all([](const SendRecord& s) { return is_done(s.envelope.state); });
  }

  // Until done() (checked after every ring of this rank's doorbell), an abort or the deadline. While it waits,
  // the rank publishes whom it waits for (a world rank, from waiting_for()), so that a timeout can follow the
  // chain of waits to the rank that holds everyone up.
  template <class Done, class Timeout, class WaitingFor>
  void wait(Done done, Deadline deadline, Timeout timeout_error, WaitingFor waiting_for) {
    struct Published {
      std::atomic<int>& slot;
      bool set = false;
      int uncaught = std::uncaught_exceptions();
      // A wait that failed stays published: the ranks timing out after this one follow the chain through it.
      ~Published() {
        if (set && std::uncaught_exceptions() == uncaught) slot.store(-1, std::memory_order_relaxed);
      }
    } published{me_.waiting_on};
    for (;;) {
      const std::uint32_t ticket = me_.bell.ticket();
      if (done()) return host_order::receive(&me_.bell);  // what the peers that finished our copies had seen
      throw_if_aborted();
      if (!published.set) {
        me_.waiting_on.store(waiting_for(), std::memory_order_relaxed);
        published.set = true;
      }
      if (!me_.bell.wait(ticket, deadline, world_->wait) && !done()) {
        throw_if_aborted();
        throw timeout_error();
      }
    }
  }

  int first_pending_peer() const {
    int peer = -1;
    receives_.each([&](const ReceiveRecord& r) {
      if (peer < 0 && !is_done(r.posted.state)) peer = world_rank(r.peer);
    });
    return peer >= 0 ? peer : first_pending_send(sends_);
  }

  int first_pending_send(const RecordPool<SendRecord>& sends) const {
    int peer = -1;
    sends.each([&](const SendRecord& s) {
      if (peer < 0 && !is_done(s.envelope.state)) peer = world_rank(s.peer);
    });
    return peer;
  }

  // "; late: rank 1, which ...": the end of the chain of waits from world rank `first` (world ranks).
  std::string late_rank(int first) const {
    if (first < 0) return "";
    std::vector<int> seen{members_[std::size_t(rank_)]};
    int r = first;
    std::string via;
    for (;;) {
      seen.push_back(r);
      const int next = world_->at(r).waiting_on.load(std::memory_order_relaxed);
      if (next < 0 || std::find(seen.begin(), seen.end(), next) != seen.end()) break;
      via += (via.empty() ? "" : ", ") + std::to_string(r);
      r = next;
    }
    const bool gone = world_->at(r).gone.load(std::memory_order_acquire);
    const int next = world_->at(r).waiting_on.load(std::memory_order_relaxed);
    return "; late: rank " + std::to_string(r) +
           (gone ? ", whose thread has left"
                 : next < 0 ? ", which waits for no message (stalled, or busy outside the transport)"
                            : ", which waits for rank " + std::to_string(next) +
                                  " in turn (a cycle: the ranks wait in different operations)") +
           (via.empty() ? "" : " (waiting for it in between: rank(s) " + via + ")");
  }

  TimeoutError group_timeout() const {
    std::string from;
    receives_.each([&](const ReceiveRecord& r) {
      if (!is_done(r.posted.state)) from += (from.empty() ? "" : ", ") + std::to_string(r.peer);
    });
    if (!from.empty())
      return TimeoutError(who() + " waited for data from rank(s) " + from + late_rank(first_pending_peer()));
    return send_timeout(sends_);
  }

  TimeoutError send_timeout(const RecordPool<SendRecord>& sends) const {
    const SendRecord* first = nullptr;
    sends.each([&](const SendRecord& s) {
      if (!first && !is_done(s.envelope.state)) first = &s;
    });
    if (!first) return TimeoutError(who() + " waited for its sends");  // all arrived right at the deadline
    return TimeoutError(who() + " sent " + std::to_string(first->envelope.bytes) + " bytes to rank " +
                        std::to_string(first->peer) + ", which never received them" +
                        late_rank(world_rank(first->peer)));
  }

  // After a failure: takes back what nobody has started copying, and waits for the copies in flight (those
  // always end), so the buffers can go.
  void withdraw(RecordPool<ReceiveRecord>& receives) {
    receives.each([&](ReceiveRecord& r) {
      if (r.queued) me_.inbox.withdraw(r.channel, &r.posted);
    });
    wait_out([&] { return receives.all([](const ReceiveRecord& r) { return !is_copying(r.posted.state); }); });
  }

  void withdraw(RecordPool<SendRecord>& sends) {
    sends.each([&](SendRecord& s) {
      if (s.queued) s.inbox->withdraw(s.channel, &s.envelope);
    });
    wait_out([&] { return sends.all([](const SendRecord& s) { return !is_copying(s.envelope.state); }); });
  }

  template <class Done>
  void wait_out(Done done) {
    for (;;) {
      const std::uint32_t ticket = me_.bell.ticket();
      if (done()) return host_order::receive(&me_.bell);  // what the peers that finished our copies had seen
      me_.bell.wait(ticket, Deadline::max(), world_->wait);
    }
  }

  std::shared_ptr<ThreadsWorld> world_;
  std::uint64_t context_;
  std::vector<int> members_;  // group rank -> world rank
  int rank_;
  Device device_;
  ThreadsWorld::Rank& me_;
  std::uint64_t splits_ = 0;
  RecordPool<SendRecord> sends_;        // the current group's
  RecordPool<ReceiveRecord> receives_;  // the current group's
  RecordPool<SendRecord> posted_;       // post_sends not yet finished
};

}  // namespace

std::unique_ptr<Transport> make_threads_transport(std::shared_ptr<ThreadsWorld> world, int rank, Device device) {
  std::vector<int> members(std::size_t(world->size));
  for (int i = 0; i < world->size; ++i) members[std::size_t(i)] = i;
  return std::make_unique<ThreadsTransport>(std::move(world), 0, std::move(members), rank, device);
}

}  // namespace parbench
