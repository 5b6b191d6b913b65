// The emulated CUDA runtime's copies and fills: CUDA's rules on copy kinds, pageable vs pinned memory, which
// calls return before the copy is done, and the checks that name a bad operand (freed, past its end, wrong kind).
#include <cstdint>
#include <cstring>
#include <string>

#include "device/emu/emu.h"
#include "device/emu/internal_streams.h"

using namespace parbench::gpu_emu;

namespace {

// ---- copies
enum class Side { pageable, pinned, device };
struct Operand {
  Side side = Side::pageable;
  int device = -1;
};
const char* side_name(Side s) {
  return s == Side::device ? "device memory" : s == Side::pinned ? "pinned host memory" : "pageable host memory";
}

// Classifies one end of a copy of `span` bytes; "" or why it may not be used.
std::string classify(const void* p, std::size_t span, Operand& out) {
  auto a = find_allocation(p);
  if (!a) return "";
  if (a->freed) return "freed memory: " + describe(*a);
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  if (at + span > a->base + a->size)
    return std::to_string(span) + " bytes from offset " + std::to_string(at - a->base) + " run past the end of " +
           describe(*a);
  out.side = a->kind == MemKind::device ? Side::device : Side::pinned;
  out.device = a->device;
  return "";
}

const char* kind_name(cudaMemcpyKind k) {
  switch (k) {
    case cudaMemcpyHostToHost: return "cudaMemcpyHostToHost";
    case cudaMemcpyHostToDevice: return "cudaMemcpyHostToDevice";
    case cudaMemcpyDeviceToHost: return "cudaMemcpyDeviceToHost";
    case cudaMemcpyDeviceToDevice: return "cudaMemcpyDeviceToDevice";
    case cudaMemcpyDefault: return "cudaMemcpyDefault";
  }
  return "an unknown cudaMemcpyKind";
}

struct CopyPlan {
  Operand dst, src;
};

// Checks both ends and the kind; returns cudaSuccess or the error (recorded with its detail).
cudaError_t plan_copy(const char* api, const std::string& site, void* dst, std::size_t dst_span, const void* src,
                      std::size_t src_span, cudaMemcpyKind kind, CopyPlan& plan) {
  const std::string head = std::string(api) + " from " + site + ": ";
  if (!dst || !src) return fail(cudaErrorInvalidValue, head + "a null pointer");
  if (std::string why = classify(dst, dst_span, plan.dst); !why.empty())
    return fail(cudaErrorInvalidValue, head + "the destination is " + why);
  if (std::string why = classify(src, src_span, plan.src); !why.empty())
    return fail(cudaErrorInvalidValue, head + "the source is " + why);
  const bool dst_dev = plan.dst.side == Side::device, src_dev = plan.src.side == Side::device;
  bool ok = true;
  switch (kind) {
    case cudaMemcpyHostToHost: ok = !dst_dev && !src_dev; break;
    case cudaMemcpyHostToDevice: ok = dst_dev && !src_dev; break;
    case cudaMemcpyDeviceToHost: ok = !dst_dev && src_dev; break;
    case cudaMemcpyDeviceToDevice: ok = dst_dev && src_dev; break;
    case cudaMemcpyDefault: break;
    default: return fail(cudaErrorInvalidMemcpyDirection, head + "kind " + std::to_string(int(kind)) + " is not a cudaMemcpyKind");
  }
  if (!ok)
    return fail(cudaErrorInvalidValue, head + "kind " + kind_name(kind) + " but the destination is " +
                                           side_name(plan.dst.side) + " and the source " + side_name(plan.src.side));
  for (int d : {plan.dst.device, plan.src.device})
    if (d >= 0 && sticky(d) != cudaSuccess) return sticky(d);
  return cudaSuccess;
}

// Queues a copy of `rows` rows and returns the op. Pageable host sources are staged at once, as CUDA does, so
// the caller may reuse them when the call returns.
OpPtr queue_copy(StreamState* s, const char* api, const std::string& site, void* dst, std::size_t dpitch,
                 const void* src, std::size_t spitch, std::size_t width, std::size_t rows, bool stage_source) {
  count(Count::copy);
  std::vector<MemAccess> accesses{{dst, dpitch * (rows - 1) + width, true, "the destination"}};
  if (!stage_source) accesses.push_back({src, spitch * (rows - 1) + width, false, "the source"});
  std::shared_ptr<std::vector<char>> staged;
  if (stage_source) {
    staged = std::make_shared<std::vector<char>>(width * rows);
    for (std::size_t r = 0; r < rows; ++r)
      std::memcpy(staged->data() + r * width, static_cast<const char*>(src) + r * spitch, width);
    src = staged->data(), spitch = width;
  }
  return enqueue(s, std::string(api) + " of " + std::to_string(width * rows) + " bytes", [=] {
    for (std::size_t r = 0; r < rows; ++r)
      std::memmove(static_cast<char*>(dst) + r * dpitch, static_cast<const char*>(src) + r * spitch, width);
    (void)staged;
  }, {}, std::move(accesses), site);
}

// What a capture going on forbids: a synchronous copy from the capturing thread, an async one into the capture with
// pageable host memory (a graph's copy node runs at every launch: staged once, or waited for by the host, it could
// not).
cudaError_t capture_problem(const char* api, const std::string& site, bool async, StreamState* s, bool pageable) {
  if (!async) return capture_forbids(api, site);
  const unsigned long long id = pageable ? capture_id(s) : 0;
  if (id == 0) return cudaSuccess;
  invalidate_capture(id, std::string(api) + " of pageable host memory");
  return fail(cudaErrorStreamCaptureUnsupported, std::string(api) + " from " + site +
                                                     " into a capturing stream with pageable host memory: a graph "
                                                     "copies device or pinned memory only");
}

// cudaMemcpy[2D] (synchronous family) and cudaMemcpy[2D]Async, with CUDA's rules on when the call returns.
cudaError_t copy(const char* api, const std::string& site, bool async, cudaStream_t stream, void* dst, std::size_t dpitch,
                 const void* src, std::size_t spitch, std::size_t width, std::size_t rows, cudaMemcpyKind kind) {
  if (width == 0 || rows == 0) return cudaSuccess;
  if (dpitch < width || spitch < width)
    return fail(cudaErrorInvalidPitchValue, std::string(api) + " from " + site + ": a pitch is below the width " + std::to_string(width));
  CopyPlan plan;
  const std::size_t dspan = dpitch * (rows - 1) + width, sspan = spitch * (rows - 1) + width;
  if (cudaError_t e = plan_copy(api, site, dst, dspan, src, sspan, kind, plan); e != cudaSuccess) return e;
  StreamState* s = work_stream(async ? stream : nullptr, api, site);
  if (!s) return bad_stream(api);
  const bool to_dev = plan.dst.side == Side::device, from_dev = plan.src.side == Side::device;
  if (!to_dev && !from_dev && !async) {  // host to host: plain and synchronous
    count(Count::copy);
    for (std::size_t r = 0; r < rows; ++r)
      std::memmove(static_cast<char*>(dst) + r * dpitch, static_cast<const char*>(src) + r * spitch, width);
    return cudaSuccess;
  }
  const bool pageable_src = plan.src.side == Side::pageable, pageable_dst = plan.dst.side == Side::pageable;
  if (cudaError_t e = capture_problem(api, site, async, s, pageable_src || pageable_dst); e != cudaSuccess) return e;
  if (pageable_src || pageable_dst) count(Count::pageable_copy);
  if (!async && pageable_src && to_dev) wait_ops({stream_tail(s)}, api);  // "a stream sync before the copy"
  OpPtr op = queue_copy(s, api, site, dst, dpitch, src, spitch, width, rows, pageable_src && to_dev);
  // What returns early: device-to-device always; the async forms unless they write pageable memory;
  // cudaMemcpy from pageable memory once staged. Everything else waits for the copy.
  bool wait;
  if (to_dev && from_dev) wait = false;
  else if (async) wait = pageable_dst;
  else wait = !(pageable_src && to_dev);
  if (wait) wait_ops({op}, api);
  return cudaSuccess;
}

cudaError_t fill(const char* api, const std::string& site, cudaStream_t stream, void* p, int value, std::size_t bytes,
                 bool async) {
  count(Count::memset);
  if (bytes == 0) return cudaSuccess;
  if (!async)
    if (cudaError_t e = capture_forbids(api, site); e != cudaSuccess) return e;
  Operand o;
  if (std::string why = classify(p, bytes, o); !why.empty() || o.side == Side::pageable)
    return fail(cudaErrorInvalidValue, std::string(api) + " from " + site + ": the memory is " +
                                           (why.empty() ? std::string(side_name(o.side)) : why));
  if (o.device >= 0 && sticky(o.device) != cudaSuccess) return sticky(o.device);
  StreamState* s = work_stream(async ? stream : nullptr, api, site);
  if (!s) return bad_stream(api);
  OpPtr op = enqueue(s, std::string(api) + " of " + std::to_string(bytes) + " bytes",
                     [=] { std::memset(p, value, bytes); }, {}, {{p, bytes, true, "the memory set"}}, site);
  // cudaMemset returns early for device memory; a pinned host target makes it synchronous.
  if (!async && o.side == Side::pinned) wait_ops({op}, api);
  return cudaSuccess;
}

}  // namespace

