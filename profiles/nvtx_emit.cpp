// NVTX3 emission for ranges: a "parbench" domain with one named category per Category.
#include "profiles/nvtx_emit.h"

#include <cstdlib>

#ifdef PARBENCH_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace parbench::detail {

#ifdef PARBENCH_HAVE_NVTX

namespace {

// Created on first use, after the tool was found; immutable afterwards.
nvtxDomainHandle_t domain() noexcept {
  static const nvtxDomainHandle_t handle = [] {
    nvtxDomainHandle_t h = nvtxDomainCreateA("parbench");
    for (Category c : kAllCategories)
      nvtxDomainNameCategoryA(h, static_cast<std::uint32_t>(c), category_name(c));
    return h;
  }();
  return handle;
}

}  // namespace

bool nvtx_tool_requested() noexcept {
  const char* path = std::getenv("NVTX_INJECTION64_PATH");
  return path != nullptr && path[0] != '\0';
}

void nvtx_push(const char* message, Category cat, const RangeArgs& args) noexcept {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.category = static_cast<std::uint32_t>(cat);
  a.colorType = NVTX_COLOR_ARGB;
  a.color = category_color(cat);
  // bytes is the one field carried as the numeric payload: the others are indices that the
  // message already shows, while bytes / duration is what an nsys export turns into bandwidth.
  if (args.bytes) {
    a.payloadType = NVTX_PAYLOAD_TYPE_INT64;
    a.payload.llValue = *args.bytes;
  }
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = message;
  nvtxDomainRangePushEx(domain(), &a);
}

void nvtx_pop() noexcept { nvtxDomainRangePop(domain()); }

#else

bool nvtx_tool_requested() noexcept { return false; }
void nvtx_push(const char*, Category, const RangeArgs&) noexcept {}
void nvtx_pop() noexcept {}

#endif

}  // namespace parbench::detail
