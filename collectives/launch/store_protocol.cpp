// The rendezvous store's frames and fields, encoded and checked.
#include "collectives/launch/store_protocol.h"

#include <charconv>

namespace parbench::store {

namespace {

void put_u32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(char((v >> (8 * i)) & 0xff));
}

std::uint32_t get_u32(const unsigned char* p) {
  return std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 | std::uint32_t(p[2]) << 16 | std::uint32_t(p[3]) << 24;
}

void put_field(std::string& out, std::string_view field) {
  put_u32(out, std::uint32_t(field.size()));
  out.append(field);
}

// Reads one length-prefixed field at `at`, advancing it; false when the body ends before the field does.
bool get_field(std::string_view body, std::size_t& at, std::string& field) {
  if (body.size() - at < 4) return false;
  const std::uint32_t n = get_u32(reinterpret_cast<const unsigned char*>(body.data() + at));
  at += 4;
  if (body.size() - at < n) return false;
  field.assign(body.substr(at, n));
  at += n;
  return true;
}

bool known(std::uint8_t op) { return op >= std::uint8_t(Op::hello) && op <= std::uint8_t(Op::add); }

}  // namespace

std::string encode(const Request& r) {
  std::string out(1, char(r.op));
  put_field(out, r.key);
  put_field(out, r.value);
  return out;
}

std::string encode(const Reply& r) {
  std::string out(1, char(r.ok ? 0 : 1));
  put_field(out, r.value);
  return out;
}

std::optional<Request> decode_request(std::string_view body, std::string& why) {
  if (body.empty()) return why = "an empty request", std::nullopt;
  const auto op = std::uint8_t(body[0]);
  if (!known(op)) return why = "unknown request type " + std::to_string(op), std::nullopt;
  Request r{Op(op), {}, {}};
  std::size_t at = 1;
  if (!get_field(body, at, r.key) || !get_field(body, at, r.value))
    return why = "a request whose fields run past its frame", std::nullopt;
  if (at != body.size()) return why = "a request with bytes after its fields", std::nullopt;
  if (r.key.size() > kMaxKey)
    return why = "a key of " + std::to_string(r.key.size()) + " bytes (at most " + std::to_string(kMaxKey) + ")",
           std::nullopt;
  if (r.op == Op::add && !parse_int(r.value)) return why = "an add whose delta is not a decimal integer", std::nullopt;
  return r;
}

std::optional<Reply> decode_reply(std::string_view body, std::string& why) {
  if (body.empty() || std::uint8_t(body[0]) > 1) return why = "a reply without a valid status", std::nullopt;
  Reply r{body[0] == 0, {}};
  std::size_t at = 1;
  if (!get_field(body, at, r.value) || at != body.size()) return why = "a reply that does not fill its frame", std::nullopt;
  return r;
}

std::string frame_prefix(std::size_t body_bytes) {
  std::string out;
  put_u32(out, std::uint32_t(body_bytes));
  return out;
}

std::optional<std::uint32_t> frame_length(const unsigned char prefix[4], std::string& why) {
  const std::uint32_t n = get_u32(prefix);
  if (n == 0 || n > kMaxFrame)
    return why = "a frame of " + std::to_string(n) + " bytes (1 to " + std::to_string(kMaxFrame) + " accepted)",
           std::nullopt;
  return n;
}

std::optional<std::int64_t> parse_int(std::string_view text) {
  std::int64_t v = 0;
  const char* end = text.data() + text.size();
  if (text.empty() || text[0] == '+') return std::nullopt;
  auto [p, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || p != end) return std::nullopt;
  return v;
}

std::optional<std::pair<int, int>> parse_hello(std::string_view value, std::string& why) {
  const std::size_t space = value.find(' ');
  const auto rank = parse_int(value.substr(0, space));
  const auto world = space == std::string_view::npos ? std::nullopt : parse_int(value.substr(space + 1));
  if (!rank || !world || *world < 1 || *world > (1 << 20) || *rank < 0 || *rank >= *world)
    return why = "a hello whose rank and world size are not 0 <= rank < size <= 1048576", std::nullopt;
  return std::pair{int(*rank), int(*world)};
}

}  // namespace parbench::store
