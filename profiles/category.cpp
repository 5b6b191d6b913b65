// Category names and colours, and the allocation-free range message formatter.
#include "profiles/category.h"

#include <charconv>
#include <cstring>

namespace parbench {

const char* category_name(Category c) noexcept {
  switch (c) {
    case Category::compute: return "compute";
    case Category::communication: return "communication";
    case Category::optimizer: return "optimizer";
    case Category::idle: return "idle";
  }
  return "unknown";
}

std::uint32_t category_color(Category c) noexcept {
  switch (c) {
    case Category::compute: return 0xFF4CAF50;        // green
    case Category::communication: return 0xFF2196F3;  // blue
    case Category::optimizer: return 0xFFFF9800;      // orange
    case Category::idle: return 0xFF9E9E9E;           // grey
  }
  return 0xFF000000;
}

namespace {

// Appends to a fixed buffer, silently dropping what does not fit (one byte kept for the NUL).
struct Appender {
  char* buf;
  std::size_t cap;  // usable characters, excluding the NUL
  std::size_t len = 0;

  void put(std::string_view s) noexcept {
    std::size_t n = s.size() < cap - len ? s.size() : cap - len;
    std::memcpy(buf + len, s.data(), n);
    len += n;
  }
  void put(std::int64_t v) noexcept {
    char tmp[24];
    auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
    put(std::string_view(tmp, static_cast<std::size_t>(r.ptr - tmp)));
  }
};

}  // namespace

std::size_t format_range_message(char* buf, std::size_t size, std::string_view name,
                                 const RangeArgs& args) noexcept {
  if (size == 0) return 0;
  Appender out{buf, size - 1};
  out.put(name);
  for_each_field(args, [&](std::string_view key, std::int64_t value) {
    out.put(" ");
    out.put(key);
    out.put("=");
    out.put(value);
  });
  buf[out.len] = '\0';
  return out.len;
}

}  // namespace parbench
