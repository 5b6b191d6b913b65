// The emulated NCCL's shared private state: one operation as a rank called it (Call), what the ranks of a
// communicator share (Clique) and the waits on it. Used by nccl.cpp (communicators) and nccl_ops.cpp (the
// collectives, send/recv and groups) only.
#pragma once
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "device/emu/emu.h"
#include "device/emu/nccl_reduce.h"
#include "device/emu/nccl_shm.h"
#include "device/emu/nccl_tuning.h"
#include "device/emu/settings.h"

namespace parbench::gpu_emu {

// Remembers `msg` for ncclGetLastError and prints it when NCCL_DEBUG asks for warnings, as NCCL does.
ncclResult_t nccl_fail(ncclResult_t r, const std::string& msg);

using Clock = std::chrono::steady_clock;

enum class Kind { allreduce, reduce, broadcast, allgather, reduce_scatter, send, recv };
inline const char* kind_name(Kind k) {
  static const char* const names[] = {"ncclAllReduce", "ncclReduce", "ncclBroadcast", "ncclAllGather",
                                      "ncclReduceScatter", "ncclSend", "ncclRecv"};
  return names[int(k)];
}

// One operation as a rank called it.
struct Call {
  Kind kind;
  const void* send = nullptr;
  void* recv = nullptr;
  std::size_t count = 0;
  ncclDataType_t type = ncclFloat32;
  ncclRedOp_t op = ncclSum;
  int root = 0;  // or the peer of send/recv
  std::string describe() const {
    std::string s = std::string(kind_name(kind)) + " of " + std::to_string(count) + " " + nccl_type_name(type);
    if (kind == Kind::allreduce || kind == Kind::reduce || kind == Kind::reduce_scatter) s += " " + nccl_op_name(op);
    if (kind == Kind::reduce || kind == Kind::broadcast) s += " root " + std::to_string(root);
    if (kind == Kind::send || kind == Kind::recv) s += (kind == Kind::send ? " to " : " from ") + std::to_string(root);
    return s;
  }
  bool matches(const Call& o) const {
    return kind == o.kind && count == o.count && type == o.type && root == o.root &&
           (kind != Kind::allreduce && kind != Kind::reduce && kind != Kind::reduce_scatter ? true : op == o.op);
  }
};

// A collective in flight: each rank's call, and how many ranks have arrived, computed their result and left.
struct Round {
  std::vector<std::optional<Call>> calls;
  int arrived = 0, computed = 0, left = 0;
  std::string mismatch;
};

// A send posted by its rank's stream and not yet received.
struct PostedSend {
  const void* data;
  std::size_t bytes;
  bool received = false;
};

struct Clique;
struct SplitEntry {
  int color, key, device;
};
// A split in flight: each rank's color and key; the new cliques are made by the last rank to arrive.
struct SplitRound {
  std::vector<std::optional<SplitEntry>> entries;
  int arrived = 0, left = 0;
  std::map<int, std::shared_ptr<Clique>> cliques;  // by color
};

// What the ranks of one communicator share.
struct Clique {
  explicit Clique(int n) : size(n), devices(std::size_t(n), -1) {}
  const int size;
  // Ranks in other processes: the shared segment and its name (split communicators derive theirs from it).
  // Everything below is for ranks that are threads of this process.
  std::shared_ptr<ShmClique> shm;
  std::string shm_name;
  std::vector<int> devices;
  std::mutex m;
  std::condition_variable cv;
  std::map<std::uint64_t, Round> rounds;                                  // collectives by sequence number
  std::map<std::pair<int, int>, std::deque<std::shared_ptr<PostedSend>>> channels;  // (from, to) -> sends in order
  std::atomic<bool> aborted{false};  // set under m; read without it by new calls
  std::string failure;               // why the communicator failed, "" while healthy
  std::map<std::uint64_t, SplitRound> splits;
};

extern std::atomic<int> g_comms_alive;

// Waits on the clique's condition until `ready` or the clique is aborted; false on abort. Reports and fails the
// communicator after PARBENCH_EMU_WAIT_TIMEOUT, naming what was awaited (the emulated form of an NCCL hang).
template <class Ready>
inline bool wait_for(Clique& c, std::unique_lock<std::mutex>& lock, Ready ready, const std::string& what) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(wait_timeout_s());
  while (!ready()) {
    if (c.aborted) return false;
    if (c.cv.wait_until(lock, deadline) == std::cv_status::timeout && !ready() && !c.aborted) {
      std::fprintf(stderr,
                   "parbench-emu NCCL: waited more than %g s (PARBENCH_EMU_WAIT_TIMEOUT) for %s; a rank never "
                   "called the matching operation (an NCCL hang on a GPU)\n",
                   wait_timeout_s(), what.c_str());
      std::abort();
    }
  }
  return !c.aborted;
}

// Why the communicator failed or was aborted, "" while healthy (for ranks in other processes: the shared reason).
std::string failure(Clique& c);
// Records the first failure, says it on stderr and wakes every waiting rank; called with the clique's lock held.
void fail_clique(Clique& c, const std::string& why);

}  // namespace parbench::gpu_emu

struct ncclComm {
  ncclComm(std::shared_ptr<parbench::gpu_emu::Clique> c, int r, int d) : clique(std::move(c)), rank(r), device(d) {
    ++parbench::gpu_emu::g_comms_alive;
  }
  ~ncclComm() { --parbench::gpu_emu::g_comms_alive; }
  ncclComm(const ncclComm&) = delete;
  ncclComm& operator=(const ncclComm&) = delete;
  std::shared_ptr<parbench::gpu_emu::Clique> clique;
  int rank = 0;
  int device = 0;
  std::uint64_t next_round = 0;  // sequence number of this rank's next collective (host order)
  std::uint64_t next_split = 0;
  // NCCL_ALGO and NCCL_PROTO as they were when this communicator was made (NCCL reads them at init).
  parbench::gpu_emu::Tuning tuning = parbench::gpu_emu::Tuning::from_environment();
};
