// The registry: one line per implementation. Each maker is defined in its algo_<name>.cpp file.
#include <algorithm>
#include <functional>

#include "collectives/registry.h"
#include "base/error.h"
#include "base/text.h"

namespace parbench {

// name, its --impl text, library call or hand-written, and its place in the "auto" policy (1 first; 0: only when
// named: mpi-nb, the non-blocking form of mpi, oneshot, which needs every rank's buffer addressable, the
// device-side collectives over symmetric memory, which need a GPU per rank on one node, and our kernels on NCCL's
// device API, which -D selects for the nccl rows and which need the buffers registered as NCCL windows, -R 2). Auto
// prefers the vendor's library, then MPI's, then the bandwidth-optimal ring, then the latency-optimal recursive
// algorithms, then tree and naive.
#define PB_ALGORITHMS(X)                   \
  X(nccl, "nccl", true, 1)                 \
  X(mpi, "mpi", true, 2)                   \
  X(mpi_nb, "mpi-nb", true, 0)             \
  X(naive, "naive", false, 7)              \
  X(tree, "tree", false, 6)                \
  X(ring, "ring", false, 3)                \
  X(rd, "rd", false, 5)                    \
  X(rhd, "rhd", false, 4)                  \
  X(oneshot, "oneshot", false, 0)          \
  X(oneshot_dev, "oneshot-dev", false, 0)  \
  X(twoshot_dev, "twoshot-dev", false, 0)  \
  X(ring_dev, "ring-dev", false, 0)        \
  X(naive_dev, "naive-dev", false, 0)      \
  X(tree_dev, "tree-dev", false, 0)        \
  X(rd_dev, "rd-dev", false, 0)            \
  X(rhd_dev, "rhd-dev", false, 0)          \
  X(nccl_lsa, "nccl-lsa", false, 0)        \
  X(nccl_multimem, "nccl-multimem", false, 0)

#define PB_DECLARE(name, text, library, auto_rank) std::unique_ptr<Algorithm> make_##name##_algorithm();
PB_ALGORITHMS(PB_DECLARE)
#undef PB_DECLARE

namespace {
struct Entry {
  std::string name;
  bool library;
  int auto_rank;
  std::unique_ptr<Algorithm> algo;
};
const std::vector<Entry>& registry() {
  static const std::vector<Entry> entries = [] {
    std::vector<Entry> e;
#define PB_REGISTER(name, text, library, auto_rank) \
  e.push_back({text, library, auto_rank, make_##name##_algorithm()});
    PB_ALGORITHMS(PB_REGISTER)
#undef PB_REGISTER
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
    if (!e.library) names.push_back(e.name);
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
