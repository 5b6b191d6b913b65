// See nccl_tuning.h.
#include "device/emu/nccl_tuning.h"

#include <strings.h>

#include <cstdlib>
#include <vector>

namespace parbench::gpu_emu {
namespace {

// Whether `name` is enabled by the list `value` (unset: every name).
bool enabled(const std::string& value, const char* name) {
  if (value.empty()) return true;
  const bool except = value[0] == '^';
  bool listed = false;
  std::size_t at = except ? 1 : 0;
  while (at <= value.size()) {
    const std::size_t comma = std::min(value.find(',', at), value.size());
    const std::string token = value.substr(at, comma - at);
    if (strcasecmp(token.c_str(), name) == 0) listed = true;
    at = comma + 1;
  }
  return listed != except;
}

}  // namespace

Tuning Tuning::from_environment() {
  const char* a = std::getenv("NCCL_ALGO");
  const char* p = std::getenv("NCCL_PROTO");
  return {a ? a : "", p ? p : ""};
}

std::string tuning_refusal(const Tuning& t, const std::string& function, const std::string& type) {
  std::vector<const char*> algos = {"Ring"};
  if (function == "AllReduce") algos.push_back("Tree");
  bool algo = false, proto = false;
  for (const char* a : algos) algo = algo || enabled(t.algo, a);
  for (const char* p : {"LL", "LL128", "Simple"}) proto = proto || enabled(t.proto, p);
  if (algo && proto) return "";
  return "no algorithm/protocol available for function " + function + " with datatype " + type + " (NCCL_ALGO=" +
         (t.algo.empty() ? "unset" : t.algo) + ", NCCL_PROTO=" + (t.proto.empty() ? "unset" : t.proto) +
         "; this GPU runs " + (algos.size() > 1 ? "Ring and Tree" : "Ring") + " for " + function +
         ", each with LL, LL128 and Simple)";
}

}  // namespace parbench::gpu_emu
