// The registry: one line per implementation. Each maker is defined in its algo_<id>.cpp file.
#include <algorithm>
#include <functional>

#include "collectives/registry.h"
#include "collectives/device_side/device_algorithm.h"
#include "base/error.h"
#include "base/text.h"

namespace parbench {

// One line per implementation, in the order of the help texts. X(id, name, kind, auto rank): an implementation
// whose unsupported() says which collectives it runs; its place in the "auto" policy (1 first; 0: only when named:
// mpi-nb, the non-blocking form of mpi, oneshot, which needs every rank's buffer addressable, hier, which gains only
// with ranks on several nodes and refuses nodes holding different numbers of ranks, and our kernels on NCCL's
// device API, which -D selects for the nccl rows and which need the buffers registered as NCCL windows, -R 2).
// Auto prefers the vendor's library, then MPI's, then the bandwidth-optimal ring, then the latency-optimal
// recursive algorithms, then tree and naive. D(id, name, collectives...): a device-side implementation over
// symmetric memory (device_side/algo_<id>.cpp and its kernels' .cu), never automatic (it needs a GPU per rank on
// one node), whose collectives are these; the tests of every such implementation are made from these rows
// (--list-impls).
#define PB_ALGORITHMS(X, D)                                                                                  \
  X(nccl, "nccl", library, 1)                                                                                \
  X(mpi, "mpi", library, 2)                                                                                  \
  X(mpi_nb, "mpi-nb", library, 0)                                                                            \
  X(naive, "naive", host, 7)                                                                                 \
  X(tree, "tree", host, 6)                                                                                   \
  X(ring, "ring", host, 3)                                                                                   \
  X(rd, "rd", host, 5)                                                                                       \
  X(rhd, "rhd", host, 4)                                                                                     \
  X(oneshot, "oneshot", host, 0)                                                                             \
  X(hier, "hier", host, 0)                                                                                   \
  D(oneshot_dev, "oneshot-dev", allreduce)                                                                   \
  D(twoshot_dev, "twoshot-dev", allreduce)                                                                   \
  D(ring_dev, "ring-dev", allreduce, reduce_scatter, allgather)                                              \
  D(naive_dev, "naive-dev", broadcast, reduce, allreduce, gather, allgather, scatter, reduce_scatter, alltoall, \
    sendrecv)                                                                                                \
  D(tree_dev, "tree-dev", broadcast, reduce, allreduce)                                                      \
  D(rd_dev, "rd-dev", allreduce, allgather)                                                                  \
  D(rhd_dev, "rhd-dev", allreduce, reduce_scatter, allgather)                                                \
  X(nccl_lsa, "nccl-lsa", nccl_device, 0)                                                                    \
  X(nccl_multimem, "nccl-multimem", nccl_device, 0)

#define PB_DECLARE(id, name, kind, auto_rank) std::unique_ptr<Algorithm> make_##id##_algorithm();
#define PB_DECLARE_DEVICE(id, name, ...) std::unique_ptr<Algorithm> make_##id##_algorithm(DeviceRow row);
PB_ALGORITHMS(PB_DECLARE, PB_DECLARE_DEVICE)
#undef PB_DECLARE
#undef PB_DECLARE_DEVICE

namespace {
struct Entry {
  std::string name;
  ImplKind kind;
  int auto_rank;
  std::vector<Collective> collectives;  // a device-side row's; empty for the others
  std::unique_ptr<Algorithm> algo;
};
const std::vector<Entry>& registry() {
  static const std::vector<Entry> entries = [] {
    std::vector<Entry> e;
    using enum Collective;
#define PB_REGISTER(id, name, kind, auto_rank) \
  e.push_back({name, ImplKind::kind, auto_rank, {}, make_##id##_algorithm()});
#define PB_REGISTER_DEVICE(id, name, ...) \
  e.push_back({name, ImplKind::device, 0, {__VA_ARGS__}, make_##id##_algorithm({name, {__VA_ARGS__}})});
    PB_ALGORITHMS(PB_REGISTER, PB_REGISTER_DEVICE)
#undef PB_REGISTER
#undef PB_REGISTER_DEVICE
    return e;
  }();
  return entries;
}
}  // namespace

const Algorithm& find_algorithm(std::string_view name) {
  for (const auto& e : registry())
    if (e.name == name) return *e.algo;
  throw UsageError("unknown implementation '" + std::string(name) + "'; accepted: " + join(algorithm_names()));
}

std::vector<std::string> algorithm_names() {
  std::vector<std::string> names;
  for (const auto& e : registry()) names.push_back(e.name);
  return names;
}

std::vector<std::string> handwritten_algorithm_names() {
  std::vector<std::string> names;
  for (const auto& e : registry())
    if (e.kind != ImplKind::library) names.push_back(e.name);
  return names;
}

std::vector<std::string> auto_order() {
  std::vector<const Entry*> ranked;
  for (const auto& e : registry())
    if (e.auto_rank > 0) ranked.push_back(&e);
  std::sort(ranked.begin(), ranked.end(), [](const Entry* a, const Entry* b) { return a->auto_rank < b->auto_rank; });
  std::vector<std::string> names;
  for (const Entry* e : ranked) names.push_back(e->name);
  return names;
}

const char* impl_kind_name(ImplKind k) {
  switch (k) {
    case ImplKind::library: return "library";
    case ImplKind::host: return "host";
    case ImplKind::device: return "device";
    case ImplKind::nccl_device: return "nccl-device";
  }
  return "?";
}

std::vector<ImplementationRow> implementation_rows() {
  std::vector<ImplementationRow> rows;
  for (const auto& e : registry()) rows.push_back({e.name, e.kind, e.collectives});
  return rows;
}

std::string list_implementations() {
  std::string out =
      "# implementation kind collectives (in registry order, with the collectives of the device-side ones and "
      "\"-\" where the implementation decides per call)\n";
  for (const auto& r : implementation_rows()) {
    std::vector<std::string> names;
    for (Collective c : r.collectives) names.emplace_back(collective_name(c));
    out += r.name + " " + impl_kind_name(r.kind) + " " + (names.empty() ? "-" : join(names, ",")) + "\n";
  }
  return out;
}

std::string auto_policy_text() {
  return "the first of " + join(auto_order()) + " that can run the collective here";
}

const Algorithm* find_implementation(std::string_view name) {
  return name == "auto" ? nullptr : &find_algorithm(name);
}

std::string_view implementation_name(const Algorithm* impl) { return impl ? impl->name() : "auto"; }

const Algorithm& choose_automatically(Collective c, const Communicator& comm) {
  // The policy's entries, found once: every automatic call walks them.
  static const std::vector<const Algorithm*> order = [] {
    std::vector<const Algorithm*> algos;
    for (const auto& name : auto_order()) algos.push_back(&find_algorithm(name));
    return algos;
  }();
  std::vector<std::string> reasons;
  for (const Algorithm* a : order) {
    std::string why = a->unsupported(c, comm);
    if (why.empty()) return *a;
    reasons.push_back(std::string(a->name()) + ": " + why);
  }
  throw Error("no collective implementation can run " + std::string(collective_name(c)) + " here (" +
              join(reasons, "; ") + ")");
}

}  // namespace parbench
