// Launcher detection: the variables of mpirun, torchrun and srun, checked, and Slurm's node-list syntax.
#include "collectives/launch/launcher.h"

#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <optional>

#include "base/error.h"

namespace parbench {

namespace {

// A non-negative decimal that fits an int, else nullopt.
std::optional<long long> parse_count(const std::string& s) {
  if (s.empty() || s.size() > 9) return std::nullopt;
  long long v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

std::string value_of(const EnvReader& env, const char* name) {
  const char* v = env(name);
  return v ? std::string(v) : std::string();
}

bool is_set(const EnvReader& env, const char* name) {
  const char* v = env(name);
  return v && *v;
}

// The variable as an integer in [min, max], or UsageError naming it, its value and the range.
int int_var(const EnvReader& env, const char* name, long long min, long long max, const std::string& launcher) {
  const std::string v = value_of(env, name);
  const auto n = parse_count(v);
  if (!n || *n < min || *n > max)
    throw UsageError(std::string(name) + "='" + v + "' (set by " + launcher + "): expected an integer from " +
                     std::to_string(min) + " to " + std::to_string(max));
  return int(*n);
}

void require(const EnvReader& env, const char* name, const std::string& why) {
  if (!is_set(env, name)) throw UsageError(std::string(name) + " is not set: " + why);
}

// World size and rank from `size_var` and `rank_var`, the rank below the size.
void read_world(Launch& l, const EnvReader& env, const char* size_var, const char* rank_var) {
  l.world_size = int_var(env, size_var, 1, 1 << 20, l.launcher);
  const std::string rank = value_of(env, rank_var);
  const auto r = parse_count(rank);
  if (!r || *r >= l.world_size)
    throw UsageError(std::string(rank_var) + "='" + rank + "' (set by " + l.launcher + "): expected an integer from 0 to " +
                     std::to_string(l.world_size - 1) + " (below " + size_var + "=" + std::to_string(l.world_size) +
                     ")");
  l.world_rank = int(*r);
}

void read_master_port(Launch& l, const EnvReader& env) {
  l.store_port = int_var(env, "MASTER_PORT", 1, 65535, l.launcher);
}

void read_torchrun(Launch& l, const EnvReader& env) {
  l.launcher = "torchrun";
  read_world(l, env, "WORLD_SIZE", "RANK");
  const std::string need = "with RANK and WORLD_SIZE set (torchrun), the ranks meet at MASTER_ADDR:MASTER_PORT "
                           "(rank 0's host name or address, and a free TCP port)";
  require(env, "MASTER_ADDR", need);
  require(env, "MASTER_PORT", need);
  l.store_host = value_of(env, "MASTER_ADDR");
  read_master_port(l, env);
  l.store_from = "MASTER_ADDR:MASTER_PORT";
  // torchrun's agent serves torch's own store on MASTER_PORT and tells its workers so: ours takes the next port.
  const std::string agent_store = value_of(env, "TORCHELASTIC_USE_AGENT_STORE");
  if (agent_store == "True" || agent_store == "true" || agent_store == "1") {
    const bool last = l.store_port == 65535;
    l.store_port += last ? -1 : 1;
    l.store_from = std::string("MASTER_ADDR, MASTER_PORT ") + (last ? "- 1" : "+ 1") +
                   " (torchrun's agent serves its own store on MASTER_PORT: TORCHELASTIC_USE_AGENT_STORE)";
  }
}

void read_slurm(Launch& l, const EnvReader& env) {
  l.launcher = "srun";
  read_world(l, env, "SLURM_NTASKS", "SLURM_PROCID");
  if (is_set(env, "MASTER_ADDR")) {
    l.store_host = value_of(env, "MASTER_ADDR");
    l.store_from = "MASTER_ADDR";
  } else {
    require(env, "SLURM_JOB_NODELIST",
            "under srun the store runs on the job's first node (or set MASTER_ADDR to rank 0's host)");
    l.store_host = expand_node_list(value_of(env, "SLURM_JOB_NODELIST"), 1).front();
    l.store_from = "the first host of SLURM_JOB_NODELIST";
  }
  if (is_set(env, "MASTER_PORT") || !is_set(env, "SLURM_JOB_ID")) {
    require(env, "MASTER_PORT", "under srun without SLURM_JOB_ID the store's port must be given (a free TCP port)");
    read_master_port(l, env);
    l.store_from += ", MASTER_PORT";
    return;
  }
  const int job = int_var(env, "SLURM_JOB_ID", 0, 999999999, l.launcher);
  l.store_port = kSlurmPortBase + job % kSlurmPortSpan;
  l.store_from += ", port " + std::to_string(kSlurmPortBase) + " + SLURM_JOB_ID % " + std::to_string(kSlurmPortSpan);
}

void read_token(Launch& l, const EnvReader& env) {
  for (const char* name : {"PARBENCH_JOB_TOKEN", "TORCHELASTIC_RUN_ID", "SLURM_JOB_ID"})
    if (is_set(env, name)) {
      l.token = value_of(env, name);
      l.token_from = name;
      if (std::string(name) == "SLURM_JOB_ID" && is_set(env, "SLURM_STEP_ID"))  // steps of one job apart
        l.token += "." + value_of(env, "SLURM_STEP_ID"), l.token_from += ".SLURM_STEP_ID";
      return;
    }
  l.token = kDefaultJobToken;
  l.token_from = "default";
}

// "01-03,7" -> 01 02 03 7 (a range keeps its first bound's zero padding), at most `limit` kept; every range checked.
template <class Bad>
std::vector<std::string> expand_ranges(const std::string& ranges, std::size_t limit, const Bad& bad) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i <= ranges.size()) {
    std::size_t comma = ranges.find(',', i);
    if (comma == std::string::npos) comma = ranges.size();
    const std::string r = ranges.substr(i, comma - i);
    const std::size_t dash = r.find('-');
    const std::string lo_text = r.substr(0, dash), hi_text = dash == std::string::npos ? lo_text : r.substr(dash + 1);
    const auto lo = parse_count(lo_text), hi = parse_count(hi_text);
    if (!lo || !hi || *lo > *hi) throw bad("'[" + ranges + "]' has the range '" + r + "', not N or N-M with N <= M");
    for (long long v = *lo; v <= *hi && out.size() < limit; ++v) {
      std::string digits = std::to_string(v);
      if (digits.size() < lo_text.size()) digits.insert(0, lo_text.size() - digits.size(), '0');
      out.push_back(digits);
    }
    i = comma + 1;
  }
  return out;
}

bool mpirun_env(const EnvReader& env) {
  return is_set(env, "OMPI_COMM_WORLD_SIZE") || is_set(env, "PMIX_RANK") || is_set(env, "PMI_SIZE");
}
bool torchrun_env(const EnvReader& env) { return is_set(env, "RANK") && is_set(env, "WORLD_SIZE"); }
bool slurm_env(const EnvReader& env) { return is_set(env, "SLURM_PROCID") && is_set(env, "SLURM_NTASKS"); }

Launch tcp_launch(const EnvReader& env) {
  Launch l;
  l.bootstrap = BootstrapKind::tcp;
  if (torchrun_env(env))
    read_torchrun(l, env);
  else if (slurm_env(env))
    read_slurm(l, env);
  else
    throw UsageError("--bootstrap tcp needs a launcher's variables: RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT "
                     "(torchrun), or SLURM_PROCID, SLURM_NTASKS and SLURM_JOB_NODELIST (srun)");
  if (is_set(env, "PARBENCH_STORE_PORT")) {  // the launcher's port is taken, or another is wanted
    l.store_port = int_var(env, "PARBENCH_STORE_PORT", 1, 65535, "the user");
    l.store_from += "; the port from PARBENCH_STORE_PORT";
  }
  read_token(l, env);
  return l;
}

Launch mpi_launch(const EnvReader& env) {
  Launch l;
  l.bootstrap = BootstrapKind::mpi;
  if (!mpirun_env(env)) return l;  // a singleton MPI process
  l.launcher = "mpirun";
  const char* size = is_set(env, "OMPI_COMM_WORLD_SIZE") ? "OMPI_COMM_WORLD_SIZE" : "PMI_SIZE";
  const char* rank = is_set(env, "OMPI_COMM_WORLD_RANK") ? "OMPI_COMM_WORLD_RANK"
                     : is_set(env, "PMIX_RANK")          ? "PMIX_RANK"
                                                         : "PMI_RANK";
  // PMIx alone names no world size before MPI starts: MPI tells it then.
  if (is_set(env, size) && is_set(env, rank)) read_world(l, env, size, rank);
  return l;
}

}  // namespace

