// Fuzzes the size parsers (--sizes, -b/-e/-i, --max-memory): any text either parses or throws UsageError; a
// parsed list is never empty.
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/error.h"
#include "app/sizes.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    (void)parbench::parse_size(text);
  } catch (const parbench::UsageError&) {
  }
  try {
    const auto sizes = parbench::parse_size_list(text);
    if (sizes.empty()) __builtin_trap();  // a list that parses has at least one size
  } catch (const parbench::UsageError&) {
  }
  return 0;
}
