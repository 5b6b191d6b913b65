// Symmetric memory (symmetric_memory.h): raw allocations exchanged once per communicator and size, as addresses
// between threads of one process or as CUDA IPC handles between processes of one node.
#include "collectives/communicator/symmetric_memory.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>

#include "collectives/communicator/communicator.h"
#include "core/host_counts.h"
#include "core/memory.h"

#ifdef PARBENCH_HAVE_CUDA
#include <cuda_runtime.h>
#include <unistd.h>
#endif

#if defined(PARBENCH_HAVE_CUDA) && defined(PARBENCH_CUDA_EMULATED)
// The emulated GPU may not implement IPC: then these stay null and processes cannot share symmetric memory.
#pragma weak cudaIpcGetMemHandle
#pragma weak cudaIpcOpenMemHandle
#pragma weak cudaIpcCloseMemHandle
#endif

namespace parbench {

#ifdef PARBENCH_HAVE_CUDA
// What every rank tells the others about its allocation.
struct SymmetricMemory::PeerRecord {
  std::uint64_t addr;          // threads of one process: the address itself
  unsigned char handle[64];    // processes: cudaIpcMemHandle_t
  unsigned char gpu[16];       // the GPU's UUID: two ranks on one GPU could not both wait inside a kernel
  std::uint64_t host;          // hash of the host name: only one node's GPUs map each other's memory
  int device;                  // the CUDA device index (threads mode: for the peer-access check)
  char error[160];             // why this rank could not export its memory, or ""
};

#endif

namespace {
constexpr std::size_t kFlagBytes = 4096;  // kSymmMaxBlocks x kSymmMaxRanks flags, then the epochs, ahead of the buffer
constexpr std::size_t kEpochOffset = 2048;  // SymmPeers::epochs: kSymmMaxBlocks counters
static_assert(kSymmMaxBlocks * kSymmMaxRanks * sizeof(unsigned) <= kEpochOffset);
static_assert(kEpochOffset + kSymmMaxBlocks * sizeof(unsigned) <= kFlagBytes);

#ifdef PARBENCH_HAVE_CUDA
using PeerRecord = SymmetricMemory::PeerRecord;

std::string ipc_missing() {
#ifdef PARBENCH_CUDA_EMULATED
  auto* volatile get = &cudaIpcGetMemHandle;
  auto* volatile open = &cudaIpcOpenMemHandle;
  if (!get || !open)
    return "this CUDA runtime has no IPC (cudaIpcGetMemHandle), which ranks in separate processes need";
#endif
  return {};
}

template <class T>
std::vector<T> exchange(Communicator& comm, const T& mine) {
  std::vector<T> all(std::size_t(comm.size()));
  std::vector<P2POp> ops;
  for (int q = 0; q < comm.size(); ++q) {
    ops.push_back(send_op(&mine, sizeof(T), q));
    ops.push_back(recv_op(&all[std::size_t(q)], sizeof(T), q));
  }
  for (P2POp& op : ops) op.host = true;
  comm.group(ops);
  return all;
}

std::uint64_t host_hash() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return std::hash<std::string>{}(name);
}

// Test only: PARBENCH_TEST_SYMM_SKIP_WAIT=1 makes the kernels read the peers' buffers without waiting for their
// signal (the race the data check must catch).
int planted_skip_wait() {
  static const int skip = [] {
    const char* v = std::getenv("PARBENCH_TEST_SYMM_SKIP_WAIT");
    return v && std::string(v) == "1" ? 1 : 0;
  }();
  return skip;
}

// This rank's record: its allocation's address, and under separate processes its IPC handle (or why there is none).
PeerRecord own_record(void* mine, int device, bool same_process) {
  PeerRecord me{};
  me.addr = reinterpret_cast<std::uint64_t>(mine);
  me.host = host_hash();
  me.device = device;
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  std::memcpy(me.gpu, prop.uuid.bytes, 16);
  std::string why = same_process ? std::string() : ipc_missing();
  if (!same_process && why.empty()) {
    cudaIpcMemHandle_t h;
    if (cudaError_t e = cudaIpcGetMemHandle(&h, mine); e == cudaSuccess)
      std::memcpy(me.handle, &h, sizeof me.handle);
    else
      why = std::string("cudaIpcGetMemHandle: ") + cudaGetErrorString(e), (void)cudaGetLastError();
  }
  std::snprintf(me.error, sizeof me.error, "%s", why.c_str());
  return me;
}

// Why the records exchanged rule the buffers out, the same on every rank ("" when they do not).
std::string records_refusal(const std::vector<PeerRecord>& all, bool same_process) {
  for (std::size_t q = 0; q < all.size(); ++q) {
    if (all[q].error[0]) return "rank " + std::to_string(q) + ": " + all[q].error;
    if (all[q].host != all[0].host)
      return "ranks 0 and " + std::to_string(q) + " are on different nodes; symmetric memory maps one node's GPUs";
    for (std::size_t p = 0; p < q; ++p)
      if (std::memcmp(all[p].gpu, all[q].gpu, 16) == 0)
        return "ranks " + std::to_string(p) + " and " + std::to_string(q) +
               " share a GPU; a device-side collective needs a GPU per rank (kernels waiting for each other on one "
               "GPU may never run together)";
  }
  if (same_process)
    for (std::size_t p = 0; p < all.size(); ++p)
      for (std::size_t q = 0; q < all.size(); ++q) {
        int can = 1;
        if (p != q && (cudaDeviceCanAccessPeer(&can, all[p].device, all[q].device) != cudaSuccess || !can)) {
          (void)cudaGetLastError();
          return "GPU " + std::to_string(all[p].device) + " cannot access GPU " + std::to_string(all[q].device) +
                 "'s memory (no peer access)";
        }
      }
  return {};
}
#endif
}  // namespace

