// The registry of collective implementations by --impl name (registry.cpp, one line each) and the "auto" policy.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "collectives/communicator/algorithm.h"
#include "collectives/table/types.h"

namespace parbench {

class Communicator;

// How an implementation runs: a library's collectives (NCCL, MPI), host-driven steps (the hand-written
// algorithms), kernels alone over symmetric memory (device), our kernels on NCCL's device API (nccl-device).
enum class ImplKind { library, host, device, nccl_device };
const char* impl_kind_name(ImplKind k);  // "library", "host", "device", "nccl-device"
// A registry row: name, kind and, for a device-side implementation, the collectives it implements (empty: the
// implementation's unsupported() decides per call).
struct ImplementationRow {
  std::string name;
  ImplKind kind;
  std::vector<Collective> collectives;
};
std::vector<ImplementationRow> implementation_rows();
// --list-impls: a comment line, then "name kind collective,collective|-" per row, in registry order (what the
// emulated GPU's tests are made from).
std::string list_implementations();

// The implementation registered under `name`; throws UsageError naming the accepted names.
const Algorithm& find_algorithm(std::string_view name);
// --impl: the implementation registered under `name`, or null for "auto" (the policy below chooses per collective);
// UsageError naming the accepted names otherwise. implementation_name is its inverse.
const Algorithm* find_implementation(std::string_view name);
std::string_view implementation_name(const Algorithm* impl);
// Registered names in registry order: library collectives first, then the hand-written algorithms.
std::vector<std::string> algorithm_names();
std::vector<std::string> handwritten_algorithm_names();
// The "auto" policy, the one every caller uses (Communicator::resolve, the schemes, the help texts): the
// registered implementations in order of preference, and the first of them that can run `c` on `comm` (Error
// when none can). auto_policy_text() says it in words.
std::vector<std::string> auto_order();
const Algorithm& choose_automatically(Collective c, const Communicator& comm);
std::string auto_policy_text();

}  // namespace parbench
