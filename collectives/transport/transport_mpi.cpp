// MPI transport: MPI_Isend/MPI_Irecv for a group, completed by polling with MPI_Testall against the deadline.
// Device (cuda) memory is staged through pinned host buffers that the transport keeps and reuses. Messages over
// 1 GiB go as several.
#include "collectives/transport/transport_mpi.h"

#ifdef PARBENCH_HAVE_MPI
#include <sched.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <typeinfo>
#include <vector>

#include "collectives/launch/launcher.h"
#include "collectives/transport/doorbell.h"
#include "collectives/transport/group_staging.h"
#include "core/memory.h"

namespace parbench {
namespace {

constexpr std::size_t kMaxMessage = std::size_t(1) << 30;

class MpiTransport final : public Transport {
 public:
  MpiTransport(MPI_Comm comm, Device device)
      : comm_(comm), device_(device), group_staging_(device), send_staging_(device) {
    MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
    MPI_CHECK(MPI_Comm_size(comm_, &size_));
  }
  ~MpiTransport() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }

  std::string_view name() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  MPI_Comm comm() const { return comm_; }

  std::unique_ptr<Transport> split(int color, int key, const std::vector<int>&, int) override {
    MPI_Comm sub;
    MPI_CHECK(MPI_Comm_split(comm_, color, key, &sub));
    return std::make_unique<MpiTransport>(sub, device_);
  }

  void post_sends(std::span<const P2POp> ops) override {
    for (const P2POp& op : ops) {
      if (op.kind != P2POp::send) throw Error("post_sends: a receive among the sends");
      char* buf = send_staging_.stage(op);  // a host copy lives until finish_sends
      start(op, buf, posted_);
    }
  }

  void finish_sends(Deadline deadline) override {
    std::vector<MPI_Request> reqs;
    reqs.swap(posted_);
    mpi_wait_all(reqs.data(), int(reqs.size()), deadline,
                 "rank " + std::to_string(rank_) + " waited for its posted sends to be received");
    send_staging_.release();
  }

  void abandon_sends() override {
    for (MPI_Request& r : posted_) {
      MPI_Cancel(&r);
      MPI_Request_free(&r);
    }
    posted_.clear();
    send_staging_.release();
  }

  void group(std::span<const P2POp> ops, Deadline deadline) override {
    if (device_.on_host() && few_small(ops)) {  // a step's few messages in host memory: requests on the stack
      std::array<MPI_Request, kFewOps> reqs;
      for (std::size_t i = 0; i < ops.size(); ++i) reqs[i] = start_one(ops[i], static_cast<char*>(ops[i].buf));
      if (mpi_poll_until(reqs.data(), int(ops.size()), deadline, spin_ns_)) return;
      std::vector<MPI_Request> late(reqs.begin(), reqs.begin() + std::ptrdiff_t(ops.size()));
      std::vector<std::size_t> op_of(ops.size());
      for (std::size_t i = 0; i < ops.size(); ++i) op_of[i] = i;
      throw late_peers(late, op_of, ops);
    }
    const std::vector<char*> bufs = group_staging_.stage(ops);
    std::vector<MPI_Request> reqs;
    std::vector<std::size_t> op_of;  // request -> its op, to name the late peers
    for (std::size_t i = 0; i < ops.size(); ++i) {
      start(ops[i], bufs[i], reqs);
      op_of.resize(reqs.size(), i);
    }
    if (!mpi_poll_until(reqs.data(), int(reqs.size()), deadline, spin_ns_)) throw late_peers(reqs, op_of, ops);
    group_staging_.unstage(ops, bufs);
  }

 private:
  static constexpr std::size_t kFewOps = 8;
  static bool few_small(std::span<const P2POp> ops) {
    if (ops.size() > kFewOps) return false;
    for (const P2POp& op : ops)
      if (op.bytes > kMaxMessage) return false;
    return true;
  }

  // One op's MPI_Isend or MPI_Irecv (at most kMaxMessage bytes).
  MPI_Request start_one(const P2POp& op, char* buf) const {
    if (op.peer < 0 || op.peer >= size_)
      throw Error("rank " + std::to_string(rank_) + ": peer " + std::to_string(op.peer) + " outside the group");
    MPI_Request req;
    if (op.kind == P2POp::send)
      MPI_CHECK(MPI_Isend(buf, int(op.bytes), MPI_BYTE, op.peer, op.tag, comm_, &req));
    else
      MPI_CHECK(MPI_Irecv(buf, int(op.bytes), MPI_BYTE, op.peer, op.tag, comm_, &req));
    return req;
  }

  int world_rank_of(int peer) const {
    MPI_Group mine, world;
    MPI_Comm_group(comm_, &mine);
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int w = MPI_UNDEFINED;
    MPI_Group_translate_ranks(mine, 1, &peer, world, &w);
    MPI_Group_free(&mine);
    MPI_Group_free(&world);
    return w;
  }