std::string symmetric_memory_refusal(const Communicator& comm) {
#ifndef PARBENCH_HAVE_CUDA
  (void)comm;
  return "device-side collectives run on GPUs (--device cuda), and this build has no CUDA";
#else
  if (comm.device().kind != DeviceKind::cuda)
    return "device-side collectives run on GPUs (--device cuda); device " + device_name(comm.device()) +
           " runs the host-driven ones";
  if (comm.size() > kSymmMaxRanks)
    return std::to_string(comm.size()) + " ranks: device-side collectives run on at most " +
           std::to_string(kSymmMaxRanks) + " (the GPUs of one node)";
  if (comm.transport().shares_address_space()) {
    int gpus = 0;
    if (cudaGetDeviceCount(&gpus) != cudaSuccess) gpus = 0;
    if (comm.local_size() > gpus)
      return std::to_string(comm.local_size()) + " ranks share " + std::to_string(gpus) +
             " GPU(s); a device-side collective needs a GPU per rank (kernels waiting for each other on one GPU may "
             "never run together)";
    return {};
  }
  if (comm.size() > comm.local_size())
    return "the ranks are on several nodes (" + std::to_string(comm.size()) + " ranks, " +
           std::to_string(comm.local_size()) + " on this node); symmetric memory maps one node's GPUs";
  return ipc_missing();
#endif
}

#ifdef PARBENCH_HAVE_CUDA

SymmetricMemory::~SymmetricMemory() {
  if (mine_ || table_) {
    make_device_current(device_);
    (void)cudaDeviceSynchronize();  // the kernels still queued read and write these buffers
    (void)cudaGetLastError();
  }
  release();
  if (faults_) (void)cudaFreeHost(faults_);
  if (order_event_) (void)cudaEventDestroy(static_cast<cudaEvent_t>(order_event_));
}

void SymmetricMemory::release() noexcept {
  for (void* p : opened_)
    if (p) (void)cudaIpcCloseMemHandle(p);
  opened_.clear();
  if (table_) (void)cudaFree(table_);
  if (mine_) (void)cudaFree(mine_);
  table_ = mine_ = nullptr;
  capacity_ = 0;
}

void SymmetricMemory::reserve(Communicator& comm, std::size_t bytes, void* stream) {
  if (!failure_.empty()) throw UsageError(failure_);
  if (bytes > kMaxBytes)
    throw UsageError("a message of " + std::to_string(bytes) + " bytes exceeds the symmetric memory's limit of " +
                     std::to_string(kMaxBytes) + " bytes per rank; use a smaller size or another implementation");
  if (bytes <= capacity_) return;
  // Grow to twice the old size at least, so that a sweep of growing sizes makes the buffers a few times only.
  make(comm, std::min(kMaxBytes, std::max({bytes, 2 * capacity_, std::size_t(64) << 10})), stream);
}