Launch detect_launch(BootstrapKind requested, const EnvReader& env) {
  switch (requested) {
    case BootstrapKind::mpi: return mpi_launch(env);
    case BootstrapKind::tcp: return tcp_launch(env);
    case BootstrapKind::threads: return Launch{};
    case BootstrapKind::automatic: break;
  }
  if (mpirun_env(env)) return mpi_launch(env);
  if (torchrun_env(env) || slurm_env(env)) return tcp_launch(env);
  return Launch{};
}

std::vector<std::string> expand_node_list(const std::string& list, std::size_t limit) {
  const auto bad = [&](const std::string& why) {
    return UsageError("SLURM_JOB_NODELIST='" + list + "': " + why +
                      "; expected host names separated by commas, each with optional bracketed ranges, e.g. "
                      "node[01-03,7],gpu5");
  };
  std::vector<std::string> hosts;
  std::size_t i = 0;
  while (i <= list.size()) {  // every item checked, at most `limit` kept
    std::vector<std::string> item = {""};  // the expansions of this comma-separated item so far
    while (i < list.size() && list[i] != ',') {
      if (list[i] == ']') throw bad("a ']' without its '['");
      if (list[i] != '[') {
        for (auto& h : item) h += list[i];
        ++i;
        continue;
      }
      const std::size_t close = list.find(']', i);
      if (close == std::string::npos) throw bad("a '[' without its ']'");
      const std::vector<std::string> parts = expand_ranges(list.substr(i + 1, close - i - 1), limit, bad);
      std::vector<std::string> next;
      for (const auto& h : item)
        for (const auto& p : parts)
          if (next.size() < limit) next.push_back(h + p);
      item.swap(next);
      i = close + 1;
    }
    if (item.front().empty()) throw bad("an empty host name");
    for (auto& h : item)
      if (hosts.size() < limit) hosts.push_back(std::move(h));
    ++i;  // past the comma (or the end)
  }
  return hosts;
}

