// See nccl_choices.h.
#include "nccl_choices.h"

#include <cstdlib>
#include <mutex>

#include "base/error.h"
#include "collectives/datacheck.h"
#include "collectives/registry.h"
#include "core/memory.h"

#ifdef PARBENCH_HAVE_NCCL
#include <nccl.h>
#endif

namespace parbench {

std::string NcclChoice::label() const {
  return "nccl/" + (algo.empty() ? std::string("auto") : algo) + "/" + (proto.empty() ? std::string("auto") : proto);
}

std::vector<NcclChoice> nccl_choices(const BenchOptions& o) {
  std::vector<NcclChoice> out;
  const std::vector<std::string> none = {""};
  for (const std::string& a : o.nccl_algos.empty() ? none : o.nccl_algos)
    for (const std::string& p : o.nccl_protos.empty() ? none : o.nccl_protos)
      if (!a.empty() || !p.empty()) out.push_back({a, p});
  return out;
}

void check_nccl_choice_options(const BenchOptions& o, const BenchPlan& p) {
  if (nccl_choices(o).empty()) return;
  for (const std::string& impl : p.impls)
    if (impl == "nccl") return;
  throw UsageError("--nccl-algo/--nccl-proto choose among NCCL's algorithms: give --impl with nccl (e.g. --impl "
                   "nccl or --impl nccl,ring), not --impl " + o.impl);
}

namespace {

// The variables of one process, set while its ranks split (every rank of the process asks for the same values;
// the first sets them, the last puts back what was there).
class TuningVariables {
 public:
  void enter(const NcclChoice& c) {
    std::lock_guard lock(m_);
    if (users_++ > 0) return;
    saved_[0] = read("NCCL_ALGO"), saved_[1] = read("NCCL_PROTO");
    put("NCCL_ALGO", c.algo.empty() ? saved_[0] : c.algo);
    put("NCCL_PROTO", c.proto.empty() ? saved_[1] : c.proto);
  }
  void leave() {
    std::lock_guard lock(m_);
    if (--users_ > 0) return;
    put("NCCL_ALGO", saved_[0]), put("NCCL_PROTO", saved_[1]);
  }

 private:
  static std::optional<std::string> read(const char* name) {
    const char* v = std::getenv(name);
    return v ? std::optional<std::string>(v) : std::nullopt;
  }
  static void put(const char* name, const std::optional<std::string>& v) {
    if (v) setenv(name, v->c_str(), 1);
    else unsetenv(name);
  }
  std::mutex m_;
  int users_ = 0;
  std::optional<std::string> saved_[2];
};
TuningVariables g_variables;

bool runs_as_nccl_collective(Collective c) {
  return c == Collective::allreduce || c == Collective::allgather || c == Collective::reduce_scatter ||
         c == Collective::broadcast || c == Collective::reduce;
}

// Why one small call fails on `comm` ("" when it runs): NCCL's last message for it where there is one.
std::string try_one_call(Communicator& comm, Collective c, const Algorithm& nccl) {
  try {
    CollectiveBuffers b(comm, c, count_for_bytes(c, 1024, DType::f32, comm.size()), DType::f32, ReduceOp::sum, 0,
                        false);
    b.fill(1);
    comm.run(b.args(), nccl);
    device_synchronize(comm.device());
    return "";
  } catch (const Error& e) {
#ifdef PARBENCH_HAVE_NCCL
    if (comm.nccl_comm())
      if (const char* last = ncclGetLastError(static_cast<ncclComm_t>(comm.nccl_comm())); last && *last)
        return std::string("NCCL: ") + last;
#endif
    return e.what();
  }
}

}  // namespace

NcclChoiceComm::NcclChoiceComm(Communicator& world, Communicator& comm, Collective c, const Algorithm& nccl,
                               const NcclChoice& choice) {
  if (!runs_as_nccl_collective(c)) {
    refusal_ = "nccl runs " + std::string(collective_name(c)) +
               " as ncclSend/ncclRecv, which have no algorithm or protocol to choose";
    return;
  }
  g_variables.enter(choice);
  world.barrier();  // every process has them set before any rank's NCCL reads them
  try {
    sub_.emplace(comm.split(0, comm.rank()));
  } catch (...) {
    g_variables.leave();
    throw;
  }
  world.barrier();  // and keeps them until every rank has made its communicator
  g_variables.leave();
  std::string why = try_one_call(*sub_, c, nccl);
  double ok = why.empty() ? 1 : 0, all_ok = 0;
  world.allreduce(&ok, &all_ok, 1, DType::f64, ReduceOp::min, &find_algorithm("naive"));
  if (all_ok == 0) refusal_ = why.empty() ? "NCCL refused it on another rank" : why;
}

}  // namespace parbench
