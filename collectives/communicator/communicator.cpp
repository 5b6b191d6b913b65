// Communicator: deadlines, argument checks and error context around the transports and the algorithms.
#include "collectives/communicator/communicator.h"

#include <algorithm>
#include <atomic>
#include <array>
#include <cstdio>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "collectives/communicator/fault_injection.h"
#include "collectives/table/measurement.h"
#include "collectives/communicator/reduce.h"
#include "collectives/communicator/symmetric_memory.h"
#include "core/current_stream.h"
#include "core/memory.h"
#include "core/stream.h"
#include "profiles/range.h"

namespace parbench {

namespace {
std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}
}  // namespace

Communicator::Communicator(std::unique_ptr<Transport> transport, Device device, double timeout_s,
                           ImplementationChooser choose)
    : transport_(std::move(transport)), device_(device), timeout_s_(timeout_s), choose_(choose),
      host_staging_(device) {}

Communicator::~Communicator() { release(); }

Communicator::Communicator(Communicator&& o) noexcept { *this = std::move(o); }

Communicator& Communicator::operator=(Communicator&& o) noexcept {
  if (this == &o) return *this;
  release();
  transport_ = std::move(o.transport_);
  device_ = o.device_;
  timeout_s_ = o.timeout_s_;
  impl_ = o.impl_;
  choose_ = o.choose_;
  local_rank_ = o.local_rank_;
  local_size_ = o.local_size_;
  world_ranks_ = std::move(o.world_ranks_);
  nccl_comm_ = o.nccl_comm_;
  owns_nccl_ = std::exchange(o.owns_nccl_, false);
  batching_ = o.batching_;
  batch_streams_ = std::move(o.batch_streams_);
  last_queued_ = o.last_queued_;
  last_queued_algo_ = o.last_queued_algo_;
  vetted_algo_ = nullptr;  // checked again against this transport
  deadline_set_ = false;
  nccl_reason_ = std::move(o.nccl_reason_);
  splits_ = o.splits_;
  for (int i = 0; i < 4; ++i) scratch_[i] = std::exchange(o.scratch_[i], Scratch{});
  host_staging_ = std::move(o.host_staging_);
  symmetric_ = std::move(o.symmetric_);
  o.nccl_comm_ = nullptr;
  return *this;
}

void Communicator::release() {
  symmetric_.reset();  // waits for the kernels that use it
  for (auto& s : scratch_) {
    if (s.ptr) device_free(device_, s.ptr);
    s = Scratch{};
  }
  // The world's NCCL communicator belongs to the bootstrap that created it; split ones are ours.
  if (owns_nccl_) nccl_comm_destroy(nccl_comm_);
  nccl_comm_ = nullptr;
  owns_nccl_ = false;
}

void Communicator::end_batch() {
  batching_ = false;
  if (symmetric_) symmetric_->wait(*this);  // the device-side collectives' kernels, and their faults
  if (!nccl_comm_) return;
  const Deadline deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s_));
  for (void* s : std::exchange(batch_streams_, {}))
    nccl_stream_wait(nccl_comm_, s, deadline, "rank " + std::to_string(rank()) + " waited for a batch of NCCL collectives");
}

void Communicator::set_nccl(void* comm, std::string reason_if_null) {
  nccl_comm_ = comm;
  nccl_reason_ = comm ? std::string() : std::move(reason_if_null);
}

Communicator Communicator::split(int color, int key) {
  if (color < 0) throw UsageError("split color " + std::to_string(color) + " is negative; colors are >= 0");
  const int n = size();
  std::vector<int> mine = {color, key};
  std::vector<int> all(2 * std::size_t(n));
  std::vector<P2POp> ops;
  for (int p = 0; p < n; ++p) {
    ops.push_back(send_op(mine.data(), sizeof(int) * 2, p));
    ops.push_back(recv_op(&all[2 * std::size_t(p)], sizeof(int) * 2, p));
  }
  for (auto& op : ops) op.tag = 2, op.host = true;  // internal traffic, apart from user messages; host ints
  transport_->group(ops, Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(timeout_s_)));
  std::vector<int> members;
  for (int p = 0; p < n; ++p)
    if (all[2 * std::size_t(p)] == color) members.push_back(p);
  std::stable_sort(members.begin(), members.end(),
                   [&](int a, int b) { return all[2 * std::size_t(a) + 1] < all[2 * std::size_t(b) + 1]; });
  int new_rank = int(std::find(members.begin(), members.end(), rank()) - members.begin());
  ++splits_;
  Communicator sub(transport_->split(color, key, members, new_rank), device_, timeout_s_, choose_);
  sub.local_rank_ = local_rank_;
  sub.local_size_ = local_size_;
  sub.node_of_world_ = node_of_world_;
  for (int m : members) sub.world_ranks_.push_back(world_rank_of(m));
  // The group gets its own NCCL communicator (every rank of this one takes part, as in the split above), so
  // tensor-, pipeline- and data-parallel groups run NCCL's collectives too.
  if (nccl_comm_) {
    sub.nccl_comm_ = nccl_comm_split(nccl_comm_, color, key);
    sub.owns_nccl_ = true;
    sub.nccl_reason_.clear();
  } else {
    sub.nccl_reason_ = nccl_reason_;
  }
  sub.impl_ = impl_;
  return sub;
}

