// Communicator: a group of ranks with point-to-point groups, sub-groups (split) and every collective, each run by an
// implementation from the registry, chosen once. Later layers (DDP, ZeRO, TP, PP) build on this API only.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "collectives/communicator/algorithm.h"
#include "collectives/communicator/collective_steps.h"
#include "collectives/transport/transport.h"
#include "collectives/table/types.h"
#include "core/device.h"
#include "core/memory.h"

namespace parbench {

// Seconds this thread has spent inside the transport's waits (every step of Communicator::group: the messages'
// time on the wire and the wait for the peers), counted only while accounting is on: the collective benches'
// --outliers, for each rank's own time (the rest), which a slow rank inflates and its waiting peers do not.
void set_transport_wait_accounting(bool on);
double transport_wait_seconds();

class SymmetricMemory;
class Communicator;

// How a communicator with no implementation set picks one per collective: the registry's "auto" policy
// (choose_automatically, collectives/registry.h), given by the code that makes communicators (the bootstrap).
using ImplementationChooser = const Algorithm& (*)(Collective c, const Communicator& comm);

class Communicator final : public CollectiveSteps {
 public:
  Communicator(std::unique_ptr<Transport> transport, Device device, double timeout_s, ImplementationChooser choose);
  ~Communicator();
  Communicator(Communicator&&) noexcept;
  Communicator& operator=(Communicator&&) noexcept;

  int rank() const override { return transport_->rank(); }
  int size() const override { return transport_->size(); }
  const Device& device() const override { return device_; }
  bool ranks_share_address_space() const override { return transport_->shares_address_space(); }
  Transport& transport() const { return *transport_; }
  int local_rank() const { return local_rank_; }
  // The world rank of rank `r` of this communicator (split ones keep their members' world ranks).
  int world_rank_of(int r) const { return world_ranks_.empty() ? r : world_ranks_[std::size_t(r)]; }
  int local_size() const { return local_size_; }
  // The nodes the world's ranks run on, known at launch: node_of_world()[w] is world rank w's, numbered 0.. in the
  // order of their first ranks (a split communicator keeps its world's). One node when never set.
  const std::vector<int>& node_of_world() const { return node_of_world_; }
  int node_of(int r) const override {
    return node_of_world_.empty() ? 0 : node_of_world_[std::size_t(world_rank_of(r))];
  }
  int nodes() const;  // the world's
  int group_nodes() const;  // the nodes this communicator's own ranks run on (a split one may span fewer)
  void set_local(int local_rank, int local_size, std::vector<int> node_of_world_rank);
  double timeout_s() const { return timeout_s_; }
  void set_timeout(double seconds) { timeout_s_ = seconds; }
  // The stream of the collective running now (CollArgs::stream); null outside a collective.
  void* stream() const { return stream_; }

  // NCCL: the communicator (ncclComm_t) when usable, or why not (one GPU per rank, no GPU, no NCCL build).
  void* nccl_comm() const { return nccl_comm_; }
  const std::string& nccl_unavailable() const { return nccl_reason_; }
  void set_nccl(void* comm, std::string reason_if_null);  // not owned: the bootstrap destroys it
  // Timed loops, the way nccl-tests times: between begin_batch() and end_batch() a library collective (NCCL)
  // returns once queued on its stream, without waiting for its result; end_batch() waits once for every stream
  // used, against the timeout. Hand-written implementations finish on return either way.
  void begin_batch() { batching_ = true, batch_streams_.clear(); }
  void end_batch();
  bool batching() const { return batching_; }
  // Stream order, as a training step issues collectives: while a stream is set (StreamOrder below), a collective
  // called without a stream of its own is ordered on it. A library collective is queued there and returns at once
  // (the stream's later work sees its result); a hand-written one waits for the stream, then runs to its end.
  // Host buffers still come back filled (their copy waits for the stream).
  void* ordered_on() const { return ordered_on_; }
  class StreamOrder {
   public:
    StreamOrder(Communicator& c, void* stream) : c_(c), previous_(c.ordered_on_) { c.ordered_on_ = stream; }
    ~StreamOrder() { c_.ordered_on_ = previous_; }
    StreamOrder(const StreamOrder&) = delete;
    StreamOrder& operator=(const StreamOrder&) = delete;

