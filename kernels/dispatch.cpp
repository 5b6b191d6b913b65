// The op checks' messages and the builds' kernel availability.
#include "kernels/dispatch.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/memory.h"
#if defined(PARBENCH_CUDA_EMULATED)
#include "device/emu/gpu_emu.h"
#endif
#include "kernels/ops.h"

namespace parbench::ops {
namespace detail {

namespace {

// The calling thread's scratch buffers, one per (device, stream); a grown buffer keeps its smaller predecessors (at
// most as large together), since work queued earlier may still read them, until the thread ends.
struct ScratchBuffers {
  struct Entry {
    Device device;
    void* stream;
    std::size_t bytes = 0;
    std::vector<void*> blocks;  // the last is the current one
  };
  std::vector<Entry> entries;
  ~ScratchBuffers() {
    for (Entry& e : entries)
      for (void* p : e.blocks) device_free(e.device, p);
  }
  Entry& at(const Device& d, void* stream) {
    for (Entry& e : entries)
      if (e.device == d && e.stream == stream) return e;
    return entries.emplace_back(Entry{d, stream, 0, {}});
  }
};

}  // namespace

OpScratch::OpScratch(const Stream& s, std::int64_t floats) {
  const Device& d = s.device();
  if (d.kind == DeviceKind::cpu || floats <= 0) return;
  thread_local ScratchBuffers buffers;
  auto& e = buffers.at(d, s.native());
  const std::size_t need = std::size_t(floats) * sizeof(float);
  if (e.bytes < need) {
    const std::size_t bytes = std::max(need, 2 * e.bytes);
    e.blocks.push_back(device_malloc(d, bytes));
    e.bytes = bytes;
    // The block may belong to another stream than the op's (the thread's current one): record the op's.
    if (!d.on_host()) device_record_stream(d, e.blocks.back(), s.native());
  }
  data_ = static_cast<float*>(e.blocks.back());
}

#if defined(PARBENCH_CUDA_EMULATED)
std::size_t declared_operands() { return gpu_emu::operand_mark(); }
Op::~Op() { gpu_emu::release_operands(operands_before); }
#else
std::size_t declared_operands() { return 0; }
Op::~Op() = default;
#endif

void Op::fail(const std::string& what) const { throw Error(std::string(name) + ": " + what); }

void Op::device(const Tensor& t, const char* tn) const {
  if (!t.defined()) fail(std::string(tn) + " is not allocated");
  if (!(t.device() == s.device()))
    fail(std::string(tn) + " is on " + device_name(t.device()) + " but the stream is on " + device_name(s.device()));
#if defined(PARBENCH_CUDA_EMULATED)
  if (t.device().kind == DeviceKind::cuda) gpu_emu::declare_operand(t.data(), t.bytes());
#endif
}

void Op::dtype(const Tensor& t, const char* tn, DType want) const {
  device(t, tn);
  if (t.dtype() != want)
    fail(std::string(tn) + " has dtype " + std::string(dtype_name(t.dtype())) + ", expected " +
         std::string(dtype_name(want)));
}

void Op::shape(const Tensor& t, const char* tn, const Shape& want) const {
  if (t.shape() != want) fail(std::string(tn) + " has shape " + shape_string(t.shape()) + ", expected " + shape_string(want));
}

void Op::numel(const Tensor& t, const char* tn, std::int64_t n) const {
  if (t.numel() != n)
    fail(std::string(tn) + " has " + std::to_string(t.numel()) + " elements " + shape_string(t.shape()) +
         ", expected " + std::to_string(n));
}

void Op::dtypes(std::initializer_list<Named> ts, DType want) const {
  for (const Named& x : ts) dtype(x.t, x.name, want);
}

void Op::numels(std::initializer_list<Named> ts, std::int64_t n) const {
  for (const Named& x : ts) numel(x.t, x.name, n);
}

void Op::like(std::initializer_list<Named> ts, DType want, std::int64_t n) const {
  for (const Named& x : ts) {
    dtype(x.t, x.name, want);
    numel(x.t, x.name, n);
  }
}

DType Op::storage(const Tensor& t, const char* tn) const {
  device(t, tn);
  DType d = t.dtype();
  if (d == DType::f32 || d == DType::bf16 || (d == DType::f64 && s.device().kind == DeviceKind::cpu)) return d;
  fail(std::string(tn) + " has dtype " + std::string(dtype_name(d)) + "; supported: f32, bf16" +
       (s.device().kind == DeviceKind::cpu ? ", f64" : " (f64 on cpu only)"));
}

std::int64_t Op::last_dim(const Tensor& t, const char* tn) const {
  if (t.rank() < 1) fail(std::string(tn) + " needs at least one dimension");
  return t.dim(-1);
}

void Op::optional(const Tensor* t, const char* tn, DType want, std::int64_t n) const {
  if (!t) return;
  dtype(*t, tn, want);
  numel(*t, tn, n);
}

void Op::vocab_begin(std::int64_t first) const {
  if (first < 0 || first > INT32_MAX)
    fail("vocab_begin " + std::to_string(first) + " outside [0, " + std::to_string(INT32_MAX) + "]");
}

void Op::no_backend(const char* what) const {
  fail(std::string("this build has no ") + what + " kernels (" +
       (std::string(what) == "simt" ? "the simt emulator is missing" : "CUDA is off") + ")");
}

}  // namespace detail

bool kernels_available(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::cpu: return true;
    case DeviceKind::simt: return true;
    case DeviceKind::cuda:
#if defined(PARBENCH_HAVE_CUDA)
      return true;
#else
      return false;
#endif
  }
  return false;
}

}  // namespace parbench::ops