namespace {
std::atomic<bool> g_wait_accounting{false};
thread_local double t_transport_wait_s = 0;

// Adds the time from its making to its end to this thread's transport waits, when they are counted.
struct TransportWaitClock {
  const bool on = g_wait_accounting.load(std::memory_order_relaxed);
  const Clock::time_point t0 = on ? Clock::now() : Clock::time_point{};
  ~TransportWaitClock() {
    if (on) t_transport_wait_s += seconds_since(t0);
  }
};
}  // namespace

void set_transport_wait_accounting(bool on) { g_wait_accounting.store(on); }
double transport_wait_seconds() { return t_transport_wait_s; }

void Communicator::group(std::span<const P2POp> ops) {
  Deadline d = in_call_ ? deadline()
                        : Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(timeout_s_));
  if (faults_on() && std::any_of(ops.begin(), ops.end(), [](const P2POp& op) { return op.kind == P2POp::send; }))
    delay_if_slow(world_rank_of(rank()));
  const TransportWaitClock waiting;
  try {
    // A rank that skipped a collective must not have its next messages taken for the collective's: channels
    // (tags) keep user point-to-point, collective and barrier traffic apart.
    if (channel_ == 0) return transport_->group(ops, d);
    if (ops.size() <= 4) {  // a step's few messages: tagged on the stack (no allocation per message)
      std::array<P2POp, 4> few;
      for (std::size_t i = 0; i < ops.size(); ++i) few[i] = ops[i], few[i].tag = channel_;
      transport_->group(std::span<const P2POp>(few.data(), ops.size()), d);
    } else {
      std::vector<P2POp> tagged(ops.begin(), ops.end());
      for (auto& op : tagged) op.tag = channel_;
      transport_->group(tagged, d);
    }
  } catch (const TimeoutError& e) {
    if (in_call_) throw;  // run() names the collective
    // Point-to-point traffic of the caller (a pipeline's activations) or a barrier: what was being measured.
    const std::string measuring = current_measurement();
    const std::string what = channel_ == 2 ? "a barrier" : "point-to-point messages";
    throw TimeoutError("rank " + std::to_string(rank()) + ": " +
                       (measuring.empty() ? "" : "while measuring " + measuring + ", ") + what +
                       " did not finish within the timeout of " + seconds_text(timeout_s_) + " s: " + e.what());
  }
  if (channel_ == 1 && faults_on() && flip_armed()) flip_one_received_byte(ops);
}

// Test-only (PARBENCH_FAULT kind flip): the first non-empty message received has the most significant byte of
// its middle element flipped (sign and exponent of a float, high bits of an integer), as a corrupting link would.
void Communicator::flip_one_received_byte(std::span<const P2POp> ops) {
  for (const P2POp& op : ops) {
    const std::size_t es = dtype_size(call_dtype_);
    if (op.kind != P2POp::recv || op.bytes < es) continue;
    const std::size_t at = (op.bytes / es / 2) * es + es - 1;
    const Device where = op.device(device_);
    unsigned char byte = 0;
    device_memcpy(Device{}, &byte, where, static_cast<char*>(op.buf) + at, 1);
    byte ^= 0x40;
    device_memcpy(where, static_cast<char*>(op.buf) + at, Device{}, &byte, 1);
    disarm_flip();
    return;
  }
}

void Communicator::queue_group(std::span<const P2POp> ops, void* stream) {
  if (!nccl_comm_) throw Error("queue_group needs NCCL: " + nccl_reason_);
  if (channel_ != 0) throw Error("queue_group inside a collective");
  nccl_queue_p2p(nccl_comm_, ops, stream);
  // Named if a wait of this rank times out while it is pending (the peers as world ranks: the late one is there).
  nccl_note_queued(nccl_comm_, world_rank_of(rank()), ops, world_ranks_);
}