   private:
    Communicator& c_;
    void* previous_;
  };
  // Waits, within the timeout, for the work queued on `stream` of this communicator's device (the end of a step
  // whose collectives were queued there); a library collective that never finishes is reported, not waited for:
  // TimeoutError "rank R: [while measuring X, ]<what> did not finish within the timeout of T s (the last collective
  // this communicator queued: <call>)".
  void wait_stream(void* stream, std::string_view what = "the work queued on its stream");

  // Ranks that pass the same color form a new communicator, ordered by (key, old rank). Collective.
  Communicator split(int color, int key);

  // Point-to-point: every op of the group is posted, then all complete, within the timeout.
  void group(std::span<const P2POp> ops) override;
  // Sends that complete in the background (the pipeline's activations and gradients): keep the buffers unchanged
  // until finish_sends() returns, which waits, within the timeout, until the peers have received them all.
  void post_sends(std::span<const P2POp> ops);
  void finish_sends();
  // Point-to-point queued on `stream` (cudaStream_t) without the host waiting: one NCCL group, messages matched
  // per peer in issue order (tags are not used: both sides must issue in the same order). Needs nccl_comm().
  void queue_group(std::span<const P2POp> ops, void* stream);
  void abandon_sends() { transport_->abandon_sends(); }  // after a failure, before the buffers go
  void send(const void* buf, std::size_t bytes, int peer) override;
  void recv(void* buf, std::size_t bytes, int peer) override;
  void barrier() override;

  // The implementation this communicator's collectives run (null: the chooser given at construction, per
  // collective), set once; split() passes it on.
  // find_implementation (collectives/registry.h) resolves a --impl name.
  void set_implementation(const Algorithm* impl) { impl_ = impl; }
  const Algorithm* implementation() const { return impl_; }
  ImplementationChooser chooser() const { return choose_; }
  // The implementation a collective `c` runs here: the one set, or the policy's choice for `c`.
  const Algorithm& resolve(Collective c) const;

  // Runs one collective with this communicator's implementation, or with `algo`.
  // Throws UsageError for bad arguments and for an implementation that does not support the call, TimeoutError
  // (naming rank, collective, implementation and size) when it does not finish within the timeout.
  void run(const CollArgs& a);
  void run(const CollArgs& a, const Algorithm& algo);

  // `impl`: the implementation of this call alone; null for this communicator's.
  void allreduce(const void* send, void* recv, std::size_t count, DType t, ReduceOp op,
                 const Algorithm* impl = nullptr);
  void reduce(const void* send, void* recv, std::size_t count, DType t, ReduceOp op, int root,
              const Algorithm* impl = nullptr);
  void broadcast(const void* send, void* recv, std::size_t count, DType t, int root, const Algorithm* impl = nullptr);
  void allgather(const void* send, void* recv, std::size_t count, DType t, const Algorithm* impl = nullptr);
  void reduce_scatter(const void* send, void* recv, std::size_t count, DType t, ReduceOp op,
                      const Algorithm* impl = nullptr);
  void gather(const void* send, void* recv, std::size_t count, DType t, int root, const Algorithm* impl = nullptr);
  void scatter(const void* send, void* recv, std::size_t count, DType t, int root, const Algorithm* impl = nullptr);
  void alltoall(const void* send, void* recv, std::size_t count, DType t, const Algorithm* impl = nullptr);
  void sendrecv(const void* send, void* recv, std::size_t count, DType t, const Algorithm* impl = nullptr);
  // Per-peer `count` on average, split among the peers by the process's alltoallv pattern (alltoallv_split.h):
  // each rank sends its shares packed in rank order and receives its peers' likewise.
  void alltoallv(const void* send, void* recv, std::size_t count, DType t, const Algorithm* impl = nullptr);
  // allgather by pairwise exchanges with rank ^ 1, ^ 2, ^ 4, ... (a power-of-two number of ranks).
  void hypercube(const void* send, void* recv, std::size_t count, DType t, const Algorithm* impl = nullptr);

