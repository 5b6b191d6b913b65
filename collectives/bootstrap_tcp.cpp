// The tcp bootstrap: what the mpi bootstrap gets from MPI (world, node-local ranks, NCCL's id, a host transport),
// made from rank 0's TCP store and a TCP mesh between the ranks.
#include "collectives/bootstrap_tcp.h"
#include "collectives/registry.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <vector>

#include "base/error.h"
#include "collectives/table/measurement.h"
#include "collectives/launch/tcp_store.h"
#include "collectives/transport/transport_tcp.h"
#include "profiles/trace.h"

#ifdef PARBENCH_HAVE_NCCL
#include "collectives/transport/nccl_util.h"
#endif
#ifdef PARBENCH_HAVE_MPI
#include <random>

#include "collectives/transport/transport_mpi.h"
#endif

namespace parbench {

namespace {

// Every rank's value of `key`, once each rank has set its own (`mine`); naming the rank that never did.
std::vector<std::string> exchange(StoreClient& store, const std::string& key, const std::string& mine, int rank,
                                  int size) {
  store.set("parbench/" + key + "/" + std::to_string(rank), mine);
  std::vector<std::string> all(static_cast<std::size_t>(size));
  for (int q = 0; q < size; ++q) {
    try {
      all[std::size_t(q)] = store.get("parbench/" + key + "/" + std::to_string(q));
    } catch (const Error& e) {
      throw Error("rank " + std::to_string(q) + " of " + std::to_string(size) + " never joined (or stopped before " +
                  key + "): " + e.what());
    }
  }
  return all;
}

struct NodeLocal {
  int rank = 0, size = 0;
  std::vector<bool> same_node;  // by world rank
  std::vector<int> node_of;     // by world rank
};

// Ranks with the same host name share a node, as MPI's shared-memory split groups them; ordered by world rank.
NodeLocal node_local(StoreClient& store, int rank, int size) {
  const std::vector<std::string> hosts = exchange(store, "host", host_name(), rank, size);
  NodeLocal n;
  for (int q = 0; q < size; ++q) {
    n.same_node.push_back(hosts[std::size_t(q)] == hosts[std::size_t(rank)]);
    if (n.same_node.back()) n.size += 1, n.rank += q < rank ? 1 : 0;
  }
  n.node_of = number_nodes(hosts);
  set_rank_hosts(hosts);
  return n;
}

#ifdef PARBENCH_HAVE_NCCL
// Why NCCL cannot run here, decided as under mpirun: ranks of one node whose GPUs have the same UUID share a GPU;
// every rank must agree, or nobody starts NCCL.
std::string nccl_refusal(StoreClient& store, int rank, int size, const Device& d, int gpus) {
  std::string reason = nccl_turned_off();
  std::string uuid = "-";
  if (reason.empty()) {
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, d.index));
    uuid = host_name() + "/" + std::string(prop.uuid.bytes, 16);
  }
  const std::vector<std::string> uuids = exchange(store, "gpu", uuid, rank, size);
  for (int q = 0; q < size && reason.empty(); ++q)
    if (q != rank && uuids[std::size_t(q)] == uuid)
      reason = "NCCL needs one GPU per rank, but ranks " + std::to_string(std::min(q, rank)) + " and " +
               std::to_string(std::max(q, rank)) + " share a GPU (" + std::to_string(gpus) +
               " visible to each); give each rank its own (CUDA_VISIBLE_DEVICES, or at most as many ranks per node "
               "as GPUs), or use the hand-written implementations";
  const std::vector<std::string> verdicts = exchange(store, "nccl-ok", reason.empty() ? "1" : "0", rank, size);
  for (int q = 0; q < size && reason.empty(); ++q)
    if (verdicts[std::size_t(q)] != "1") reason = "NCCL needs one GPU per rank, and rank " + std::to_string(q) +
                                                  " shares its GPU with another rank";
  return reason;
}

// The world's NCCL communicator, its unique id from rank 0 through the store.
ncclComm_t nccl_world(StoreClient& store, int rank, int size) {
  ncclUniqueId id{};
  if (rank == 0) {
    NCCL_CHECK(ncclGetUniqueId(&id));
    store.set("parbench/nccl-id", std::string(reinterpret_cast<const char*>(&id), sizeof id));
  } else {
    const std::string v = store.get("parbench/nccl-id");
    if (v.size() != sizeof id) throw Error("rank " + std::to_string(rank) + ": the NCCL id in the store has " +
                                           std::to_string(v.size()) + " bytes, not " + std::to_string(sizeof id));
    std::copy(v.begin(), v.end(), reinterpret_cast<char*>(&id));
  }
  ncclComm_t c;
  NCCL_CHECK(ncclCommInitRank(&c, size, id, rank));
  nccl_track(c);
  return c;
}
#endif

// A failure of this rank, named as run_mpi names it: rank, size, launcher and what it measured.
[[noreturn]] void rethrow_with_rank(const Launch& l) {
  try {
    throw;
  } catch (const UsageError&) {
    throw;
  } catch (const std::exception& e) {
    const std::string measuring = current_measurement(), what = e.what();
    const bool named = measuring.empty() || what.find(measuring) != std::string::npos;  // a timeout names it
    throw Error("rank " + std::to_string(l.world_rank) + " of " + std::to_string(l.world_size) + " on " + host_name() +
                " (" + l.launcher + ", tcp bootstrap): " + (named ? "" : "while measuring " + measuring + ": ") + what);
  }
}