void Communicator::post_sends(std::span<const P2POp> ops) {
  if (channel_ != 0) throw Error("post_sends inside a collective");
  transport_->post_sends(ops);
}

void Communicator::finish_sends() {
  transport_->finish_sends(Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                              std::chrono::duration<double>(timeout_s_)));
}

void Communicator::send(const void* buf, std::size_t bytes, int peer) {
  P2POp op = send_op(buf, bytes, peer);
  group({&op, 1});
}

void Communicator::recv(void* buf, std::size_t bytes, int peer) {
  P2POp op = recv_op(buf, bytes, peer);
  group({&op, 1});
}

void Communicator::barrier() {
  // Dissemination barrier: lg n rounds of one-byte messages.
  const int n = size(), r = rank();
  char out = 1, in = 0;
  const int saved = std::exchange(channel_, 2);
  struct Restore {
    int& c;
    int v;
    ~Restore() { c = v; }
  } restore{channel_, saved};
  for (int d = 1; d < n; d <<= 1) {
    P2POp ops[2] = {send_op(&out, 1, (r + d) % n), recv_op(&in, 1, (r - d + n) % n)};
    ops[0].host = ops[1].host = true;
    group(ops);
  }
}

const Algorithm& Communicator::resolve(Collective c) const { return impl_ ? *impl_ : choose_(c, *this); }

int Communicator::nodes() const {
  return node_of_world_.empty() ? 1 : *std::max_element(node_of_world_.begin(), node_of_world_.end()) + 1;
}

int Communicator::group_nodes() const {
  std::vector<int> seen;
  for (int r = 0; r < size(); ++r)
    if (std::find(seen.begin(), seen.end(), node_of(r)) == seen.end()) seen.push_back(node_of(r));
  return int(seen.size());
}

void Communicator::set_local(int local_rank, int local_size, std::vector<int> node_of_world_rank) {
  local_rank_ = local_rank, local_size_ = local_size, node_of_world_ = std::move(node_of_world_rank);
}

void Communicator::run(const CollArgs& a) { run_staged(a, resolve(a.coll)); }

void Communicator::call(const CollArgs& a, const Algorithm* impl) {
  CollArgs ordered = a;
  if (!ordered.stream) ordered.stream = ordered_on_;
  run_staged(ordered, impl ? *impl : resolve(a.coll));
}

void Communicator::wait_stream(void* stream, std::string_view what) {
  if (device_.on_host()) return;
  if (!nccl_comm_) {
    synchronize_stream(device_, stream);
  } else {
    const Deadline deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s_));
    try {
      nccl_stream_wait(nccl_comm_, stream, deadline, std::string(what));
    } catch (const TimeoutError&) {
      // The stream may be stuck behind point-to-point work queued on another of the rank's communicators.
      throw TimeoutError(stream_timeout_message(what) + nccl_queued_p2p_text(nccl_comm_));
    }
  }
  if (symmetric_) symmetric_->check(*this);  // a device-side collective that gave up waiting for a peer
}

void Communicator::run_staged(const CollArgs& in, const Algorithm& algo) {
  CollArgs a = in;
  // Called without a stream and outside a StreamOrder: on the thread's current stream of this GPU (NCCL queues
  // there and is waited for), so a rank never uses the legacy default stream; null when it has none.
  if (!a.stream) a.stream = synchronous_stream(device_);
  if (device_.on_host() || ((!a.send || is_device_memory(device_, a.send)) &&
                            (!a.recv || is_device_memory(device_, a.recv))))
    return run(a, algo);
  // Host memory on a GPU communicator (a step time, a loss, a gathered vector): through GPU copies, since the
  // algorithms combine and transports move device memory.
  const BufferCounts bc = buffer_counts(a.coll, a.count, size(), rank(), a.root, a.dtype);
  const std::size_t es = dtype_size(a.dtype), send_bytes = bc.send * es, recv_bytes = bc.recv * es;
  void* send = scratch(2, std::max(send_bytes, recv_bytes));
  void* recv = a.send == a.recv ? send : scratch(3, recv_bytes);
  // The copies run on the collective's stream, whatever the thread's current one: a synchronous copy from pageable
  // memory may return before its data is on the GPU, and a copy on another stream would not wait for a library
  // collective queued on this one.
  if (a.send && send_bytes) {
    CurrentStream on_its_stream(a.stream);
    device_memcpy(device_, send, Device{}, a.send, send_bytes);
  }
  CollArgs on_gpu = a;
  on_gpu.send = send, on_gpu.recv = recv;
  run(on_gpu, algo);
  CurrentStream on_its_stream(a.stream);
  if (a.recv && recv_bytes) return device_memcpy(Device{}, a.recv, device_, recv, recv_bytes);  // done on return
  // Nothing comes back, but the scratch is free for the next call, on any stream, only once the collective is done.
  // (One given no stream and run outside a batch and a StreamOrder has been waited for already.)
  if (in.stream && algo.queues_on_callers_stream() && !batching_) synchronize_stream(device_, a.stream);
}

