// Symmetric memory: a buffer of the same size on every rank of a communicator whose ranks share a node, which each
// rank's kernels reach on every peer through device pointers, plus per-block flags for kernels on different GPUs
// to wait for each other. The device-side collectives (device_algorithm.h) run on it.
#pragma once
#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "collectives/communicator/algorithm.h"
#include "collectives/communicator/symm_peers.h"
#include "collectives/transport/transport.h"
#include "core/device.h"

namespace parbench {

class Communicator;

// Why the ranks of `comm` cannot share symmetric memory, in words ("" when, as far as can be told before making
// it, they can): no GPU, more than kSymmMaxRanks ranks, ranks on several nodes, ranks sharing a GPU. Opening the
// peers' memory may still fail when it is made (then reserve() says why).
std::string symmetric_memory_refusal(const Communicator& comm);

class SymmetricMemory {
 public:
  // The most a rank's buffer may hold.
  static constexpr std::size_t kMaxBytes = std::size_t(256) << 20;

  explicit SymmetricMemory(const Device& device) : device_(device) {}
  ~SymmetricMemory();  // waits for the work queued on it, then closes the peers' memory and frees its own
  SymmetricMemory(const SymmetricMemory&) = delete;
  SymmetricMemory& operator=(const SymmetricMemory&) = delete;

  // Collective over `comm` when it makes or grows the buffers (every rank passes the same `bytes`, as every rank of
  // a collective has the same count): at least `bytes` on every rank afterwards. Throws UsageError when the
  // buffers cannot be made (naming why; every rank throws alike, and so does every later call).
  void reserve(Communicator& comm, std::size_t bytes, void* stream);
  std::size_t capacity() const { return capacity_; }

  // The kernel arguments of the next operation, `phases` flag values of its own, on `stream` (ordered after the
  // previous operation's stream when that was another). Remembers the call, so that a fault names it.
  SymmPeers begin_op(const Communicator& comm, const CollArgs& a, std::string_view impl, unsigned phases,
                     void* stream);
  // Waits until the work queued on every stream used since the last wait is done: one host wait. A kernel that
  // recorded a peer that did not arrive, or work still running long after the timeout, throws
  // CollectiveTimeoutError naming the operation and the rank that did not arrive.
  void wait(Communicator& comm);
  // The same report without waiting, after the caller waited for the streams some other way.
  void check(Communicator& comm);

 public:
  struct PeerRecord;  // what the ranks exchange to make the buffers

 private:
  struct OpRecord {
    unsigned base = 0, phases = 0;
    CollArgs args;
    std::string_view impl;
  };
  void make(Communicator& comm, std::size_t bytes, void* stream);
  // The peers' buffers from their records (opened through IPC between processes); why not, the same on every rank.
  std::string open_peers(Communicator& comm, const std::vector<PeerRecord>& all, bool same_process,
                         std::vector<void*>& bases);
  void release() noexcept;
  // The first fault a kernel recorded, in words (clearing the records), and the operation it happened in; "" when
  // none.
  std::string fault_text(const OpRecord** op) const;

  Device device_;
  std::size_t capacity_ = 0;
  std::string failure_;                 // why the buffers cannot be made: every later call throws it
  void* mine_ = nullptr;                // this rank's allocation: flags, then the buffer
  std::vector<void*> opened_;           // the peers' allocations opened through IPC (to close)
  void* table_ = nullptr;               // device: the buffer pointers, then the flag pointers, of every rank
  SymmFault* faults_ = nullptr;         // host memory the GPU writes
  void* order_event_ = nullptr;         // orders an operation on a new stream after the previous stream's
  void* last_stream_ = nullptr;
  bool used_ = false;
  std::vector<void*> pending_;          // streams with work not yet waited for
  unsigned base_ = 0;
  std::array<OpRecord, 64> recent_{};   // the last operations, by base
  std::size_t next_record_ = 0;
  int ranks_ = 0, rank_ = 0;
};

}  // namespace parbench
