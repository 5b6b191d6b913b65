// Internal: the NVTX side of a range. The only place that includes the NVTX headers is
// nvtx_emit.cpp; without NVTX (PARBENCH_HAVE_NVTX unset) these functions do nothing.
#pragma once
#include "profiles/category.h"

namespace parbench::detail {

// True when NVTX is compiled in and NVTX_INJECTION64_PATH names a tool (nsys, ncu, a test tool).
bool nvtx_tool_requested() noexcept;
// Pushes a range in the "parbench" domain: message = format_range_message(name, args), category
// id = the enum value, colour = category_color, int64 payload = args.bytes when set.
void nvtx_push(const char* message, Category cat, const RangeArgs& args) noexcept;
void nvtx_pop() noexcept;

}  // namespace parbench::detail
