// The emulated NCCL, for ranks that are threads of one process: communicators (unique id, init, init-all,
// split, destroy, abort, async errors), groups, the collectives and send/recv. An operation runs when its
// stream reaches it and holds that stream until every rank's matching operation has arrived, as an NCCL kernel
// does; mismatched operations across ranks are reported and fail the communicator.
// Longer than our 500-line rule on purpose: the matching engine's types (Call, Clique, rounds) are private to this
// file, and the API functions at the bottom are thin; one file keeps NCCL's semantics readable in one place.
// The cross-process transport is in nccl_shm.cpp, the reductions in nccl_reduce.cpp.
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include "device/emu/emu.h"
#include "device/emu/nccl_reduce.h"
#include "device/emu/nccl_shm.h"
#include "device/emu/settings.h"

namespace parbench::gpu_emu {
namespace {

thread_local std::string t_last_error;

// Remembers `msg` for ncclGetLastError and prints it when NCCL_DEBUG asks for warnings, as NCCL does.
ncclResult_t nccl_fail(ncclResult_t r, const std::string& msg) {
  t_last_error = msg;
  if (const char* d = std::getenv("NCCL_DEBUG"); d && (std::strcmp(d, "WARN") == 0 || std::strcmp(d, "INFO") == 0))
    std::fprintf(stderr, "parbench-emu NCCL WARN %s\n", msg.c_str());
  return r;
}

using Clock = std::chrono::steady_clock;

enum class Kind { allreduce, reduce, broadcast, allgather, reduce_scatter, send, recv };
const char* kind_name(Kind k) {
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


}  // namespace
}  // namespace parbench::gpu_emu

namespace parbench::gpu_emu {
std::atomic<int> g_comms_alive{0};
int nccl_comms_alive() { return g_comms_alive.load(); }
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
};

namespace parbench::gpu_emu {
namespace {

// Waits on the clique's condition until `ready` or the clique is aborted; false on abort. Reports and fails the
// communicator after PARBENCH_EMU_WAIT_TIMEOUT, naming what was awaited (the emulated form of an NCCL hang).
template <class Ready>
bool wait_for(Clique& c, std::unique_lock<std::mutex>& lock, Ready ready, const std::string& what) {
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

std::vector<char> collective_result(const Call& call, int me, const std::vector<const void*>& inputs);
void run_collective_shm(Clique& c, int me, std::uint64_t seq, const Call& call);

// Runs one collective of sequence number `seq` on rank `me`'s stream worker.
void run_collective(Clique& c, int me, std::uint64_t seq, const Call& call) {
  if (c.shm) return run_collective_shm(c, me, seq, call);
  const int n = c.size;
  std::unique_lock lock(c.m);
  Round& r = c.rounds[seq];
  if (r.calls.empty()) r.calls.resize(std::size_t(n));
  r.calls[std::size_t(me)] = call;
  ++r.arrived;
  c.cv.notify_all();
  const std::string what = "rank " + std::to_string(me) + "'s " + call.describe() + " (collective #" +
                           std::to_string(seq) + ") to be called by every rank";
  if (!wait_for(c, lock, [&] { return r.arrived == n; }, what)) return;
  for (int q = 0; q < n; ++q)
    if (!r.calls[std::size_t(q)]->matches(call)) {
      fail_clique(c, "collective #" + std::to_string(seq) + " differs across ranks: rank " + std::to_string(me) +
                         " called " + call.describe() + ", rank " + std::to_string(q) + " called " +
                         r.calls[std::size_t(q)]->describe());
      return;
    }
  lock.unlock();
  // Every rank computes its own result from everyone's inputs into a temporary, and writes it only when all
  // have read: an in-place operation must not overwrite an input a peer is still reading.
  std::vector<const void*> inputs;
  for (int q = 0; q < n; ++q) inputs.push_back(r.calls[std::size_t(q)]->send);
  const std::vector<char> result = collective_result(call, me, inputs);
  lock.lock();
  ++r.computed;
  c.cv.notify_all();
  if (!wait_for(c, lock, [&] { return r.computed == n; }, what)) return;
  if (!result.empty()) std::memcpy(call.recv, result.data(), result.size());
  if (++r.left == n) c.rounds.erase(seq);
}

// What rank `me` receives from a collective, given every rank's input (inputs[q]: rank q's send buffer).
std::vector<char> collective_result(const Call& call, int me, const std::vector<const void*>& inputs) {
  const std::size_t n = inputs.size(), bytes = call.count * nccl_type_size(call.type);
  std::vector<char> result;
  switch (call.kind) {
    case Kind::allreduce:
      result.resize(bytes);
      nccl_reduce(result.data(), inputs, call.count, call.type, call.op);
      break;
    case Kind::reduce:
      if (me == call.root) {
        result.resize(bytes);
        nccl_reduce(result.data(), inputs, call.count, call.type, call.op);
      }
      break;
    case Kind::broadcast:
      result.assign(static_cast<const char*>(inputs[std::size_t(call.root)]),
                    static_cast<const char*>(inputs[std::size_t(call.root)]) + bytes);
      break;
    case Kind::allgather:
      result.resize(bytes * n);
      for (std::size_t q = 0; q < n; ++q) std::memcpy(result.data() + bytes * q, inputs[q], bytes);
      break;
    case Kind::reduce_scatter: {
      result.resize(bytes);
      std::vector<const void*> blocks;
      for (const void* in : inputs) blocks.push_back(static_cast<const char*>(in) + bytes * std::size_t(me));
      nccl_reduce(result.data(), blocks, call.count, call.type, call.op);
      break;
    }
    default: break;
  }
  return result;
}

// ---- ranks in different processes: every rank sends the others a description of its call, then the inputs
// they need; each computes its own result locally.
struct WireCall {
  int kind, type, op, root;
  std::uint64_t count, seq;
  Call call() const { return {Kind(kind), nullptr, nullptr, count, ncclDataType_t(type), ncclRedOp_t(op), root}; }
};

// Bytes of rank r's send buffer that a collective reads, and whether `reader` needs `writer`'s.
std::size_t send_bytes(const Call& call, int r, int n) {
  const std::size_t bytes = call.count * nccl_type_size(call.type);
  if (call.kind == Kind::reduce_scatter) return bytes * std::size_t(n);
  if (call.kind == Kind::broadcast) return r == call.root ? bytes : 0;
  return bytes;
}
bool needs(const Call& call, int reader, int writer) {
  if (call.kind == Kind::reduce) return reader == call.root;
  if (call.kind == Kind::broadcast) return writer == call.root;
  return true;
}

void run_collective_shm(Clique& c, int me, std::uint64_t seq, const Call& call) {
  const int n = c.size;
  const std::string what = call.describe() + " (collective #" + std::to_string(seq) + ")";
  WireCall mine{int(call.kind), int(call.type), int(call.op), call.root, call.count, seq};
  std::vector<WireCall> theirs(std::size_t(n), mine);
  std::vector<ShmTransfer> ops;
  for (int q = 0; q < n; ++q)
    if (q != me) {
      ops.push_back({q, true, &mine, sizeof mine});
      ops.push_back({q, false, &theirs[std::size_t(q)], sizeof(WireCall)});
    }
  if (!shm_exchange(*c.shm, me, ops, what)) return;
  for (int q = 0; q < n; ++q) {
    const Call other = theirs[std::size_t(q)].call();
    if (theirs[std::size_t(q)].seq != seq || !other.matches(call)) {
      shm_fail(*c.shm, "collective #" + std::to_string(seq) + " differs across ranks: rank " + std::to_string(me) +
                           " called " + call.describe() + ", rank " + std::to_string(q) + " called " + other.describe());
      return;
    }
  }
  std::vector<std::vector<char>> got(static_cast<std::size_t>(n));
  std::vector<const void*> inputs(std::size_t(n), call.send);
  ops.clear();
  for (int q = 0; q < n; ++q) {
    if (q == me) continue;
    if (needs(call, q, me)) ops.push_back({q, true, const_cast<void*>(call.send), send_bytes(call, me, n)});
    if (needs(call, me, q)) {
      got[std::size_t(q)].resize(send_bytes(call, q, n));
      ops.push_back({q, false, got[std::size_t(q)].data(), got[std::size_t(q)].size()});
      inputs[std::size_t(q)] = got[std::size_t(q)].data();
    }
  }
  if (!shm_exchange(*c.shm, me, ops, what)) return;
  const std::vector<char> result = collective_result(call, me, inputs);
  if (!result.empty()) std::memcpy(call.recv, result.data(), result.size());
}

// Runs a group's sends and receives on rank `me`'s stream worker: posts the sends, takes each receive's
// matching send (the k-th receive from a peer matches that peer's k-th send to us), then waits until every one
// of our sends was received. A send whose receive is not posted deadlocks, as on a GPU.
void run_p2p(Clique& c, int me, const std::vector<Call>& calls) {
  if (c.shm) {
    std::vector<ShmTransfer> ops;
    for (const Call& x : calls)
      ops.push_back({x.root, x.kind == Kind::send, x.kind == Kind::send ? const_cast<void*>(x.send) : x.recv,
                     x.count * nccl_type_size(x.type)});
    shm_exchange(*c.shm, me, ops, "group of " + std::to_string(calls.size()) + " send/recv");
    return;
  }
  std::unique_lock lock(c.m);
  std::vector<std::shared_ptr<PostedSend>> mine;
  for (const Call& s : calls)
    if (s.kind == Kind::send) {
      mine.push_back(std::make_shared<PostedSend>(PostedSend{s.send, s.count * nccl_type_size(s.type)}));
      c.channels[{me, s.root}].push_back(mine.back());
    }
  c.cv.notify_all();
  for (const Call& rcv : calls) {
    if (rcv.kind != Kind::recv) continue;
    auto& channel = c.channels[{rcv.root, me}];
    const std::string what = "rank " + std::to_string(me) + "'s " + rcv.describe() + " to find rank " +
                             std::to_string(rcv.root) + "'s matching ncclSend";
    if (!wait_for(c, lock, [&] { return !channel.empty(); }, what)) return;
    std::shared_ptr<PostedSend> s = channel.front();
    channel.pop_front();
    const std::size_t want = rcv.count * nccl_type_size(rcv.type);
    if (s->bytes != want) {
      fail_clique(c, "rank " + std::to_string(me) + "'s " + rcv.describe() + " (" + std::to_string(want) +
                         " bytes) met a send of " + std::to_string(s->bytes) + " bytes from rank " +
                         std::to_string(rcv.root));
      return;
    }
    lock.unlock();
    std::memcpy(rcv.recv, s->data, want);
    lock.lock();
    s->received = true;
    c.cv.notify_all();
  }
  const std::string what = "rank " + std::to_string(me) + "'s sends to be received";
  wait_for(c, lock, [&] { return std::all_of(mine.begin(), mine.end(), [](auto& s) { return s->received; }); }, what);
}

// ---- groups: operations collected between ncclGroupStart and ncclGroupEnd on this thread
struct Pending {
  ncclComm* comm;
  cudaStream_t stream;
  Call call;
};
thread_local int t_group_depth = 0;
thread_local std::vector<Pending> t_group;

// Queues everything collected: per communicator and stream, collectives in call order, then the point-to-point
// operations together (a group's sends and receives progress at once, as NCCL's do).
void launch(std::vector<Pending> ops) {
  std::vector<std::pair<ncclComm*, cudaStream_t>> order;
  for (const Pending& p : ops)
    if (std::find(order.begin(), order.end(), std::make_pair(p.comm, p.stream)) == order.end())
      order.emplace_back(p.comm, p.stream);
  for (auto [comm, stream] : order) {
    std::vector<std::pair<std::uint64_t, Call>> collectives;
    std::vector<Call> p2p;
    for (const Pending& p : ops) {
      if (p.comm != comm || p.stream != stream) continue;
      if (p.call.kind == Kind::send || p.call.kind == Kind::recv) p2p.push_back(p.call);
      else collectives.emplace_back(comm->next_round++, p.call);
    }
    std::string what = "NCCL";
    for (auto& [seq, call] : collectives) what += " " + call.describe();
    if (!p2p.empty()) what += " group of " + std::to_string(p2p.size()) + " send/recv";
    // The operation holds the clique, not the ncclComm: it may run after an ncclCommDestroy.
    enqueue(resolve_stream(stream), what, [clique = comm->clique, me = comm->rank, collectives, p2p] {
      for (const auto& [seq, call] : collectives) run_collective(*clique, me, seq, call);
      if (!p2p.empty()) run_p2p(*clique, me, p2p);
    });
  }
}

// Checks a call and queues it (or keeps it for the group); counts one library call.
ncclResult_t submit(ncclComm* comm, cudaStream_t stream, const Call& call) {
  count(Count::library_call);
  const std::string head = std::string(kind_name(call.kind)) + ": ";
  if (!comm || !comm->clique) return nccl_fail(ncclInvalidArgument, head + "an invalid communicator");
  if (comm->clique->aborted || (comm->clique->shm && !failure(*comm->clique).empty()))
    return nccl_fail(ncclInvalidUsage, head + "the communicator has failed or was aborted");
  const int n = comm->clique->size;
  if (std::string why = why_unsupported(call.type, call.op); !why.empty())
    return nccl_fail(ncclInvalidArgument, head + why);
  if (call.root < 0 || call.root >= n)
    return nccl_fail(ncclInvalidArgument, head + "rank " + std::to_string(call.root) + " outside the " +
                                              std::to_string(n) + " ranks");
  StreamState* s = resolve_stream(stream);
  if (!s) return nccl_fail(ncclInvalidArgument, head + "an invalid stream");
  if (stream_device(s) != comm->device)
    return nccl_fail(ncclInvalidUsage, head + "a stream of GPU " + std::to_string(stream_device(s)) +
                                           " for a communicator on GPU " + std::to_string(comm->device));
  // The buffers this rank's part touches, checked as a kernel's arguments would be.
  const std::size_t bytes = call.count * nccl_type_size(call.type);
  const int me = comm->rank;
  std::size_t send_bytes = bytes, recv_bytes = bytes;
  switch (call.kind) {
    case Kind::allgather: recv_bytes = bytes * std::size_t(n); break;
    case Kind::reduce_scatter: send_bytes = bytes * std::size_t(n); break;
    case Kind::reduce: recv_bytes = me == call.root ? bytes : 0; break;
    case Kind::broadcast: send_bytes = me == call.root ? bytes : 0; break;
    case Kind::send: recv_bytes = 0; break;
    case Kind::recv: send_bytes = 0; break;
    default: break;
  }
  if (send_bytes && call.count)
    if (std::string why = device_access_problem(comm->device, call.send, send_bytes); !why.empty())
      return nccl_fail(ncclInvalidArgument, head + "the send buffer is " + why);
  if (recv_bytes && call.count)
    if (std::string why = device_access_problem(comm->device, call.recv, recv_bytes); !why.empty())
      return nccl_fail(ncclInvalidArgument, head + "the receive buffer is " + why);
  // In place is recv == send for allreduce, reduce and broadcast; recv + rank * count == send for allgather and
  // send == recv + rank * count... for reduce-scatter; other overlaps are undefined in NCCL and refused here.
  if (send_bytes && recv_bytes && call.count) {
    const char *sb = static_cast<const char*>(call.send), *rb = static_cast<const char*>(call.recv);
    const bool overlap = sb < rb + recv_bytes && rb < sb + send_bytes;
    bool in_place = sb == rb;
    if (call.kind == Kind::allgather) in_place = sb == rb + bytes * std::size_t(me);
    if (call.kind == Kind::reduce_scatter) in_place = rb == sb + bytes * std::size_t(me);
    if (overlap && !in_place)
      return nccl_fail(ncclInvalidArgument, head + "send and receive buffers overlap but not as NCCL's in-place "
                                                   "form");
  }
  if (t_group_depth > 0) {
    t_group.push_back({comm, stream, call});
    return ncclSuccess;
  }
  launch({{comm, stream, call}});
  return ncclSuccess;
}

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
  delete comm;
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

ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t t, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
  return submit(comm, stream, {Kind::allreduce, send, recv, count, t, op, 0});
}
ncclResult_t ncclReduce(const void* send, void* recv, size_t count, ncclDataType_t t, ncclRedOp_t op, int root,
                        ncclComm_t comm, cudaStream_t stream) {
  return submit(comm, stream, {Kind::reduce, send, recv, count, t, op, root});
}
ncclResult_t ncclBroadcast(const void* send, void* recv, size_t count, ncclDataType_t t, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  return submit(comm, stream, {Kind::broadcast, send, recv, count, t, ncclSum, root});
}
ncclResult_t ncclBcast(void* buf, size_t count, ncclDataType_t t, int root, ncclComm_t comm, cudaStream_t stream) {
  return ncclBroadcast(buf, buf, count, t, root, comm, stream);
}
ncclResult_t ncclAllGather(const void* send, void* recv, size_t count, ncclDataType_t t, ncclComm_t comm,
                           cudaStream_t stream) {
  return submit(comm, stream, {Kind::allgather, send, recv, count, t, ncclSum, 0});
}
ncclResult_t ncclReduceScatter(const void* send, void* recv, size_t count, ncclDataType_t t, ncclRedOp_t op,
                               ncclComm_t comm, cudaStream_t stream) {
  return submit(comm, stream, {Kind::reduce_scatter, send, recv, count, t, op, 0});
}
ncclResult_t ncclSend(const void* send, size_t count, ncclDataType_t t, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  return submit(comm, stream, {Kind::send, send, nullptr, count, t, ncclSum, peer});
}
ncclResult_t ncclRecv(void* recv, size_t count, ncclDataType_t t, int peer, ncclComm_t comm, cudaStream_t stream) {
  return submit(comm, stream, {Kind::recv, nullptr, recv, count, t, ncclSum, peer});
}

ncclResult_t ncclGroupStart() {
  ++t_group_depth;
  return ncclSuccess;
}
ncclResult_t ncclGroupEnd() {
  if (t_group_depth == 0) return nccl_fail(ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
  if (--t_group_depth == 0) launch(std::exchange(t_group, {}));
  return ncclSuccess;
}

}  // extern "C"
