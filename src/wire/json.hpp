// wire/json.hpp — JSON parsing under limits, and the frames the host writes. No I/O.
//
// Promise: a hostile body can make parsing fail but never overflow the stack or allocate
// more than its own size several times over: nesting is capped at k_max_json_depth.
// Numbers stay within the double range both ways: a literal beyond it (1e999) is invalid
// JSON here, not an infinity, and a non-finite double is never written as a bare word.
#pragma once

#include <boost/json/basic_parser.hpp>
#include <boost/json/value.hpp>
#include <boost/json/value_stack.hpp>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "exthost/result.hpp"

namespace exthost::wire {

// Real tool schemas and messages nest a few dozen levels at most; 128 leaves room for
// them while a hostile "[[[[…" fails long before any recursive walk could hurt the stack.
inline constexpr std::size_t k_max_json_depth = 128;

namespace detail {

// Builds the value as Boost.JSON's own parser does, but stops at the first number whose
// literal lies outside the double range (Boost.JSON turns it into an infinity).
struct ValueBuilder {
  static constexpr std::size_t max_object_size = boost::json::object::max_size();
  static constexpr std::size_t max_array_size = boost::json::array::max_size();
  static constexpr std::size_t max_key_size = boost::json::string::max_size();
  static constexpr std::size_t max_string_size = boost::json::string::max_size();

  struct OutOfRange {
    std::string literal;                // as written, cut when long
    std::optional<std::size_t> offset;  // its first byte in the text
  };

  explicit ValueBuilder(boost::json::storage_ptr sp) : st(std::move(sp)) {}

  bool on_document_begin(boost::system::error_code&) { return true; }
  bool on_document_end(boost::system::error_code&) { return true; }
  bool on_object_begin(boost::system::error_code&) { return true; }
  bool on_object_end(std::size_t n, boost::system::error_code&) { st.push_object(n); return true; }
  bool on_array_begin(boost::system::error_code&) { return true; }
  bool on_array_end(std::size_t n, boost::system::error_code&) { st.push_array(n); return true; }
  bool on_key_part(boost::json::string_view s, std::size_t, boost::system::error_code&) { st.push_chars(s); return true; }
  bool on_key(boost::json::string_view s, std::size_t, boost::system::error_code&) { st.push_key(s); return true; }
  bool on_string_part(boost::json::string_view s, std::size_t, boost::system::error_code&) { st.push_chars(s); return true; }
  bool on_string(boost::json::string_view s, std::size_t, boost::system::error_code&) { st.push_string(s); return true; }
  bool on_number_part(boost::json::string_view, boost::system::error_code&) { return true; }
  bool on_int64(std::int64_t i, boost::json::string_view, boost::system::error_code&) { st.push_int64(i); return true; }
  bool on_uint64(std::uint64_t u, boost::json::string_view, boost::system::error_code&) { st.push_uint64(u); return true; }
  bool on_double(double d, boost::json::string_view literal, boost::system::error_code& ec);
  bool on_bool(bool b, boost::system::error_code&) { st.push_bool(b); return true; }
  bool on_null(boost::system::error_code&) { st.push_null(); return true; }
  bool on_comment_part(boost::json::string_view, boost::system::error_code&) { return true; }
  bool on_comment(boost::json::string_view, boost::system::error_code&) { return true; }

  boost::json::value_stack st;
  bool keep_out_of_range = false;         // keep such a number as an infinity instead
  std::string_view text;                  // the text being parsed, for offsets
  std::optional<OutOfRange> out_of_range;  // why the last parse stopped, if for a number
};

}  // namespace detail

// A reusable parser: keeps its internal stack between frames. One per stream.
class JsonParser {
 public:
  // Whether a number beyond the double range stops the parse (the default) or is kept as
  // an infinity, for a caller that must still read the rest (serve echoes a request's id
  // as its bytes, and refuses such a number only where it would be used).
  enum class OutOfRange { refuse, keep };
  explicit JsonParser(OutOfRange out_of_range = OutOfRange::refuse);
  // Parses one complete JSON text. The error is the parser's own message, or
  // "number out of range at byte <n>: <literal>" for a number beyond the double range.
  Result<boost::json::value> parse(std::string_view text);

 private:
  boost::json::basic_parser<detail::ValueBuilder> m_parser;
};

// Compact serialization of a value. Every serializer in exthost goes through here or the
// encoders below: a non-finite double (which no parsed value holds, but code could make)
// is written as the string "Infinity", "-Infinity" or "NaN" with a warning in the log,
// never as a bare word that no JSON parser accepts.
std::string to_json(const boost::json::value& v);
// Whether every number in `v` is finite, i.e. to_json writes it as it is.
bool all_numbers_finite(const boost::json::value& v);

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
