// Bootstrap of the ranks: threads (one ThreadsWorld) or mpirun (MPI world, node-local split), and NCCL on cuda
// when every rank has a GPU of its own; the tcp bootstrap is in bootstrap_tcp.cpp.
#include "collectives/registry.h"
#include "collectives/bootstrap.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "collectives/communicator/algorithm.h"
#include "collectives/bootstrap_tcp.h"
#include "collectives/communicator/fault_injection.h"
#include "collectives/table/measurement.h"
#include "base/error.h"
#include "base/text.h"
#include "profiles/trace.h"

#ifdef PARBENCH_HAVE_MPI
#include "collectives/communicator/liveness.h"
#include "collectives/transport/transport_mpi.h"
#endif
#ifdef PARBENCH_HAVE_CUDA
#include <cuda_runtime.h>
#endif
#ifdef PARBENCH_HAVE_NCCL
#include "collectives/transport/nccl_util.h"
#endif

namespace parbench {

std::string nccl_turned_off() {
  const char* v = std::getenv("PARBENCH_NCCL");
  if (!v || !*v || std::string(v) == "on") return {};
  if (std::string(v) == "off") return "NCCL is turned off (PARBENCH_NCCL=off)";
  throw UsageError("PARBENCH_NCCL='" + std::string(v) + "' is not 'on' or 'off'");
}

int gpu_count() {
#ifdef PARBENCH_HAVE_CUDA
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
#else
  return 0;
#endif
}

namespace {

std::string handwritten_list() { return join(handwritten_algorithm_names()); }

// The launch chosen by --bootstrap, read from the environment on first use.

// The GPU of node-local rank `local_rank`: round robin from the one --device names.
int rank_gpu(const Device& base, int local_rank, int gpus) { return (base.index + local_rank) % gpus; }

}  // namespace

Device rank_device(const Device& base, int local_rank, int gpus) {
  Device d = base;
  if (d.kind == DeviceKind::cuda && gpus > 0) {
    d.index = rank_gpu(base, local_rank, gpus);
#ifdef PARBENCH_HAVE_CUDA
    CUDA_CHECK(cudaSetDevice(d.index));
#endif
  }
  return d;
}

namespace {

// Threads on cuda: let this rank's GPU read the other ranks' GPUs (the one-shot algorithms and peer copies), and
// only theirs: a GPU has a limited number of peer mappings (8 without NVSwitch), and every enabled peer makes
// cudaFree wait for that peer's work too.
void enable_peer_access([[maybe_unused]] const Device& d, [[maybe_unused]] const std::vector<int>& rank_gpus) {
#ifdef PARBENCH_HAVE_CUDA
  if (d.kind != DeviceKind::cuda) return;
  for (int peer : std::set<int>(rank_gpus.begin(), rank_gpus.end())) {
    int can = 0;
    if (peer == d.index || cudaDeviceCanAccessPeer(&can, d.index, peer) != cudaSuccess || !can) continue;
    cudaError_t e = cudaDeviceEnablePeerAccess(peer, 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled) cudaGetLastError();  // clear the sticky-free error state
    else CUDA_CHECK(e);
  }
#endif
}

// "rank R: while measuring X: what" (the measurement is this thread's, see measurement.h).
std::string failure_report(int rank, const std::string& what) {
  const std::string measuring = current_measurement();
  return "rank " + std::to_string(rank) + ": " + (measuring.empty() ? "" : "while measuring " + measuring + ": ") +
         what;
}

// The rank threads' failures, and which to report: a collective's timeout (it names collective, implementation
// and size) over any other root cause, and those over ranks that only stopped because another failed.
class RankFailures {
 public:
  RankFailures(ThreadsWorld& world, double timeout_s) : world_(world), timeout_s_(timeout_s) {}

  // In a catch block of rank r's thread: keeps the failure and, for a root cause, stops the other ranks.
  void record_current(int r) {
    try {
      throw;
    } catch (const RankLeftEarly&) {
      // Test fault (PARBENCH_FAULT kind exit): this rank stops taking part; the others wait for it in vain.
    } catch (const AbortedError& e) {
      keep(std::current_exception(), kStopped, r, e.what(), false);
    } catch (const CollectiveTimeoutError& e) {
      keep(std::current_exception(), kCollectiveTimeout, r, e.what(), true);
    } catch (const TimeoutError& e) {
      // Outside a collective (e.g. a barrier after a rank skipped one, a pipeline's messages): ranks stuck in a
      // collective time out on their own deadlines and may give the more useful message, so they get a moment
      // first; then everyone stops (a stalled rank may be waiting for nothing else).
      keep(std::current_exception(), kRootCause, r, e.what(), false);
      std::this_thread::sleep_for(std::chrono::duration<double>(std::min(timeout_s_, 2.0)));
      abort_threads_world(world_, "rank " + std::to_string(r) + " timed out: " + e.what());
    } catch (const UsageError& e) {
      keep(std::current_exception(), kRootCause, r, e.what(), true);
    } catch (const std::exception& e) {
      const std::string what = failure_report(r, e.what());  // which rank, and what it was measuring
      // After a timeout aborted the NCCL communicators, an NCCL error of another rank is that abort's echo.
      const bool echo = nccl_aborted_after_timeout();
      keep(std::make_exception_ptr(Error(what)), echo ? kStopped : kRootCause, r, what, !echo);
    } catch (...) {
      keep(std::current_exception(), kRootCause, r, "unknown exception", true);
    }
  }

