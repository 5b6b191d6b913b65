// See liveness.h.
#include "collectives/communicator/liveness.h"

#ifdef PARBENCH_HAVE_MPI
#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "collectives/table/measurement.h"

namespace parbench {
namespace {

constexpr int kProbeTag = 1, kAnswerTag = 2;
constexpr int kAnswerBytes = 256;  // the answering rank's measurement, cut to fit

struct Liveness {
  MPI_Comm comm = MPI_COMM_NULL;
  const MeasurementRecord* measurement = nullptr;  // the rank's main thread's
  std::mutex mu;
  std::condition_variable wake;
  bool stop = false;
  std::thread thread;
};

Liveness& state() {
  static Liveness* l = new Liveness;  // never destroyed: stopped explicitly before MPI_Finalize
  return *l;
}

void answer_one(Liveness& l, const MPI_Status& st) {
  int probe = 0;
  MPI_Recv(&probe, 1, MPI_INT, st.MPI_SOURCE, kProbeTag, l.comm, MPI_STATUS_IGNORE);
  char answer[kAnswerBytes] = {};
  const std::string what = l.measurement->text();
  std::memcpy(answer, what.data(), std::min<std::size_t>(what.size(), kAnswerBytes - 1));
  MPI_Send(answer, kAnswerBytes, MPI_CHAR, st.MPI_SOURCE, kAnswerTag, l.comm);  // small: sent eagerly
}

void answer_loop(Liveness& l) {
  std::unique_lock lock(l.mu);
  while (!l.stop) {
    lock.unlock();
    int found = 0;
    MPI_Status st;
    MPI_Iprobe(MPI_ANY_SOURCE, kProbeTag, l.comm, &found, &st);
    if (found) answer_one(l, st);
    lock.lock();
    if (!found) l.wake.wait_for(lock, std::chrono::milliseconds(50), [&] { return l.stop; });
  }
}

using Answer = std::array<char, kAnswerBytes>;

// Sends a probe to every other rank and collects the answers for up to `wait_s`: answered[r], and the answer in
// the returned buffers. Requests that stay open keep writing there, so the buffers are freed only when all came.
std::shared_ptr<std::vector<Answer>> probe_all(Liveness& l, double wait_s, std::vector<int>& answered) {
  int rank = 0, size = 1;
  MPI_Comm_rank(l.comm, &rank);
  MPI_Comm_size(l.comm, &size);
  answered.assign(std::size_t(size), 0);
  auto* text = new std::vector<Answer>(std::size_t(size), Answer{});
  std::vector<MPI_Request> answers(std::size_t(size), MPI_REQUEST_NULL), probes(std::size_t(size), MPI_REQUEST_NULL);
  static const int probe = 1;
  for (int r = 0; r < size; ++r) {
    if (r == rank) continue;
    MPI_Irecv((*text)[std::size_t(r)].data(), kAnswerBytes, MPI_CHAR, r, kAnswerTag, l.comm,
              &answers[std::size_t(r)]);
    MPI_Isend(&probe, 1, MPI_INT, r, kProbeTag, l.comm, &probes[std::size_t(r)]);
  }
  answered[std::size_t(rank)] = 1;
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
  while (std::count(answered.begin(), answered.end(), 1) < size && std::chrono::steady_clock::now() < until) {
    for (int r = 0; r < size; ++r)
      if (!answered[std::size_t(r)]) MPI_Test(&answers[std::size_t(r)], &answered[std::size_t(r)], MPI_STATUS_IGNORE);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const bool all = std::count(answered.begin(), answered.end(), 1) == size;
  // Unanswered requests are left behind (the job is about to end), and so is their buffer.
  return std::shared_ptr<std::vector<Answer>>(text, [all](std::vector<Answer>* t) {
    if (all) delete t;
  });
}

}  // namespace

void liveness_start(MPI_Comm world) {
  Liveness& l = state();
  if (l.thread.joinable()) return;
  MPI_Comm_dup(world, &l.comm);
  l.measurement = &this_thread_measurement();
  l.stop = false;
  l.thread = std::thread(answer_loop, std::ref(l));
}

void liveness_stop() {
  Liveness& l = state();
  if (!l.thread.joinable()) return;
  {
    std::lock_guard lock(l.mu);
    l.stop = true;
  }
  l.wake.notify_all();
  l.thread.join();
}

std::string liveness_report(double wait_s) {
  Liveness& l = state();
  if (l.comm == MPI_COMM_NULL || !l.thread.joinable()) return "";
  std::vector<int> answered;
  const auto answers = probe_all(l, wait_s, answered);
  const std::vector<Answer>& text = *answers;
  const std::string mine = l.measurement->text();  // the rank's, whichever thread asks
  int rank = 0;
  MPI_Comm_rank(l.comm, &rank);
  std::string silent, elsewhere;
  for (std::size_t r = 0; r < answered.size(); ++r) {
    const std::string theirs = text[r].data();
    if (int(r) == rank || (answered[r] && theirs == mine)) continue;
    if (!answered[r]) silent += (silent.empty() ? "" : ", ") + std::to_string(r);
    else elsewhere += "; rank " + std::to_string(r) + " is " + (theirs.empty() ? "outside any measurement"
                                                                              : "measuring " + theirs);
  }
  char secs[32];
  std::snprintf(secs, sizeof secs, "%g", wait_s);
  if (silent.empty()) return "every rank answered within " + std::string(secs) + " s" + elsewhere;
  return "late: rank(s) " + silent + " did not answer within " + secs + " s (stopped, hung outside MPI, or gone)" +
         elsewhere;
}

}  // namespace parbench
#endif
