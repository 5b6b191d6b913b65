// Threads transport: ranks are threads of one process. A send posts its buffer to the (context, src, dst)
// mailbox; the receiver copies straight from it (one copy, host memcpy or CUDA peer copy) and marks it done.
// Every wait is a condition-variable wait with the caller's deadline, and any failing rank aborts the world.
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <tuple>

#include "collectives/transport.h"
#include "core/memory.h"
#include "core/stream.h"

namespace parbench {

class ThreadsWorld {
 public:
  explicit ThreadsWorld(int ranks) : size(ranks) {}
  struct Slot {
    const void* data;
    std::size_t bytes;
    Device device;
    int peer;       // destination, in the sender's group
    int taken = 0;  // 0 posted, 1 being copied, 2 done
  };
  using Key = std::tuple<std::uint64_t, int, int, int>;  // context, source and destination world ranks, tag

  const int size;
  std::mutex mu;
  std::condition_variable cv;
  std::map<Key, std::deque<Slot*>> mailboxes;
  bool aborted = false;
  std::string abort_reason;

  void abort(const std::string& reason) {
    std::lock_guard lock(mu);
    if (!aborted) aborted = true, abort_reason = reason;
    cv.notify_all();
  }
};

std::shared_ptr<ThreadsWorld> make_threads_world(int ranks) { return std::make_shared<ThreadsWorld>(ranks); }

void abort_threads_world(ThreadsWorld& world, const std::string& reason) { world.abort(reason); }

namespace {

class ThreadsTransport final : public Transport {
 public:
  ThreadsTransport(std::shared_ptr<ThreadsWorld> world, std::uint64_t context, std::vector<int> members, int rank,
                   Device device)
      : world_(std::move(world)), context_(context), members_(std::move(members)), rank_(rank), device_(device) {}

  std::string_view name() const override { return "threads"; }
  int rank() const override { return rank_; }
  int size() const override { return int(members_.size()); }
  bool shares_address_space() const override { return true; }
  void abort(const std::string& reason) override { world_->abort(reason); }

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
    if (!posted_.empty()) withdraw(posted_);
    posted_.clear();
  }

  void post_sends(std::span<const P2POp> ops) override {
    ThreadsWorld& w = *world_;
    const int me = members_[std::size_t(rank_)];
    for (const P2POp& op : ops) check_peer(op.peer);
    settle_sends(ops);
    std::lock_guard lock(w.mu);
    throw_if_aborted();
    for (const P2POp& op : ops) {
      if (op.kind != P2POp::send) throw Error("post_sends: a receive among the sends");
      posted_.push_back(std::make_unique<ThreadsWorld::Slot>(ThreadsWorld::Slot{op.buf, op.bytes, op.device(device_), op.peer}));
      w.mailboxes[{context_, me, members_[std::size_t(op.peer)], op.tag}].push_back(posted_.back().get());
    }
    w.cv.notify_all();
  }

  void finish_sends(Deadline deadline) override {
    try {
      wait_sent(posted_, deadline);
    } catch (...) {
      abandon_sends();
      throw;
    }
    posted_.clear();
  }

  void group(std::span<const P2POp> ops, Deadline deadline) override {
    ThreadsWorld& w = *world_;
    const int me = members_[std::size_t(rank_)];
    std::vector<std::unique_ptr<ThreadsWorld::Slot>> sends;
    std::vector<const P2POp*> recvs;
    for (const P2POp& op : ops) check_peer(op.peer);
    settle_sends(ops);
    {
      std::lock_guard lock(w.mu);
      throw_if_aborted();
      for (const P2POp& op : ops) {
        if (op.kind == P2POp::recv) {
          recvs.push_back(&op);
          continue;
        }
        sends.push_back(std::make_unique<ThreadsWorld::Slot>(ThreadsWorld::Slot{op.buf, op.bytes, op.device(device_), op.peer}));
        w.mailboxes[{context_, me, members_[std::size_t(op.peer)], op.tag}].push_back(sends.back().get());
      }
      w.cv.notify_all();
    }
    try {
      receive_all(recvs, deadline);
      wait_sent(sends, deadline);
    } catch (...) {
      withdraw(sends);
      throw;
    }
  }

 private:
  void check_peer(int peer) const {
    if (peer < 0 || peer >= size())
      throw Error("rank " + std::to_string(rank_) + ": peer " + std::to_string(peer) + " outside the group of " +
                  std::to_string(size()));
  }

  // Caller holds the world lock.
  void throw_if_aborted() const {
    if (world_->aborted) throw AbortedError("rank " + std::to_string(rank_) + " stopped: " + world_->abort_reason);
  }

