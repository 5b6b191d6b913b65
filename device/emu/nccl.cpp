// The emulated NCCL's communicators: unique ids, init (threads of one process meet in memory, ranks of several
// processes in a shared segment), init-all, split, destroy, abort, async errors and queries. An operation runs when
// its stream reaches it and holds that stream until every rank's matching operation has arrived, as an NCCL kernel
// does (nccl_ops.cpp); the cross-process transport is in nccl_shm.cpp, the reductions in nccl_reduce.cpp.
#include <algorithm>
#include <cstring>
#include <mutex>
#include <random>
#include <vector>

#include <unistd.h>

#include "device/emu/nccl_clique.h"

namespace parbench::gpu_emu {

std::atomic<int> g_comms_alive{0};
int nccl_comms_alive() { return g_comms_alive.load(); }

namespace {
thread_local std::string t_last_error;
}  // namespace

ncclResult_t nccl_fail(ncclResult_t r, const std::string& msg) {
  t_last_error = msg;
  if (const char* d = std::getenv("NCCL_DEBUG"); d && (std::strcmp(d, "WARN") == 0 || std::strcmp(d, "INFO") == 0))
    std::fprintf(stderr, "parbench-emu NCCL WARN %s\n", msg.c_str());
  return r;
}

std::string failure(Clique& c) {
  if (c.shm) return shm_failure(*c.shm);
  std::lock_guard lock(c.m);
  return c.failure;
}

void fail_clique(Clique& c, const std::string& why) {
  if (c.failure.empty()) c.failure = why;
  std::fprintf(stderr, "parbench-emu NCCL: %s\n", why.c_str());
  c.aborted = true;  // every rank's waiting operation gives up; ncclCommGetAsyncError reports it
  c.cv.notify_all();
}

namespace {

struct PendingInit {
  int size;
  std::shared_ptr<Clique> clique;
  std::vector<bool> joined;
  int arrived = 0;
};
std::mutex g_init_mu;
std::condition_variable g_init_cv;
std::map<std::string, std::shared_ptr<PendingInit>> g_inits;

std::string id_key(const ncclUniqueId& id) { return std::string(id.internal, sizeof id.internal); }
std::string shm_name(const ncclUniqueId& id) {
  char hex[64];
  std::uint64_t w[3];
  std::memcpy(w, id.internal, sizeof w);
  std::snprintf(hex, sizeof hex, "/pbnccl-%llx-%llx-%llx", (unsigned long long)w[0], (unsigned long long)w[1],
                (unsigned long long)w[2]);
  return hex;
}

}  // namespace
}  // namespace parbench::gpu_emu

using namespace parbench::gpu_emu;

