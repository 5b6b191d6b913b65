// The machinery every op's host file (kernels/<op>.cpp) shares: the checks of an op call (device, dtype,
// shape; every message starts with the op's name), the choice of storage type, the launcher declarations and
// the dispatch to the reference (cpu), the simt-compiled kernels or the nvcc-compiled kernels.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>

#include "base/error.h"
#include "core/host_counts.h"
#include "core/stream.h"
#include "core/tensor.h"
#include "kernels/acc_type.h"
#include "kernels/ref.h"


// An op's signature, written once at the top of its host file: declares the reference (namespace ref, defined
// in the same file, which therefore takes the launcher's argument list, `void* stream` included) and the
// launchers of the simt and cuda builds of its .cu file.
#define PB_OP_SIGNATURES(...)                           \
  namespace parbench::ref {                             \
  __VA_ARGS__                                           \
  }                                                     \
  namespace parbench::simt_kernels {                    \
  __VA_ARGS__                                           \
  }                                                     \
  PB_CUDA_SIGNATURES(__VA_ARGS__)
#if defined(PARBENCH_HAVE_CUDA)
#define PB_CUDA_SIGNATURES(...)      \
  namespace parbench::cuda_kernels { \
  __VA_ARGS__                        \
  }
#else
#define PB_CUDA_SIGNATURES(...)
#endif

namespace parbench::ops::detail {

// A tensor and its name in the op's signature, for the checks of several at once.
struct Named {
  const Tensor& t;
  const char* name;
};

// How many tensor extents the calling thread's ops have declared to the emulated GPU's hazard checker so far (0 in
// other builds): an Op's checks declare its tensors there, for the pointer arguments of the launches that follow,
// and its end takes them back.
std::size_t declared_operands();

// One op call's checks against its stream; every message starts with the op's name.
struct Op {
  const char* name;
  const Stream& s;
  std::size_t operands_before = declared_operands();
  ~Op();

  [[noreturn]] void fail(const std::string& what) const;
  void device(const Tensor& t, const char* tn) const;
  void dtype(const Tensor& t, const char* tn, DType want) const;
  void shape(const Tensor& t, const char* tn, const Shape& want) const;
  void numel(const Tensor& t, const char* tn, std::int64_t n) const;
  // The same checks of several tensors, in order.
  void dtypes(std::initializer_list<Named> ts, DType want) const;
  void numels(std::initializer_list<Named> ts, std::int64_t n) const;
  // Each tensor of dtype `want` with n elements (the element-wise ops' operands).
  void like(std::initializer_list<Named> ts, DType want, std::int64_t n) const;
  // Storage dtype of the op's main tensor: f32 or bf16 everywhere, f64 on cpu.
  DType storage(const Tensor& t, const char* tn) const;
  std::int64_t last_dim(const Tensor& t, const char* tn) const;
  // A nullable tensor: when given, of dtype `want` with n elements.
  void optional(const Tensor* t, const char* tn, DType want, std::int64_t n) const;
  // A vocabulary shard's first token id; ids are i32, so it lies in [0, 2^31).
  void vocab_begin(std::int64_t first) const;
  [[noreturn]] void no_backend(const char* what) const;
};

// Statistics dtype for a storage dtype: f64 for f64 (cpu), else f32.
inline DType acc_dtype(DType storage) { return storage == DType::f64 ? DType::f64 : DType::f32; }

template <class T>
using Acc = ref::acc_t<T>;

// The data of a nullable tensor.
template <class T>
T* ptr_or_null(const Tensor* t) {
  return t ? t->ptr<T>() : nullptr;
}

// fp32 scratch for an op's kernels (e.g. the partials of kernels/column_sums.h) on the op's device, for work queued on
// its stream: one buffer per calling thread and stream, grown on demand and kept until the thread ends, so that a
// training step neither allocates nor frees (a free without the caching pool waits for the whole device, which can
// stall behind a collective waiting for another rank). Ops on one stream run in its order, so they share the
// buffer safely. Null on cpu, whose reference needs none.
class OpScratch {
 public:
  OpScratch(const Stream& s, std::int64_t floats);
  float* data() const { return data_; }

 private:
  float* data_ = nullptr;
};

// Calls f.operator()<T>() with the storage type T of `d` (Op::storage() admitted f64 on cpu only).
template <class F>
void with_storage(DType d, F&& f) {
  switch (d) {
    case DType::f32: return f.template operator()<float>();
    case DType::bf16: return f.template operator()<bf16>();
    default: return f.template operator()<double>();
  }
}

}  // namespace parbench::ops::detail

// The op host files define their ops in parbench::ops and bring these helpers in with a using-directive of their
// own: a header that did so would hand the detail namespace to everything including it.

// PB_RUN(op, T, name, args...): calls name(args..., stream) in ref on cpu, simt_kernels on simt or cuda_kernels on
// cuda; the argument list is written once. T is the storage type: the kernels exist for float and bf16 only,
// so their branch is discarded at compile time for double. PB_DISPATCH(op, d, name, args...) does the same with T
// the storage type of the DType d (the arguments may name T).
#define PB_RUN_SIMT(op, T, name, ...) \
  if constexpr (!std::is_same_v<T, double>) ::parbench::simt_kernels::name(__VA_ARGS__)
#if defined(PARBENCH_HAVE_CUDA)
#define PB_RUN_CUDA(op, T, name, ...) \
  if constexpr (!std::is_same_v<T, double>) ::parbench::cuda_kernels::name(__VA_ARGS__)
#else
#define PB_RUN_CUDA(op, T, name, ...) (op).no_backend("cuda")
#endif
#define PB_RUN(op, T, name, ...)                                                       \
  do {                                                                                 \
    [[maybe_unused]] void* pb_stream = (op).s.native();                                \
    switch ((op).s.device().kind) {                                                    \
      case ::parbench::DeviceKind::cpu: ::parbench::ref::name(__VA_ARGS__, pb_stream); break; \
      case ::parbench::DeviceKind::simt: PB_RUN_SIMT(op, T, name, __VA_ARGS__, pb_stream); break; \
      case ::parbench::DeviceKind::cuda:                                               \
        ::parbench::count_launch();                                                    \
        PB_RUN_CUDA(op, T, name, __VA_ARGS__, pb_stream);                              \
        break;                                                                         \
    }                                                                                  \
  } while (0)
#define PB_DISPATCH(op, d, name, ...) \
  ::parbench::ops::detail::with_storage((d), [&]<class T>() { PB_RUN(op, T, name, __VA_ARGS__); })
