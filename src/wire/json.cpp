#include "wire/json.hpp"

#include <algorithm>
#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>
#include <cmath>

#include "util/log.hpp"

namespace exthost::wire {
namespace {

// How much of an out-of-range literal an error quotes.
constexpr std::size_t k_quoted_literal_bytes = 32;

boost::json::parse_options limited_options() {
  boost::json::parse_options opts;
  opts.max_depth = k_max_json_depth;
  return opts;
}

const char* non_finite_name(double d) {
  if (std::isnan(d)) return "NaN";
  return d > 0 ? "Infinity" : "-Infinity";
}

// A copy of `v` with every non-finite double replaced by its name as a string.
boost::json::value with_finite_numbers(const boost::json::value& v) {
  switch (v.kind()) {
    case boost::json::kind::double_:
      return std::isfinite(v.get_double()) ? v : boost::json::value(non_finite_name(v.get_double()));
    case boost::json::kind::array: {
      boost::json::array out;
      out.reserve(v.get_array().size());
      for (const auto& item : v.get_array()) out.push_back(with_finite_numbers(item));
      return out;
    }
    case boost::json::kind::object: {
      boost::json::object out;
      out.reserve(v.get_object().size());
      for (const auto& [key, item] : v.get_object()) out.emplace(key, with_finite_numbers(item));
      return out;
    }
    default:
      return v;
  }
}

std::string write_json(const boost::json::value& v) {
  if (all_numbers_finite(v)) return boost::json::serialize(v);
  util::log().warn("a non-finite number has no JSON form; it is written as a string");
  return boost::json::serialize(with_finite_numbers(v));
}

}  // namespace

namespace detail {

bool ValueBuilder::on_double(double d, boost::json::string_view literal, boost::system::error_code& ec) {
  if (std::isfinite(d) || keep_out_of_range) {
    st.push_double(d);
    return true;
  }
  OutOfRange found;
  const std::string_view shown(literal.data(), std::min(literal.size(), k_quoted_literal_bytes));
  found.literal = std::string(shown) + (shown.size() < literal.size() ? "…" : "");
  // Whole in the text unless the number was split across writes, which parse() never does.
  if (literal.data() >= text.data() && literal.data() <= text.data() + text.size()) {
    found.offset = static_cast<std::size_t>(literal.data() - text.data());
  }
  out_of_range = std::move(found);
  ec = boost::json::error::exponent_overflow;  // stops the parse; parse() words the error
  return false;
}

}  // namespace detail

JsonParser::JsonParser(OutOfRange out_of_range) : m_parser(limited_options(), boost::json::storage_ptr()) {
  m_parser.handler().keep_out_of_range = out_of_range == OutOfRange::keep;
}

Result<boost::json::value> JsonParser::parse(std::string_view text) {
  m_parser.reset();
  auto& builder = m_parser.handler();
  builder.st.reset();
  builder.text = text;
  builder.out_of_range.reset();
  boost::system::error_code ec;
  const std::size_t used = m_parser.write_some(false, text.data(), text.size(), ec);
  if (!ec && used < text.size()) ec = boost::json::error::extra_data;
  if (!ec && !m_parser.done()) ec = boost::json::error::incomplete;
  builder.text = {};
  if (ec) {
    std::string message = ec.message();
    if (builder.out_of_range) {
      message = "number out of range";
      if (builder.out_of_range->offset) message += " at byte " + std::to_string(*builder.out_of_range->offset);
      message += ": " + builder.out_of_range->literal;
    }
    m_parser.reset();
    builder.st.reset();
    return Error::extension(message);
  }
  return builder.st.release();
}

bool all_numbers_finite(const boost::json::value& v) {
  switch (v.kind()) {
    case boost::json::kind::double_:
      return std::isfinite(v.get_double());
    case boost::json::kind::array:
      for (const auto& item : v.get_array()) {
        if (!all_numbers_finite(item)) return false;
      }
      return true;
    case boost::json::kind::object:
      for (const auto& [key, item] : v.get_object()) {
        if (!all_numbers_finite(item)) return false;
      }
      return true;
    default:
      return true;
  }
}

std::string to_json(const boost::json::value& v) { return write_json(v); }

std::string encode_request(std::string_view method, const boost::json::value& params, std::uint64_t id) {
  std::string out = R"({"jsonrpc":"2.0","method":)";
  out += boost::json::serialize(boost::json::string_view(method.data(), method.size()));
  out += R"(,"params":)";
  out += write_json(params);
  out += R"(,"id":)";
  out += std::to_string(id);
  out += '}';
  return out;
}

std::string encode_notification(std::string_view method, const boost::json::value& params) {
  std::string out = R"({"jsonrpc":"2.0","method":)";
  out += boost::json::serialize(boost::json::string_view(method.data(), method.size()));
  out += R"(,"params":)";
  out += write_json(params);
  out += '}';
  return out;
}

std::string encode_result_reply(const boost::json::value& id, const boost::json::value& result) {
  std::string out = R"({"jsonrpc":"2.0","id":)";
  out += write_json(id);
  out += R"(,"result":)";
  out += write_json(result);
  out += '}';
  return out;
}

std::string encode_error_reply(const boost::json::value& id, int code, std::string_view message,
                               const boost::json::value* data) {
  std::string out = R"({"jsonrpc":"2.0","id":)";
  out += write_json(id);
  out += R"(,"error":{"code":)";
  out += std::to_string(code);
  out += R"(,"message":)";
  out += boost::json::serialize(boost::json::string_view(message.data(), message.size()));
  if (data != nullptr) {
    out += R"(,"data":)";
    out += write_json(*data);
  }
  out += "}}";
  return out;
}

}  // namespace exthost::wire
