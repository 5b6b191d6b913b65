// The emulated NCCL's operations: collectives (every rank computes its result from everyone's inputs, in memory
// or through the shared segment), send/recv matched in order per peer, and groups; each call is checked as NCCL
// checks it (communicator, stream, buffers and their in-place forms) and queued on its stream.
#include <algorithm>
#include <cstring>

#include "device/emu/nccl_clique.h"

namespace parbench::gpu_emu {
namespace {

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

std::pair<std::size_t, std::size_t> buffer_bytes(const Call& call, int me, int n);

// For the hazard checker: the bytes of this rank's buffers its part of the calls reads (send) and writes (receive).
std::vector<MemAccess> share_accesses(const ncclComm& comm, const std::vector<Call>& calls,
                                      const std::vector<Call>& p2p) {
  std::vector<MemAccess> out;
  for (const std::vector<Call>* list : {&calls, &p2p})
    for (const Call& c : *list) {
      const auto [send_bytes, recv_bytes] = buffer_bytes(c, comm.rank, comm.clique->size);
      const std::string name = kind_name(c.kind);
      if (send_bytes) out.push_back({c.send, send_bytes, false, "the send buffer of " + name});
      if (recv_bytes) out.push_back({c.recv, recv_bytes, true, "the receive buffer of " + name});
    }
  return out;
}

// ---- groups: operations collected between ncclGroupStart and ncclGroupEnd on this thread
struct Pending {
  ncclComm* comm;
  cudaStream_t stream;
  Call call;
};
thread_local int t_group_depth = 0;
thread_local std::vector<Pending> t_group;

std::string share_text(const std::vector<Call>& collectives, const std::vector<Call>& p2p) {
  std::string what = "NCCL";
  for (const Call& call : collectives) what += " " + call.describe();
  if (!p2p.empty()) what += " group of " + std::to_string(p2p.size()) + " send/recv";
  return what;
}

// Queues one communicator's share of a group on `s`: its collectives take the communicator's next sequence
// numbers now, in issue order, so a graph launched N times runs N fresh rounds.
void queue_share(StreamState* s, ncclComm* comm, const std::vector<Call>& calls, const std::vector<Call>& p2p) {
  std::vector<std::pair<std::uint64_t, Call>> collectives;
  for (const Call& c : calls) collectives.emplace_back(comm->next_round++, c);
  // The operation holds the clique, not the ncclComm: it may run after an ncclCommDestroy.
  enqueue(s, share_text(calls, p2p), [clique = comm->clique, me = comm->rank, collectives, p2p] {
    for (const auto& [seq, call] : collectives) run_collective(*clique, me, seq, call);
    if (!p2p.empty()) run_p2p(*clique, me, p2p);
  }, {}, share_accesses(*comm, calls, p2p));
}

// Queues everything collected: per communicator and stream, collectives in call order, then the point-to-point
// operations together (a group's sends and receives progress at once, as NCCL's do). On a capturing stream the
// share becomes a graph node that queues it at each launch (a graph must not outlive its communicator, as in NCCL).
void launch(std::vector<Pending> ops) {
  std::vector<std::pair<ncclComm*, cudaStream_t>> order;
  for (const Pending& p : ops)
    if (std::find(order.begin(), order.end(), std::make_pair(p.comm, p.stream)) == order.end())
      order.emplace_back(p.comm, p.stream);
  for (auto [comm, stream] : order) {
    std::vector<Call> collectives, p2p;
    for (const Pending& p : ops) {
      if (p.comm != comm || p.stream != stream) continue;
      (p.call.kind == Kind::send || p.call.kind == Kind::recv ? p2p : collectives).push_back(p.call);
    }
    StreamState* s = resolve_stream(stream);
    auto reissue = [c = comm, collectives, p2p](StreamState* t) { queue_share(t, c, collectives, p2p); };
    if (!record_if_capturing(s, share_text(collectives, p2p), reissue))
      queue_share(s, comm, collectives, p2p);
  }
}

// Why a call may not run: NCCL's result and the reason, or success.
struct Refusal {
  ncclResult_t result = ncclSuccess;
  std::string why;
};

Refusal comm_problem(const ncclComm* comm, cudaStream_t stream, const Call& call, const std::string& site) {
  if (!comm || !comm->clique) return {ncclInvalidArgument, "an invalid communicator"};
  if (comm->clique->aborted || (comm->clique->shm && !failure(*comm->clique).empty()))
    return {ncclInvalidUsage, "the communicator has failed or was aborted"};
  const int n = comm->clique->size;
  if (std::string why = why_unsupported(call.type, call.op); !why.empty()) return {ncclInvalidArgument, why};
  if (call.root < 0 || call.root >= n)
    return {ncclInvalidArgument, "rank " + std::to_string(call.root) + " outside the " + std::to_string(n) + " ranks"};
  if (call.kind != Kind::send && call.kind != Kind::recv)
    if (std::string why = tuning_refusal(comm->tuning, std::string(kind_name(call.kind)).substr(4),
                                         nccl_type_name(call.type));
        !why.empty())
      return {ncclInvalidUsage, why};
  StreamState* s = work_stream(stream, kind_name(call.kind), site);
  if (!s) return {ncclInvalidArgument, "an invalid stream"};
  if (stream_device(s) != comm->device)
    return {ncclInvalidUsage, "a stream of GPU " + std::to_string(stream_device(s)) + " for a communicator on GPU " +
                                  std::to_string(comm->device)};
  return {};
}

// Bytes of rank `me`'s send and receive buffers that its part of `call` touches.
std::pair<std::size_t, std::size_t> buffer_bytes(const Call& call, int me, int n) {
  const std::size_t bytes = call.count * nccl_type_size(call.type);
  switch (call.kind) {
    case Kind::allgather: return {bytes, bytes * std::size_t(n)};
    case Kind::reduce_scatter: return {bytes * std::size_t(n), bytes};
    case Kind::reduce: return {bytes, me == call.root ? bytes : 0};
    case Kind::broadcast: return {me == call.root ? bytes : 0, bytes};
    case Kind::send: return {bytes, 0};
    case Kind::recv: return {0, bytes};
    default: return {bytes, bytes};
  }
}

// The buffers this rank's part touches, checked as a kernel's arguments would be. In place is recv == send for
// allreduce, reduce and broadcast; send == recv + rank * count for allgather and recv == send + rank * count for
// reduce-scatter; other overlaps are undefined in NCCL and refused here.
Refusal buffer_problem(const ncclComm& comm, const Call& call) {
  if (call.count == 0) return {};
  const auto [send_bytes, recv_bytes] = buffer_bytes(call, comm.rank, comm.clique->size);
  if (send_bytes)
    if (std::string why = device_access_problem(comm.device, call.send, send_bytes); !why.empty())
      return {ncclInvalidArgument, "the send buffer is " + why};
  if (recv_bytes)
    if (std::string why = device_access_problem(comm.device, call.recv, recv_bytes); !why.empty())
      return {ncclInvalidArgument, "the receive buffer is " + why};
  if (!send_bytes || !recv_bytes) return {};
  const std::size_t rank_offset = call.count * nccl_type_size(call.type) * std::size_t(comm.rank);
  const char *sb = static_cast<const char*>(call.send), *rb = static_cast<const char*>(call.recv);
  const bool overlap = sb < rb + recv_bytes && rb < sb + send_bytes;
  bool in_place = sb == rb;
  if (call.kind == Kind::allgather) in_place = sb == rb + rank_offset;
  if (call.kind == Kind::reduce_scatter) in_place = rb == sb + rank_offset;
  if (overlap && !in_place)
    return {ncclInvalidArgument, "send and receive buffers overlap but not as NCCL's in-place form"};
  return {};
}

// Checks a call from `site` and queues it (or keeps it for the group); counts one library call.
ncclResult_t submit(ncclComm* comm, cudaStream_t stream, const Call& call, const std::string& site) {
  count(Count::library_call);
  Refusal r = comm_problem(comm, stream, call, site);
  if (r.result == ncclSuccess) r = buffer_problem(*comm, call);
  if (r.result != ncclSuccess) return nccl_fail(r.result, std::string(kind_name(call.kind)) + ": " + r.why);
  if (t_group_depth > 0) {
    t_group.push_back({comm, stream, call});
    return ncclSuccess;
  }
  launch({{comm, stream, call}});
  return ncclSuccess;
}

}  // namespace
}  // namespace parbench::gpu_emu

