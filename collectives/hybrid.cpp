// See hybrid.h. The tag of a message carries its context (which communicator: world 0, then one number per
// split, unique along the split tree), its channel (user, collective, barrier) and the two threads, so that one
// MPI communicator serves every rank of every process and every sub-group.
#include "collectives/hybrid.h"

#include <cstdio>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "base/error.h"

#ifdef PARBENCH_HAVE_MPI
#include "collectives/transport/transport_mpi.h"

namespace parbench {
namespace {

constexpr int kChannels = 3;   // P2POp tags: user 0, collectives 1, barrier/split 2
constexpr int kMaxSplits = 7;  // per communicator: child context = parent x 8 + (1..7)

class HybridTransport final : public Transport {
 public:
  // `world_of[r]`: the world rank (process x k + thread) of this group's rank r.
  HybridTransport(MPI_Comm comm, int k, std::vector<int> world_of, int rank, long context)
      : comm_(comm), k_(k), world_of_(std::move(world_of)), rank_(rank), context_(context) {
    int ub = 0, flag = 0;
    int* value = nullptr;
    MPI_CHECK(MPI_Comm_get_attr(comm_, MPI_TAG_UB, &value, &flag));
    ub = flag && value ? *value : 32767;
    if ((context_ + 1) * kChannels * k_ * k_ > ub)
      throw Error("ranks per process: splits nested too deep for MPI's tags (context " + std::to_string(context_) +
                  ", tag bound " + std::to_string(ub) + ")");
  }

  std::string_view name() const override { return "mpi+threads"; }
  int rank() const override { return rank_; }
  int size() const override { return int(world_of_.size()); }

  void group(std::span<const P2POp> ops, Deadline deadline) override {
    std::vector<MPI_Request> reqs;
    for (const P2POp& op : ops) start(op, reqs);
    mpi_wait_all(reqs.data(), int(reqs.size()), deadline,
                 "rank " + std::to_string(rank_) + " waited for point-to-point messages");
  }
  void post_sends(std::span<const P2POp> ops) override {
    for (const P2POp& op : ops) start(op, posted_);
  }
  void finish_sends(Deadline deadline) override {
    std::vector<MPI_Request> reqs;
    reqs.swap(posted_);
    mpi_wait_all(reqs.data(), int(reqs.size()), deadline,
                 "rank " + std::to_string(rank_) + " waited for its posted sends to be received");
  }
  void abandon_sends() override {
    for (MPI_Request& r : posted_) {
      MPI_Cancel(&r);
      MPI_Request_free(&r);
    }
    posted_.clear();
  }

  std::unique_ptr<Transport> split(int, int, const std::vector<int>& members, int new_rank) override {
    if (++splits_ > kMaxSplits)
      throw Error("ranks per process: more than " + std::to_string(kMaxSplits) + " splits of one communicator");
    std::vector<int> world;
    for (int m : members) world.push_back(world_of_[std::size_t(m)]);
    return std::make_unique<HybridTransport>(comm_, k_, std::move(world), new_rank, context_ * 8 + splits_);
  }

 private:
  void start(const P2POp& op, std::vector<MPI_Request>& reqs) const {
    if (op.peer < 0 || op.peer >= size())
      throw Error("rank " + std::to_string(rank_) + ": peer " + std::to_string(op.peer) + " outside the group");
    if (op.bytes > std::size_t(INT32_MAX))
      throw Error("ranks per process: a message of " + std::to_string(op.bytes) + " bytes exceeds MPI's int count");
    const int me = world_of_[std::size_t(rank_)], peer = world_of_[std::size_t(op.peer)];
    const bool send = op.kind == P2POp::send;
    const int from = send ? me % k_ : peer % k_, to = send ? peer % k_ : me % k_;
    const int tag = int(((context_ * kChannels + op.tag) * k_ + from) * k_ + to);
    MPI_Request req;
    if (send) MPI_CHECK(MPI_Isend(op.buf, int(op.bytes), MPI_BYTE, peer / k_, tag, comm_, &req));
    else MPI_CHECK(MPI_Irecv(op.buf, int(op.bytes), MPI_BYTE, peer / k_, tag, comm_, &req));
    reqs.push_back(req);
  }

  MPI_Comm comm_;
  int k_;
  std::vector<int> world_of_;
  int rank_;
  long context_;
  int splits_ = 0;
  std::vector<MPI_Request> posted_;
};

// Thread t of process p is world rank p x k + t, on its process's node.
std::vector<int> threads_node_of(const Communicator& process, int k) {
  std::vector<int> node;
  for (int p = 0; p < process.size(); ++p) node.insert(node.end(), std::size_t(k), process.node_of(p));
  return node;
}

}  // namespace

void run_ranks_per_process(Communicator& process, int k, const std::function<void(Communicator&)>& body) {
  MPI_Comm mc = mpi_comm_of(process.transport());
  if (mc == MPI_COMM_NULL || !process.device().on_host())
    throw UsageError("several ranks per mpirun process (-t x -g > 1) run on host devices (cpu, simt) over MPI; on "
                     "GPUs start one process per GPU (-t 1 -g 1)");
  const int procs = process.size(), proc = process.rank();
  std::vector<int> world(std::size_t(procs * k));
  for (int r = 0; r < procs * k; ++r) world[std::size_t(r)] = r;
  // A usage error is every rank's (the same options): rethrown once all threads are back. Any other failure ends
  // the job at once, as under mpirun with one rank per process: the other threads may be waiting for this one.
  std::mutex mu;
  std::exception_ptr usage;
  std::vector<std::thread> threads;
  for (int t = 0; t < k; ++t)
    threads.emplace_back([&, t] {
      const int rank = proc * k + t;
      try {
        Communicator comm(std::make_unique<HybridTransport>(mc, k, world, rank, 0), process.device(),
                          process.timeout_s(), process.chooser());
        comm.set_local(process.local_rank() * k + t, process.local_size() * k, threads_node_of(process, k));
        body(comm);
      } catch (const UsageError&) {
        std::lock_guard lock(mu);
        if (!usage) usage = std::current_exception();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "error: rank %d of %d: %s\n", rank, procs * k, e.what());
        std::fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
    });
  for (auto& th : threads) th.join();
  if (usage) std::rethrow_exception(usage);
}

}  // namespace parbench

#else

namespace parbench {
void run_ranks_per_process(Communicator&, int, const std::function<void(Communicator&)>&) {
  throw UsageError("several ranks per mpirun process need MPI, and this build has none");
}
}  // namespace parbench

#endif
