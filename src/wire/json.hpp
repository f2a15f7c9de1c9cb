// wire/json.hpp — JSON parsing under limits, and the frames the host writes. No I/O.
//
// Promise: a hostile body can make parsing fail but never overflow the stack or allocate
// more than its own size several times over: nesting is capped at k_max_json_depth.
#pragma once

#include <boost/json/parser.hpp>
#include <boost/json/value.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "exthost/result.hpp"

namespace exthost::wire {

// Real tool schemas and messages nest a few dozen levels at most; 128 leaves room for
// them while a hostile "[[[[…" fails long before any recursive walk could hurt the stack.
inline constexpr std::size_t k_max_json_depth = 128;

// A reusable parser: keeps its internal stack between frames. One per stream.
class JsonParser {
 public:
  JsonParser();
  // Parses one complete JSON text. The error is the parser's own message.
  Result<boost::json::value> parse(std::string_view text);

 private:
  boost::json::parser m_parser;
};

// Compact serialization of a value.
std::string to_json(const boost::json::value& v);

// The body of a host request, fields in the reference order: jsonrpc, method, params, id.
std::string encode_request(std::string_view method, const boost::json::value& params, std::uint64_t id);
// The body of a notification: jsonrpc, method, params.
std::string encode_notification(std::string_view method, const boost::json::value& params);
// The body of a reply to an inbound request; `id` is echoed verbatim.
std::string encode_result_reply(const boost::json::value& id, const boost::json::value& result);
// The one place a JSON-RPC error object is built; `data`, when given, is added verbatim.
std::string encode_error_reply(const boost::json::value& id, int code, std::string_view message,
                               const boost::json::value* data = nullptr);

}  // namespace exthost::wire
