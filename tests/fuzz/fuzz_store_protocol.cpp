// The rendezvous store's parsers fed arbitrary bytes: a frame prefix, a request, a reply, a hello.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "collectives/launch/store_protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace parbench::store;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  std::string why;
  if (size >= 4) (void)frame_length(data, why);
  if (auto r = decode_request(bytes, why)) {
    // What decodes encodes back to the same bytes: the parser accepts only what the writer writes.
    if (encode(*r) != bytes) __builtin_trap();
    if (r->op == Op::hello) (void)parse_hello(r->value, why);
  }
  if (auto r = decode_reply(bytes, why))
    if (encode(*r) != bytes) __builtin_trap();
  return 0;
}