extern "C" {


const char* ncclGetErrorString(ncclResult_t r) {
  switch (r) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

const char* ncclGetLastError(ncclComm_t) { return t_last_error.c_str(); }

ncclResult_t ncclGetVersion(int* version) {
  if (!version) return nccl_fail(ncclInvalidArgument, "ncclGetVersion: version is NULL");
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  if (!id) return nccl_fail(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
  static std::mutex mu;
  static std::mt19937_64 rng(std::random_device{}());
  std::memset(id->internal, 0, sizeof id->internal);
  std::lock_guard lock(mu);
  const std::uint64_t words[3] = {std::uint64_t(::getpid()), rng(), rng()};
  std::memcpy(id->internal, words, sizeof words);
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t* out, int nranks, ncclUniqueId id, int rank) {
  if (!out) return nccl_fail(ncclInvalidArgument, "ncclCommInitRank: comm is NULL");
  *out = nullptr;
  if (nranks < 1 || rank < 0 || rank >= nranks)
    return nccl_fail(ncclInvalidArgument, "ncclCommInitRank: rank " + std::to_string(rank) + " of " +
                                              std::to_string(nranks) + " ranks");
  // Every rank meets in the shared segment named after the id; ranks that are all threads of this process then
  // use the in-process communicator, ranks of several processes the segment.
  std::string error;
  const int device = current_device();
  auto shm = shm_join(shm_name(id), nranks, rank, physical_gpu(device), &error);
  if (!shm) return nccl_fail(ncclInvalidUsage, "ncclCommInitRank: " + error);
  if (!shm_all_in_this_process(*shm)) {
    auto clique = std::make_shared<Clique>(nranks);
    clique->shm = shm;
    clique->shm_name = shm_name(id);
    clique->devices[std::size_t(rank)] = device;
    *out = new ncclComm{clique, rank, device};
    return ncclSuccess;
  }
  std::unique_lock lock(g_init_mu);
  auto& pending = g_inits[id_key(id)];
  if (!pending) pending = std::make_shared<PendingInit>(PendingInit{nranks, std::make_shared<Clique>(nranks), {}, 0});
  auto init = pending;
  if (init->size != nranks)
    return nccl_fail(ncclInvalidUsage, "ncclCommInitRank: rank " + std::to_string(rank) + " says " +
                                           std::to_string(nranks) + " ranks, another said " + std::to_string(init->size));
  init->joined.resize(std::size_t(nranks), false);
  if (init->joined[std::size_t(rank)])
    return nccl_fail(ncclInvalidUsage, "ncclCommInitRank: rank " + std::to_string(rank) + " joined twice");
  for (int q = 0; q < nranks; ++q)
    if (init->joined[std::size_t(q)] && init->clique->devices[std::size_t(q)] == device)
      return nccl_fail(ncclInvalidUsage, "ncclCommInitRank: duplicate GPU detected: rank " + std::to_string(rank) +
                                             " and rank " + std::to_string(q) + " both on GPU " + std::to_string(device));
  init->joined[std::size_t(rank)] = true;
  init->clique->devices[std::size_t(rank)] = device;
  ++init->arrived;
  g_init_cv.notify_all();
  // Blocks until every rank joined, as NCCL's bootstrap does.
  const auto deadline = Clock::now() + std::chrono::duration<double>(wait_timeout_s());
  while (init->arrived < nranks) {
    if (g_init_cv.wait_until(lock, deadline) == std::cv_status::timeout && init->arrived < nranks) {
      std::string missing;
      for (int q = 0; q < nranks; ++q)
        if (!init->joined[std::size_t(q)]) missing += " " + std::to_string(q);
      return nccl_fail(ncclSystemError, "ncclCommInitRank: rank " + std::to_string(rank) + " waited " +
                                            std::to_string(wait_timeout_s()) + " s for ranks" + missing);
    }
  }
  if (g_inits.count(id_key(id)) && g_inits[id_key(id)] == init) g_inits.erase(id_key(id));
  *out = new ncclComm{init->clique, rank, device};
  return ncclSuccess;
}

ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  if (!comms || ndev < 1) return nccl_fail(ncclInvalidArgument, "ncclCommInitAll: no communicators to make");
  auto clique = std::make_shared<Clique>(ndev);
  for (int r = 0; r < ndev; ++r) {
    const int d = devlist ? devlist[r] : r;
    if (d < 0 || d >= device_count())
      return nccl_fail(ncclInvalidArgument, "ncclCommInitAll: GPU " + std::to_string(d) + " does not exist");
    for (int q = 0; q < r; ++q)
      if (clique->devices[std::size_t(q)] == d)
        return nccl_fail(ncclInvalidUsage, "ncclCommInitAll: duplicate GPU " + std::to_string(d));
    clique->devices[std::size_t(r)] = d;
  }
  for (int r = 0; r < ndev; ++r) comms[r] = new ncclComm{clique, r, clique->devices[std::size_t(r)]};
  return ncclSuccess;
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* out, ncclConfig_t*) {
  if (!comm || !out) return nccl_fail(ncclInvalidArgument, "ncclCommSplit: comm or newcomm is NULL");
  *out = nullptr;
  if (color < 0 && color != NCCL_SPLIT_NOCOLOR)
    return nccl_fail(ncclInvalidArgument, "ncclCommSplit: color " + std::to_string(color) +
                                              " must be >= 0 or NCCL_SPLIT_NOCOLOR");
  Clique& c = *comm->clique;
  const int n = c.size, me = comm->rank;
  const std::uint64_t seq = comm->next_split++;
  if (c.shm) {  // exchange colors and keys, then meet in a segment named after the parent's, the split and color
    const int mine[2] = {color, key};
    std::vector<int> all(2 * std::size_t(n));
    all[2 * std::size_t(me)] = color, all[2 * std::size_t(me) + 1] = key;
    std::vector<ShmTransfer> ops;
    for (int q = 0; q < n; ++q)
      if (q != me) {
        ops.push_back({q, true, const_cast<int*>(mine), sizeof mine});
        ops.push_back({q, false, &all[2 * std::size_t(q)], sizeof mine});
      }
    if (!shm_exchange(*c.shm, me, ops, "ncclCommSplit #" + std::to_string(seq)))
      return nccl_fail(ncclInvalidUsage, "ncclCommSplit: the communicator failed or was aborted");
    if (color == NCCL_SPLIT_NOCOLOR) return ncclSuccess;
    std::vector<std::pair<int, int>> members;
    for (int q = 0; q < n; ++q)
      if (all[2 * std::size_t(q)] == color) members.emplace_back(all[2 * std::size_t(q) + 1], q);
    std::sort(members.begin(), members.end());
    const int new_rank = int(std::find(members.begin(), members.end(), std::make_pair(key, me)) - members.begin());
    const std::string name = c.shm_name + "-s" + std::to_string(seq) + "-c" + std::to_string(color);
    std::string error;
    auto shm = shm_join(name, int(members.size()), new_rank, physical_gpu(comm->device), &error);
    if (!shm) return nccl_fail(ncclSystemError, "ncclCommSplit: " + error);
    auto clique = std::make_shared<Clique>(int(members.size()));
    clique->shm = shm;
    clique->shm_name = name;
    *out = new ncclComm{clique, new_rank, comm->device};
    return ncclSuccess;
  }
  std::unique_lock lock(c.m);
  SplitRound& r = c.splits[seq];
  if (r.entries.empty()) r.entries.resize(std::size_t(n));
  r.entries[std::size_t(me)] = SplitEntry{color, key, comm->device};
  if (++r.arrived == n) {  // the last to arrive makes the new cliques
    std::map<int, int> sizes;
    for (auto& e : r.entries)
      if (e->color != NCCL_SPLIT_NOCOLOR) ++sizes[e->color];
    for (auto [col, size] : sizes) r.cliques[col] = std::make_shared<Clique>(size);
  }
  c.cv.notify_all();
  if (!wait_for(c, lock, [&] { return r.arrived == n; }, "every rank to call ncclCommSplit #" + std::to_string(seq)))
    return nccl_fail(ncclInvalidUsage, "ncclCommSplit: the communicator was aborted");
  ncclComm_t made = nullptr;
  if (color != NCCL_SPLIT_NOCOLOR) {
    // New rank: order by key, then by old rank.
    std::vector<std::pair<int, int>> members;
    for (int q = 0; q < n; ++q)
      if (r.entries[std::size_t(q)]->color == color) members.emplace_back(r.entries[std::size_t(q)]->key, q);
    std::sort(members.begin(), members.end());
    const int new_rank = int(std::find(members.begin(), members.end(), std::make_pair(key, me)) - members.begin());
    auto clique = r.cliques[color];
    clique->devices[std::size_t(new_rank)] = comm->device;
    made = new ncclComm{clique, new_rank, comm->device};
  }
  if (++r.left == n) c.splits.erase(seq);
  *out = made;
  return ncclSuccess;
}

ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  if (!comm) return nccl_fail(ncclInvalidArgument, "ncclCommFinalize: comm is NULL");
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (!comm) return ncclSuccess;
  delete comm;  // queued operations hold the clique; they finish (or fail) on their own
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (!comm) return ncclSuccess;
  // Every operation waiting in the clique returns, and the other ranks learn why from ncclCommGetAsyncError.
  const std::string why = "rank " + std::to_string(comm->rank) + " aborted the communicator";
  if (comm->clique->shm) {
    shm_fail(*comm->clique->shm, why);
  } else {
    std::lock_guard lock(comm->clique->m);
    if (comm->clique->failure.empty()) comm->clique->failure = why;
    comm->clique->aborted = true;
    comm->clique->cv.notify_all();
  }
  // Counted as gone, but kept: in threads mode another rank's thread may still be issuing a call on it when a
  // timeout aborts every communicator of the process; that call then fails as on an aborted communicator.
  static std::mutex kept_mu;
  static std::vector<ncclComm_t> kept;
  --g_comms_alive;  // its destructor never runs
  std::lock_guard lock(kept_mu);
  kept.push_back(comm);
  return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* error) {
  if (!comm || !error) return nccl_fail(ncclInvalidArgument, "ncclCommGetAsyncError: comm or asyncError is NULL");
  const std::string why = failure(*comm->clique);
  *error = why.empty() ? ncclSuccess : ncclInvalidUsage;
  if (!why.empty()) t_last_error = why;
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  if (!comm || !count) return nccl_fail(ncclInvalidArgument, "ncclCommCount: comm or count is NULL");
  *count = comm->clique->size;
  return ncclSuccess;
}
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  if (!comm || !device) return nccl_fail(ncclInvalidArgument, "ncclCommCuDevice: comm or device is NULL");
  *device = comm->device;
  return ncclSuccess;
}
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (!comm || !rank) return nccl_fail(ncclInvalidArgument, "ncclCommUserRank: comm or rank is NULL");
  *rank = comm->rank;
  return ncclSuccess;
}

}  // extern "C"