void run_joined(const LaunchOptions& o, const Launch& l, StoreClient& store,
                const std::function<void(Communicator&)>& body) {
  const int rank = l.world_rank, size = l.world_size;
  const NodeLocal local = node_local(store, rank, size);
  auto mesh = TcpMesh::connect(store, l.token, rank, size, local.same_node, o.timeout_s);
  const bool cuda = o.device.kind == DeviceKind::cuda;
  const int gpus = cuda ? gpu_count() : 0;
  const Device d = rank_device(o.device, local.rank, gpus);
  std::string nccl_reason = cuda ? "this build has no NCCL" : "NCCL runs on GPUs only (--device cuda)";
  void* nccl = nullptr;
  std::unique_ptr<Transport> transport;
#ifdef PARBENCH_HAVE_NCCL
  if (cuda) {
    nccl_reason = nccl_refusal(store, rank, size, d, gpus);
    if (nccl_reason.empty()) {
      nccl = nccl_world(store, rank, size);
      transport = make_nccl_transport(nccl, nullptr, rank, size, d, make_tcp_transport(mesh, d));
    }
  }
#endif
  if (!transport) transport = make_tcp_transport(mesh, d);
  store.barrier();  // every rank is done with the store: rank 0's may go whenever rank 0 ends
  try {
    {
      Communicator comm(std::move(transport), d, o.timeout_s, choose_automatically);
      comm.set_local(local.rank, local.size, local.node_of);
      comm.set_nccl(nccl, nccl_reason);
      body(comm);
    }
#ifdef PARBENCH_HAVE_NCCL
    nccl_release(static_cast<ncclComm_t>(nccl));
#endif
  } catch (...) {
#ifdef PARBENCH_HAVE_NCCL
    // Destroying it could wait for operations the peers will never match; a timeout may have aborted it already.
    nccl_abandon(static_cast<ncclComm_t>(nccl));
#endif
    throw;
  }
}

#ifdef PARBENCH_HAVE_MPI
// Rank 0's store for the mesh under mpirun: "token host port" to every rank over MPI ("" when it could not start,
// so that nobody waits for it).
std::string store_meeting_point(MPI_Comm world, int rank, int size, bool one_node,
                                std::unique_ptr<StoreServer>& server) {
  std::string info;
  if (rank == 0) {
    try {
      std::random_device rd;
      const std::string token = "mpirun-mesh-" + std::to_string(rd()) + "-" + std::to_string(rd());
      server = std::make_unique<StoreServer>(0, token, size);
      info = token + " " + (one_node ? std::string("127.0.0.1") : host_name()) + " " + std::to_string(server->port());
    } catch (const Error& e) {
      std::fprintf(stderr, "rank 0: %s\n", e.what());
    }
  }
  char buf[512] = {};
  std::snprintf(buf, sizeof buf, "%s", info.c_str());
  MPI_CHECK(MPI_Bcast(buf, int(sizeof buf), MPI_CHAR, 0, world));
  if (!*buf) throw Error("PARBENCH_HOST_TRANSPORT=shm: rank 0 could not start the store for the mesh");
  return buf;
}
#endif

}  // namespace

#ifdef PARBENCH_HAVE_MPI
std::unique_ptr<Transport> host_transport_under_mpi(const void* world_comm, int rank, int size,
                                                    const std::vector<bool>& same_node, const Device& d,
                                                    double timeout_s) {
  const char* v = std::getenv("PARBENCH_HOST_TRANSPORT");
  const std::string choice = v && *v ? v : "mpi";
  if (choice == "mpi") return make_mpi_transport(world_comm, d);
  if (choice != "shm")
    throw UsageError("PARBENCH_HOST_TRANSPORT='" + choice + "' is not 'mpi' (MPI's point-to-point) or 'shm' (the "
                     "tcp bootstrap's shared-memory rings and sockets)");
  const MPI_Comm world = *static_cast<const MPI_Comm*>(world_comm);
  const bool one_node = std::count(same_node.begin(), same_node.end(), true) == size;
  std::unique_ptr<StoreServer> server;
  std::istringstream meet(store_meeting_point(world, rank, size, one_node, server));
  std::string token, host;
  int port = 0;
  meet >> token >> host >> port;
  std::shared_ptr<TcpMesh> mesh;
  {
    StoreClient store(host, port, token, rank, size, timeout_s);
    mesh = TcpMesh::connect(store, token, rank, size, same_node, timeout_s);
    store.barrier();
  }
  MPI_CHECK(MPI_Barrier(world));  // every rank has its barrier's reply: rank 0's store may go
  return make_tcp_transport(std::move(mesh), d, make_mpi_transport(world_comm, d));
}
#endif

void run_tcp(const LaunchOptions& o, const Launch& l, const std::function<void(Communicator&)>& body) {
  if (o.ranks > 0 && o.ranks != l.world_size)
    throw UsageError("--ranks " + std::to_string(o.ranks) + " does not match the " + std::to_string(l.world_size) +
                     " processes " + l.launcher + " started; under a launcher leave --ranks out");
  TraceRecorder::instance().set_default_rank(l.world_rank);
  try {
    std::unique_ptr<StoreServer> server;  // rank 0's, for the whole run: late ranks may still be joining
    if (l.world_rank == 0) try {
        server = std::make_unique<StoreServer>(l.store_port, l.token, l.world_size);
      } catch (const Error& e) {
        throw Error(std::string(e.what()) + " (the port from " + l.store_from + "; PARBENCH_STORE_PORT=N picks another)");
      }
    StoreClient store(l.store_host, l.store_port, l.token, l.world_rank, l.world_size, o.timeout_s);
    run_joined(o, l, store, body);
  } catch (...) {
    rethrow_with_rank(l);
  }
}

}  // namespace parbench