extern "C" {

// ---- copies and fills
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  return copy("cudaMemcpy", PB_EMU_SITE(), false, nullptr, dst, bytes, src, bytes, bytes, 1, kind);
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t s) {
  return copy("cudaMemcpyAsync", PB_EMU_SITE(), true, s, dst, bytes, src, bytes, bytes, 1, kind);
}
cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                         cudaMemcpyKind kind) {
  return copy("cudaMemcpy2D", PB_EMU_SITE(), false, nullptr, dst, dpitch, src, spitch, width, height, kind);
}
cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                              cudaMemcpyKind kind, cudaStream_t s) {
  return copy("cudaMemcpy2DAsync", PB_EMU_SITE(), true, s, dst, dpitch, src, spitch, width, height, kind);
}
cudaError_t cudaMemcpyPeer(void* dst, int, const void* src, int, size_t bytes) {
  return copy("cudaMemcpyPeer", PB_EMU_SITE(), false, nullptr, dst, bytes, src, bytes, bytes, 1, cudaMemcpyDeviceToDevice);
}
cudaError_t cudaMemset(void* p, int value, size_t bytes) { return fill("cudaMemset", PB_EMU_SITE(), nullptr, p, value, bytes, false); }
cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t s) {
  return fill("cudaMemsetAsync", PB_EMU_SITE(), s, p, value, bytes, true);
}

}  // extern "C"
