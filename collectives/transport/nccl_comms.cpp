// The live NCCL communicators of this process, each with its rank's world communicator. A wait that times out
// aborts all of them, not only the one it waited on: work queued over the others (a pipeline's sends on its
// group's communicator behind the world's collective, or a stalled rank's in threads mode, which a cudaFree with
// peer access waits for) would otherwise never end, and every later free or synchronize would block behind it.
// In threads mode the process's ranks are one run, which fails as a whole once a rank times out.
#include "collectives/transport/nccl_util.h"
#include "collectives/transport/transport.h"

#ifdef PARBENCH_HAVE_NCCL
#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <vector>

namespace parbench {

namespace {
struct QueuedOp {
  P2POp::Kind kind;
  int world_peer;
};
struct Tracked {
  ncclComm_t world;  // its rank's world communicator
  // The last point-to-point group queued on it: the queuing rank and the ops, peers as world ranks (none: empty).
  // Reused from group to group, so noting one allocates nothing once the largest group has been seen.
  int last_rank = -1;
  std::vector<QueuedOp> last_p2p;
};
std::shared_mutex comms_mu;
std::map<ncclComm_t, Tracked> live_comms;
std::map<ncclComm_t, Tracked> aborted_comms;  // freed by an abort; their owners only forget them
std::atomic<bool> aborted_by_timeout{false};

bool forget_if_aborted(ncclComm_t comm) {
  std::lock_guard lock(comms_mu);
  if (aborted_comms.erase(comm) > 0) return true;
  live_comms.erase(comm);
  return false;
}

const Tracked* find_tracked(ncclComm_t comm) {
  if (auto it = live_comms.find(comm); it != live_comms.end()) return &it->second;
  if (auto it = aborted_comms.find(comm); it != aborted_comms.end()) return &it->second;
  return nullptr;
}

// "rank 0's send to rank 1, recv from rank 3"
std::string queued_text(const Tracked& t) {
  std::string text = "rank " + std::to_string(t.last_rank) + "'s";
  for (std::size_t i = 0; i < t.last_p2p.size(); ++i)
    text += std::string(i ? "," : "") + (t.last_p2p[i].kind == P2POp::send ? " send to rank " : " recv from rank ") +
            std::to_string(t.last_p2p[i].world_peer);
  return text;
}
}  // namespace

void nccl_track(ncclComm_t comm, ncclComm_t split_from) {
  if (!comm) return;
  std::lock_guard lock(comms_mu);
  ncclComm_t world = comm;
  if (split_from) {
    const Tracked* parent = find_tracked(split_from);
    world = parent ? parent->world : split_from;
  }
  live_comms[comm] = Tracked{world, -1, {}};
}

void nccl_release(ncclComm_t comm) noexcept {
  if (comm && !forget_if_aborted(comm)) ncclCommDestroy(comm);
}

void nccl_abandon(ncclComm_t comm) noexcept {
  if (comm && !forget_if_aborted(comm)) ncclCommAbort(comm);
}

void nccl_abort_all() noexcept {
  std::lock_guard lock(comms_mu);  // held while aborting: no wait reads a communicator being freed
  aborted_by_timeout = true;
  for (auto& [c, t] : live_comms) {
    aborted_comms[c] = t;
    ncclCommAbort(c);
  }
  live_comms.clear();
}

bool nccl_aborted_else_poll(ncclComm_t comm, ncclResult_t& async_error) {
  std::shared_lock lock(comms_mu);
  if (aborted_comms.count(comm)) return true;
  NCCL_CHECK(ncclCommGetAsyncError(comm, &async_error));
  return false;
}

bool nccl_aborted_after_timeout() { return aborted_by_timeout.load(); }

void nccl_note_queued(void* comm, int world_rank, std::span<const P2POp> ops, std::span<const int> world_ranks) {
  std::lock_guard lock(comms_mu);
  auto it = live_comms.find(static_cast<ncclComm_t>(comm));
  if (it == live_comms.end()) return;
  Tracked& t = it->second;
  t.last_rank = world_rank;
  t.last_p2p.clear();
  for (const P2POp& op : ops)
    t.last_p2p.push_back({op.kind, world_ranks.empty() ? op.peer : world_ranks[std::size_t(op.peer)]});
}

std::string nccl_queued_p2p_text(void* comm) {
  std::shared_lock lock(comms_mu);
  const Tracked* mine = find_tracked(static_cast<ncclComm_t>(comm));
  if (!mine) return "";
  std::string text;
  for (const auto* comms : {&live_comms, &aborted_comms})
    for (const auto& [c, t] : *comms)
      if (t.world == mine->world && !t.last_p2p.empty()) text += (text.empty() ? "" : "; ") + queued_text(t);
  return text.empty() ? "" : "; the last NCCL point-to-point group queued on each of this rank's communicators: " + text;
}

}  // namespace parbench

#else  // no NCCL in this build

namespace parbench {
bool nccl_aborted_after_timeout() { return false; }
void nccl_note_queued(void*, int, std::span<const P2POp>, std::span<const int>) {}
std::string nccl_queued_p2p_text(void*) { return ""; }
}  // namespace parbench
#endif