  // Building blocks for algorithms, on this communicator's device.
  void combine(void* inout, const void* in, std::size_t count, DType t, ReduceOp op) {
    combine(inout, inout, in, count, t, op);
  }
  // out = x op y: an out-of-place algorithm's first step reads its send buffer instead of a copy of it.
  void combine(void* out, const void* x, const void* y, std::size_t count, DType t, ReduceOp op) override;
  void divide(void* buf, std::size_t count, DType t) override;  // buf /= size(): the end of avg
  void copy(void* dst, const void* src, std::size_t bytes) override;
  // A device buffer of at least `bytes`, kept between calls (slots 0..3 are independent). Algorithms use slots
  // 0 and 1; run() stages host buffers on a GPU in 2 and 3.
  void* scratch(int slot, std::size_t bytes) override;
  // A pinned host buffer of at least `bytes`, kept between calls, for implementations that stage GPU data through
  // host memory (MPI's collectives); a larger request replaces it.
  char* host_staging(std::size_t bytes) { return host_staging_.get(bytes); }
  // The symmetric memory of the device-side collectives (symmetric_memory.h), made empty on first use; its
  // buffers are made collectively by the first call that needs them and freed with the communicator.
  SymmetricMemory& symmetric_memory();
  // "rank R: <the call or the measurement> did not finish within the timeout of T s: <why>".
  std::string timeout_message(const CollArgs& a, std::string_view impl, const std::string& why) const;
  // wait_stream's: "rank R: [while measuring X, ]<what> did not finish ... (the last collective ... queued: ...)".
  std::string stream_timeout_message(std::string_view what) const;
  // When the collective running now must have finished: the timeout from the call's first wait, read from the
  // clock only then (a clock read per call costs a tenth of a small library call; library calls under the
  // watchdog never ask).
  Deadline deadline() const {
    if (!deadline_set_)
      deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s_)),
      deadline_set_ = true;
    return deadline_;
  }

 private:
  void release();
  // Host buffers on a GPU communicator go through device scratch; then run(a, algo).
  void run_staged(const CollArgs& in, const Algorithm& algo);
  void call(const CollArgs& a, const Algorithm* impl);  // `impl`, or this communicator's when null
  void flip_one_received_byte(std::span<const P2POp> ops);
  // This rank's larger buffer of the call in bytes, and describe_call's text for the call run by `impl`.
  std::size_t call_bytes(const CollArgs& a) const;
  std::string describe_args(const CollArgs& a, std::string_view impl) const;
  std::unique_ptr<Transport> transport_;
  Device device_;
  double timeout_s_;
  const Algorithm* impl_ = nullptr;  // null: choose_ per collective
  ImplementationChooser choose_ = nullptr;
  mutable Deadline deadline_{};
  mutable bool deadline_set_ = false;
  bool in_call_ = false;
  DType call_dtype_ = DType::f32;  // of the collective running now
  int channel_ = 0;  // tag of point-to-point traffic now: 0 user p2p, 1 collectives, 2 barrier
  int local_rank_ = 0, local_size_ = 1;
  std::vector<int> node_of_world_;
  std::vector<int> world_ranks_;  // by rank; empty for the world itself
  void* nccl_comm_ = nullptr;
  bool owns_nccl_ = false;  // made by split(): destroyed with this communicator
  bool batching_ = false;
  void* ordered_on_ = nullptr;          // StreamOrder's stream
  void* stream_ = nullptr;              // of the collective running now
  std::vector<void*> batch_streams_;    // the streams of the batch's collectives
  // The last collective queued on a stream (a library's), named when a wait for the stream times out.
  CollArgs last_queued_{};
  const Algorithm* last_queued_algo_ = nullptr;
  // The last (implementation, collective) found supported here: small calls in a timed loop skip the check.
  const Algorithm* vetted_algo_ = nullptr;
  Collective vetted_coll_ = Collective::allreduce;
  std::string nccl_reason_ = "this build has no NCCL";
  struct Scratch {
    void* ptr = nullptr;
    std::size_t bytes = 0;
  } scratch_[4];
  HostStaging host_staging_{Device{}};
  std::unique_ptr<SymmetricMemory> symmetric_;
  std::uint64_t splits_ = 0;
};

// "allreduce/ring of 1024 bytes (256 x f32 per rank, 4 ranks)": how reports name a call.
std::string describe_call(Collective c, std::string_view impl, std::size_t bytes, std::size_t count, DType t,
                          int ranks);

}  // namespace parbench
