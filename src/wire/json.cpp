#include "wire/json.hpp"

#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>

namespace exthost::wire {
namespace {

boost::json::parse_options limited_options() {
  boost::json::parse_options opts;
  opts.max_depth = k_max_json_depth;
  return opts;
}

}  // namespace

JsonParser::JsonParser() : m_parser(boost::json::storage_ptr(), limited_options()) {}

Result<boost::json::value> JsonParser::parse(std::string_view text) {
  m_parser.reset();
  boost::system::error_code ec;
  m_parser.write(text.data(), text.size(), ec);
  if (ec) {
    m_parser.reset();
    return Error::extension(ec.message());
  }
  return m_parser.release();
}

std::string to_json(const boost::json::value& v) { return boost::json::serialize(v); }

std::string encode_request(std::string_view method, const boost::json::value& params, std::uint64_t id) {
  std::string out = R"({"jsonrpc":"2.0","method":)";
  out += boost::json::serialize(boost::json::string_view(method.data(), method.size()));
  out += R"(,"params":)";
  out += boost::json::serialize(params);
  out += R"(,"id":)";
  out += std::to_string(id);
  out += '}';
  return out;
}

std::string encode_notification(std::string_view method, const boost::json::value& params) {
  std::string out = R"({"jsonrpc":"2.0","method":)";
  out += boost::json::serialize(boost::json::string_view(method.data(), method.size()));
  out += R"(,"params":)";
  out += boost::json::serialize(params);
  out += '}';
  return out;
}

std::string encode_result_reply(const boost::json::value& id, const boost::json::value& result) {
  std::string out = R"({"jsonrpc":"2.0","id":)";
  out += boost::json::serialize(id);
  out += R"(,"result":)";
  out += boost::json::serialize(result);
  out += '}';
  return out;
}

std::string encode_error_reply(const boost::json::value& id, int code, std::string_view message,
                               const boost::json::value* data) {
  std::string out = R"({"jsonrpc":"2.0","id":)";
  out += boost::json::serialize(id);
  out += R"(,"error":{"code":)";
  out += std::to_string(code);
  out += R"(,"message":)";
  out += boost::json::serialize(boost::json::string_view(message.data(), message.size()));
  if (data != nullptr) {
    out += R"(,"data":)";
    out += boost::json::serialize(*data);
  }
  out += "}}";
  return out;
}

}  // namespace exthost::wire