void SymmetricMemory::make(Communicator& comm, std::size_t bytes, void* stream) {
  make_device_current(device_);
  // Once this rank's earlier operations are done, every peer has finished reading its buffer (each operation ends
  // waiting for the peers' "done reading" signals), so it may go.
  wait(comm);
  release();
  const bool same_process = comm.transport().shares_address_space();
  rank_ = comm.rank(), ranks_ = comm.size();
  if (!faults_) {
    CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&faults_), sizeof(SymmFault) * kSymmMaxBlocks,
                             cudaHostAllocMapped | cudaHostAllocPortable));
    std::memset(static_cast<void*>(faults_), 0, sizeof(SymmFault) * kSymmMaxBlocks);
    cudaEvent_t e;
    CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    order_event_ = e;
  }
  auto* s = static_cast<cudaStream_t>(stream);
  CUDA_CHECK(cudaMalloc(&mine_, kFlagBytes + bytes));
  CUDA_CHECK(cudaMemsetAsync(mine_, 0, kFlagBytes, s));  // before any peer learns the address
  base_ = 0;  // with the epochs just cleared (every rank makes its buffers at the same operation)
  recent_ = {};
  CUDA_CHECK(cudaStreamSynchronize(s));
  const std::vector<PeerRecord> all = exchange(comm, own_record(mine_, device_.index, same_process));
  std::vector<void*> bases(static_cast<std::size_t>(ranks_));
  std::string why = records_refusal(all, same_process);
  if (why.empty()) why = open_peers(comm, all, same_process, bases);
  if (!why.empty()) {
    release();
    failure_ = "symmetric memory cannot be made: " + why;
    throw UsageError(failure_);
  }
  std::vector<void*> table(2 * std::size_t(ranks_));
  for (int q = 0; q < ranks_; ++q) {
    table[std::size_t(q)] = static_cast<char*>(bases[std::size_t(q)]) + kFlagBytes;
    table[std::size_t(ranks_ + q)] = bases[std::size_t(q)];
  }
  CUDA_CHECK(cudaMalloc(&table_, table.size() * sizeof(void*)));
  CUDA_CHECK(cudaMemcpyAsync(table_, table.data(), table.size() * sizeof(void*), cudaMemcpyHostToDevice, s));
  CUDA_CHECK(cudaStreamSynchronize(s));
  capacity_ = bytes;
}

std::string SymmetricMemory::open_peers(Communicator& comm, const std::vector<PeerRecord>& all, bool same_process,
                                        std::vector<void*>& bases) {
  std::string why;
  for (int q = 0; q < ranks_ && why.empty(); ++q) {
    if (same_process || q == rank_) {
      bases[std::size_t(q)] = reinterpret_cast<void*>(all[std::size_t(q)].addr);
      continue;
    }
    cudaIpcMemHandle_t h;
    std::memcpy(&h, all[std::size_t(q)].handle, sizeof h);
    const cudaError_t e = cudaIpcOpenMemHandle(&bases[std::size_t(q)], h, cudaIpcMemLazyEnablePeerAccess);
    if (e == cudaSuccess) {
      opened_.push_back(bases[std::size_t(q)]);
      continue;
    }
    (void)cudaGetLastError();
    why = "rank " + std::to_string(rank_) + " could not open rank " + std::to_string(q) +
          "'s memory: cudaIpcOpenMemHandle: " + cudaGetErrorString(e);
  }
  if (same_process) return why;
  // Opening succeeds or fails per rank: every rank must end with the same outcome.
  const std::vector<int> oks = exchange(comm, why.empty() ? 1 : 0);
  for (int q = 0; q < ranks_ && why.empty(); ++q)
    if (!oks[std::size_t(q)])
      why = "rank " + std::to_string(q) + " could not open a peer's memory (cudaIpcOpenMemHandle)";
  return why;
}