using namespace parbench::gpu_emu;

extern "C" {

ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t t, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
  return submit(comm, stream, {Kind::allreduce, send, recv, count, t, op, 0}, PB_EMU_SITE());
}
ncclResult_t ncclReduce(const void* send, void* recv, size_t count, ncclDataType_t t, ncclRedOp_t op, int root,
                        ncclComm_t comm, cudaStream_t stream) {
  return submit(comm, stream, {Kind::reduce, send, recv, count, t, op, root}, PB_EMU_SITE());
}
ncclResult_t ncclBroadcast(const void* send, void* recv, size_t count, ncclDataType_t t, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  return submit(comm, stream, {Kind::broadcast, send, recv, count, t, ncclSum, root}, PB_EMU_SITE());
}
ncclResult_t ncclBcast(void* buf, size_t count, ncclDataType_t t, int root, ncclComm_t comm, cudaStream_t stream) {
  return ncclBroadcast(buf, buf, count, t, root, comm, stream);
}
ncclResult_t ncclAllGather(const void* send, void* recv, size_t count, ncclDataType_t t, ncclComm_t comm,
                           cudaStream_t stream) {
  return submit(comm, stream, {Kind::allgather, send, recv, count, t, ncclSum, 0}, PB_EMU_SITE());
}
ncclResult_t ncclReduceScatter(const void* send, void* recv, size_t count, ncclDataType_t t, ncclRedOp_t op,
                               ncclComm_t comm, cudaStream_t stream) {
  return submit(comm, stream, {Kind::reduce_scatter, send, recv, count, t, op, 0}, PB_EMU_SITE());
}
ncclResult_t ncclSend(const void* send, size_t count, ncclDataType_t t, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  return submit(comm, stream, {Kind::send, send, nullptr, count, t, ncclSum, peer}, PB_EMU_SITE());
}
ncclResult_t ncclRecv(void* recv, size_t count, ncclDataType_t t, int peer, ncclComm_t comm, cudaStream_t stream) {
  return submit(comm, stream, {Kind::recv, nullptr, recv, count, t, ncclSum, peer}, PB_EMU_SITE());
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