  // A peer on another GPU copies our send buffers on its own device's stream, which is not ordered with the
  // kernels that may still be writing them here: those finish before the buffers are published. All of a rank's
  // work is queued on its GPU's default stream, so waiting for that stream (not the whole device) is enough.
  void settle_sends(std::span<const P2POp> ops) const {
    if (device_.on_host()) return;
    for (const P2POp& op : ops)
      if (op.kind == P2POp::send && !op.host) return Stream(device_).synchronize();
  }

  void receive_all(std::vector<const P2POp*>& pending, Deadline deadline) {
    ThreadsWorld& w = *world_;
    const int me = members_[std::size_t(rank_)];
    while (!pending.empty()) {
      const P2POp* op = nullptr;
      ThreadsWorld::Slot* slot = nullptr;
      {
        std::unique_lock lock(w.mu);
        for (;;) {
          throw_if_aborted();
          for (auto it = pending.begin(); it != pending.end(); ++it) {
            auto box = w.mailboxes.find({context_, members_[std::size_t((*it)->peer)], me, (*it)->tag});
            if (box != w.mailboxes.end() && !box->second.empty()) {
              op = *it, slot = box->second.front();
              box->second.pop_front();
              pending.erase(it);
              break;
            }
          }
          if (slot) break;
          if (w.cv.wait_until(lock, deadline) == std::cv_status::timeout) {
            throw_if_aborted();
            std::string from;
            for (const P2POp* p : pending) from += (from.empty() ? "" : ", ") + std::to_string(p->peer);
            throw TimeoutError("rank " + std::to_string(rank_) + " waited for data from rank(s) " + from);
          }
        }
        slot->taken = 1;
      }
      std::string mismatch;
      if (slot->bytes != op->bytes)
        mismatch = "rank " + std::to_string(rank_) + " expected " + std::to_string(op->bytes) +
                   " bytes from rank " + std::to_string(op->peer) + ", which sent " + std::to_string(slot->bytes);
      else
        device_memcpy(op->device(device_), op->buf, slot->device, slot->data, op->bytes);
      {
        std::lock_guard lock(w.mu);
        slot->taken = 2;
        w.cv.notify_all();
      }
      if (!mismatch.empty()) throw Error(mismatch);
    }
  }

  // Until every one of `sends` is received.
  void wait_sent(const std::vector<std::unique_ptr<ThreadsWorld::Slot>>& sends, Deadline deadline) {
    ThreadsWorld& w = *world_;
    std::unique_lock lock(w.mu);
    auto all_done = [&] {
      return std::all_of(sends.begin(), sends.end(), [](const auto& s) { return s->taken == 2; });
    };
    while (!all_done()) {
      throw_if_aborted();
      if (w.cv.wait_until(lock, deadline) == std::cv_status::timeout && !all_done()) {
        for (const auto& s : sends)
          if (s->taken != 2)
            throw TimeoutError("rank " + std::to_string(rank_) + " sent " + std::to_string(s->bytes) +
                               " bytes to rank " + std::to_string(s->peer) + ", which never received them");
      }
    }
  }

  // On failure: take back sends nobody started reading, and wait for copies in flight out of our buffers.
  void withdraw(std::vector<std::unique_ptr<ThreadsWorld::Slot>>& sends) {
    ThreadsWorld& w = *world_;
    std::unique_lock lock(w.mu);
    for (auto& [key, box] : w.mailboxes)
      box.erase(std::remove_if(box.begin(), box.end(),
                               [&](ThreadsWorld::Slot* s) {
                                 return std::any_of(sends.begin(), sends.end(),
                                                    [&](const auto& m) { return m.get() == s; });
                               }),
                box.end());
    w.cv.wait(lock, [&] {
      return std::none_of(sends.begin(), sends.end(), [](const auto& s) { return s->taken == 1; });
    });
  }

  std::shared_ptr<ThreadsWorld> world_;
  std::uint64_t context_;
  std::vector<int> members_;  // group rank -> world rank
  int rank_;
  Device device_;
  std::uint64_t splits_ = 0;
  std::vector<std::unique_ptr<ThreadsWorld::Slot>> posted_;  // post_sends not yet finished
};

}  // namespace

std::unique_ptr<Transport> make_threads_transport(std::shared_ptr<ThreadsWorld> world, int rank, Device device) {
  std::vector<int> members(std::size_t(world->size));
  for (int i = 0; i < world->size; ++i) members[std::size_t(i)] = i;
  return std::make_unique<ThreadsTransport>(std::move(world), 0, std::move(members), rank, device);
}

}  // namespace parbench