  void rethrow_first() const {
    for (const auto& e : best_)
      if (e) std::rethrow_exception(e);
  }

 private:
  enum Kind { kCollectiveTimeout, kRootCause, kStopped };
  void keep(std::exception_ptr e, Kind kind, int r, const std::string& what, bool abort_all) {
    std::lock_guard lock(mu_);
    if (!best_[kind]) best_[kind] = e;
    if (abort_all) abort_threads_world(world_, "rank " + std::to_string(r) + " failed: " + what);
  }

  ThreadsWorld& world_;
  double timeout_s_;
  std::mutex mu_;
  std::exception_ptr best_[3];
};

void run_threads(const LaunchOptions& o, const std::function<void(Communicator&)>& body) {
  const int n = o.ranks > 0 ? o.ranks : 1;
  auto world = make_threads_world(n);
  const bool cuda = o.device.kind == DeviceKind::cuda;
  const int gpus = cuda ? gpu_count() : 0;
  std::vector<int> rank_gpus;  // the GPU of every rank
  for (int q = 0; q < n && gpus > 0; ++q) rank_gpus.push_back(rank_gpu(o.device, q, gpus));
  std::string nccl_reason = "NCCL runs on GPUs only (--device cuda)";
#ifdef PARBENCH_HAVE_NCCL
  // One call makes every rank's communicator before any rank thread starts: with ncclCommInitRank per thread, a
  // rank that failed before its call would leave the others blocked in theirs for ever.
  std::vector<ncclComm_t> nccl_comms;
  if (cuda) {
    nccl_reason = nccl_gpu_refusal(n, gpus);
    if (nccl_reason.empty()) {
      nccl_comms.resize(std::size_t(n));
      NCCL_CHECK(ncclCommInitAll(nccl_comms.data(), n, rank_gpus.data()));
      for (ncclComm_t c : nccl_comms) nccl_track(c);
    }
  }
  std::vector<char> nccl_healthy(nccl_comms.size(), 0);  // the rank finished normally: its communicator is ours
#else
  if (cuda) nccl_reason = "this build has no NCCL";
#endif
  RankFailures failures(*world, o.timeout_s);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        TraceTrack track(r, "comm");
        Device d = rank_device(o.device, r, gpus);
        enable_peer_access(d, rank_gpus);
        Communicator comm(make_threads_transport(world, r, d), d, o.timeout_s, choose_automatically);
        comm.set_local(r, n, std::vector<int>(std::size_t(n), 0));
        void* nccl = nullptr;
#ifdef PARBENCH_HAVE_NCCL
        if (!nccl_comms.empty()) nccl = nccl_comms[std::size_t(r)];
#endif
        comm.set_nccl(nccl, nccl_reason);
        body(comm);
#ifdef PARBENCH_HAVE_NCCL
        if (nccl) nccl_healthy[std::size_t(r)] = 1;
#endif
      } catch (...) {
        failures.record_current(r);
      }
      mark_rank_gone(*world, r);  // a rank still waiting for this one names it as gone
    });
  }
  for (auto& t : threads) t.join();
#ifdef PARBENCH_HAVE_NCCL
  // A healthy rank's communicator is destroyed; a failed rank's is aborted (destroying it could wait for operations
  // its peers will never match), unless a timeout already aborted (and freed) it.
  for (std::size_t r = 0; r < nccl_comms.size(); ++r) {
    if (nccl_healthy[r])
      nccl_release(nccl_comms[r]);
    else
      nccl_abandon(nccl_comms[r]);
  }
#endif
  failures.rethrow_first();
}

