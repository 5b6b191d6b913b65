// Range categories (compute, communication, optimizer, idle) and the optional integer fields a
// range carries; shared by the NVTX emitter and the Chrome-trace recorder so both say the same.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace parbench {

// The values are the NVTX category ids registered in the "parbench" domain (NVTX reserves 0 for
// "no category"), so they must stay stable: Nsight filters and the tests refer to them.
enum class Category : std::uint32_t { compute = 1, communication = 2, optimizer = 3, idle = 4 };

inline constexpr Category kAllCategories[] = {Category::compute, Category::communication,
                                              Category::optimizer, Category::idle};

// "compute", "communication", "optimizer", "idle" ("unknown" for a value outside the enum). The
// pointer is to a string literal, so it may be handed to C APIs.
const char* category_name(Category c) noexcept;
// One ARGB colour per category (alpha 0xFF), used for the NVTX range colour.
std::uint32_t category_color(Category c) noexcept;

// Optional integer fields of a range. Set only what applies, with designated initializers:
//   RangeArgs{.layer = 2, .microbatch = 3}
// Keys used in the NVTX message and in the trace "args": layer, mb, stage, chunk, bytes.
struct RangeArgs {
  std::optional<std::int64_t> layer{};
  std::optional<std::int64_t> microbatch{};
  std::optional<std::int64_t> stage{};
  std::optional<std::int64_t> chunk{};
  std::optional<std::int64_t> bytes{};

  bool operator==(const RangeArgs&) const = default;
};

// Calls f(key, value) for every set field, in the fixed order above.
template <class F>
void for_each_field(const RangeArgs& a, F&& f) {
  if (a.layer) f(std::string_view("layer"), *a.layer);
  if (a.microbatch) f(std::string_view("mb"), *a.microbatch);
  if (a.stage) f(std::string_view("stage"), *a.stage);
  if (a.chunk) f(std::string_view("chunk"), *a.chunk);
  if (a.bytes) f(std::string_view("bytes"), *a.bytes);
}

// Writes "name key=value ..." (e.g. "forward layer=2 mb=3") into buf without allocating. The
// result is always NUL-terminated and cut to size - 1 characters; returns its length.
std::size_t format_range_message(char* buf, std::size_t size, std::string_view name,
                                 const RangeArgs& args) noexcept;

}  // namespace parbench