void Communicator::run(const CollArgs& a, const Algorithm& algo) {
  if (is_rooted(a.coll) && (a.root < 0 || a.root >= size()))
    throw UsageError("root " + std::to_string(a.root) + " is outside the ranks 0.." + std::to_string(size() - 1));
  if (&algo != vetted_algo_ || a.coll != vetted_coll_) {
    if (std::string why = algo.unsupported(a.coll, *this); !why.empty())
      throw UsageError(std::string(algo.name()) + " cannot run " + std::string(collective_name(a.coll)) + ": " +
                       why);
    vetted_algo_ = &algo, vetted_coll_ = a.coll;
  }
  deadline_set_ = false;
  in_call_ = true;
  channel_ = 1;
  call_dtype_ = a.dtype;
  const bool queued = algo.queues_on_callers_stream();
  stream_ = queued ? a.stream : nullptr;
  if (queued) last_queued_ = a, last_queued_algo_ = &algo;
  if (batching_ && std::find(batch_streams_.begin(), batch_streams_.end(), a.stream) == batch_streams_.end())
    batch_streams_.push_back(a.stream);
  struct EndCall {  // however the call ends
    Communicator& c;
    ~EndCall() { c.in_call_ = false, c.channel_ = 0, c.stream_ = nullptr; }
  } end_call{*this};
  // The hand-written algorithms move data with copies and kernels on the legacy default stream and the host: what
  // the caller queued on its own stream must be done first, and theirs before the caller's stream goes on (a
  // non-blocking stream does not wait for the legacy one). A library collective is queued behind it instead.
  if (a.stream && !queued) synchronize_stream(device_, a.stream);
  std::optional<CurrentStream> on_legacy;  // their device_memcpy and scratch too
  if (!queued && !device_.on_host()) on_legacy.emplace(nullptr);
  try {
    // Name and size only when something records them: on every small call they cost more than the check.
    std::string name;
    std::int64_t bytes = 0;
    if (TraceRecorder::instance().mode() != 0) {
      name = std::string(collective_name(a.coll)) + "/" + std::string(algo.name());
      bytes = std::int64_t(call_bytes(a));
    }
    Range range(name, Category::communication, RangeArgs{.bytes = bytes});
    algo.run(*this, a);
    if (a.stream && !queued) synchronize_stream(device_, nullptr);
  } catch (const CollectiveTimeoutError&) {
    throw;
  } catch (const TimeoutError& e) {
    throw CollectiveTimeoutError(timeout_message(a, algo.name(), e.what()));
  }
}

std::size_t Communicator::call_bytes(const CollArgs& a) const {
  const BufferCounts bc = buffer_counts(a.coll, a.count, size(), rank(), a.root, a.dtype);
  return std::max(bc.send, bc.recv) * dtype_size(a.dtype);
}

std::string Communicator::describe_args(const CollArgs& a, std::string_view impl) const {
  return describe_call(a.coll, impl, call_bytes(a), a.count, a.dtype, size());
}

std::string Communicator::stream_timeout_message(std::string_view what) const {
  const std::string measuring = current_measurement();
  std::string last = "none";
  if (last_queued_algo_) last = describe_args(last_queued_, last_queued_algo_->name());
  return "rank " + std::to_string(rank()) + ": " + (measuring.empty() ? "" : "while measuring " + measuring + ", ") +
         std::string(what) + " did not finish within the timeout of " + seconds_text(timeout_s_) +
         " s (the last collective this communicator queued: " + last + ")";
}

std::string Communicator::timeout_message(const CollArgs& a, std::string_view impl, const std::string& why) const {
  const std::string call = describe_args(a, impl);
  const std::string measuring = current_measurement();
  const std::string late = " did not finish within the timeout of " + seconds_text(timeout_s_) + " s: " + why;
  if (measuring.empty() || is_measured_call(a.coll, impl))
    return "rank " + std::to_string(rank()) + ": " + (measuring.empty() ? call : measuring) + late;
  // A helper call (the reduction of the timings, a check's count) stuck while measuring: the measurement first.
  return "rank " + std::to_string(rank()) + ": while measuring " + measuring + ", the helper call " + call + late;
}

