// Which launcher started this process and how its ranks meet: mpirun (MPI), torchrun or srun (the TCP store), or
// none (ranks as threads), read from the launcher's environment variables with their values checked.
#pragma once
#include <functional>
#include <string>
#include <vector>

namespace parbench {

enum class BootstrapKind { automatic, mpi, tcp, threads };

// "auto", "mpi", "tcp", "threads"; UsageError naming the value and the accepted ones for anything else.
BootstrapKind parse_bootstrap(const std::string& name);
const char* bootstrap_name(BootstrapKind k);

struct Launch {
  std::string launcher = "none";  // "mpirun", "torchrun", "srun" or "none"
  BootstrapKind bootstrap = BootstrapKind::threads;  // never automatic
  int world_size = 1, world_rank = 0;
  std::string store_host;  // tcp: where rank 0 serves the rendezvous store
  int store_port = 0;
  std::string store_from;  // which variables gave host and port, for messages
  std::string token;       // tcp: the job token every rank presents to the store
  std::string token_from;  // the variable it came from, or "default"
};

// The job token when no launcher gives one: every rank of such a job must agree, so it is fixed.
inline constexpr const char* kDefaultJobToken = "parbench-default-job";
// Slurm without MASTER_PORT: the store's port is kSlurmPortBase + SLURM_JOB_ID % kSlurmPortSpan, so two jobs
// sharing a first node rarely meet on one port.
inline constexpr int kSlurmPortBase = 20000, kSlurmPortSpan = 30000;

// Reads a variable: null when unset (getenv, or a table in tests).
using EnvReader = std::function<const char*(const char*)>;

// The launch as the environment says, for `requested` (automatic: mpirun's variables, then torchrun's (RANK and
// WORLD_SIZE), then Slurm's (SLURM_PROCID and SLURM_NTASKS), else threads). UsageError naming the variable, its
// value and the accepted form for a bad or missing value the chosen bootstrap needs.
Launch detect_launch(BootstrapKind requested, const EnvReader& env);

// The hosts of a Slurm node list ("node[01-03,7],gpu5" -> node01 node02 node03 node7 gpu5), at most `limit`;
// UsageError naming the list and the accepted form when it cannot be read.
std::vector<std::string> expand_node_list(const std::string& list, std::size_t limit = 1 << 16);

// The bootstrap --bootstrap chose (auto, mpi, tcp, threads; UsageError for another name): called once the
// command line is read, before anything asks how the ranks were launched.
void select_bootstrap(const std::string& name);
// The launch of this process for the chosen bootstrap (detect_launch on the environment, read once); UsageError
// for a launcher variable with a bad value.
const Launch& current_launch();
// True when this process is one rank of several processes (mpi or tcp bootstrap), not a process of rank threads.
bool launched_as_processes();
// "torchrun, tcp bootstrap", "mpirun, mpi bootstrap" or "threads": how run headers name the launch.
std::string launch_description();

// This machine's host name ("unknown-host" when it cannot be read).
std::string host_name();

// Each world rank's host name, as the bootstrap of a multi-process launch learned it, so that a message naming a
// peer names its node too. Unset (threads, or before the bootstrap): with_host() adds nothing.
void set_rank_hosts(std::vector<std::string> host_of_world_rank);
// " (on HOST)" for world rank r when its host is known, else "".
std::string with_host(int world_rank);

// True when the launcher's environment says this process is one of an mpirun job (OpenMPI, PMIx or PMI).
bool launched_by_mpirun();
// World size and rank as the launcher says (before MPI starts): 1 and 0 for threads, and for launcher variables
// that current_launch() refuses (which reports them).
int launcher_world_size();
int launcher_world_rank();

}  // namespace parbench