#ifdef PARBENCH_HAVE_MPI
#ifdef PARBENCH_HAVE_NCCL
// Under mpirun each process may see all of the node's GPUs or only its own (CUDA_VISIBLE_DEVICES per rank), so
// whether two ranks share a GPU is decided by the GPUs' UUIDs, gathered over the node's ranks.
std::string nccl_shared_gpu_refusal(MPI_Comm node, int local_rank, const Device& d, int gpus) {
  if (std::string off = nccl_turned_off(); !off.empty()) return off;
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, d.index));
  int local_size = 1;
  MPI_CHECK(MPI_Comm_size(node, &local_size));
  std::vector<char> uuids(16 * std::size_t(local_size));
  MPI_CHECK(MPI_Allgather(prop.uuid.bytes, 16, MPI_BYTE, uuids.data(), 16, MPI_BYTE, node));
  for (int q = 0; q < local_size; ++q)
    if (q != local_rank && std::equal(uuids.begin() + 16 * q, uuids.begin() + 16 * (q + 1), prop.uuid.bytes))
      return "NCCL needs one GPU per rank, but node-local ranks " + std::to_string(std::min(q, local_rank)) +
             " and " + std::to_string(std::max(q, local_rank)) + " share a GPU (" + std::to_string(gpus) +
             " visible to each); give each rank its own (CUDA_VISIBLE_DEVICES, or at most as many ranks per "
             "node as GPUs), or use the hand-written implementations (" + handwritten_list() + ")";
  return {};
}
#endif

// By world rank: whether that rank is on this one's node (in its part of MPI's shared-memory split).
std::vector<bool> same_node_ranks(MPI_Comm node, int rank, int size) {
  int leader = rank;  // the world rank of the node's first rank
  MPI_CHECK(MPI_Bcast(&leader, 1, MPI_INT, 0, node));
  std::vector<int> leaders(static_cast<std::size_t>(size));
  MPI_CHECK(MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, MPI_COMM_WORLD));
  std::vector<bool> same;
  for (int l : leaders) same.push_back(l == leader);
  return same;
}

void init_mpi_once() {
  int initialized = 0;
  MPI_CHECK(MPI_Initialized(&initialized));
  if (initialized) return;
  int provided = 0;
  // Communication threads (DDP buckets, pipeline sends) call MPI beside the main thread.
  MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided));
  if (provided < MPI_THREAD_MULTIPLE)
    throw Error("this MPI library does not support MPI_THREAD_MULTIPLE, which the communication threads need");
  std::atexit([] {
    liveness_stop();  // its thread calls MPI
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  });
}

