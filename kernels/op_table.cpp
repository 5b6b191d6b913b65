// The op table: each row of kernels/op_list.h with its workload (defined in its op's host file, kernels/<op>.cpp, as
// <name>_workload), and the making of a workload's tensors on every side.
#include "kernels/op_table.h"

#include <vector>

#include "base/error.h"
#include "core/memory.h"

namespace parbench::optable {

#define PB_DECLARE_WORKLOAD(name, kind, pair, cost) Work name##_workload(OpCase& c, const OpShape& s);
PB_OP_TABLE(PB_DECLARE_WORKLOAD)
#undef PB_DECLARE_WORKLOAD

const std::vector<OpEntry>& op_table() {
#define PB_ENTRY(name, kind, pair, cost) OpEntry{#name, name##_workload, kind, pair, cost},
  static const std::vector<OpEntry> table{PB_OP_TABLE(PB_ENTRY)};
#undef PB_ENTRY
  return table;
}

Arg OpCase::alloc(DType t, const Shape& shape) {
  Arg x;
  for (const Side& s : sides_) {
    DType st = s.f64 && dtype_is_float(t) ? DType::f64 : t;
    x.at.emplace_back(*s.alloc, st, shape, MemCategory::activations);
  }
  return x;
}

// The host tensor's values onto every side: copied where the dtype is the same, converted (on the host) where a
// side holds f64.
void OpCase::upload(Arg& x, const Tensor& host) {
  for (std::size_t i = 0; i < sides_.size(); ++i) {
    Tensor& t = x.at[i];
    if (t.dtype() == host.dtype()) {
      device_memcpy(sides_[i].device, t.data(), Device{}, host.data(), host.bytes());
      continue;
    }
    if (!t.device().on_host()) throw Error("OpCase: a converted copy must be on the host, not on " + device_name(t.device()));
    for (std::int64_t e = 0; e < host.numel(); ++e)
      store_from_double(t.data(), t.dtype(), std::size_t(e), load_as_double(host.data(), host.dtype(), std::size_t(e)));
  }
}

Arg OpCase::in(DType t, const Shape& shape, double lo, double hi) {
  Arg x = alloc(t, shape);
  Tensor host(host_, t, shape, MemCategory::workspace);
  fill_uniform(host, rng_, lo, hi);
  upload(x, host);
  return x;
}

Arg OpCase::tokens(const Shape& shape, int V) {
  Arg x = alloc(DType::i32, shape);
  Tensor host(host_, DType::i32, shape, MemCategory::workspace);
  std::uniform_int_distribution<int> u(0, V - 1);
  for (std::int64_t i = 0; i < host.numel(); ++i) host.ptr<std::int32_t>()[i] = u(rng_);
  upload(x, host);
  return x;
}

Arg OpCase::out(DType t, const Shape& shape) {
  Arg x = alloc(t, shape);
  Tensor host(host_, t, shape, MemCategory::workspace);
  fill_nan(host);
  upload(x, host);
  return x;
}

}  // namespace parbench::optable