  // Which peers the requests still open wait for, worded as the threads transport words it.
  TimeoutError late_peers(std::vector<MPI_Request>& reqs, const std::vector<std::size_t>& op_of,
                          std::span<const P2POp> ops) const {
    std::string from, to;
    for (std::size_t i = 0; i < reqs.size(); ++i) {
      int done = 0;
      MPI_Request_get_status(reqs[i], &done, MPI_STATUS_IGNORE);
      const P2POp& op = ops[op_of[i]];
      std::string& list = op.kind == P2POp::recv ? from : to;
      const std::string peer = std::to_string(op.peer) + with_host(world_rank_of(op.peer));
      if (!done && (list.empty() || list.find(peer) == std::string::npos)) list += (list.empty() ? "" : ", ") + peer;
    }
    const std::string me = "rank " + std::to_string(rank_);
    if (!from.empty()) return TimeoutError(me + " waited for data from rank(s) " + from);
    if (!to.empty()) return TimeoutError(me + " sent data to rank(s) " + to + ", which never received it");
    return TimeoutError(me + " waited for point-to-point messages");
  }

  // Starts op's MPI_Isend or MPI_Irecv on `buf` (the op's buffer or its host copy), in parts of at most 1 GiB.
  void start(const P2POp& op, char* buf, std::vector<MPI_Request>& reqs) const {
    if (op.peer < 0 || op.peer >= size_)
      throw Error("rank " + std::to_string(rank_) + ": peer " + std::to_string(op.peer) + " outside the group");
    std::size_t done = 0;
    do {  // zero-byte messages still go, so that they synchronise like the others
      const int part = int(std::min(kMaxMessage, op.bytes - done));
      MPI_Request req;
      if (op.kind == P2POp::send)
        MPI_CHECK(MPI_Isend(buf + done, part, MPI_BYTE, op.peer, op.tag, comm_, &req));
      else
        MPI_CHECK(MPI_Irecv(buf + done, part, MPI_BYTE, op.peer, op.tag, comm_, &req));
      reqs.push_back(req);
      done += std::size_t(part);
    } while (done < op.bytes);
  }

  MPI_Comm comm_;
  Device device_;
  int rank_ = 0, size_ = 1;
  long spin_ns_ = poll_spin_ns();
  std::vector<MPI_Request> posted_;       // post_sends not yet finished
  GroupStaging group_staging_;
  PostedSendStaging send_staging_;  // posted sends' host copies (device memory), until finish_sends
};

}  // namespace

MPI_Comm mpi_comm_of(const Transport& t) {
  // Under mpirun on GPUs the ranks talk over NCCL, with an MPI transport beside it for tagged messages. The class
  // is final: an exact type test, cheaper than a dynamic_cast on every library call.
  const Transport* c = t.companion();
  const Transport& mpi = c ? *c : t;
  return typeid(mpi) == typeid(MpiTransport) ? static_cast<const MpiTransport&>(mpi).comm() : MPI_COMM_NULL;
}

bool mpi_test_until(MPI_Request* reqs, int count, Deadline deadline) {
  for (unsigned spins = 0;; ++spins) {
    int flag = 0;
    MPI_CHECK(MPI_Testall(count, reqs, &flag, MPI_STATUSES_IGNORE));
    if (flag) return true;
    if ((spins & 63) == 0 && Clock::now() > deadline) return false;
    sched_yield();  // ranks may outnumber cores (--oversubscribe): let the peer run
  }
}

// How long a group's wait polls MPI before it starts yielding the core between tests: 20 us when every process of
// the node has a core (a yield on a loaded machine may hand the core away for a whole time slice, where MPI's own
// calls poll on), none when mpirun's variables say the processes outnumber the cores or say nothing.
long poll_spin_ns() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"}) {
    const char* v = std::getenv(name);
    if (!v || !*v) continue;
    char* end = nullptr;
    const long local = std::strtol(v, &end, 10);
    return *end == 0 && local > 0 && local <= usable_cores() ? 20000 : 0;
  }
  return 0;
}

bool mpi_poll_until(MPI_Request* reqs, int count, Deadline deadline, long spin_ns) {
  if (spin_ns > 0) {
    const Clock::time_point until = Clock::now() + std::chrono::nanoseconds(spin_ns);
    for (unsigned spins = 0;; ++spins) {
      int flag = 0;
      MPI_CHECK(MPI_Testall(count, reqs, &flag, MPI_STATUSES_IGNORE));
      if (flag) return true;
      if ((spins & 15) == 15 && Clock::now() >= until) break;
    }
  }
  return mpi_test_until(reqs, count, deadline);
}

void mpi_wait_all(MPI_Request* reqs, int count, Deadline deadline, const std::string& what) {
  if (!mpi_test_until(reqs, count, deadline)) throw TimeoutError(what);
}

std::unique_ptr<Transport> make_mpi_transport(const void* mpi_comm, Device device) {
  MPI_Comm dup;
  MPI_CHECK(MPI_Comm_dup(*static_cast<const MPI_Comm*>(mpi_comm), &dup));
  return std::make_unique<MpiTransport>(dup, device);
}

}  // namespace parbench
#endif