// A rank's failure under mpirun: said with the rank and its host, then the whole job ends.
[[noreturn]] void abort_job(int rank, int size, const std::string& what) {
  std::fprintf(stderr, "error: rank %d of %d on %s: %s\n", rank, size, host_name().c_str(), what.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();  // MPI_Abort does not return
}

// Each world rank's node: the world rank of its node's first rank, gathered (MPI's shared-memory split decides);
// and each rank's host name, for messages that name a peer.
std::vector<int> mpi_node_of_rank(MPI_Comm node, int size) {
  int rank = 0, first = 0;
  MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  first = rank;
  MPI_CHECK(MPI_Bcast(&first, 1, MPI_INT, 0, node));
  std::vector<int> firsts(std::size_t(size), 0);
  MPI_CHECK(MPI_Allgather(&first, 1, MPI_INT, firsts.data(), 1, MPI_INT, MPI_COMM_WORLD));
  char mine[64] = {};
  host_name().copy(mine, sizeof mine - 1);
  std::vector<char> names(std::size_t(size) * sizeof mine);
  MPI_CHECK(MPI_Allgather(mine, sizeof mine, MPI_CHAR, names.data(), sizeof mine, MPI_CHAR, MPI_COMM_WORLD));
  std::vector<std::string> keys, hosts;
  for (int r = 0; r < size; ++r) {
    keys.push_back(std::to_string(firsts[std::size_t(r)]));
    hosts.emplace_back(&names[std::size_t(r) * sizeof mine]);
  }
  set_rank_hosts(hosts);
  return number_nodes(keys);
}

void run_mpi(const LaunchOptions& o, const std::function<void(Communicator&)>& body) {
  init_mpi_once();
  int size = 1, rank = 0;
  MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  TraceRecorder::instance().set_default_rank(rank);
  liveness_start(MPI_COMM_WORLD);  // so that a rank that times out can tell which rank is late
  if (o.ranks > 0 && o.ranks != size)
    throw UsageError("--ranks " + std::to_string(o.ranks) + " does not match the " + std::to_string(size) +
                     " processes started by mpirun; under mpirun leave --ranks out");
  MPI_Comm node;
  MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
  int local_rank = 0, local_size = 1;
  MPI_CHECK(MPI_Comm_rank(node, &local_rank));
  MPI_CHECK(MPI_Comm_size(node, &local_size));
  struct FreeNode {
    MPI_Comm& c;
    ~FreeNode() { MPI_Comm_free(&c); }
  } free_node{node};

  try {
    const bool cuda = o.device.kind == DeviceKind::cuda;
    const int gpus = cuda ? gpu_count() : 0;
    Device d = rank_device(o.device, local_rank, gpus);
    std::string nccl_reason = cuda ? "this build has no NCCL" : "NCCL runs on GPUs only (--device cuda)";
    void* nccl = nullptr;
    MPI_Comm world = MPI_COMM_WORLD;
    std::unique_ptr<Transport> transport;
#ifdef PARBENCH_HAVE_NCCL
    if (cuda) {
      nccl_reason = nccl_shared_gpu_refusal(node, local_rank, d, gpus);
      int ok = nccl_reason.empty() ? 1 : 0, all_ok = 0;  // every node must agree, or nobody starts NCCL
      MPI_CHECK(MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
      if (all_ok) {
        ncclUniqueId id{};
        if (rank == 0) NCCL_CHECK(ncclGetUniqueId(&id));
        MPI_CHECK(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD));
        ncclComm_t c;
        NCCL_CHECK(ncclCommInitRank(&c, size, id, rank));
        nccl_track(c);
        nccl = c;
        transport = make_nccl_transport(nccl, nullptr, rank, size, d, make_mpi_transport(&world, d));
      } else if (nccl_reason.empty()) {
        nccl_reason = "NCCL needs one GPU per rank, and another node has more ranks than GPUs";
      }
    }
#endif
    if (!transport)
      transport = host_transport_under_mpi(&world, rank, size, same_node_ranks(node, rank, size), d, o.timeout_s);
    {
      Communicator comm(std::move(transport), d, o.timeout_s, choose_automatically);
      comm.set_local(local_rank, local_size, mpi_node_of_rank(node, size));
      comm.set_nccl(nccl, nccl_reason);
      body(comm);
    }
#ifdef PARBENCH_HAVE_NCCL
    nccl_release(static_cast<ncclComm_t>(nccl));
#endif
  } catch (const UsageError&) {
    throw;
  } catch (const CollectiveTimeoutError& e) {
    abort_job(rank, size, e.what() + ("; " + liveness_report(1.0)));
  } catch (const TimeoutError& e) {
    // Outside a collective (a barrier, a pipeline's messages): a rank stuck inside a collective may name the
    // measured operation better, so give it a moment (bounded: the job must end soon after the timeout).
    std::this_thread::sleep_for(std::chrono::duration<double>(std::min(o.timeout_s, 2.0)));
    abort_job(rank, size, e.what() + ("; " + liveness_report(1.0)));
  } catch (const std::exception& e) {
    const std::string measuring = current_measurement();
    abort_job(rank, size, (measuring.empty() ? "" : "while measuring " + measuring + ": ") + e.what());
  }
}
#endif

}  // namespace

std::string nccl_gpu_refusal(int ranks_per_node, int gpus) {
  if (std::string off = nccl_turned_off(); !off.empty()) return off;
  if (ranks_per_node <= gpus) return {};
  return "NCCL needs one GPU per rank, but " + std::to_string(ranks_per_node) + " ranks would share " +
         std::to_string(gpus) + " GPU(s) on this node; run at most " + std::to_string(gpus) +
         " rank(s) per node, or use the hand-written implementations (" + handwritten_list() +
         "), which can share a GPU";
}

void run_ranks(const LaunchOptions& o, const std::function<void(Communicator&)>& body) {
  const Launch& l = current_launch();
  if (l.bootstrap == BootstrapKind::mpi) {
#ifdef PARBENCH_HAVE_MPI
    return run_mpi(o, body);
#else
    throw UsageError("launched for the mpi bootstrap (" + l.launcher + "), but this build has no MPI; rebuild "
                     "with PARBENCH_MPI=ON, launch with torchrun or srun (the tcp bootstrap), or pass --ranks N");
#endif
  }
  if (l.bootstrap == BootstrapKind::tcp) return run_tcp(o, l, body);
  run_threads(o, body);
}

std::vector<int> number_nodes(const std::vector<std::string>& key_of_rank) {
  std::vector<int> node;
  std::vector<std::string> seen;
  for (const std::string& k : key_of_rank) {
    const auto at = std::find(seen.begin(), seen.end(), k);
    node.push_back(int(at - seen.begin()));
    if (at == seen.end()) seen.push_back(k);
  }
  return node;
}

std::string world_summary(const Communicator& world, int nodes, const Device& device) {
  return std::to_string(world.size()) + " rank(s) on " + std::to_string(nodes) + " node(s) (" + launch_description() +
         "), device " + device_name(device) + ", transport " + std::string(world.transport().name());
}

}  // namespace parbench