BootstrapKind parse_bootstrap(const std::string& name) {
  if (name == "auto") return BootstrapKind::automatic;
  if (name == "mpi") return BootstrapKind::mpi;
  if (name == "tcp") return BootstrapKind::tcp;
  if (name == "threads") return BootstrapKind::threads;
  throw UsageError("--bootstrap '" + name + "': expected auto, mpi, tcp or threads");
}

const char* bootstrap_name(BootstrapKind k) {
  switch (k) {
    case BootstrapKind::automatic: return "auto";
    case BootstrapKind::mpi: return "mpi";
    case BootstrapKind::tcp: return "tcp";
    case BootstrapKind::threads: return "threads";
  }
  return "?";
}

namespace {
std::mutex g_launch_mu;
BootstrapKind g_requested = BootstrapKind::automatic;
std::optional<Launch> g_launch;
}  // namespace

void select_bootstrap(const std::string& name) {
  const BootstrapKind k = parse_bootstrap(name);
  std::lock_guard lock(g_launch_mu);
  g_requested = k;
  g_launch.reset();
}

const Launch& current_launch() {
  std::lock_guard lock(g_launch_mu);
  if (!g_launch) g_launch = detect_launch(g_requested, [](const char* name) { return std::getenv(name); });
  return *g_launch;
}

bool launched_as_processes() { return current_launch().bootstrap != BootstrapKind::threads; }

std::string launch_description() {
  const Launch& l = current_launch();
  if (l.bootstrap == BootstrapKind::threads) return "threads";
  return l.launcher + ", " + bootstrap_name(l.bootstrap) + " bootstrap";
}

std::string host_name() {
  char name[256] = "";
  if (gethostname(name, sizeof name - 1) != 0) return "unknown-host";
  return name;
}

namespace {
std::mutex hosts_mu;
std::vector<std::string>& rank_hosts() {
  static std::vector<std::string> hosts;
  return hosts;
}
}  // namespace

void set_rank_hosts(std::vector<std::string> host_of_world_rank) {
  std::lock_guard lock(hosts_mu);
  rank_hosts() = std::move(host_of_world_rank);
}

std::string with_host(int world_rank) {
  std::lock_guard lock(hosts_mu);
  const auto& h = rank_hosts();
  if (world_rank < 0 || std::size_t(world_rank) >= h.size() || h[std::size_t(world_rank)].empty()) return "";
  return " (on " + h[std::size_t(world_rank)] + ")";
}

bool launched_by_mpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMIX_RANK") || std::getenv("PMI_SIZE");
}

int launcher_world_size() {
  try {
    return current_launch().world_size;
  } catch (const UsageError&) {
    return 1;
  }
}

int launcher_world_rank() {
  try {
    return current_launch().world_rank;
  } catch (const UsageError&) {
    return 0;
  }
}

}  // namespace parbench
