// The registry: one line per implementation. Each maker is defined in its algo_<name>.cpp file.
#include <functional>

#include "collectives/algorithm.h"
#include "core/error.h"

namespace parbench {

#define PB_ALGORITHMS(X)   \
  X(nccl, "nccl", true)    \
  X(mpi, "mpi", true)      \
  X(mpi_nb, "mpi-nb", true) \
  X(naive, "naive", false) \
  X(tree, "tree", false)   \
  X(ring, "ring", false)   \
  X(rd, "rd", false)       \
  X(rhd, "rhd", false)     \
  X(oneshot, "oneshot", false)

#define PB_DECLARE(name, text, library) std::unique_ptr<Algorithm> make_##name##_algorithm();
PB_ALGORITHMS(PB_DECLARE)
#undef PB_DECLARE

namespace {
struct Entry {
  std::string name;
  bool library;
  std::unique_ptr<Algorithm> algo;
};
const std::vector<Entry>& registry() {
  static const std::vector<Entry> entries = [] {
    std::vector<Entry> e;
#define PB_REGISTER(name, text, library) e.push_back({text, library, make_##name##_algorithm()});
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
  std::string accepted;
  for (const auto& e : registry()) accepted += (accepted.empty() ? "" : ", ") + e.name;
  throw UsageError("unknown implementation '" + std::string(name) + "'; accepted: " + accepted);
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

}  // namespace parbench