std::string describe_call(Collective c, std::string_view impl, std::size_t bytes, std::size_t count, DType t,
                          int ranks) {
  const bool per_peer = counts_per_peer(c);  // alltoallv: the count before its per-peer split
  return std::string(collective_name(c)) + "/" + std::string(impl) + " of " + std::to_string(bytes) + " bytes (" +
         std::to_string(count) + " x " + std::string(dtype_name(t)) + (per_peer ? " per peer, " : " per rank, ") +
         std::to_string(ranks) + " ranks)";
}

namespace {
CollArgs args(Collective c, const void* s, void* r, std::size_t count, DType t, ReduceOp op, int root) {
  CollArgs a;
  a.coll = c, a.send = s, a.recv = r, a.count = count, a.dtype = t, a.op = op, a.root = root;
  return a;
}
}  // namespace

void Communicator::allreduce(const void* s, void* r, std::size_t c, DType t, ReduceOp op, const Algorithm* impl) {
  call(args(Collective::allreduce, s, r, c, t, op, 0), impl);
}
void Communicator::reduce(const void* s, void* r, std::size_t c, DType t, ReduceOp op, int root,
                          const Algorithm* impl) {
  call(args(Collective::reduce, s, r, c, t, op, root), impl);
}
void Communicator::broadcast(const void* s, void* r, std::size_t c, DType t, int root, const Algorithm* impl) {
  call(args(Collective::broadcast, s, r, c, t, ReduceOp::sum, root), impl);
}
void Communicator::allgather(const void* s, void* r, std::size_t c, DType t, const Algorithm* impl) {
  call(args(Collective::allgather, s, r, c, t, ReduceOp::sum, 0), impl);
}
void Communicator::reduce_scatter(const void* s, void* r, std::size_t c, DType t, ReduceOp op,
                                  const Algorithm* impl) {
  call(args(Collective::reduce_scatter, s, r, c, t, op, 0), impl);
}
void Communicator::gather(const void* s, void* r, std::size_t c, DType t, int root, const Algorithm* impl) {
  call(args(Collective::gather, s, r, c, t, ReduceOp::sum, root), impl);
}
void Communicator::scatter(const void* s, void* r, std::size_t c, DType t, int root, const Algorithm* impl) {
  call(args(Collective::scatter, s, r, c, t, ReduceOp::sum, root), impl);
}
void Communicator::alltoall(const void* s, void* r, std::size_t c, DType t, const Algorithm* impl) {
  call(args(Collective::alltoall, s, r, c, t, ReduceOp::sum, 0), impl);
}
void Communicator::sendrecv(const void* s, void* r, std::size_t c, DType t, const Algorithm* impl) {
  call(args(Collective::sendrecv, s, r, c, t, ReduceOp::sum, 0), impl);
}
void Communicator::alltoallv(const void* s, void* r, std::size_t c, DType t, const Algorithm* impl) {
  call(args(Collective::alltoallv, s, r, c, t, ReduceOp::sum, 0), impl);
}
void Communicator::hypercube(const void* s, void* r, std::size_t c, DType t, const Algorithm* impl) {
  call(args(Collective::hypercube, s, r, c, t, ReduceOp::sum, 0), impl);
}

void Communicator::combine(void* out, const void* x, const void* y, std::size_t count, DType t, ReduceOp op) {
  reduce_combine(device_, out, x, y, count, t, op, stream());
}

void Communicator::divide(void* buf, std::size_t count, DType t) {
  reduce_divide(device_, buf, count, t, size(), stream());
}

void Communicator::copy(void* dst, const void* src, std::size_t bytes) {
  if (dst == src || bytes == 0) return;
  device_memcpy(device_, dst, device_, src, bytes);
}

SymmetricMemory& Communicator::symmetric_memory() {
  if (!symmetric_) symmetric_ = std::make_unique<SymmetricMemory>(device_);
  return *symmetric_;
}

void* Communicator::scratch(int slot, std::size_t bytes) {
  Scratch& s = scratch_[slot];
  if (s.bytes < bytes || !s.ptr) {
    if (s.ptr) device_free(device_, s.ptr);
    s.ptr = nullptr;
    s.ptr = device_malloc(device_, std::max<std::size_t>(bytes, 256));
    s.bytes = std::max<std::size_t>(bytes, 256);
  }
  return s.ptr;
}

}  // namespace parbench
