// serve/reply.cpp — frames assembled from their pieces in one allocation, the size checked
// before any byte is copied.
#include "serve/reply.hpp"

#include <boost/json/serialize.hpp>
#include <boost/json/string_view.hpp>
#include <initializer_list>

#include "util/text.hpp"

namespace exthost::server {
namespace {

// A frame whose body is `parts` in order; nullopt when the body exceeds the cap.
std::optional<std::string> frame_of(std::initializer_list<std::string_view> parts, std::size_t& body_size) {
  body_size = 0;
  for (auto p : parts) body_size += p.size();
  if (body_size > k_max_output_body) return std::nullopt;
  const std::string header = "Content-Length: " + std::to_string(body_size) + "\r\n\r\n";
  std::string out;
  out.reserve(header.size() + body_size);
  out += header;
  for (auto p : parts) out.append(p.data(), p.size());
  return out;
}

}  // namespace

std::optional<std::string> result_frame(std::string_view raw_id, std::string_view result_json, std::size_t& body_size,
                                        std::string_view key) {
  if (key.empty()) return frame_of({R"({"jsonrpc":"2.0","id":)", raw_id, R"(,"result":)", result_json, "}"}, body_size);
  const std::string opening = "{" + boost::json::serialize(boost::json::string_view(key.data(), key.size())) + ":";
  return frame_of({R"({"jsonrpc":"2.0","id":)", raw_id, R"(,"result":)", opening, result_json, "}}"}, body_size);
}

std::optional<std::string> stream_event_frame(std::string_view raw_id, std::string_view event_json,
                                              std::size_t& body_size) {
  return frame_of({R"({"jsonrpc":"2.0","method":"provider.stream.event","params":{"request_id":)", raw_id,
                   R"(,"event":)", event_json, "}}"},
                  body_size);
}

std::string error_frame(std::string_view raw_id, int code, std::string_view message, const boost::json::value* data,
                        const boost::json::value* smaller_data) {
  std::string shown(util::utf8_prefix(message, k_max_error_message));
  if (shown.size() < message.size()) {
    shown += " [cut: " + std::to_string(message.size() - shown.size()) + " more bytes of " +
             std::to_string(message.size()) + "]";
  }
  const std::string text = boost::json::serialize(boost::json::string_view(shown));
  const std::string code_text = std::to_string(code);
  const std::string data_text = data ? R"(,"data":)" + boost::json::serialize(*data) : std::string();
  const std::string smaller_text =
      data && smaller_data ? R"(,"data":)" + boost::json::serialize(*smaller_data) : data_text;
  // The data (which may echo a client's text) gives way first, its large parts before the
  // rest, then the id, until the frame fits: a reply the client can match to its request is
  // worth more than its data.
  const std::string_view attempts[][2] = {{raw_id, data_text}, {raw_id, smaller_text}, {raw_id, {}}, {k_null_id, {}}};
  std::size_t size = 0;
  for (const auto& [id, extra] : attempts) {
    auto frame = frame_of({R"({"jsonrpc":"2.0","id":)", id, R"(,"error":{"code":)", code_text, R"(,"message":)", text,
                           extra, "}}"},
                          size);
    if (frame) return std::move(*frame);
  }
  return {};  // unreachable: the last attempt is far below the cap
}

}  // namespace exthost::server
