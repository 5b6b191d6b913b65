// The rendezvous store's wire format. Every message is a frame: a 4-byte little-endian length, then that many
// bytes. A request is an opcode byte then its fields, each a 4-byte length and its bytes (integers as decimal
// text); a reply is a status byte then one such field. Nothing read from the wire is trusted: every length is
// bounded and checked before it is used.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace parbench::store {

inline constexpr std::uint32_t kMaxFrame = 1u << 20;  // ids, addresses and handles, never bulk data
inline constexpr std::size_t kMaxKey = 1024;

enum class Op : std::uint8_t {
  hello = 1,  // key: the job token; value: "rank world_size"
  set = 2,    // key, value
  get = 3,    // key: replies with its value once some rank has set it
  add = 4,    // key, value: a decimal delta; replies with the key's new value (a missing key counts as 0)
};

struct Request {
  Op op = Op::get;
  std::string key;
  std::string value;
  bool operator==(const Request&) const = default;
};

struct Reply {
  bool ok = true;
  std::string value;  // the value asked for, or why the request was refused
  bool operator==(const Reply&) const = default;
};

// A frame's body, and back; nullopt with `why` set for any body this side would not write.
std::string encode(const Request& r);
std::string encode(const Reply& r);
std::optional<Request> decode_request(std::string_view body, std::string& why);
std::optional<Reply> decode_reply(std::string_view body, std::string& why);

// The length prefix of a frame holding `body_bytes`, and the length a prefix announces (why when it is out of
// bounds: zero or more than kMaxFrame).
std::string frame_prefix(std::size_t body_bytes);
std::optional<std::uint32_t> frame_length(const unsigned char prefix[4], std::string& why);

// "rank world_size" of a hello, parsed: both in range (0 <= rank < world_size <= 1 << 20), else why not.
std::optional<std::pair<int, int>> parse_hello(std::string_view value, std::string& why);
// A decimal int64 as `add` carries it; nullopt for anything else (signs, spaces, overflow).
std::optional<std::int64_t> parse_int(std::string_view text);

}  // namespace parbench::store
