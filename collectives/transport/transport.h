// Point-to-point transports under the Communicator: a group of sends and receives posted together and completed
// before a deadline (so a ring step cannot deadlock and no wait can hang). One file per transport.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/device.h"
#include "base/error.h"

namespace parbench {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

// A wait passed its deadline. The message names the rank and what it waited for; the Communicator adds the
// collective, implementation and size.
struct TimeoutError : Error {
  using Error::Error;
};
// A collective did not finish in time; the message names rank, collective, implementation and size.
struct CollectiveTimeoutError : TimeoutError {
  using TimeoutError::TimeoutError;
};
// Another rank of this process failed, so this one stopped waiting (threads mode).
struct AbortedError : Error {
  using Error::Error;
};

struct P2POp {
  enum Kind { send, recv };
  Kind kind;
  void* buf;  // const for sends
  std::size_t bytes;
  int peer;     // rank in this transport's group
  int tag = 0;  // channel: messages match only within one (see Communicator: p2p, collectives, barrier)
  bool host = false;  // the buffer is host memory even when the transport's device is a GPU (barrier, split)
  Device device(const Device& transport_device) const { return host ? Device{} : transport_device; }
};

// Tags 0..2 are the Communicator's channels (user point-to-point, collectives, barrier and split); a sender that
// relies on matching by tag (the pipeline's messages, which may be received in another order than sent) uses
// tags from here up.
constexpr int kFirstMatchedTag = 16;

inline P2POp send_op(const void* buf, std::size_t bytes, int peer) {
  return {P2POp::send, const_cast<void*>(buf), bytes, peer, 0};
}
inline P2POp recv_op(void* buf, std::size_t bytes, int peer) { return {P2POp::recv, buf, bytes, peer, 0}; }

class Transport {
 public:
  virtual ~Transport() = default;
  virtual std::string_view name() const = 0;  // "threads", "mpi", "nccl"
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Posts every op of the group, then completes them all before `deadline` (TimeoutError after it). Messages
  // between two ranks with the same tag match in posting order; a send and its receive must have the same size.
  virtual void group(std::span<const P2POp> ops, Deadline deadline) = 0;
  // Sends posted now and completed in the background (MPI_Isend): the caller keeps the buffers unchanged until
  // finish_sends, which waits until every posted send has been received (TimeoutError after `deadline`). The
  // messages match receives like those of group().
  virtual void post_sends(std::span<const P2POp> ops) = 0;
  virtual void finish_sends(Deadline deadline) = 0;
  // After a failure: takes back the posted sends (waiting for copies already in flight), so their buffers can go.
  virtual void abandon_sends() = 0;
  // A transport for the ranks that passed the same color, ordered by (key, rank). `members` lists their ranks
  // here in that order and `new_rank` is this rank's place in it (the Communicator computed both).
  virtual std::unique_ptr<Transport> split(int color, int key, const std::vector<int>& members, int new_rank) = 0;
  // True when every rank's memory is addressable from every other (threads in one process), which the one-shot
  // algorithms need.
  virtual bool shares_address_space() const { return false; }
  // Tells the other ranks to stop waiting (threads mode); MPI and NCCL abort from the bootstrap.
  virtual void abort(const std::string& /*reason*/) {}
  // Whether another rank has failed and told this one to stop waiting (threads mode).
  virtual bool aborted() const { return false; }
  // Another transport over the same ranks that this one hands some messages to (NCCL's MPI, see
  // make_nccl_transport), or null.
  virtual const Transport* companion() const { return nullptr; }
};

// Threads mode: one shared world per process, created once and handed to every rank's thread.
// A group's host-memory send of at most this many bytes that finds no receive posted is copied (eager), so the
// sender goes on; a larger one waits until its receive copies it (rendezvous). post_sends never copies eagerly.
constexpr std::size_t kThreadsEagerLimit = 64 << 10;
class ThreadsWorld;
std::shared_ptr<ThreadsWorld> make_threads_world(int ranks);
std::unique_ptr<Transport> make_threads_transport(std::shared_ptr<ThreadsWorld> world, int rank, Device device);
// Makes every rank of `world` stop waiting (AbortedError) because of `reason`.
void abort_threads_world(ThreadsWorld& world, const std::string& reason);
// Rank `rank`'s thread has ended: a rank whose wait times out names it as the one that left.
void mark_rank_gone(ThreadsWorld& world, int rank);

#ifdef PARBENCH_HAVE_MPI
// MPI point-to-point over a duplicate of `comm` (an MPI_Comm passed as void* to keep mpi.h out of this header).
// Device memory is staged through host buffers.
std::unique_ptr<Transport> make_mpi_transport(const void* mpi_comm, Device device);
#endif

#ifdef PARBENCH_HAVE_NCCL
// ncclSend/ncclRecv in groups on `nccl_comm` (ncclComm_t as void*), completed on `stream` (cudaStream_t). NCCL
// matches point-to-point messages in issue order only and cannot post a send to complete later, so posted sends
// and groups of tags >= kFirstMatchedTag go through `matched` (an MPI transport over the same ranks) when given,
// and are refused without it.
std::unique_ptr<Transport> make_nccl_transport(void* nccl_comm, void* stream, int rank, int size, Device device,
                                               std::unique_ptr<Transport> matched = nullptr);
#endif

// NCCL communicators (ncclComm_t as void*) for code built with or without NCCL (without, these throw):
// ncclCommSplit, collective over `comm`'s ranks (nullptr for a color < 0); ncclCommDestroy; and a wait for the
// work queued on `stream` that polls until `deadline`, then aborts `comm` and throws TimeoutError(what).
void* nccl_comm_split(void* comm, int color, int key);
void nccl_comm_destroy(void* comm) noexcept;
void nccl_stream_wait(void* comm, void* stream, Deadline deadline, const std::string& what);
// One group of ncclSend/ncclRecv of device buffers queued on `stream`, without waiting (matched per peer in issue
// order, tags ignored).
void nccl_queue_p2p(void* comm, std::span<const P2POp> ops, void* stream);
// What the last group queued by nccl_queue_p2p on `comm` was, kept for a timeout's message: the caller's world
// rank and each op's kind and peer, the peers mapped to world ranks by `world_ranks` (the group's members; empty:
// the group is the world). Kept as numbers, worded only when a timeout asks: nccl_queued_p2p_text gives those of
// every communicator of `comm`'s rank ("; the last ...", "" when none).
void nccl_note_queued(void* comm, int world_rank, std::span<const P2POp> ops, std::span<const int> world_ranks);
std::string nccl_queued_p2p_text(void* comm);
// Whether a wait of this process timed out and aborted its NCCL communicators: a later failure of another rank
// of the process (an NCCL error from an aborted communicator) is a consequence, not a cause.
bool nccl_aborted_after_timeout();

}  // namespace parbench