SymmPeers SymmetricMemory::begin_op(const Communicator& comm, const CollArgs& a, std::string_view impl,
                                    unsigned phases, void* stream) {
  // The buffers are one set: an operation on another stream must not start before the previous one ended.
  if (used_ && stream != last_stream_) {
    auto e = static_cast<cudaEvent_t>(order_event_);
    CUDA_CHECK(cudaEventRecord(e, static_cast<cudaStream_t>(last_stream_)));
    CUDA_CHECK(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), e, 0));
  }
  used_ = true, last_stream_ = stream;
  if (std::find(pending_.begin(), pending_.end(), stream) == pending_.end()) pending_.push_back(stream);
  SymmPeers p{};
  p.buffers = static_cast<void* const*>(table_);
  p.signals = reinterpret_cast<unsigned* const*>(static_cast<void**>(table_) + ranks_);
  p.faults = faults_;
  p.epochs = reinterpret_cast<unsigned*>(static_cast<char*>(mine_) + kEpochOffset);
  p.phases = phases;
  p.rank = rank_, p.ranks = ranks_;
  p.base = base_;
  p.timeout_ns = static_cast<unsigned long long>(std::min(comm.timeout_s(), 1e6) * 1e9);  // no overflow past now
  p.skip_ready_wait = planted_skip_wait();
  recent_[next_record_++ % recent_.size()] = OpRecord{base_, phases, a, impl};
  base_ += phases;
  return p;
}

std::string SymmetricMemory::fault_text(const OpRecord** op) const {
  for (int b = 0; b < kSymmMaxBlocks; ++b) {
    SymmFault& f = faults_[b];
    const unsigned missing = __atomic_load_n(&f.missing, __ATOMIC_ACQUIRE);
    if (!missing) continue;
    const unsigned base = __atomic_load_n(&f.base, __ATOMIC_ACQUIRE);
    const unsigned phase = __atomic_load_n(&f.phase, __ATOMIC_ACQUIRE);
    for (const OpRecord& r : recent_)
      if (r.base == base && r.impl.size()) *op = &r;
    for (int c = 0; c < kSymmMaxBlocks; ++c) __atomic_store_n(&faults_[c].missing, 0u, __ATOMIC_RELEASE);
    const unsigned phases = *op ? (*op)->phases : phase;
    return "rank " + std::to_string(missing - 1) + " did not arrive: rank " + std::to_string(rank_) +
           "'s kernel waited for its signal " + std::to_string(phase) + " of " + std::to_string(phases) +
           " (block " + std::to_string(b) + ")";
  }
  return {};
}

void SymmetricMemory::check(Communicator& comm) {
  pending_.erase(std::remove_if(pending_.begin(), pending_.end(),
                                [](void* s) {
                                  const cudaError_t e = cudaStreamQuery(static_cast<cudaStream_t>(s));
                                  if (e != cudaErrorNotReady) CUDA_CHECK(e);
                                  return e == cudaSuccess;
                                }),
                 pending_.end());
  const OpRecord* op = nullptr;
  if (std::string why = fault_text(&op); !why.empty()) {
    const OpRecord& named = op ? *op : recent_[(next_record_ + recent_.size() - 1) % recent_.size()];
    throw CollectiveTimeoutError(comm.timeout_message(named.args, named.impl, why));
  }
}

void SymmetricMemory::wait(Communicator& comm) {
  if (pending_.empty()) return;
  count_host_wait();
  // The kernels give up on their own after the timeout; this bound is for work that never starts at all.
  const Deadline deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                               std::chrono::duration<double>(2 * comm.timeout_s() + 1));
  const OpRecord& last = recent_[(next_record_ + recent_.size() - 1) % recent_.size()];
  for (;;) {
    check(comm);
    if (pending_.empty()) return;
    if (Clock::now() > deadline)
      throw CollectiveTimeoutError(comm.timeout_message(
          last.args, last.impl, "rank " + std::to_string(rank_) + "'s GPU work queued before it never finished"));
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

#else  // no CUDA: symmetric_memory_refusal refuses every communicator, so nothing here is reached

SymmetricMemory::~SymmetricMemory() = default;
void SymmetricMemory::release() noexcept {}
void SymmetricMemory::reserve(Communicator&, std::size_t, void*) { throw Error("this build has no CUDA"); }
void SymmetricMemory::make(Communicator&, std::size_t, void*) {}
SymmPeers SymmetricMemory::begin_op(const Communicator&, const CollArgs&, std::string_view, unsigned, void*) {
  throw Error("this build has no CUDA");
}
std::string SymmetricMemory::fault_text(const OpRecord**) const { return {}; }
void SymmetricMemory::wait(Communicator&) {}
void SymmetricMemory::check(Communicator&) {}

#endif

}  // namespace parbench
